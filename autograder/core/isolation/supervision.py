"""Start a job, feed it, read it and end it: what every isolation mode shares.

What goes in and out of a run are pipes, never files: the job's standard input, its output and
errors (the log: the grader keeps the end of it) and a *channel*, a pipe whose write end the
job finds at the file descriptor named by :data:`CHANNEL_VARIABLE`. :func:`supervise` starts
the command in a session of its own, reads both pipes with a size cap while it runs, ends
everything it started at the wall clock or once the run used its CPU cap (every process it
started counted, :mod:`.cpu_meter`), and on any error of its own, and says how it ended
(:class:`RunEnd`). :func:`apply_limits` sets the per-process limits in the child before
``exec``; :func:`in_sandbox_limits` the ones that must be set inside a sandbox's own user
namespace;
:func:`through_root_launcher` starts a command through :mod:`.root_launcher` (root's private
mount namespace, then an unprivileged user), its plan on a pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core.isolation.cgroups import Cgroup
from autograder.core.isolation.contract import SandboxLimits
from autograder.core.isolation.cpu_meter import INTERVAL, CpuMeter

__all__ = [
    "CHANNEL_VARIABLE",
    "LAUNCHER",
    "PROCESS_START_LOCK",
    "JobInput",
    "Pipes",
    "Reader",
    "RunEnd",
    "apply_limits",
    "in_sandbox_limits",
    "start_process",
    "supervise",
    "through_root_launcher",
    "write_all",
]

CHANNEL_VARIABLE = "A2C_CHANNEL_FD"
#: Held while a run's or a template's process is started with ``preexec_fn`` (a fork that runs
#: Python in the child: CPython takes the import lock and the at-fork hooks' locks, logging's
#: among them, first; :func:`start_process`) and by whatever imports modules in the background
#: of a grading process (:meth:`autograder.core.assessor.Assessor.wait_for_imports`): a fork
#: begun while another thread was half-way through an import that wanted logging's lock waited
#: for each other for good (two gradings at once in container mode, Python 3.11).
PROCESS_START_LOCK = threading.Lock()
LAUNCHER = Path(__file__).resolve().with_name("root_launcher.py")


class Reader(threading.Thread):
    """Drains a pipe; keeps whole lines up to ``cap`` bytes (or just the end, ``tail=True``)."""

    def __init__(self, fd: int, cap: int, tail: bool = False) -> None:
        super().__init__(daemon=True)
        self.fd, self.cap, self.tail = fd, cap, tail
        self.data = bytearray()
        self.overflow = False

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 20):
                if self.tail:
                    self.data += chunk
                    del self.data[: max(0, len(self.data) - self.cap)]
                elif len(self.data) + len(chunk) <= self.cap:
                    self.data += chunk
                else:
                    self.overflow = True  # keep draining, so the writer never blocks
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def lines(self) -> list[bytes]:
        lines = bytes(self.data).split(b"\n")
        return lines[:-1]  # the last piece is empty or an unfinished line


def write_all(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except OSError:
        pass  # the command ended without reading everything


class Pipes:
    """A run's three pipes: its channel and its log (read here), its stdin (written here).
    ``keep`` lists the descriptors the command keeps (``pass_fds``): the channel's write end,
    and whatever a launcher adds."""

    def __init__(self) -> None:
        self.channel_read, self.channel_write = os.pipe()
        self.log_read, self.log_write = os.pipe()
        self.stdin_read, self.stdin_write = os.pipe()
        self.keep = [self.channel_write]
        self.started = False  #: the command started: the other ends are the readers' now

    def close_kept(self) -> None:
        """Close the command's ends that are still open here (after it started, or failed to)."""
        for fd in self.keep:
            os.close(fd)
        self.keep = []

    def close(self) -> None:
        """Close every end still open here: after a run, or when it failed before starting."""
        self.close_kept()
        if not self.started:  # else the readers and the writer own (and close) their ends
            ends = (self.channel_read, self.log_read, self.log_write)
            for fd in (*ends, self.stdin_read, self.stdin_write):
                os.close(fd)
            self.started = True  # closed once


