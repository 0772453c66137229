"""Every limit of a course's grading, declared once: its name, its default and what it does.

The limits come in four groups, each a frozen dataclass of plain numbers, together
:class:`Limits`:

* :class:`CellLimits` (``cell``): what one cell of a notebook, or one part's probes, may take;
* :class:`NotebookLimits` (``notebook``): what a notebook's whole run may take;
* :class:`~autograder.core.isolation.contract.SandboxLimits` (``sandbox``): what the sandbox
  gives a run: memory, processes, files, the CPU of every process it starts, the channel;
* :class:`AgentLimits` (``agent``): what playing a saved agent may cost.

Each field declares its default and, in its metadata (:func:`setting`), a description and the
least value it takes. Every way in names a limit the same way: ``cell.timeout`` is the command
line's ``--timeout`` (:func:`option_name`), ``{"cell": {"timeout": 60}}`` in a course settings
file (:meth:`Limits.from_file`), ``"timeout"`` in the job the sandbox runs; ``agent.cpu_seconds``
is ``--agent-cpu-seconds``. A :class:`Limits` checks itself when it is made: a value of the wrong
kind or out of range is a ``ValueError`` that names the setting, what it takes and its default.
It travels as plain data (:meth:`Limits.to_plain`, :meth:`Limits.from_plain`): to Dask workers
and inside the Gradescope and PrairieLearn bundles.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from autograder.core.isolation.contract import SandboxLimits

__all__ = [
    "GROUPS",
    "AgentLimits",
    "CellLimits",
    "Limits",
    "NotebookLimits",
    "SandboxLimits",
    "Setting",
    "option_name",
    "setting",
    "settings",
    "shown",
]

#: The options that keep their own short name (every other is ``--<group>-<name>``).
SHORT_OPTIONS = {"cell.timeout": "--timeout"}
#: The largest course settings file read (it holds a few numbers).
MAX_FILE_BYTES = 64 * 1024


def setting(default: Any, description: str, at_least: float = 0.0, above: bool = False) -> Any:
    """A limit's field: its ``default`` and ``description``; the least value it takes
    (``at_least``; ``above``: strictly more than it)."""
    return field(
        default=default,
        metadata={"description": description, "at_least": at_least, "above": above},
    )


@dataclass(frozen=True)
class CellLimits:
    """What one cell may take."""

    timeout: float = setting(
        120.0,
        "seconds one cell of the notebook (or one part's probes) may run; a notebook's whole run "
        "gets one such limit and the reserve (notebook.reserve_seconds)",
        at_least=1.0,
    )


@dataclass(frozen=True)
class NotebookLimits:
    """What a notebook's whole run may take."""

    reserve_seconds: float = setting(
        60.0,
        "seconds a notebook's whole run may take besides one cell's limit (times the machine's "
        "time scale): the set-up, the definitions and the probes of an honest notebook take a "
        "few seconds",
    )
    wall_seconds: float = setting(
        900.0,
        "seconds a whole sandboxed run may take at most, its start and end included (a run is "
        "stopped at its own budget well before)",
        at_least=1.0,
    )


@dataclass(frozen=True)
class AgentLimits:
    """What playing one saved agent may cost."""

    cpu_seconds: float = setting(
        20.0,
        "CPU seconds the grader may spend playing one saved agent (the emulators and the "
        "network); the games finished by then are its verified score",
        above=True,
    )


#: The groups of :class:`Limits`, by the name a setting is given under.
GROUPS: dict[str, type] = {
    "cell": CellLimits,
    "notebook": NotebookLimits,
    "sandbox": SandboxLimits,
    "agent": AgentLimits,
}


@dataclass(frozen=True)
class Setting:
    """One limit as the command line and the settings file name it."""

    group: str
    name: str
    default: Any
    description: str

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"


def settings() -> Iterator[Setting]:
    """Every limit, in declaration order."""
    for group, kind in GROUPS.items():
        for item in fields(kind):
            description = item.metadata.get("description", "")
            yield Setting(group, item.name, item.default, description)


def shown(value: Any) -> str:
    """A limit's value as people read it: ``120``, ``4294967296``, ``no limit`` for None."""
    if value is None:
        return "no limit"
    return str(value) if isinstance(value, int) else f"{value:g}"


def option_name(item: Setting) -> str:
    """The command line's option of a limit: ``--timeout``, ``--agent-cpu-seconds``..."""
    return SHORT_OPTIONS.get(item.key, f"--{item.group}-{item.name}".replace("_", "-"))


