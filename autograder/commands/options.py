"""The options every command that grades takes: the time limit, the source notebook, the sandbox."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograder.core.assessor import CELL_TIMEOUT
from solutions.parts import SOURCE_NOTEBOOK

__all__ = ["add_grading_options"]


def add_grading_options(sub: argparse.ArgumentParser) -> None:
    """``--timeout``, ``--source`` and ``--no-sandbox`` on the command ``sub``."""
    sub.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"per-cell time limit in seconds (default: {CELL_TIMEOUT:g}, "
        "autograder.core.assessor.CELL_TIMEOUT); a notebook's whole run gets one such limit plus "
        "a reserve (autograder.core.assessor.RESERVE_SECONDS)",
    )
    sub.add_argument(
        "--source",
        type=Path,
        default=SOURCE_NOTEBOOK,
        metavar="NB",
        help="the nbgrader source notebook with the hidden tests (default: %(default)s)",
    )
    sub.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run notebooks as plain processes, without isolation (debugging only: results "
        "say `unsandboxed` and are not grades; only as root, which runs them as a user of "
        "their own)",
    )