class JobInput:
    """A job given after its run started: the command starts (its Python imports) while the
    grader is still drawing the plan, and :meth:`give` sends the job with the wall clock and
    the CPU cap that count from then on. Until it is given the run may wait
    :data:`WAIT_SECONDS`, with no CPU cap (it runs nothing of a student's yet)."""

    WAIT_SECONDS = 600.0

    def __init__(self) -> None:
        self._given = threading.Event()
        #: set once the run's process is started and waits for its job (or the run ended)
        self.waiting = threading.Event()
        self.data = b""
        self.given_at: float | None = None  #: when the job was given (time.monotonic)
        self.wall_seconds = self.WAIT_SECONDS
        self.cpu_seconds: float | None = None

    def give(self, data: bytes, wall_seconds: float, cpu_seconds: float | None) -> None:
        self.data, self.wall_seconds, self.cpu_seconds = data, wall_seconds, cpu_seconds
        self.given_at = time.monotonic()
        self._given.set()

    def write(self, fd: int) -> None:
        """Write the job to ``fd`` once it is given (an empty one when the run ends first)."""
        self.waiting.set()
        self._given.wait()
        write_all(fd, self.data)

    def withdraw(self) -> None:
        """Nothing will be given: the run reads an empty job and ends."""
        if not self._given.is_set():
            self._given.set()


@dataclass
class RunEnd:
    """How a supervised command ended (:func:`supervise`)."""

    returncode: int | None
    timed_out: bool
    seconds: float
    output: str
    channel: list[bytes]
    channel_overflow: bool
    cpu_seconds: float = 0.0  #: the run's CPU as last read, every process counted
    cpu_capped: bool = False  #: stopped because it used up its CPU cap


def start_process(**popen: Any) -> subprocess.Popen:
    """``subprocess.Popen(**popen)`` under :data:`PROCESS_START_LOCK`: every process a grading
    process starts with a ``preexec_fn`` (a run's, a template's) goes through here."""
    with PROCESS_START_LOCK:
        return subprocess.Popen(**popen)


