"""Find the submissions to grade in files, folders and zip archives, and name their students.

Accepted layouts (mixed freely)::

    alice.ipynb                              student "alice" (the file name)
    Copy of a2c - bob.ipynb                  student "bob"   (Colab's "Copy of" and the
                                                              assignment name are dropped)
    carol/Copy of a2c.ipynb                  student "carol" (a generic name: the folder)
    dave/a2c (1).ipynb                       student "dave"  (a second browser download)
    submitted/erin/a2c/a2c.ipynb             student "erin"  (an nbgrader exchange tree)
    batch.zip                                any of the above inside the archive

Student ids keep letters, digits, ``.``, ``_`` and ``-`` (other characters become ``_``).
Two files for one student: the most recently modified one is graded and the other is reported
as a :class:`Problem` ("duplicate"); ``.ipynb_checkpoints`` and ``__MACOSX`` are ignored.
Nothing here stops at a bad file: problems are collected and returned with the submissions.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .course import ASSIGNMENT

__all__ = ["Problem", "Submission", "collect", "student_id"]

_SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", "autograded", "feedback", "release", "source"}
_GENERIC = {ASSIGNMENT, "notebook", "untitled", "submission", "assignment", ""}


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


def _clean(name: str) -> str:
    """``"Copy of a2c - Bob Smith (1)"`` -> ``"Bob_Smith"``; ``""`` when nothing is left."""
    name = re.sub(r"\s*\(\d+\)$", "", name.strip())  # browser's "(1)" for a second download
    name = re.sub(r"^(copy of\s+)+", "", name, flags=re.IGNORECASE)  # Colab's "Copy of"
    name = re.sub(rf"^{re.escape(ASSIGNMENT)}(?=[\s_.-])[\s_.-]*(-\s*)?", "", name)
    name = re.sub(rf"[\s_.-]+{re.escape(ASSIGNMENT)}$", "", name)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")
    return "" if name.lower() in _GENERIC else name


def student_id(path: Path, root: Path | None = None) -> str:
    """The student a submitted notebook belongs to (rules in the module docstring).

    ``root`` is the folder the search started from: folders above it never name a student.
    Returns ``""`` when no name can be found (the caller reports it).
    """
    parts = path.parts
    if "submitted" in parts[:-1]:  # nbgrader tree: submitted/<student>/<assignment>/<file>
        index = len(parts) - 1 - parts[::-1].index("submitted")
        if index + 1 < len(parts) - 1:
            return _clean(parts[index + 1]) or parts[index + 1]
    name = _clean(path.stem)
    if name:
        return name
    folders = path.parent.relative_to(root).parts if root and path.is_relative_to(root) else ()
    for folder in reversed(folders):
        name = _clean(folder)
        if name:
            return name
    return ""


def _extract(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` into a new folder of ``dest``, keeping each member's date."""
    target = dest / f"zip-{len(list(dest.iterdir()))}-{archive.stem}"
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or not member.filename.endswith(".ipynb"):
                continue
            out = bundle.extract(member, target)  # zipfile strips "..": stays inside target
            stamp = datetime(*member.date_time).timestamp()
            os.utime(out, (stamp, stamp))
    return target


def _notebooks(folder: Path) -> list[Path]:
    return sorted(
        path
        for path in folder.rglob("*.ipynb")
        if path.is_file() and not _SKIPPED_DIRS.intersection(path.relative_to(folder).parts[:-1])
    )


def collect(inputs: list[Path], scratch: Path) -> tuple[list[Submission], list[Problem]]:
    """The submissions found in ``inputs`` (files, folders, zips), one per student.

    Args:
        inputs: notebooks, folders or ``.zip`` archives.
        scratch: an existing folder where archives are unpacked.
    """
    found: list[tuple[Path, Path | None]] = []  # (notebook, root it was found under)
    archives: dict[Path, Path] = {}  # root of an unpacked archive -> the archive
    problems: list[Problem] = []
    # Absolute paths: nbgrader changes the working directory while it converts a notebook, and
    # gradings run in parallel threads.
    for given in (Path(item).resolve() for item in inputs):
        if given.is_dir():
            found += [(path, given) for path in _notebooks(given)]
        elif given.suffix.lower() == ".zip" and given.is_file():
            try:
                root = _extract(given, scratch)
            except (zipfile.BadZipFile, OSError) as error:
                problems.append(Problem(given, f"unreadable zip archive ({error})"))
                continue
            archives[root] = given
            found += [(path, root) for path in _notebooks(root)]
        elif given.suffix.lower() == ".ipynb" and given.is_file():
            found.append((given, None))
        else:
            problems.append(
                Problem(given, "not found, or not a .ipynb notebook, a folder or a .zip archive")
            )
    by_student: dict[str, Submission] = {}
    for path, root in found:
        student = student_id(path, root)
        if not student:
            problems.append(
                Problem(
                    path,
                    "no student name: rename the file `<student>.ipynb` or put it in "
                    "a folder named after the student",
                )
            )
            continue
        origin = str(path)
        if root in archives:
            origin = f"{archives[root]}:{path.relative_to(root).as_posix()}"
        submission = Submission(student, path, path.stat().st_mtime, origin)
        kept = by_student.get(student)
        if kept is None:
            by_student[student] = submission
            continue
        newer, older = (submission, kept) if submission.mtime > kept.mtime else (kept, submission)
        by_student[student] = newer
        problems.append(
            Problem(older.path, f"duplicate for student {student!r}: graded the newer {newer.path}")
        )
    return sorted(by_student.values(), key=lambda s: s.student), problems
