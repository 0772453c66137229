"""Remove the System V IPC objects a run's user made: nothing of one run may reach the next.

Container mode (:mod:`autograder.core.isolation.container`) has no IPC namespace: a shared
memory segment, a message queue or a semaphore set the student's code makes outlives its
processes, and with mode ``0666`` the next submission's run, under another user id, could read
or write it. After every run, once the run's user has no process left,
:func:`remove_ipc_of` removes each object that user created or owns (the kernel lists them in
``/proc/sysvipc``; a creator may hand the ownership to another user id, never the creation).
POSIX shared memory and semaphores are files in ``/dev/shm``, removed with the run's other
files; POSIX message queues are refused to the run altogether (``RLIMIT_MSGQUEUE`` 0).

Linux only; reading ``/proc/sysvipc`` is linear in the machine's IPC objects.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

__all__ = ["IPC_KINDS", "ipc_objects_of", "remove_ipc_of"]

_IPC_RMID = 0
#: ``/proc/sysvipc`` file, the column holding an object's id, and how to remove one
IPC_KINDS = {"shm": "shmid", "msg": "msqid", "sem": "semid"}
_PROC = Path("/proc/sysvipc")


def ipc_objects_of(uid: int) -> list[tuple[str, int]]:
    """``(kind, id)`` of every System V IPC object ``uid`` created or owns."""
    found = []
    for kind, id_column in IPC_KINDS.items():
        try:
            lines = (_PROC / kind).read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        header = lines[0].split()
        try:
            index, owner, creator = (header.index(n) for n in (id_column, "uid", "cuid"))
        except ValueError:
            continue
        for line in lines[1:]:
            fields = line.split()
            try:
                if uid in (int(fields[owner]), int(fields[creator])):
                    found.append((kind, int(fields[index])))
            except (IndexError, ValueError):
                continue
    return found


def remove_ipc_of(uid: int) -> list[tuple[str, int]]:
    """Remove every System V IPC object ``uid`` created or owns (as root); those left (the
    kernel refused): ``(kind, id)``."""
    libc = ctypes.CDLL(None, use_errno=True)
    remove = {
        "shm": lambda ident: libc.shmctl(ident, _IPC_RMID, None),
        "msg": lambda ident: libc.msgctl(ident, _IPC_RMID, None),
        "sem": lambda ident: libc.semctl(ident, 0, _IPC_RMID),
    }
    for kind, ident in ipc_objects_of(uid):
        remove[kind](ident)  # an object already gone fails: nothing to do
    return ipc_objects_of(uid)
