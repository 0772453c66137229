"""``python -m autograder export --course DIR``: the final grades, once part 8 is graded.

``export`` reads part 8 (graded by hand in formgrader) from the course's gradebook into
``grades.csv``, makes every student's final feedback (``feedback/<student>.html``) and writes
the grades for Canvas, Moodle and other LMSs into ``lms/``
(:mod:`autograder.nbgrader.final_export`, :mod:`autograder.nbgrader.class_reports.lms_files`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from autograder.core.reports.safe_text import printable

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``export`` command and its options."""
    final = commands.add_parser(
        "export",
        help="part 8 from the course's gradebook into grades.csv, and the final feedback",
    )
    final.add_argument("--course", type=Path, required=True, metavar="DIR", help="the course")
    final.add_argument("--out", type=Path, default=Path("grading-output"), help="output folder")
    final.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    final.add_argument(
        "--lms-column",
        default="a2c",
        metavar="NAME",
        help="the assignment column of the LMS files in OUT/lms (default: %(default)s); for an "
        "existing Canvas assignment, its header in Canvas's gradebook export, e.g. 'A2C (123456)'",
    )
    final.add_argument(
        "--missing-as-zero",
        action="store_true",
        help="give a roster student without a submission 0 in the LMS files (default: an empty "
        "cell, no grade)",
    )
    final.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Export the course's final grades into ``args.out``."""
    from autograder.nbgrader.final_export import export

    done = export(
        args.course,
        args.out,
        feedback=not args.no_feedback,
        lms_column=args.lms_column,
        missing_as_zero=args.missing_as_zero,
    )
    print(printable(done))
    return 0
