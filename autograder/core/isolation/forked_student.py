"""A student's first process forked from a template, as the grader sees it from outside.

The template reports the pid of each student's process in the template's own PID namespace;
:func:`host_pid` finds that process on the host (below the template's sandbox, by the last of
its ``NSpid``), so the grader can put it into the student's cgroup, meter its CPU and kill it
through a pidfd (:class:`ForkedStudent`, what :func:`.supervision.supervise` asks of a process:
``pid``, ``wait``, ``returncode``; its end comes from the template's report).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

__all__ = ["END_SECONDS", "ForkedStudent", "host_pid"]

END_SECONDS = 60.0  #: how long a killed student may take to end


def host_pid(ancestor: int, inner: int) -> int | None:
    """The host pid of the process below ``ancestor`` whose pid in the template's namespace
    (the last of ``NSpid``, of two) is ``inner``: the template's children are found through
    ``/proc/<pid>/task/<pid>/children``, a walk of the template's few processes."""
    todo, seen = [ancestor], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/status") as status:
                line = next(line for line in status if line.startswith("NSpid:"))
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                todo += [int(child) for child in children.read().split()]
        except (OSError, StopIteration, ValueError):
            continue
        ids = line.split()[1:]
        if len(ids) == 2 and ids[1] == str(inner):
            return pid
    return None


class ForkedStudent:
    """A student's first process as the grader sees it: what :func:`.supervision.supervise`
    asks of a process (``pid``, ``wait``, ``returncode``), from the template's reports."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.inner: int | None = None  #: its pid in the template's namespace
        self.pid: int | None = None  #: its pid on the host
        self.pidfd: int | None = None
        self.forked, self.ended = threading.Event(), threading.Event()
        self.status: int | None = None  #: its wait status, as the template saw it
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int | None:
        if not self.ended.wait(END_SECONDS if timeout is None else timeout):
            if timeout is not None:
                raise subprocess.TimeoutExpired("the student's process", timeout)
            return None
        status = self.status
        if status is None:  # the template ended under it
            self.returncode = -signal.SIGKILL
        elif os.WIFSIGNALED(status):
            self.returncode = -os.WTERMSIG(status)
        else:
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        """Kill the student's first process (its runner then gets SIGKILL too, and with the
        runner every process of the student's namespace ends)."""
        if self.pidfd is not None and not self.ended.is_set():
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
