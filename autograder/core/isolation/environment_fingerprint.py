"""A fingerprint of the Python environment the grader runs in, to notice any change to it.

A notebook graded with ``--no-sandbox`` runs as a plain process, as an unprivileged user of its
own who cannot write the environment (a grader that is not root refuses to grade that way,
:func:`autograder.core.isolation.unsandboxed.require_unsandboxed_user`). As a second line, around every
unsandboxed grading the grader takes this fingerprint of everything Python reads at start-up
or import: the installation (``sys.base_prefix``), the environment (``sys.prefix``), every
package folder on the import path and the user's site folder. Each file and folder counts by
its path, type, size, modification and change times and inode; the change time cannot be set
back by a process, so a file rewritten and re-dated still differs. One ``lstat`` per file, no
reading: linear in the number of files (about 10^5 for an environment with torch, a second or
two when the file system's metadata is cached).
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

__all__ = ["changes", "environment_folders", "fingerprint"]

Fingerprint = dict[str, tuple[int, int, int, int, int]]


def environment_folders() -> list[Path]:
    """The folders whose files a Python process of this environment may run."""
    folders = {Path(sys.base_prefix), Path(sys.prefix), Path(site.getuserbase())}
    folders |= {Path(entry) for entry in sys.path if entry.endswith(("-packages", ".zip"))}
    resolved = sorted({path.resolve() for path in folders if path.exists()}, key=str)
    kept: list[Path] = []
    for path in resolved:  # a folder inside another is walked with it
        if not any(path == other or other in path.parents for other in kept):
            kept.append(path)
    return kept


def fingerprint(folders: list[Path] | None = None) -> Fingerprint:
    """``{path: (mode, size, mtime_ns, ctime_ns, inode)}`` of every entry under ``folders``
    (links are not followed)."""
    found: Fingerprint = {}
    stack = [str(folder) for folder in (environment_folders() if folders is None else folders)]
    while stack:
        folder = stack.pop()
        try:
            info = os.lstat(folder)
        except OSError:
            continue
        found[folder] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                key = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
                found[entry.path] = key
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    del found[entry.path]  # recorded when its own turn comes
    return found


def changes(before: Fingerprint, folders: list[Path] | None = None) -> list[str]:
    """The paths added, removed or changed since ``before`` was taken, sorted."""
    now = fingerprint(folders)
    return sorted(path for path in before.keys() | now.keys() if before.get(path) != now.get(path))
