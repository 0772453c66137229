"""``python -m autograder``: see :mod:`autograder.cli`.

When the command is done, every object left is frozen out of the garbage collector
(:func:`gc.freeze`): the interpreter's final collections then skip the millions of objects that
torch, sympy and nbgrader leave, which took about a second of a ``grade``'s wall time on an idle
machine and several on a busy one (``benchmarks/grading_stages.py``: "interpreter exit"). Files
are closed and ``atexit`` handlers run as before; only cycles are left to the process's end.
"""

import gc
import sys

from autograder.cli import main


def run() -> int:
    """``main()``, then the objects frozen for a quick exit (the process ends next)."""
    try:
        return main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(run())
