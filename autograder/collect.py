"""Find the submissions to grade in files, folders and zip archives, and name their students.

Accepted layouts (mixed freely)::

    alice.ipynb                              student "alice" (the file name)
    Copy of a2c - bob.ipynb                  student "bob"   (Colab's "Copy of" and the
                                                              assignment name are dropped)
    carol/Copy of a2c.ipynb                  student "carol" (a file in a sub-folder: the folder)
    dave/a2c (1).ipynb                       student "dave"  (a second browser download)
    mallory/alice.ipynb                      student "mallory": the folder, never the file name
    submitted/erin/a2c/a2c.ipynb             student "erin"  (an nbgrader exchange tree)
    batch.zip                                any of the above inside the archive

**A sub-folder names the student.** A notebook directly in a folder you give (or at the top of
an archive) is named by its file name; a notebook in a sub-folder is named by the first folder
below it, whatever the file is called, so that a student cannot claim someone else's grade by
naming a file after them (LMS exports put each student's files in a folder the student does
not choose). An archive whose top holds one folder and nothing else (``zip -r batch.zip
submissions/``) is read from inside that folder (so an archive of one student's folder,
``alice/a2c.ipynb``, names ``alice``).

Student ids keep letters, digits, ``.``, ``_`` and ``-`` (other characters become ``_``).
Two files for one student: the most recently modified one is graded and the other is reported
as a :class:`Problem` ("duplicate", with the student's id, so the grades CSV notes it in that
student's row). Symbolic links (files, folders, zip members) are refused: a link could point at
any file of the grading machine. ``.ipynb_checkpoints`` and ``__MACOSX`` are ignored. Nothing
here stops at a bad file: problems are collected and returned with the submissions.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .course import ASSIGNMENT

__all__ = ["Problem", "Submission", "collect", "student_id"]

_SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", "autograded", "feedback", "release", "source"}
_GENERIC = {ASSIGNMENT, "notebook", "untitled", "submission", "assignment", ""}
_LINK_REASON = (
    "a symbolic link: refused (a link can point at any file of the grading machine); "
    "put the notebook file itself there"
)


@dataclass(frozen=True)
class Submission:
    """One notebook to grade."""

    student: str
    path: Path
    mtime: float
    #: where the instructor finds it: the path, or ``archive.zip:member`` for a zip member
    #: (``path`` is then in a temporary folder that is gone after grading)
    origin: str = ""


@dataclass(frozen=True)
class Problem:
    """A file that was not graded, and why (shown to the instructor, never fatal)."""

    path: Path
    reason: str
    #: the student the file belongs to, when known (a duplicate: the student whose other
    #: file was graded)
    student: str = ""
    origin: str = ""


def _clean(name: str) -> str:
    """``"Copy of a2c - Bob Smith (1)"`` -> ``"Bob_Smith"``; ``""`` when nothing is left."""
    name = re.sub(r"\s*\(\d+\)$", "", name.strip())  # browser's "(1)" for a second download
    name = re.sub(r"^(copy of\s+)+", "", name, flags=re.IGNORECASE)  # Colab's "Copy of"
    name = re.sub(rf"^{re.escape(ASSIGNMENT)}(?=[\s_.-])[\s_.-]*(-\s*)?", "", name)
    name = re.sub(rf"[\s_.-]+{re.escape(ASSIGNMENT)}$", "", name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")
    return "" if name.lower() in _GENERIC else name


def student_id(path: Path, root: Path | None = None, fallback: str = "") -> str:
    """The student a submitted notebook belongs to (rules in the module docstring).

    ``root`` is the folder the search started from: folders above it never name a student,
    and a folder below it names the student before the file name does. ``fallback`` (the name of
    the one folder an archive held) is used when the file name is generic (``a2c.ipynb``).
    Returns ``""`` when no name can be found (the caller reports it).
    """
    parts = path.parts
    if "submitted" in parts[:-1]:  # nbgrader tree: submitted/<student>/<assignment>/<file>
        index = len(parts) - 1 - parts[::-1].index("submitted")
        if index + 1 < len(parts) - 1:
            return _clean(parts[index + 1]) or parts[index + 1]
    folders = path.parent.relative_to(root).parts if root and path.is_relative_to(root) else ()
    for folder in folders:  # the first folder below the root: the per-student folder
        name = _clean(folder)
        if name:
            return name
    return _clean(path.stem) or _clean(fallback)


def _is_link_member(member: zipfile.ZipInfo) -> bool:
    return member.create_system == 3 and stat.S_ISLNK(member.external_attr >> 16)


def _extract(archive: Path, dest: Path) -> tuple[Path, list[Problem]]:
    """Unpack ``archive``'s notebooks into a new folder of ``dest``, keeping each member's date.

    Members that are symbolic links are not unpacked: they come back as problems.
    """
    target = dest / f"zip-{len(list(dest.iterdir()))}-{archive.stem}"
    target.mkdir()
    problems = []
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or not member.filename.endswith(".ipynb"):
                continue
            if _is_link_member(member):
                where = Path(member.filename)
                problems.append(Problem(where, _LINK_REASON, origin=f"{archive}:{member.filename}"))
                continue
            out = bundle.extract(member, target)  # zipfile strips "..": stays inside target
            stamp = datetime(*member.date_time).timestamp()
            os.utime(out, (stamp, stamp))
    return target, problems


def _top(folder: Path) -> Path:
    """``folder``, or the single folder it holds when it holds nothing else worth reading."""
    while True:
        entries = [
            entry
            for entry in folder.iterdir()
            if entry.name not in _SKIPPED_DIRS and not entry.name.startswith(".")
        ]
        if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
            folder = entries[0]
        else:
            return folder


def _notebooks(folder: Path) -> tuple[list[Path], list[Problem]]:
    """The notebooks under ``folder`` (links not followed), and the links found instead."""
    found, links = [], []
    for here, dirs, files in os.walk(folder, followlinks=False):
        base = Path(here)
        for name in list(dirs):
            if name in _SKIPPED_DIRS:
                dirs.remove(name)
            elif (base / name).is_symlink():
                dirs.remove(name)
                links.append(Problem(base / name, _LINK_REASON))
        for name in files:
            if not name.endswith(".ipynb"):
                continue
            path = base / name
            if path.is_symlink():
                links.append(Problem(path, _LINK_REASON))
            elif path.is_file():
                found.append(path)
    return sorted(found), links


def collect(inputs: list[Path], scratch: Path) -> tuple[list[Submission], list[Problem]]:
    """The submissions found in ``inputs`` (files, folders, zips), one per student.

    Args:
        inputs: notebooks, folders or ``.zip`` archives.
        scratch: an existing folder where archives are unpacked.
    """
    found: list[tuple[Path, Path | None, str]] = []  # (notebook, root found under, fallback)
    archives: dict[Path, tuple[Path, Path]] = {}  # root -> (unpacked folder, archive)
    problems: list[Problem] = []
    # Absolute paths: nbgrader changes the working directory while it converts a notebook, and
    # gradings run in parallel threads.
    for item in inputs:
        given = Path(item).absolute()
        if given.suffix.lower() == ".ipynb" and given.is_symlink():
            problems.append(Problem(given, _LINK_REASON))
            continue
        given = given.resolve()
        if given.is_dir():
            notebooks, links = _notebooks(given)
            found += [(path, given, "") for path in notebooks]
            problems += links
        elif given.suffix.lower() == ".zip" and given.is_file():
            try:
                unpacked, links = _extract(given, scratch)
            except (zipfile.BadZipFile, OSError) as error:
                problems.append(Problem(given, f"unreadable zip archive ({error})"))
                continue
            problems += links
            root = _top(unpacked)  # `zip -r batch.zip submissions/`: read submissions/
            archives[root] = unpacked, given
            notebooks, _ = _notebooks(root)
            fallback = root.name if root != unpacked else ""
            found += [(path, root, fallback) for path in notebooks]
        elif given.suffix.lower() == ".ipynb" and given.is_file():
            found.append((given, None, ""))
        else:
            problems.append(
                Problem(given, "not found, or not a .ipynb notebook, a folder or a .zip archive")
            )
    by_student: dict[str, Submission] = {}
    for path, root, fallback in found:
        student = student_id(path, root, fallback)
        origin = str(path)
        if root in archives:
            unpacked, archive = archives[root]
            origin = f"{archive}:{path.relative_to(unpacked).as_posix()}"
        if not student:
            problems.append(
                Problem(
                    path,
                    "no student name: rename the file `<student>.ipynb` or put it in "
                    "a folder named after the student",
                    origin=origin,
                )
            )
            continue
        submission = Submission(student, path, path.stat().st_mtime, origin)
        kept = by_student.get(student)
        if kept is None:
            by_student[student] = submission
            continue
        newer, older = (submission, kept) if submission.mtime > kept.mtime else (kept, submission)
        by_student[student] = newer
        problems.append(
            Problem(
                older.path,
                f"duplicate for student {student!r}: graded the newer "
                f"{newer.origin or newer.path}, not this one",
                student=student,
                origin=older.origin,
            )
        )
    return sorted(by_student.values(), key=lambda s: s.student), problems
