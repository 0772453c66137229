"""Execute a notebook cell by cell and save it after every cell (runs inside the sandbox).

Usage: ``python notebook_runner.py IN.ipynb OUT.ipynb CELL_TIMEOUT STARTUP_TIMEOUT``

A standalone script: the grader copies it into the sandbox, where nothing of the grader is
importable. A cell that raises, or runs past ``CELL_TIMEOUT`` seconds (it is interrupted), does
not stop the notebook; the kernel starts in the folder of OUT.
"""

import sys
from pathlib import Path

import nbclient
import nbformat


def main(source: str, target: str, cell_timeout: str, startup_timeout: str) -> int:
    nb = nbformat.read(source, as_version=4)
    out = Path(target)

    def save(**_: object) -> None:
        tmp = out.with_suffix(".tmp")
        nbformat.write(nb, tmp)
        tmp.replace(out)

    client = nbclient.NotebookClient(
        nb,
        timeout=float(cell_timeout),
        startup_timeout=float(startup_timeout),
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={
            "ename": "CellTimeoutError",
            "evalue": f"the cell ran past the {cell_timeout} s limit and was interrupted",
            "traceback": [],
        },
        raise_on_iopub_timeout=False,
        iopub_timeout=30,
        record_timing=False,
        resources={"metadata": {"path": str(out.parent)}},
        on_cell_executed=save,
    )
    try:
        client.execute()
    finally:
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
