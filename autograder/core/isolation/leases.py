"""Root's staging folders and the sandbox's user ids: one lease per run, whatever process runs it.

A grader started as root never runs a notebook as root: each run gets a user id of its own
(:class:`UidLease`, from :data:`FIRST_UID`), and a staging folder named after it in a folder of
root's (:func:`root_folder`) that only root can write. A lease is a ``flock``, so the kernel
drops it when its holder ends, even killed; a staging folder whose user id nobody holds is a
dead run's, and is removed by the next run that stages.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from autograder.core.isolation.contract import SandboxUnavailable
from autograder.core.isolation.user_processes import kill_user_processes

__all__ = [
    "CACHE_FOLDERS",
    "FIRST_UID",
    "ROOT_FOLDERS",
    "STAGING_KINDS",
    "UID_COUNT",
    "UidLease",
    "root_folder",
]

#: First of the unprivileged user ids the sandbox runs as when the grader is root (one per run).
FIRST_UID = 1_800_000
UID_COUNT = 100_000  #: user ids FIRST_UID ... FIRST_UID + UID_COUNT - 1
#: Where a grader running as root keeps its staging folders and the locks of the user ids in use
#: (``<first of these that is root's>/a2c-grading``): never TMPDIR, which may be private.
ROOT_FOLDERS = ("/run", "/var/tmp", "/tmp")
#: The staging folders a run keeps there, each named ``<kind>-<its user id>``: the sandbox's
#: tree (``stage``), an unsandboxed run's copies (``plain``), container mode's (``container``).
STAGING_KINDS = ("stage", "plain", "container")
#: Where a grader running as root keeps the neutral copies of compiled files (on disk: large).
CACHE_FOLDERS = ("/var/cache", "/var/tmp")
_uids = itertools.count()


def root_folder(
    bases: Sequence[str] = ROOT_FOLDERS, name: str = "a2c-grading", locks: bool = True
) -> Path:
    """Root's own ``name`` folder in the first of ``bases`` that is root's (mode 0711: the
    sandbox's users can pass through it, not list it), with ``uids/`` (0700) for the user id
    locks (``locks``); refuses a folder that is not root's or that others can write."""
    for base in map(Path, bases):
        try:
            info = base.stat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
            continue
        folder = base / name
        for path, mode in ((folder, 0o711), (folder / "uids", 0o700))[: 2 if locks else 1]:
            try:
                path.mkdir(mode=mode)
            except FileExistsError:
                pass
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
                raise SandboxUnavailable(
                    f"{path} must be a folder of root's that only root can write (found "
                    f"owner {info.st_uid}, mode {stat.filemode(info.st_mode)}): remove it"
                )
            path.chmod(mode)
        return folder
    raise SandboxUnavailable(f"none of {', '.join(bases)} is a folder of root's")


class UidLease:
    """A sandbox user id that no other run uses while this one holds it, whatever process the
    other run is in: a ``flock`` on ``uids/<uid>`` in root's folder (the kernel drops it when
    the holder ends, even killed). Each run has its own id, so its process limit is its own."""

    def __init__(self, folder: Path) -> None:
        start = (os.getpid() * 7919 + next(_uids)) % UID_COUNT  # graders start apart
        for step in range(UID_COUNT):
            uid = FIRST_UID + (start + step) % UID_COUNT
            fd = os.open(
                folder / "uids" / str(uid),
                os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW,
                0o600,
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            # A grader killed before its run ended left nothing locked, but maybe processes of
            # that user: they are ended first, or the id is passed over.
            if not kill_user_processes(uid):
                os.close(fd)
                continue
            self.uid, self._fd, self._folder = uid, fd, folder
            return
        raise SandboxUnavailable(f"all {UID_COUNT} sandbox user ids are in use")

    def staging(self, kind: str, mode: int) -> Path:
        """This run's staging folder, ``<kind>-<uid>`` in root's folder (``kind`` one of
        :data:`STAGING_KINDS`). A run removes its folder before it gives its user id back, so
        a staging folder whose user id nobody holds was left by a run that was killed before it
        cleaned up: every such folder is removed first (this run's own id included)."""
        for entry in self._folder.iterdir():
            kind_of, _, uid = entry.name.partition("-")
            if kind_of in STAGING_KINDS and uid.isdigit() and not self._held(int(uid)):
                shutil.rmtree(entry, ignore_errors=True)
        path = self._folder / f"{kind}-{self.uid}"
        path.mkdir(mode=mode)
        path.chmod(mode)
        return path

    def _held(self, uid: int) -> bool:
        """Whether a living run holds the user id ``uid`` (this one does hold its own)."""
        if uid == self.uid:
            return False  # its folder, if any, is a dead run's: this run has only just begun
        try:
            fd = os.open(self._folder / "uids" / str(uid), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # a lock taken here goes with the descriptor
        return False

    def release(self) -> None:
        os.close(self._fd)

    def end(self) -> bool:
        """End every process of this run's user, then give the user id back; a user id whose
        processes could not all be ended (one in uninterruptible sleep, say) is kept out of use
        while this grader lives (its lock stays held), so no run meets them. Whether it was
        given back."""
        if not kill_user_processes(self.uid):
            return False
        self.release()
        return True
