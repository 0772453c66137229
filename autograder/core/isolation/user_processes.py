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


def kill_user_processes(uid: int, rounds: int = 50) -> None:
    """Kill every process of the host user ``uid`` (a sandbox user id, never root's), until
    none is left running: a run without a cgroup may have left some outside its process group,
    and the next run given that user id must not meet them. Zombies are not waited for
    (:func:`ended`)."""
    for _ in range(rounds):
        found = False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/status") as status:
                    ids = next(line for line in status if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if str(uid) in ids and not ended(entry.name):
                found = True
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.02)


def processes_of(uid: int) -> list[int]:
    """The processes of ``uid`` still running (a zombie is not: :func:`ended`)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid and not ended(entry):
                    found.append(int(entry))
            except OSError:
                continue
    return found
