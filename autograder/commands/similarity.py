"""``python -m autograder similarity OUT``: the pairs of students whose parts are unusually alike.

``similarity`` reads the files ``grade-all`` kept in ``OUT/received/`` and writes a report of
the pairs of students whose graded parts are unusually alike for this class, part by part, to
``OUT/similarity/index.html``, with a page per pair (:mod:`autograder.similarity`); student
code is read as text, never run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from autograder.core.reports.safe_text import printable
from solutions.parts import RELEASE_NOTEBOOK

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``similarity`` command and its options."""
    similar = commands.add_parser(
        "similarity",
        help="pairs of students whose graded parts are unusually alike (a report to read)",
    )
    similar.add_argument("out", type=Path, help="the --out folder of grade-all")
    similar.add_argument(
        "--release",
        type=Path,
        default=RELEASE_NOTEBOOK,
        metavar="NB",
        help="the notebook students were given; its code is left out (default: %(default)s)",
    )
    similar.add_argument(
        "--pages",
        type=int,
        default=200,
        metavar="N",
        help="pair pages written at most (default: 200)",
    )
    similar.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the report and print where it is."""
    from autograder.similarity.report import similarity_report

    print(printable(similarity_report(args.out, args.release, args.pages)))
    return 0
