"""This process's templates: one per view of the grader, started on first use, closed at exit.

A grading process (``grade``, ``grade-all``'s pool of threads, a Dask worker, ``regrade``)
keeps one :class:`~.template.Template` per view (the files the sandbox is shown, named by
their digest): every assessor of the process that shows the same files forks its students
from it. The first run that asks starts it (the others wait for it), a run that finds it ended
starts a new one, and a process keeps at most :data:`MAX_TEMPLATES` (the least recently used
idle one is closed for a new view). Where it cannot start, the reason is said once on standard
error and every run of that view starts afresh; ``A2C_TEMPLATE=off`` asks for that.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.isolation.contract import SandboxLimits, SandboxUnavailable
from autograder.core.isolation.template import Template

__all__ = [
    "MAX_TEMPLATES",
    "TEMPLATE_VARIABLE",
    "close_templates",
    "template_for",
    "wait_for_start",
]

TEMPLATE_VARIABLE = "A2C_TEMPLATE"  #: ``off``: every run starts afresh
MAX_TEMPLATES = 2  #: templates a process keeps (one per view of the grader)


@dataclasses.dataclass
class _Entry:
    ready: threading.Event = dataclasses.field(default_factory=threading.Event)
    template: Template | None = None
    failure: str = ""


_templates: dict[str, _Entry] = {}
_templates_lock = threading.Lock()


def template_for(
    key: str,
    bin_inside: str,
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    limits: SandboxLimits,
    modules: Sequence[str] = (),
    launched: threading.Event | None = None,
) -> Template | None:
    """This process's template for the grader's view ``key`` (a digest of what ``readonly``
    shows), started on first use (callers meanwhile wait for it), or again after it ended;
    ``None`` where it cannot be had here (the reason is said once on standard error), or when
    ``A2C_TEMPLATE`` is ``off``. ``launched`` is set once the template's process is started,
    at once when this call starts none."""
    if os.environ.get(TEMPLATE_VARIABLE, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    with _templates_lock:
        entry = _templates.get(key)
        starting = entry is None or (
            entry.ready.is_set() and entry.template is not None and not entry.template.alive
        )
        if starting:
            _make_room()
            entry = _templates[key] = _Entry()
    assert entry is not None
    if not starting:
        if launched is not None:
            launched.set()
        entry.ready.wait()
        return entry.template
    try:
        entry.template = Template(bin_inside, readonly, env, limits, modules, launched)
    except SandboxUnavailable as error:
        entry.failure = str(error)
        print(f"grading without a template (each student's Python starts afresh): {error}",
              file=sys.stderr)  # fmt: skip
    finally:
        entry.ready.set()
    return entry.template


def wait_for_start(key: str, timeout: float) -> None:
    """Return once the start of this process's template for ``key`` is over (ready or failed),
    at once when none was begun, or after ``timeout`` seconds."""
    with _templates_lock:
        entry = _templates.get(key)
    if entry is not None:
        entry.ready.wait(timeout)


def _make_room() -> None:
    """Close the least recently used idle template when :data:`MAX_TEMPLATES` are kept."""
    kept = [(e.template.used, key) for key, e in _templates.items() if e.template is not None]
    if len(kept) < MAX_TEMPLATES:
        return
    for _, key in sorted(kept):
        template = _templates[key].template
        if template is not None and not template.busy:
            del _templates[key]
            template.close()
            return


@atexit.register
def close_templates() -> None:
    """Close every template of this process (at its exit, or when a test wants a fresh one)."""
    with _templates_lock:
        entries = list(_templates.values())
        _templates.clear()
    for entry in entries:
        if entry.template is not None:
            entry.template.close()
