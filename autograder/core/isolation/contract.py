"""What every isolation mode takes and gives: the limits of a run, its result, the refusal.

:func:`autograder.core.isolation.modes.run_isolated` runs a grading job in bubblewrap
(:mod:`.bubblewrap`), as a fresh user in a container (:mod:`.container`) or, on request, as a
plain process (:mod:`.unsandboxed`); each takes :class:`SandboxLimits`, returns a
:class:`SandboxResult` and raises :class:`SandboxUnavailable` when it cannot hold here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_LIMITS", "SandboxLimits", "SandboxResult", "SandboxUnavailable"]


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot start here, and running without it was not asked for."""


def _limit(default: int, description: str) -> Any:
    """A field of :class:`SandboxLimits` with its description (the course's settings read it:
    :mod:`autograder.core.course.limits`)."""
    return field(default=default, metadata={"description": description, "at_least": 1})


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use."""

    memory_bytes: int = _limit(
        4 * 1024**3, "bytes of memory the whole run may use, /tmp and scratch included (cgroup)"
    )
    address_space_bytes: int = _limit(
        12 * 1024**3, "bytes of address space each process of the run may map (RLIMIT_AS)"
    )
    processes: int = _limit(
        256, "tasks (processes and threads) the whole run may have at once"
    )
    scratch_bytes: int = _limit(512 * 1024**2, "bytes of the run's in-memory working folder")
    tmp_bytes: int = _limit(512 * 1024**2, "bytes of the run's in-memory /tmp")
    file_bytes: int = _limit(256 * 1024**2, "bytes one file the run writes may have (RLIMIT_FSIZE)")
    channel_bytes: int = _limit(
        256 * 1024**2, "bytes of results the grader keeps of a run's channel (more is tampering)"
    )
    log_bytes: int = _limit(8000, "bytes of the end of a run's output the grader keeps")
    cpu_seconds: float | None = field(
        default=None,
        metadata={
            "description": "CPU seconds of the whole run, every process it starts counted "
            "(cpu_meter.py): the run is stopped when it has used them; none: its budget's, for "
            "the threads it is given and its start",
            "at_least": 1,
        },
    )


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxResult:
    """How the command ended, and what came out of it."""

    returncode: int | None  #: None when it was killed at the wall-clock limit
    timed_out: bool
    seconds: float
    sandboxed: bool
    output: str  #: the end of its stdout and stderr
    channel: list[bytes] = field(default_factory=list)  #: the channel's lines, as read
    channel_overflow: bool = False  #: the channel sent more than ``channel_bytes``
    limits: str = ""  #: which limits held (cgroup or per-process only)
    uid: int | None = None  #: the host user id the run had (a grader started as root)
    wall_seconds: float = 0.0  #: the wall clock it ran under
    #: how the command was isolated: "bubblewrap", "container" (a fresh user, see
    #: :mod:`autograder.core.isolation.container`) or "none"
    isolation: str = "bubblewrap"
    cpu_seconds: float = 0.0  #: CPU the run used, every process counted (as last read)
    cpu_capped: bool = False  #: stopped because it used up ``SandboxLimits.cpu_seconds``
