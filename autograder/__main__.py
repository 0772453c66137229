"""``python -m autograder``: see :mod:`autograder.cli`.

A command that grades on this machine (``grade``, ``grade-all`` and ``regrade`` without a
scheduler, not ``--no-sandbox``) first starts the sandbox's Python for this process
(:func:`autograder.core.sandbox_view.warm_start`: the process's template, or the one
notebook's run where none can be had), so that it imports torch while the grader imports its
own; only then is the command line's module (and nbgrader, torch) imported.

When the command is done, every object left is frozen out of the garbage collector
(:func:`gc.freeze`): the interpreter's final collections then skip the millions of objects that
torch, sympy and nbgrader leave, which took about a second of a ``grade``'s wall time on an idle
machine and several on a busy one (``benchmarks/grading_stages.py``: "interpreter exit"). Files
are closed and ``atexit`` handlers run as before; only cycles are left to the process's end.
"""

import gc
import os
import sys

#: The commands that grade in this process (with their sandbox started first).
GRADING_COMMANDS = ("grade", "grade-all", "regrade")


def grades_here(argv: list[str]) -> bool:
    """Whether ``argv`` (without the program) grades notebooks in this process, isolated."""
    if not argv or argv[0] not in GRADING_COMMANDS or "--no-sandbox" in argv:
        return False
    scheduler = any(arg.split("=")[0] == "--scheduler" for arg in argv)
    return not scheduler and not os.environ.get("A2C_DASK_SCHEDULER", "").strip()


def run() -> int:
    """``main()``, then the objects frozen for a quick exit (the process ends next)."""
    if grades_here(sys.argv[1:]):
        from autograder.core.sandbox_view import warm_start

        warm_start()
    from autograder.cli import main

    try:
        return main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(run())
