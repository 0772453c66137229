"""Temporary folders of a grading process that the next process removes if this one was killed.

A template's copy of the grader's view (``a2c-template-view-*``) and a Dask worker's folder
(``a2c-worker-*``) live as long as their process and are removed at its exit (``atexit``). A
process killed outright (SIGKILL, the out-of-memory killer, a service manager or Slurm sending
SIGTERM to every process of a worker at once) runs no exit handler and leaves them in the
temporary folder, half a megabyte each, one set per killed worker.

So each such folder holds a lock file, ``flock``-ed by its process for its whole life: the kernel
drops the lock when the process ends, however it ends. :func:`held_folder` first removes every
folder of its prefix whose lock nobody holds (a dead process's), then makes its own. The lock
file appears under its name already locked (made under another name, locked, then renamed), so
no process ever sees a live folder unlocked. Only folders of this user, with a lock file of this
user, are ever removed; anything else with the prefix is left alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

__all__ = ["LOCK_NAME", "held_folder", "let_go", "remove_dead_folders"]

LOCK_NAME = ".held-by-a-live-process"  #: the lock file in each folder

_held: dict[Path, int] = {}  #: this process's folders and their locks' descriptors
_held_lock = threading.Lock()


def held_folder(prefix: str) -> Path:
    """A new folder ``<temporary folder>/<prefix>XXXXXXXX`` held by this process until
    :func:`let_go` (or its end), after removing the folders of ``prefix`` whose process died."""
    remove_dead_folders(prefix)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    staging = folder / f"{LOCK_NAME}.new"
    fd = os.open(staging, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(staging, folder / LOCK_NAME)
    except BaseException:
        os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    with _held_lock:
        _held[folder] = fd
    return folder


def let_go(folder: Path) -> None:
    """Remove ``folder`` (one of :func:`held_folder`'s) and drop its lock."""
    shutil.rmtree(folder, ignore_errors=True)
    with _held_lock:
        fd = _held.pop(folder, None)
    if fd is not None:
        os.close(fd)


def remove_dead_folders(prefix: str) -> list[Path]:
    """Remove the folders ``<temporary folder>/<prefix>*`` of this user whose lock file no live
    process holds; the ones removed. Folders without such a lock file, of another user, or
    that are links are left alone."""
    removed = []
    me = os.getuid()
    for entry in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            info = os.lstat(entry)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != me:
            continue
        try:
            fd = os.open(entry / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue  # no lock file: not made by held_folder, or not ours to judge
        try:
            if os.fstat(fd).st_uid != me:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its process lives
        finally:
            os.close(fd)  # a lock taken here goes with the descriptor
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
