"""The options of the commands that grade or build a bundle: the course's limits (generated from
their one declaration, :mod:`autograder.core.course.limits`), a course settings file, the source
notebook, the sandbox."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograder.core.course.limits import Limits, Setting, option_name, settings, shown
from solutions.parts import SOURCE_NOTEBOOK

__all__ = ["add_grading_options", "add_limit_options", "limits_of"]


def add_grading_options(sub: argparse.ArgumentParser) -> None:
    """The course's limits, ``--settings``, ``--source`` and ``--no-sandbox`` on ``sub``."""
    add_limit_options(sub)
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


def _dest(item: Setting) -> str:
    return option_name(item)[2:].replace("-", "_")


def add_limit_options(sub: argparse.ArgumentParser) -> None:
    """``--settings FILE`` and an option for every limit of the course (``--timeout``,
    ``--agent-cpu-seconds``, ...), each with its declared description and default."""
    group = sub.add_argument_group(
        "the course's limits",
        'each also in a course settings file (--settings), e.g. {"cell": {"timeout": 60}, '
        '"agent": {"cpu_seconds": 10}}; the command line wins',
    )
    group.add_argument(
        "--settings",
        type=Path,
        default=None,
        metavar="FILE",
        help="a course settings file (JSON): {group: {limit: value}} with the limits below",
    )
    for item in settings():
        default = shown(item.default)
        group.add_argument(
            option_name(item),
            dest=_dest(item),
            type=float,
            default=None,
            metavar="N",
            help=f"{item.description} (default: {default}; {item.key} in --settings)".replace(
                "%", "%%"
            ),
        )


def limits_of(args: argparse.Namespace) -> Limits:
    """The course's limits as the command gives them, read once: the declared defaults, the
    settings file's (``--settings``), then the options given. Raises ``ValueError`` naming the
    setting for a bad value."""
    limits = Limits.from_file(args.settings) if getattr(args, "settings", None) else Limits()
    given = {item.key: getattr(args, _dest(item), None) for item in settings()}
    changes = {key: value for key, value in given.items() if value is not None}
    return limits.with_changes(changes)
