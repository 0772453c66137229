"""The command line of ``python -m solutions.train``, generated from the configuration dataclasses.

Every field of :class:`~solutions.config.A2CConfig` and :class:`~solutions.config.RunOptions`
becomes one option: ``--field-name`` (or the field's ``metadata["option"]``), its type from the
annotation, its help from the docstring under the field, and its default from the field itself,
so a default is written once, in ``solutions/config.py``. A boolean field that defaults to
``True`` becomes ``--no-<name>``, one that defaults to ``False`` a plain flag.

Options of :class:`A2CConfig` default to "not given" (``None``), so that a resumed run can tell
what the user changed from what the checkpoint holds (:func:`config_from_args`).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
from collections.abc import Sequence
from functools import cache
from typing import Any

from .config import RESUME_MAY_CHANGE, A2CConfig, RunOptions

__all__ = ["build_parser", "config_from_args", "integer", "run_options", "run_options_argv"]


def integer(minimum: int):
    """An argparse type: an integer >= ``minimum``; accepts ``1e6`` for step budgets."""
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = float(text) if "e" in text.lower() else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < minimum or value != int(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return int(value)

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of the dataclass ``cls``, first sentence, one line."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            text = " ".join(following.value.value.split()).replace("``", "")
            text = text.split(". ")[0].rstrip(".")
            if text[1:2].islower():  # "Output folder" -> "output folder", "ALE id" stays
                text = text[:1].lower() + text[1:]
            docs[node.target.id] = text
    return docs


def option_name(field: dataclasses.Field) -> str:
    return field.metadata.get("option", field.name).replace("_", "-")


def _add_field(
    parser: argparse.ArgumentParser, cls: type, field: dataclasses.Field, given_only: bool
) -> None:
    flag, default = "--" + option_name(field), field.default
    help_text = field_docs(cls).get(field.name, "")
    if field.type == "bool":
        if default:
            off_help = field.metadata.get("off_help", f"turn off (on by default): {help_text}")
            parser.add_argument(f"--no-{option_name(field)}", dest=field.name,
                                action="store_false", help=off_help)  # fmt: skip
        else:
            parser.add_argument(flag, dest=field.name, action="store_true", help=help_text)
        return
    base = field.type.replace(" | None", "")
    kind = {"int": integer(field.metadata.get("min", 1)), "float": float, "str": str}[base]
    shown = f"{default:,}" if isinstance(default, int) and default >= 10_000 else default
    help_text += f" (default: {shown})" if default is not None else ""
    metavar = field.metadata.get("metavar") or {"int": "N", "float": "X"}.get(
        base, field.name.upper()
    )
    parser.add_argument(flag, dest=field.name, type=kind, metavar=metavar,
                        default=None if given_only else default, help=help_text)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m solutions.train``."""
    parser = argparse.ArgumentParser(
        prog="python -m solutions.train",
        usage="python -m solutions.train [--env ENV_ID] [--steps N] [--out DIR] [--resume] [options]",
        description="Train the reference A2C on an Atari game (the course's hyperparameters by "
        "default). Ctrl-C saves a checkpoint; --resume continues it.",
    )
    run = parser.add_argument_group("run")
    for field in dataclasses.fields(RunOptions):
        _add_field(run, RunOptions, field, given_only=False)
    config = parser.add_argument_group("configuration (kept in the checkpoint)")
    for field in dataclasses.fields(A2CConfig):
        _add_field(config, A2CConfig, field, given_only=True)
    return parser


def run_options(args: argparse.Namespace) -> RunOptions:
    """The :class:`RunOptions` of parsed ``args``."""
    return RunOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(RunOptions)})


def config_from_args(args: argparse.Namespace, saved: A2CConfig | None = None) -> A2CConfig:
    """The config of parsed ``args``: defaults + given options, or ``saved`` (a checkpoint's
    config, when resuming) + the given options of :data:`~solutions.config.RESUME_MAY_CHANGE`.

    Raises:
        ValueError: a bad value, or an option that differs from ``saved`` and may not change.
    """
    fields = dataclasses.fields(A2CConfig)
    given = {f.name: getattr(args, f.name) for f in fields if getattr(args, f.name) is not None}
    if saved is None:
        return A2CConfig(**given)
    for field in fields:
        value = given.get(field.name)
        if (
            field.name in given
            and field.name not in RESUME_MAY_CHANGE
            and value != getattr(saved, field.name)
        ):
            raise ValueError(
                f"--{option_name(field)} {value!r} differs from the checkpoint's "
                f"{getattr(saved, field.name)!r}; a resumed run may only change "
                f"{', '.join(sorted(RESUME_MAY_CHANGE))}. Drop the option or use another --out."
            )
    changes = {k: v for k, v in given.items() if k in RESUME_MAY_CHANGE}
    return dataclasses.replace(saved, **changes)


def run_options_argv(run: RunOptions, skip: Sequence[str] = ("out", "resume")) -> list[str]:
    """The options that give ``run`` again, less ``skip`` and the defaults (for the resume hint)."""
    argv: list[str] = []
    for field in dataclasses.fields(RunOptions):
        value: Any = getattr(run, field.name)
        if field.name in skip or value == field.default:
            continue
        if field.type == "bool":
            argv.append(f"--{'no-' if field.default else ''}{option_name(field)}")
        else:
            argv += [f"--{option_name(field)}", str(value)]
    return argv
