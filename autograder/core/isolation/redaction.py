"""Take the grading machine's own paths and sandbox user ids out of text a student will read.

The sandbox is built so that a notebook learns nothing of the machine's layout (Python at
neutral paths, a tree built by root, install records hidden, no host path on a command line:
see :mod:`autograder.core.isolation.bubblewrap`); a grader that is not root cannot build it that way, and the
notebook writes the error texts that feedback quotes. As a second line, every text that came
out of a sandbox passes through :meth:`Redactor.redact` before it is put in feedback, notes or
a status: each folder the grader knows of (the checkout, the environment and the Python
installation and the folder it was built for, the grader's work folder, root's staging and
cache folders, the home and working folders, the temporary folder) and the run's host user id
become ``<host>``. Only the known strings are replaced: this is a
filter, not the isolation.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tempfile
from collections.abc import Iterable
from pathlib import Path

import autograder
from autograder.core.isolation.leases import CACHE_FOLDERS, ROOT_FOLDERS

__all__ = ["HIDDEN", "Redactor"]

HIDDEN = "<host>"
#: Folders every Linux machine has: naming them tells a student nothing.
_COMMON = {"/", "/usr", "/usr/local", "/usr/lib", "/usr/bin", "/bin", "/lib", "/opt", "/tmp"}


def _grader_folders() -> list[Path]:
    """The folders a grader started as root stages runs and caches compiled files in (see
    :mod:`.leases`), wherever they are made; and the folders the Python installation
    was built for, which its own files (build configuration, ``libpython``) still name."""
    folders = [Path(base) / "a2c-grading" for base in ROOT_FOLDERS]
    folders += [Path(base) / "a2c-grading-python" for base in CACHE_FOLDERS]
    for name in ("prefix", "exec_prefix", "BINDIR", "LIBDIR", "LIBPL"):
        value = sysconfig.get_config_var(name)
        if isinstance(value, str) and value.startswith("/"):
            folders.append(Path(value))
    return folders


class Redactor:
    """The host paths known when it is made, longest first (a folder inside another goes
    before it), each in its given and its resolved spelling."""

    def __init__(self, folders: Iterable[str | os.PathLike[str]] = ()) -> None:
        here = Path(autograder.__file__).resolve().parents[1]  # the checkout, or site-packages
        known = {
            here,
            Path(sys.prefix),
            Path(sys.base_prefix),
            Path(sys.exec_prefix),
            Path(sys.executable).parent,
            Path.home(),
            Path.cwd(),
            Path(tempfile.gettempdir()),
            *_grader_folders(),
            *map(Path, folders),
        }
        texts = set()
        for path in known:
            for spelling in (path, path.resolve()):
                text = str(spelling).rstrip("/")
                if text and text not in _COMMON:
                    texts.add(text)
        self.texts = sorted(texts, key=len, reverse=True)

    def redact(self, text: str, uid: int | None = None) -> str:
        """``text`` with every known host path, and the run's host user id, as ``<host>``."""
        for path in self.texts:
            text = text.replace(path, HIDDEN)
        if uid is not None:
            text = text.replace(str(uid), HIDDEN)
        return text
