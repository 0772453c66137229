"""Start a job, feed it, read it and end it: what every isolation mode shares.

What goes in and out of a run are pipes, never files: the job's standard input, its output and
errors (the log: the grader keeps the end of it) and a *channel*, a pipe whose write end the
job finds at the file descriptor named by :data:`CHANNEL_VARIABLE`. :func:`supervise` starts
the command in a session of its own, reads both pipes with a size cap while it runs (or, for a
:data:`Conversation`, lets the grader hold a dialogue on them), ends everything it started at
the wall clock, and says how it ended (:class:`RunEnd`).
:func:`apply_limits` sets the per-process limits in the child before ``exec``;
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

__all__ = [
    "CHANNEL_VARIABLE",
    "CONVERSATION_GRACE",
    "Conversation",
    "LAUNCHER",
    "Pipes",
    "Reader",
    "RunEnd",
    "apply_limits",
    "supervise",
    "through_root_launcher",
    "write_all",
]

CHANNEL_VARIABLE = "A2C_CHANNEL_FD"
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


#: Instead of fixed ``stdin`` bytes, a run may hold a conversation: called in the grader's
#: thread with the write end of the command's standard input and the read end of its channel
#: (it owns and closes both), it sends requests and reads answers within its own time limits
#: (:mod:`autograder.core.agent_play`); the run's ``channel`` is then empty. A conversation
#: with a ``watch`` method is first handed a function that returns the run's CPU seconds so far,
#: measured from outside (its cgroup), or ``None`` where there is no such measure.
Conversation = Callable[[int, int], None]
CONVERSATION_GRACE = 5.0  #: seconds a command gets to exit once its conversation is over


@dataclass
class RunEnd:
    """How a supervised command ended (:func:`supervise`)."""

    returncode: int | None
    timed_out: bool
    seconds: float
    output: str
    channel: list[bytes]
    channel_overflow: bool


def supervise(
    pipes: Pipes,
    popen: dict[str, Any],
    stdin: bytes | Conversation,
    wall_seconds: float,
    limits: SandboxLimits,
    cgroup: Cgroup,
    stop: Callable[[subprocess.Popen], None],
) -> RunEnd:
    """Start ``subprocess.Popen(**popen)`` in a session of its own on ``pipes``, feed it
    ``stdin`` (or hold the :data:`Conversation`), read its channel and log up to the caps, and end it at ``wall_seconds``:
    ``stop(process)`` kills everything it started, whether it finished or not (nothing
    outlives grading), then its cgroup goes. A process that escaped could hold the pipes open:
    the readers are waited for a little, no more."""
    start = time.monotonic()
    process = subprocess.Popen(
        **popen,
        stdin=pipes.stdin_read,
        stdout=pipes.log_write,
        stderr=pipes.log_write,
        pass_fds=pipes.keep,
        start_new_session=True,
    )
    pipes.started = True
    for fd in (pipes.stdin_read, pipes.log_write):
        os.close(fd)
    pipes.close_kept()
    log = Reader(pipes.log_read, limits.log_bytes, tail=True)
    log.start()
    channel = Reader(-1, 0)
    if callable(stdin):
        watch = getattr(stdin, "watch", None)  # a conversation that caps the run's CPU
        if callable(watch):
            watch(cgroup.cpu_seconds)
        stdin(pipes.stdin_write, pipes.channel_read)
        # The conversation is over: the command has a few seconds to exit, no more.
        wall_seconds = min(wall_seconds, time.monotonic() - start + CONVERSATION_GRACE)
    else:
        channel = Reader(pipes.channel_read, limits.channel_bytes)
        channel.start()
        threading.Thread(target=write_all, args=(pipes.stdin_write, stdin), daemon=True).start()
    timed_out = False
    try:
        process.wait(timeout=max(0.0, wall_seconds - (time.monotonic() - start)))
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        stop(process)
        process.wait()
        cgroup.remove()
    if channel.is_alive():
        channel.join(timeout=10)
    log.join(timeout=2)
    return RunEnd(
        returncode=None if timed_out else process.returncode,
        timed_out=timed_out,
        seconds=time.monotonic() - start,
        output=bytes(log.data).decode("utf-8", "replace"),
        channel=channel.lines(),
        channel_overflow=channel.overflow,
    )


def apply_limits(limits: SandboxLimits, cgroup: Cgroup) -> None:  # runs in the child, before exec
    import resource

    cgroup.join()
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per user id: the run's own fresh user id when the grader is root (root ignores it).
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)


def through_root_launcher(launch: dict[str, Any], argv: list[str], keep: list[int]) -> list[str]:
    """The command that starts ``argv`` through :mod:`autograder.core.isolation.root_launcher` as root: its
    plan goes on a pipe (whose read end is added to ``keep``), never on a command line."""
    plan_read, plan_write = os.pipe()
    keep.append(plan_read)
    plan = json.dumps({**launch, "argv": argv}).encode()
    threading.Thread(target=write_all, args=(plan_write, plan), daemon=True).start()
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(plan_read)]
