"""A user's processes on this machine: whether one has ended, and killing every one of them.

Each run has a user id of its own (:mod:`.leases`); before the id goes to another run, every
process of that user is killed, so that nothing a notebook left running meets the next one.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["ended", "kill_user_processes", "processes_of"]


def ended(pid: int | str) -> bool:
    """Whether process ``pid`` has ended (or is gone): a zombie, which runs nothing and holds
    nothing but its entry until its parent (often init, for a sandbox's processes whose parent
    was killed first) collects it, which may take a while."""
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def kill_user_processes(uid: int, seconds: float = 10.0) -> bool:
    """Kill every process of the host user ``uid`` (a sandbox user id, never root's), until
    none is left running or ``seconds`` have passed: a run without a cgroup may have left some
    outside its process group, and the next run given that user id must not meet them. Zombies
    are not waited for (:func:`ended`). Whether none is left."""
    deadline = time.monotonic() + seconds
    while True:
        found = processes_of(uid)
        if not found:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def _ids(pid: str) -> list[str]:
    """The real, effective, saved and file-system user ids of ``pid`` (``[]``: gone). Read from
    its status, not from who owns ``/proc/<pid>``: a process that made itself not dumpable has
    its folder owned by root."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(line for line in status if line.startswith("Uid:")).split()[1:]
    except (OSError, StopIteration):
        return []


def processes_of(uid: int) -> list[int]:
    """The processes of ``uid`` (any of their user ids) still running (a zombie is not:
    :func:`ended`)."""
    return [
        int(entry) for entry in os.listdir("/proc")
        if entry.isdigit() and str(uid) in _ids(entry) and not ended(entry)
    ]  # fmt: skip