def _checked(value: Any, item: Any, name: str) -> Any:
    """``value`` of the field ``item`` (a number within its range, or None where its default is
    None), or a ``ValueError`` that names the setting ``name``."""
    if value is None and item.default is None:
        return None
    least = float(item.metadata.get("at_least", 0.0))
    above = bool(item.metadata.get("above", False))
    whole = isinstance(item.default, int) and not isinstance(item.default, bool)
    kind = "a whole number" if whole else "a number"
    bound = f"more than {least:g}" if above else f">= {least:g}"
    default = shown(item.default)
    option = option_name(Setting(*name.split(".", 1), item.default, ""))
    wrong = ValueError(
        f"{name} must be {kind} {bound}, got {value!r} ({option}: "
        f"{item.metadata.get('description', item.name)}); leave it out for the default, "
        f"{default}."
    )
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise wrong
    if not math.isfinite(value) or (whole and value != int(value)):
        raise wrong
    if value < least or (above and value == least):
        raise wrong
    return int(value) if whole else float(value)


@dataclass(frozen=True)
class Limits:
    """The course's limits, every group (see the module docstring)."""

    cell: CellLimits = CellLimits()
    notebook: NotebookLimits = NotebookLimits()
    sandbox: SandboxLimits = SandboxLimits()
    agent: AgentLimits = AgentLimits()

    def __post_init__(self) -> None:
        for group in GROUPS:
            values = getattr(self, group)
            for item in fields(values):
                _checked(getattr(values, item.name), item, f"{group}.{item.name}")

    def to_plain(self) -> dict[str, dict[str, Any]]:
        """Every limit, ``{group: {name: value}}`` (JSON)."""
        return {
            group: {item.name: getattr(getattr(self, group), item.name) for item in fields(kind)}
            for group, kind in GROUPS.items()
        }

    @classmethod
    def from_plain(cls, data: Any, where: str = "the course's limits") -> Limits:
        """The limits ``data`` gives (``{group: {name: value}}``; a limit it leaves out keeps
        its default). Raises ``ValueError`` naming ``where`` and the setting for an unknown
        group or setting, or a value out of range."""
        return cls().with_changes(_flat(data, where), where)

    @classmethod
    def from_file(cls, path: Path) -> Limits:
        """The limits of a course settings file (JSON: ``{"cell": {"timeout": 60}}``)."""
        path = Path(path)
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise ValueError(f"the course settings file {path} cannot be read: {error}") from None
        where = f"the course settings file {path}"
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"{where} is larger than {MAX_FILE_BYTES} bytes: it holds limits")
        try:
            data = json.loads(raw)
        except ValueError as error:
            raise ValueError(
                f"{where} is not JSON ({error}): write it as "
                '{"cell": {"timeout": 60}, "agent": {"cpu_seconds": 10}}'
            ) from None
        return cls.from_plain(data, where)

    def with_changes(self, changes: Mapping[str, Any], where: str = "") -> Limits:
        """These limits with ``changes`` (``{"cell.timeout": 60}``), checked; ``where``: who
        gave them, for the error."""
        known = {item.key: item for item in settings()}
        groups: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        for key, value in changes.items():
            if key not in known:
                raise ValueError(
                    f"{where + ': ' if where else ''}there is no setting {key!r}; the limits "
                    f"are {', '.join(known)}"
                )
            group, name = key.split(".", 1)
            item = next(item for item in fields(GROUPS[group]) if item.name == name)
            try:
                groups[group][name] = _checked(value, item, key)
            except ValueError as error:
                raise ValueError(f"{where}: {error}" if where else str(error)) from None
        return replace(
            self, **{group: replace(getattr(self, group), **values)
                     for group, values in groups.items() if values}
        )  # fmt: skip


def _flat(data: Any, where: str) -> dict[str, Any]:
    """``{group: {name: value}}`` as ``{"group.name": value}``."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where} must map each group ({', '.join(GROUPS)}) to its limits")
    flat = {}
    for group, values in data.items():
        if group not in GROUPS:
            raise ValueError(
                f"{where}: there is no group {group!r} of limits; they are {', '.join(GROUPS)}"
            )
        if not isinstance(values, Mapping):
            raise ValueError(f"{where}: {group} must map each of its limits to a value")
        flat.update({f"{group}.{name}": value for name, value in values.items()})
    return flat
