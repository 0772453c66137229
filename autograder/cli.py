"""``python -m autograder``: grade one notebook, or a class's worth, in a sandbox.

Commands (each in its own module of :mod:`autograder.commands`, which says what it does)::

    python -m autograder grade PATH.ipynb [--json] [--timeout S] [--student ID] [--source NB]
    python -m autograder grade-all DIR_OR_ZIP ... [--out DIR] [--jobs N] [--timeout S]
                                   [--no-feedback] [--no-histogram] [--source NB]
                                   [--course DIR [--allow-git]] [--scheduler tls://HOST:PORT
                                   --certificates DIR] [--insecure-cluster]
                                   [--deadline ISO-TIME] [--late-penalty RULE] [--roster CSV]
    python -m autograder regrade OUT [--course DIR] [--dry-run] [--jobs N] [--scheduler ADDRESS
                                 --certificates DIR] [--no-feedback] [--source NB]
    python -m autograder export --course DIR [--out DIR] [--no-feedback] [--lms-column NAME]
                                [--missing-as-zero]
    python -m autograder similarity OUT [--release NB] [--pages N]
    python -m autograder cluster-certificates DIR
    python -m autograder gradescope [--out autograder.zip]
    python -m autograder prairielearn --out DIR --image NAME [--uuid UUID]

* ``grade`` (:mod:`autograder.commands.grade`): one notebook, a table per part or one JSON
  object (``--json``);
* ``grade-all`` (:mod:`autograder.commands.grade_all`): a class, into ``--out`` (and the
  nbgrader course of ``--course``), on this machine or a Dask cluster
  (:mod:`autograder.commands.cluster`);
* ``regrade`` (:mod:`autograder.commands.regrade`): the class's kept files again after a fix;
* ``export`` (:mod:`autograder.commands.export`): part 8 from the gradebook, the final feedback
  and the LMS files;
* ``similarity`` (:mod:`autograder.commands.similarity`): unusually alike submissions;
* ``cluster-certificates`` (:mod:`autograder.commands.cluster`): the cluster's TLS certificate;
* ``gradescope``, ``prairielearn`` (:mod:`autograder.commands.platforms`): the platforms'
  bundles.

Every command that grades or builds a bundle takes the course's limits, one option each,
generated from their one declaration (:mod:`autograder.core.course.limits`: ``--timeout``,
``--agent-cpu-seconds``, ``--sandbox-memory-bytes``...), and ``--settings FILE``, a course
settings file holding them (:mod:`autograder.commands.options`).

Exit status: 0 when every submission was graded, 1 when some could not be (listed on stderr),
2 for a usage error; 1 also when the scheduler cannot be reached or a worker cannot grade.
Text that came from a submission is printed without control characters.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autograder.commands import (
    cluster,
    export,
    grade,
    grade_all,
    platforms,
    regrade,
    similarity,
)
from autograder.core.isolation import SandboxUnavailable
from autograder.nbgrader.course import NbgraderError

__all__ = ["build_parser", "main"]

#: The commands' modules, in the order the help lists them.
COMMANDS = (grade, grade_all, regrade, export, similarity, cluster, platforms)
#: The paths a command may be given: made absolute first, since nbgrader changes the working
#: directory.
PATH_ARGUMENTS = ("path", "out", "source", "course", "roster", "certificates", "folder", "release")
PATH_ARGUMENTS += ("settings",)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m autograder``."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade A2C course notebooks in a sandbox with the hidden tests: one, a class (nbgrader records it), or on Gradescope, PrairieLearn or a Dask cluster.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an option the command does not have stops with that command's
    usage (argparse would print the top-level one), and the nearest option it has."""
    import difflib

    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        commands = next(
            action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
        )
        command = commands.choices[args.command]
        options = [name for action in command._actions for name in action.option_strings]
        guesses = [
            f"{word} (did you mean {close[0]}?)" if close else word
            for word in unknown
            for close in [difflib.get_close_matches(word.split("=")[0], options, n=1)]
        ]
        command.error(f"unrecognized arguments: {' '.join(guesses)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parse(argv)
    for name in PATH_ARGUMENTS:
        if getattr(args, name, None) is not None:
            setattr(args, name, getattr(args, name).resolve())
    try:
        return args.run(args)
    except ValueError as error:  # bad --timeout, --jobs, source notebook...
        print(f"error: {error}", file=sys.stderr)
        return 2
    except SandboxUnavailable as error:  # no bubblewrap and no --no-sandbox
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (NbgraderError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
