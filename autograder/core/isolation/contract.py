"""What every isolation mode takes and gives: the limits of a run, its result, the refusal.

:func:`autograder.core.isolation.modes.run_isolated` runs a grading job in bubblewrap
(:mod:`.bubblewrap`), as a fresh user in a container (:mod:`.container`) or, on request, as a
plain process (:mod:`.unsandboxed`); each takes :class:`SandboxLimits`, returns a
:class:`SandboxResult` and raises :class:`SandboxUnavailable` when it cannot hold here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEFAULT_LIMITS", "SandboxLimits", "SandboxResult", "SandboxUnavailable"]


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot start here, and running without it was not asked for."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use."""

    memory_bytes: int = 4 * 1024**3  #: the whole run, /tmp and scratch included (cgroup)
    address_space_bytes: int = 12 * 1024**3  #: each process (RLIMIT_AS)
    processes: int = 256  #: tasks (processes and threads) of the whole run
    scratch_bytes: int = 512 * 1024**2  #: the in-memory working folder
    tmp_bytes: int = 512 * 1024**2  #: the in-memory /tmp
    file_bytes: int = 256 * 1024**2  #: one file (RLIMIT_FSIZE)
    channel_bytes: int = 256 * 1024**2  #: what the grader keeps of the channel
    log_bytes: int = 8000  #: the end of the output the grader keeps
    #: CPU seconds of the whole run, every process it started counted (:mod:`.cpu_meter`); the
    #: run is stopped when it has used them; None: no cap
    cpu_seconds: float | None = None


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
