"""``python -m autograder gradescope`` and ``prairielearn``: the bundles the platforms grade with.

``gradescope`` writes the autograder zip to upload to Gradescope (:mod:`autograder.platforms.gradescope`);
``prairielearn`` writes an externally graded question, its grader and its image recipe
(:mod:`autograder.platforms.prairielearn`). Both grade there as ``grade`` does, in container mode where
the platform's container refuses bubblewrap (:mod:`autograder.core.isolation.container`), with
the course the bundle carries: the limits given here (``--timeout``, ``--agent-cpu-seconds``,
``--settings FILE``...) hold there.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from autograder.commands.options import add_limit_options, limits_of

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """The ``gradescope`` and ``prairielearn`` commands and their options."""
    gradescope = commands.add_parser("gradescope", help="the autograder zip for Gradescope")
    gradescope.add_argument(
        "--out", type=Path, default=Path("autograder.zip"), help="the zip (default: %(default)s)"
    )
    add_limit_options(gradescope)  # the course the zip carries: its limits hold there
    gradescope.set_defaults(run=run)
    prairielearn = commands.add_parser(
        "prairielearn", help="an externally graded PrairieLearn question and its grader"
    )
    prairielearn.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="a new folder, or an earlier build's (rebuilt in place, its question uuid kept): the "
        "external grader (for the course's serverFilesCourse/a2c_grader), the question and the "
        "grading image's recipe",
    )
    prairielearn.add_argument(
        "--image",
        default="",
        metavar="NAME",
        help="the grading image you build and push to Docker Hub, for info.json "
        "(<your Docker Hub user>/a2c-grader:latest)",
    )
    prairielearn.add_argument(
        "--uuid",
        default=None,
        help="the question's uuid (PrairieLearn knows the question by it): the one in your "
        "course's questions/a2c/info.json; default: the earlier build's in --out, else a new one",
    )
    add_limit_options(prairielearn)  # the course the bundle carries: its limits hold there
    prairielearn.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the bundle ``args.command`` names and say what to do with it."""
    limits = limits_of(args)
    if args.command == "gradescope":
        from autograder.platforms.gradescope.bundle import build_zip

        names = build_zip(args.out, limits=limits)
        print(f"{args.out}: {len(names)} files; upload it as the assignment's autograder")
        return 0
    from autograder.platforms.prairielearn.bundle import write_bundle

    bundle = write_bundle(args.out, args.image, question_uuid=args.uuid, limits=limits)
    kept = (
        "kept: PrairieLearn updates the same question"
        if bundle.kept
        else "new: rebuild into this folder (or pass --uuid) to keep it"
    )
    print(
        f"{args.out}: {len(bundle.names)} files; copy it to the course's "
        f"serverFilesCourse/a2c_grader, {args.out / 'question'} to questions/a2c, and build "
        f"{args.out / 'image'} as {args.image}\nquestion uuid {bundle.uuid} ({kept})"
    )
    return 0
