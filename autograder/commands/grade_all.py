"""``python -m autograder grade-all DIR_OR_ZIP ...``: grade a class and keep its grades.

``grade-all`` writes ``grades.csv`` (merged by student with what ``--out`` holds already),
``feedback/<student>.html``, ``summary.txt``, ``scores.png`` and ``received/`` (every file as
submitted) into ``--out`` (default ``grading-output``), prints what changed in ``grades.csv``
and the class's summary (:mod:`autograder.nbgrader.class_reports`). With ``--course`` every
graded notebook is recorded in that nbgrader course too (formgrader, export). With
``--scheduler`` the class is graded on a Dask cluster (:mod:`.cluster`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from autograder.commands.cluster import add_cluster_options, cluster_session
from autograder.commands.options import add_grading_options, limits_of
from autograder.core.reports.safe_text import printable

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``grade-all`` command and its options."""
    many = commands.add_parser("grade-all", help="grade folders or zips of notebooks")
    many.add_argument("inputs", type=Path, nargs="+", help=".ipynb files, folders or .zip files")
    many.add_argument("--out", type=Path, default=Path("grading-output"), help="output folder")
    many.add_argument("--jobs", type=int, default=None, help="parallel gradings (default: cores)")
    many.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    many.add_argument("--no-histogram", action="store_true", help="skip scores.png")
    many.add_argument(
        "--course",
        type=Path,
        default=None,
        metavar="DIR",
        help="also record every graded notebook and score in this nbgrader course directory "
        "(made on first use), for formgrader (part 8), generate_feedback and export; never "
        "inside a git work tree of the student distribution",
    )
    many.add_argument(
        "--allow-git",
        action="store_true",
        help="let --course be inside a (private) git work tree; refused without it",
    )
    many.add_argument(
        "--deadline",
        default=None,
        metavar="WHEN",
        help="the assignment's deadline, ISO 8601 with its time zone (2026-03-01T23:59+01:00): "
        "grades.csv and the summary show minutes late; with --course it is stored there and "
        "used by later runs",
    )
    many.add_argument(
        "--late-penalty",
        default=None,
        metavar="RULE",
        help="take points off late work (needs --course, where it is kept for later runs): "
        "PERCENT%%/UNIT of full marks per started hour, day or week after the deadline, "
        "optionally capped, e.g. 10%%/day or 2%%/hour,max=30%%; 'none' removes it. "
        "Default: the course's rule, else no penalty",
    )
    many.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="CSV",
        help="the class roster (columns id, first_name, last_name, email; canvas_id, section, "
        "sis_user_id, sis_login_id): names go into the course's gradebook, a Canvas or Moodle "
        "download is matched to it (Canvas by canvas_id, Moodle by full name); a submission of "
        "a student not on it is graded and flagged",
    )
    add_cluster_options(many)
    add_grading_options(many)
    many.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Grade the class; 0 when every submission was graded, 1 when some were not."""
    import tempfile

    from autograder.core.cluster.connection import ClusterError
    from autograder.core.cluster.scheduling import ClusterGrading
    from autograder.core.intake.collect import collect
    from autograder.nbgrader.class_reports.grades_csv import read_rows
    from autograder.nbgrader.folders import check_course_dir
    from autograder.nbgrader.grader import ClassSettings, Grader, grade_many
    from autograder.nbgrader.late_penalty import parse_late_penalty
    from autograder.nbgrader.roster import read_roster
    from autograder.nbgrader.submission_times import parse_deadline

    limits = limits_of(args)  # a bad limit stops here, before any grading
    deadline = parse_deadline(args.deadline) if args.deadline else None
    if args.late_penalty is not None:
        parse_late_penalty(args.late_penalty)  # a bad rule stops here, before any grading
        if args.course is None:
            raise ValueError(
                "--late-penalty needs --course: the penalty is the course's rule, and the "
                "gradebook, formgrader, both exports and the feedback take it from there."
            )
    roster = None
    if args.roster is not None:
        roster = read_roster(args.roster)  # a bad roster stops here, before any grading
    if args.course is not None:
        check_course_dir(args.course, allow_git=args.allow_git)
        kept = args.course / "roster.csv"  # the course's, from an earlier --roster
        if roster is None and kept.is_file():
            roster = read_roster(kept)
    read_rows(args.out / "grades.csv")  # refuse a foreign grades.csv before grading
    with tempfile.TemporaryDirectory(prefix="a2c-collect-") as scratch:
        # An LMS's download is matched to the roster by the LMS's own ids and names.
        submissions, problems = collect(args.inputs, Path(scratch), roster)
        for problem in problems:
            where = problem.origin or problem.path
            print(printable(f"warning: {where}: {problem.reason}"), file=sys.stderr)
        if not submissions:
            print("error: no notebook to grade in the inputs", file=sys.stderr)
            return 1
        try:
            # The client is made before the grader: a wrong address fails fast.
            with cluster_session(args) as client:
                if client is not None and args.jobs is not None:
                    print("warning: --jobs is ignored with a scheduler", file=sys.stderr)
                # On a cluster this machine only records: the workers need bubblewrap, not it.
                isolate = not args.no_sandbox
                sandbox_here = isolate and client is None
                with Grader(
                    args.source, isolate=sandbox_here, course=args.course, limits=limits
                ) as grader:
                    results = grade_many(
                        grader,
                        submissions,
                        args.out,
                        problems=problems,
                        jobs=args.jobs,
                        histogram=not args.no_histogram,
                        feedback=not args.no_feedback,
                        cluster=ClusterGrading(client, isolate) if client is not None else None,
                        settings=ClassSettings(deadline, args.roster, args.late_penalty),
                    )
        except ClusterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    changes = (args.out / "changes.txt").read_text(encoding="utf-8")
    print(printable(f"grades.csv, what changed:\n{changes}"))
    print(printable((args.out / "summary.txt").read_text(encoding="utf-8")))
    print(f"grades: {args.out / 'grades.csv'}")
    failed = [result for result in results if result.status != "graded"]
    for result in failed:
        line = f"not graded: {result.student or '?'} ({result.source}): {result.status}"
        print(printable(line), file=sys.stderr)
    return 1 if failed else 0
