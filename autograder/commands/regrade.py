"""``python -m autograder regrade OUT``: grade the class's kept files again after a fix.

``regrade`` grades every student's kept file of ``OUT/received/`` again after a change to
the hidden tests, the reference or the points, records only the students whose grade moved
(keeping part 8 and the late data), and prints who changed and by how much, then the change
log of ``grades.csv``; ``--dry-run`` prints the same and writes nothing
(:mod:`autograder.nbgrader.regrading`).
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
    """The ``regrade`` command and its options."""
    again = commands.add_parser(
        "regrade", help="grade the kept files again after a fix; only the grades that moved change"
    )
    again.add_argument("out", type=Path, help="the --out folder of grade-all")
    again.add_argument(
        "--course", type=Path, default=None, metavar="DIR", help="the course graded into"
    )
    again.add_argument("--allow-git", action="store_true", help=argparse.SUPPRESS)
    again.add_argument(
        "--dry-run", action="store_true", help="print who would change; write nothing"
    )
    again.add_argument("--jobs", type=int, default=None, help="parallel gradings (default: cores)")
    again.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    add_cluster_options(again, helps=False)
    add_grading_options(again)
    again.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Regrade the class of ``args.out``; 0 once done, 1 when the cluster failed."""
    from autograder.core.cluster.connection import ClusterError
    from autograder.core.cluster.scheduling import ClusterGrading
    from autograder.core.fan_out import check_jobs
    from autograder.nbgrader.course import CourseTemplate
    from autograder.nbgrader.feedback_renderer import render_feedback
    from autograder.nbgrader.folders import check_course_dir
    from autograder.nbgrader.grader import Grader
    from autograder.nbgrader.regrading import regrade

    limits = limits_of(args)  # a bad limit stops here, before any grading
    if args.course is not None:
        check_course_dir(args.course, allow_git=args.allow_git)
    try:
        with cluster_session(args) as client:
            isolate = not args.no_sandbox
            course = None if args.dry_run else args.course
            with Grader(
                args.source, isolate=isolate and client is None, course=course, limits=limits
            ) as grader:
                if args.dry_run and args.course is not None:  # read only: what the course holds
                    grader.course = CourseTemplate(args.course, persistent=True)
                done = regrade(
                    grader,
                    args.out,
                    dry_run=args.dry_run,
                    jobs=check_jobs(args.jobs),
                    cluster=ClusterGrading(client, isolate) if client is not None else None,
                    make_feedback=None if args.no_feedback else render_feedback,
                )
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(printable("\n".join(done.lines)))
    return 0
