"""``python -m autograder grade PATH.ipynb``: grade one notebook and print its grade.

``grade`` names the student as ``grade-all`` names the one file it is given (a file named only
``a2c.ipynb`` after its folder, or ``submission``; ``--student`` overrides), and prints a table
per part with the totals of ``grades.csv`` (full marks 15, part 8 *not graded yet*), or with
``--json`` exactly one JSON object on stdout (``max_total``: full marks)::

    {"total": float, "max_total": float, "status": str, "notes": str, "sandboxed": bool,
     "isolation": "bubblewrap" | "container" | "none" | "not run",
     "parts": {"<part key>": {"score": float, "max": float, "feedback": str}}}

``status`` is ``graded`` or why not (``error: ...``, ``timeout: ...``, ``tampered: ...``,
``unreadable: ...``); ``sandboxed`` is false with ``--no-sandbox`` (read the note);
``isolation`` says how the notebook was isolated (docs/grading.md, "Isolation modes"), or
``not run`` for a file of which nothing ran (not a notebook; ``sandboxed`` is false then too,
and the table says ``not run`` instead of a sandbox warning).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from autograder.commands.options import add_grading_options, limits_of
from autograder.core.reports.safe_text import printable

__all__ = ["NEUTRAL_STUDENT", "add_parser", "grade_student", "run"]

#: The name ``grade`` gives a file nothing else names (a2c.ipynb at the top of a file system).
NEUTRAL_STUDENT = "submission"


def add_parser(commands: Any) -> None:
    """The ``grade`` command and its options."""
    one = commands.add_parser("grade", help="grade one notebook")
    one.add_argument("path", type=Path, help="the submitted .ipynb")
    one.add_argument("--json", action="store_true", help="print one JSON object only")
    one.add_argument(
        "--student",
        default=None,
        help="student id (default: as grade-all names a file it is given; a file named only "
        "a2c.ipynb after its folder)",
    )
    add_grading_options(one)
    one.set_defaults(run=run)


def _student_of(path: Path) -> str:
    """The student ``grade-all PATH`` would name for the one file ``path`` (``""``: none)."""
    import tempfile

    from autograder.core.intake.collect import collect

    with tempfile.TemporaryDirectory(prefix="a2c-collect-") as scratch:
        submissions, _ = collect([path], Path(scratch))
    return submissions[0].student if submissions else ""


def grade_student(path: Path) -> str:
    """Who ``grade PATH`` grades: as ``grade-all`` names the one file (``carol.ipynb``: carol),
    else, for the name every student submits (``a2c.ipynb``), the folder it sits in, else
    :data:`NEUTRAL_STUDENT`. One file graded on its own is recorded nowhere, so any name will
    do; ``grade-all`` refuses a file it cannot name, since it records grades by student."""
    from autograder.core.intake.collect import student_id

    path = path.resolve()
    by_folder = student_id(path, root=path.parent.parent)  # as grade-all names a folder
    return _student_of(path) or by_folder or NEUTRAL_STUDENT


def run(args: argparse.Namespace) -> int:
    """Grade ``args.path``; 0 when it was graded, 1 when not, 2 when there is no such file."""
    from autograder.core.agent_play.feedback import agent_line
    from autograder.core.reports.table import format_table
    from autograder.nbgrader.grader import Grader

    if not args.path.is_file():
        print(
            f"error: {args.path} does not exist (give the path of a .ipynb file)", file=sys.stderr
        )
        return 2
    limits = limits_of(args)  # a bad limit stops here, before any grading
    student = args.student or grade_student(args.path)
    with Grader(args.source, isolate=not args.no_sandbox, limits=limits) as grader:
        result = grader.grade(args.path, student=student)
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(format_table(result))
        if agent_line(result.agent):
            print(printable(agent_line(result.agent)))
    if result.status != "graded":
        print(printable(f"{args.path}: {result.status}"), file=sys.stderr)
        return 1
    return 0
