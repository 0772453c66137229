"""The template course, built once per machine for each set of inputs.

Every grader process starts from the template course (:func:`~autograder.nbgrader.course.build_template`:
nbgrader's ``generate_assignment`` on the solution notebook, most of a second of CPU, paid again
by every ``python -m autograder grade`` and every worker). Its files depend only on

* the solution notebook's bytes,
* the grader's own files (``autograder``, ``solutions``, ``course_lib``; the course
  configuration is one of them),
* the versions of nbgrader and of the packages it converts and records with, and Python's.

:func:`template_course` keys a copy of those files by a digest of all of these, in a folder only
the grader's user can enter (the files hold the hidden tests): root's
``/var/cache/a2c-grading-templates``, or ``$XDG_CACHE_HOME/a2c-grading-templates`` (default
``~/.cache``) for another user. A later grader writes the kept files into its own template
folder after checking each against the digest kept beside it; a missing, changed or unreadable
copy is built again. Without such a folder every grader builds its own, as before. A copy no
grader used for a week is removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from autograder.core.file_tree import read_tree
from autograder.core.package_digest import package_files
from autograder.nbgrader.course import CourseTemplate, build_template, new_workspace

__all__ = ["TEMPLATE_INPUTS", "private_cache", "template_course", "template_key"]

#: The distributions whose versions decide what ``generate_assignment`` writes.
TEMPLATE_INPUTS = ("nbgrader", "nbconvert", "nbformat", "nbclient", "SQLAlchemy", "traitlets")
_FOLDER = "a2c-grading-templates"
_SUMS = "SHA256SUMS.json"
_UNUSED_DAYS = 7.0


def private_cache() -> Path | None:
    """The folder where this user's graders keep templates, made if missing; None when there
    is none only this user can enter (then every grader builds its own template)."""
    from autograder.core.isolation import SandboxUnavailable
    from autograder.core.isolation.leases import CACHE_FOLDERS, root_folder

    try:
        if os.getuid() == 0:
            return _private(root_folder(CACHE_FOLDERS, _FOLDER, locks=False))
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        (base / _FOLDER).mkdir(mode=0o700, exist_ok=True)
        return _private(base / _FOLDER)
    except (OSError, RuntimeError, SandboxUnavailable):
        return None


def _private(folder: Path) -> Path | None:
    """``folder`` if it is a folder (not a link) of this user's that nobody else can read or
    write; else None."""
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o066:
        return None
    return folder


def template_key(source_notebook: Path) -> str:
    """The digest of everything the template's files depend on (the module docstring)."""
    digest = hashlib.sha256(Path(source_notebook).read_bytes())
    digest.update(json.dumps(package_files(), sort_keys=True).encode())
    for name in TEMPLATE_INPUTS:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"\0{name}={version}".encode())
    digest.update(f"\0{sys.version}".encode())
    return digest.hexdigest()[:32]


def _kept(entry: Path) -> dict[str, bytes] | None:
    """The files kept in ``entry``, each checked against its digest; None if any is not."""
    try:
        sums = json.loads((entry / _SUMS).read_text())
        files = {name: (entry / "files" / name).read_bytes() for name in sums}
    except (OSError, ValueError, TypeError):
        return None
    if not sums or any(hashlib.sha256(data).hexdigest() != sums[n] for n, data in files.items()):
        return None
    return files


def _keep(cache: Path, key: str, files: dict[str, bytes]) -> None:
    """Write ``files`` as the copy ``cache/key`` (made whole aside, then renamed into place)."""
    build = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))  # mode 0700
    try:
        for name, data in files.items():
            path = build / "files" / name
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_bytes(data)
        sums = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
        (build / _SUMS).write_text(json.dumps(sums, sort_keys=True))
        target = cache / key
        if target.exists() and _kept(target) is None:
            shutil.rmtree(target, ignore_errors=True)  # damaged: replaced
        os.rename(build, target)
    except OSError:
        pass  # another grader's copy is in place, or the disk is full: this grader built its own
    finally:
        shutil.rmtree(build, ignore_errors=True)
    limit = time.time() - _UNUSED_DAYS * 86400
    for entry in cache.iterdir():
        try:
            if entry.name != key and entry.stat().st_mtime < limit:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def template_course(dest: Path, source_notebook: Path, cache: Path | None = None) -> CourseTemplate:
    """:func:`~autograder.nbgrader.course.build_template`'s course in the missing or empty
    folder ``dest``: written from the copy kept in ``cache`` (default :func:`private_cache`)
    when one was built from the same inputs, else built and kept there.

    Raises what ``build_template`` raises (no source notebook, no graded cell, ``dest`` not
    empty, nbgrader failed)."""
    dest = Path(dest).resolve()
    cache = private_cache() if cache is None else cache
    if cache is None or not Path(source_notebook).is_file():
        return build_template(dest, source_notebook)
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"dest={str(dest)!r} is not empty: give a new or empty folder.")
    key = template_key(source_notebook)
    files = _kept(cache / key)
    if files is not None:
        os.utime(cache / key)  # in use: kept for another week
        return new_workspace(files, dest)
    template = build_template(dest, source_notebook)
    _keep(cache, key, read_tree(template.root))
    return template