def supervise(
    pipes: Pipes,
    popen: dict[str, Any] | Callable[[Pipes], Any],
    stdin: bytes | JobInput,
    wall_seconds: float,
    limits: SandboxLimits,
    cgroup: Cgroup,
    stop: Callable[[subprocess.Popen], None],
    meter: CpuMeter | None = None,
) -> RunEnd:
    """Start ``subprocess.Popen(**popen)`` in a session of its own on ``pipes`` (or the process
    ``popen(pipes)`` starts: anything with ``pid``, ``wait(timeout)`` and ``returncode``, such
    as a student forked from a template), feed it ``stdin`` (a :class:`JobInput`: once it is
    given, with its own clock and cap), read its channel and log up to the caps, and end it at
    ``wall_seconds``, or once it has used ``limits.cpu_seconds`` of CPU (read by ``meter`` every
    :data:`~.cpu_meter.INTERVAL` seconds, every process it started counted): ``stop(process)``
    kills everything it started, whether it finished or not, and whatever went wrong here after
    it started (nothing outlives grading), then its cgroup goes. A process that escaped could
    hold the pipes open: the readers are waited for a little, no more."""
    start = time.monotonic()
    if callable(popen):
        process = popen(pipes)
    else:
        process = start_process(
            **popen,
            stdin=pipes.stdin_read,
            stdout=pipes.log_write,
            stderr=pipes.log_write,
            pass_fds=pipes.keep,
            start_new_session=True,
        )
    pipes.started = True
    timed_out = capped = False
    cap = None if isinstance(stdin, JobInput) else limits.cpu_seconds
    meter = meter or CpuMeter(cgroup.cpu_seconds, root=process.pid)
    used = 0.0
    log = channel = None
    try:
        for fd in (pipes.stdin_read, pipes.log_write):
            os.close(fd)
        pipes.close_kept()
        log = Reader(pipes.log_read, limits.log_bytes, tail=True)
        log.start()
        channel = Reader(pipes.channel_read, limits.channel_bytes)
        channel.start()
        if isinstance(stdin, JobInput):
            writer = threading.Thread(target=stdin.write, args=(pipes.stdin_write,), daemon=True)
        else:
            writer = threading.Thread(target=write_all, args=(pipes.stdin_write, stdin), daemon=True)
        writer.start()
        while True:
            if isinstance(stdin, JobInput):  # the clock and the cap given with the job
                start = stdin.given_at or start
                wall_seconds, cap = stdin.wall_seconds, stdin.cpu_seconds
            left = wall_seconds - (time.monotonic() - start)
            if left <= 0:
                timed_out = True
                break
            try:
                process.wait(timeout=min(INTERVAL, left))
                break
            except subprocess.TimeoutExpired:
                pass
            if cap is not None:
                used = meter()
                if used >= cap:
                    capped = True
                    break
    finally:
        if isinstance(stdin, JobInput):
            stdin.withdraw()
        try:
            used = max(used, meter()) if cap is not None else used
        except Exception:  # noqa: BLE001 - a figure; the run is stopped whatever happens
            pass
        stop(process)
        process.wait()
        cgroup.remove()
    if channel.is_alive():
        channel.join(timeout=10)
    log.join(timeout=2)
    return RunEnd(
        returncode=None if (timed_out or capped) else process.returncode,
        timed_out=timed_out,
        seconds=time.monotonic() - start,
        output=bytes(log.data).decode("utf-8", "replace"),
        channel=channel.lines(),
        channel_overflow=channel.overflow,
        cpu_seconds=used,
        cpu_capped=capped,
    )


def apply_limits(
    limits: SandboxLimits, cgroup: Cgroup, per_user: bool = True
) -> None:  # runs in the child, before exec
    """The per-process limits, and the run's task limit where it is counted for the run's own
    user id (``per_user``: a grader started as root gives each run a fresh one). A grader that is
    not root shares its user id with every sandbox it starts, so there the task limit is set
    inside each sandbox's own user namespace instead (:func:`in_sandbox_limits`)."""
    import resource

    cgroup.join()
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if per_user:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)


#: Sets ``RLIMIT_NPROC`` (soft and hard, which the sandbox cannot raise) then runs its command.
_NPROC_SHIM = (
    "import os, resource, sys; n = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); os.execv(sys.argv[2], sys.argv[2:])"
)


def in_sandbox_limits(limits: SandboxLimits, python: str, argv: list[str]) -> list[str]:
    """``argv`` preceded by a step, run inside the sandbox, that caps its tasks at
    ``limits.processes``. Since Linux 5.14 ``RLIMIT_NPROC`` counts a user's tasks per user
    namespace, each level against its own limit: set inside the sandbox's namespace, the cap is
    the run's alone, while the grader's user keeps its own limit for the next sandbox. Set on
    bubblewrap itself, as before, one run's threads counted against every sandbox of a grader
    that is not root (the next one could not start: ``bwrap: Creating new namespace failed``)."""
    return [python, "-I", "-S", "-c", _NPROC_SHIM, str(limits.processes), *argv]


def through_root_launcher(launch: dict[str, Any], argv: list[str], keep: list[int]) -> list[str]:
    """The command that starts ``argv`` through :mod:`autograder.core.isolation.root_launcher` as root: its
    plan goes on a pipe (whose read end is added to ``keep``), never on a command line."""
    plan_read, plan_write = os.pipe()
    keep.append(plan_read)
    plan = json.dumps({**launch, "argv": argv}).encode()
    threading.Thread(target=write_all, args=(plan_write, plan), daemon=True).start()
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(plan_read)]
