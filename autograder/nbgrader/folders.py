"""The instructor's folders: where a grading course may live, and where received files are kept.

* :func:`check_course_dir` refuses an nbgrader course folder (``grade-all --course DIR``) that
  could be published by a slip: a git work tree of the student distribution (always), or any
  other git work tree unless the instructor says so (``--allow-git``). The course holds the
  solution notebook with the hidden tests, the gradebook and every submission;
* :func:`keep_received` keeps a submitted file byte for byte, under a name made of the time it
  was received and its digest, and never overwrites anything.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from autograder.core.intake.submission_file import KEPT_AGENT_SUFFIX

__all__ = ["MAX_RECEIVED_BYTES", "CourseFolderError", "check_course_dir", "keep_received"]

#: A received file larger than this is not kept (nor graded: the grader refuses it too).
MAX_RECEIVED_BYTES = 100 * 1024**2
_STUDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class CourseFolderError(ValueError):
    """The folder given for the nbgrader course must not hold it (the message says why)."""


def _git_root(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in (``.git`` folder or file), if any."""
    for candidate in [folder, *folder.parents]:
        if (candidate / ".git").exists():
            return candidate
    return None


def _is_student_distribution(top: Path) -> bool:
    pyproject = top / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8", errors="replace")[:20000]
    except OSError:
        text = ""
    if 'name = "a2c-course-lib"' in text:
        return True
    return (top / "course_lib").is_dir() and (top / "notebooks").is_dir()


def check_course_dir(folder: Path, allow_git: bool = False) -> Path:
    """``folder`` resolved, if an nbgrader course may be kept there.

    Raises:
        CourseFolderError: ``folder`` is inside a git work tree of the student distribution
            (never allowed: a push would publish the answers), or inside any other git work
            tree while ``allow_git`` is false.
    """
    folder = Path(folder).resolve()
    top = _git_root(folder)
    if top is None:
        return folder
    if _is_student_distribution(top):
        raise CourseFolderError(
            f"--course {folder} is inside {top}, a git clone of the student distribution "
            "(course_lib/, notebooks/): the course would put the solutions, the hidden tests, "
            "the gradebook and every submission where the next `git push` publishes them. "
            "Keep the course in its own folder outside any repository, e.g. ~/private-a2c-grading."
        )
    if not allow_git:
        raise CourseFolderError(
            f"--course {folder} is inside the git work tree {top}: the course holds the "
            "solutions, the hidden tests, the gradebook and every submission, which a commit "
            "there would record. Use a folder outside any repository (e.g. ~/private-a2c-grading), or "
            "pass --allow-git if that repository is private and meant to hold them."
        )
    return folder


def keep_received(
    folder: Path, student: str, source: Path, stamp: str, agent: bytes | None = None
) -> Path | None:
    """Keep ``source`` byte for byte as ``folder/<student>/<stamp>-<sha256[:12]>.ipynb``, and
    ``agent`` (the bytes of the saved agent handed in beside it, if any) as the same name with
    :data:`~autograder.core.intake.submission_file.KEPT_AGENT_SUFFIX` (the digest is then of
    both), so that a ``regrade`` grades the agent that came with the notebook.

    The same bytes already kept for that student are not written twice (the existing copy is
    returned); nothing is ever overwritten. Returns ``None`` when ``source`` is not a regular
    file that can be read (a link, a folder, too large), which the grading reports anyway.

    Raises:
        ValueError: ``student`` is not a plain id (letters, digits, ``.``, ``_``, ``-``).
    """
    if not _STUDENT.fullmatch(student):
        raise ValueError(f"student={student!r} is not a plain id (letters, digits, . _ -).")
    try:
        handle = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_RECEIVED_BYTES:
            return None
        chunks, size = [], 0
        while size <= MAX_RECEIVED_BYTES:
            chunk = os.read(handle, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_RECEIVED_BYTES:
            return None
        data = b"".join(chunks)
    finally:
        os.close(handle)
    digest = hashlib.sha256(data if agent is None else data + b"\0" + agent).hexdigest()[:12]
    target_dir = Path(folder) / student
    target_dir.mkdir(parents=True, exist_ok=True)
    for existing in sorted(target_dir.glob(f"*-{digest}.ipynb")):
        return existing
    target = target_dir / f"{stamp}-{digest}.ipynb"
    if agent is not None:  # first, so that a kept notebook always has its agent beside it
        _write_new(target.with_name(target.stem + KEPT_AGENT_SUFFIX), agent)
    _write_new(target, data)
    return target


def _write_new(target: Path, data: bytes) -> None:
    """``data`` into the new file ``target`` (read-only), never over an existing one."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    out = os.open(target, flags, 0o444)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]
    finally:
        os.close(out)
