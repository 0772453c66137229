"""Find the submissions to grade in files, folders and zip archives, and name their students.

Accepted layouts (mixed freely)::

    alice.ipynb                              student "alice" (the file name)
    Copy of a2c - bob.ipynb                  student "bob"   (Colab's "Copy of" and the
                                                              assignment name are dropped)
    carol/Copy of a2c.ipynb                  student "carol" (a file in a sub-folder: the folder)
    dave/a2c (1).ipynb                       student "dave"  (a second browser download)
    mallory/alice.ipynb                      student "mallory": the folder, never the file name
    submitted/erin/a2c/a2c.ipynb             student "erin"  (an nbgrader exchange tree)
    submitted/erin/a2c/submitted/bob/a2c.ipynb  student "erin" (inside Erin's own upload)
    batch.zip                                any of the above inside the archive
    leealice_10231_5551234_a2c.ipynb         a Canvas download's file: the roster student
                                             whose canvas_id is 10231, else "leealice_10231"
    Alice Lee_4321_assignsubmission_file/a2c.ipynb
                                             a Moodle download's folder: the roster student
                                             named Alice Lee, else "Alice_Lee_4321"

**Only the layout names a student.** A notebook directly in a folder you give (or at the top
of an archive) is named by its file name; a notebook in a sub-folder is named by the first
folder below it, whatever the file is called and whatever folders the student's own upload
holds deeper down (``alice/submitted/bob/x/a2c.ipynb`` is Alice's), so that a student cannot
claim someone else's grade, or invent students, by naming a file or a folder: each top-level
entry names at most one student. In an nbgrader tree, the ``submitted`` folder at the top of
what you give (or the one the folder you give is in) is the layout, and the folder below it
names the student. An archive whose top holds one folder and nothing else (``zip -r batch.zip
submissions/``) is read from inside that folder (so an archive of one student's folder,
``alice/a2c.ipynb``, names ``alice``).

The file or folder name that names a student is read once more for an LMS's own names
(:mod:`autograder.core.intake.lms_names`): a Canvas or Moodle download is matched to the
roster by the LMS's user number or the student's full name, and each such submission says how
(:attr:`Submission.matched`).

Student ids keep letters, digits, ``.``, ``_`` and ``-`` (other characters become ``_``); a
folder whose name keeps nothing (``---``) names ``unnamed-<digest of the name>``, never the
whole class's stop. Archives are unpacked member by member with the bytes counted as they are
written (:mod:`autograder.core.intake.archives`): what does not fit is reported, not unpacked.
Two files for one student: the most recently modified one is graded and the other is reported
as a :class:`Problem` ("duplicate", with the student's id, so the grades CSV notes it in that
student's row). Symbolic links (files, folders, zip members) are refused: a link could point at
any file of the grading machine. ``.ipynb_checkpoints`` and ``__MACOSX`` are ignored. Nothing
here stops at a bad file: problems are collected and returned with the submissions.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core.intake.archives import LINK_REASON, extract
from autograder.core.intake.lms_names import (
    CANVAS,
    AmbiguousName,
    LmsName,
    readings,
    roster_student,
)
from solutions.parts import ASSIGNMENT

__all__ = ["Problem", "Submission", "collect", "exchange_folder", "student_id"]

_SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", "autograded", "feedback", "release", "source"}
_GENERIC = {ASSIGNMENT, "notebook", "untitled", "submission", "assignment", ""}
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Submission:
    """One notebook to grade."""

    student: str
    path: Path
    mtime: float
    #: where the instructor finds it: the path, or ``archive.zip:member`` for a zip member
    #: (``path`` is then in a temporary folder that is gone after grading)
    origin: str = ""
    #: the folder nbgrader's exchange made for it (:func:`exchange_folder`), in an nbgrader tree
    exchange: Path | None = None
    #: how the student was found from an LMS's name (``Canvas user id 10231, the roster's
    #: canvas_id``); empty where the folder or file name is the student id
    matched: str = ""
    #: Canvas's LATE mark (``None`` where the LMS's download says nothing of lateness)
    lms_late: bool | None = None


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


def _folder_student(name: str) -> str:
    """The student a folder of the layout names: its cleaned name, else the name itself when it
    is a plain id (``a2c``), else ``unnamed-<digest>`` (``---``): never empty, always plain."""
    cleaned = _clean(name)
    if cleaned:
        return cleaned
    if _PLAIN.fullmatch(name):
        return name
    return "unnamed-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def student_id(
    path: Path, root: Path | None = None, fallback: str = "", base: Path | None = None
) -> str:
    """The student a submitted notebook belongs to (rules in the module docstring).

    ``root`` is the folder the search started from: folders above it never name a student,
    and the first folder below it names the student before the file name does; nothing deeper
    does (it is inside that student's own upload). ``base`` is the folder ``root`` was reached
    from through single folders (an unpacked archive); without it the last three folders of
    ``root``'s path are the layout. ``fallback`` (the name of the one folder an archive held)
    is used when the file name is generic (``a2c.ipynb``). Returns ``""`` when no name can be
    found (the caller reports it).
    """
    return _lms_student(_layout(path, root, fallback, base), None)[0]


def exchange_folder(path: Path, root: Path | None = None, base: Path | None = None) -> Path | None:
    """The folder nbgrader's exchange made for the submission ``path`` is in
    (``submitted/<student>/<assignment>``, which holds the exchange's ``timestamp.txt``), when
    the layout (as :func:`student_id` reads it) is an nbgrader tree; ``None`` otherwise. A
    folder of the student's own upload is never it, whatever it is called."""
    return _layout(path, root, "", base).exchange


@dataclass(frozen=True)
class _Named:
    """Who the layout names for one notebook: the student, nbgrader's exchange folder, and the
    file or folder name that named the student outside an nbgrader tree (read again for an
    LMS's names: :mod:`autograder.core.intake.lms_names`)."""

    student: str
    exchange: Path | None = None
    entry: str = ""


def _by_file(path: Path, fallback: str) -> _Named:
    """Named by the file name, else by ``fallback`` (an archive's one folder)."""
    if _clean(path.stem):
        return _Named(_clean(path.stem), entry=path.name)
    return _Named(_clean(fallback), entry=fallback)


def _layout(path: Path, root: Path | None, fallback: str, base: Path | None) -> _Named:
    """:func:`student_id` and :func:`exchange_folder` of ``path``."""
    if root is None or not path.is_relative_to(root):
        parts = path.parts  # a file given by itself: only nbgrader's exact position counts
        if len(parts) >= 4 and parts[-4] == "submitted":
            return _Named(_folder_student(parts[-3]), path.parent)
        return _by_file(path, fallback)
    above = root.relative_to(base).parts if base is not None else root.parts[-3:]
    below = path.parent.relative_to(root).parts
    chain, index = above + below, -1
    if "submitted" in above:  # the root is (inside) nbgrader's submitted/<student>/<assignment>
        index = len(above) - 1 - above[::-1].index("submitted")
    elif below[:1] == ("submitted",):  # the root holds nbgrader's submitted/
        index = len(above)
    if 0 <= index and index + 1 < len(chain):
        # submitted/<student>/<assignment>: the folder path.parent is in, that many levels up
        exchange = path.parents[len(chain) - index - 3] if index + 3 <= len(chain) else None
        return _Named(_folder_student(chain[index + 1]), exchange)
    if index >= len(above):  # the root holds submitted/ and the notebook is right in it
        return _Named("")
    if below:  # the first folder below the root: the per-student folder
        return _Named(_folder_student(below[0]), entry=below[0])
    return _by_file(path, fallback)


def _lms_student(named: _Named, roster: Mapping[str, Any] | None) -> tuple[str, str, LmsName | None]:
    """``(student, how it was matched, the LMS's name)`` of what the layout named: an LMS's
    name is matched to the roster, else named by the LMS's number; any other name stays.

    Raises:
        AmbiguousName: the LMS's name fits two students of the roster.
    """
    every = readings(named.entry) if named.entry else []
    if not every:
        return named.student, "", None
    matched, found = roster_student(every, roster)
    if matched:
        column = "canvas_id" if found.lms == CANVAS else "first_name, last_name"
        return matched, f"{found.says()}, the roster's {column}", found
    lacking = " (on no roster)" if not roster else " (not on the roster)"
    return found.fallback, f"{found.says()}{lacking}", found


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
                links.append(Problem(base / name, LINK_REASON))
        for name in files:
            if not name.endswith(".ipynb"):
                continue
            path = base / name
            if path.is_symlink():
                links.append(Problem(path, LINK_REASON))
            elif path.is_file():
                found.append(path)
    return sorted(found), links


def collect(
    inputs: list[Path], scratch: Path, roster: Mapping[str, Any] | None = None
) -> tuple[list[Submission], list[Problem]]:
    """The submissions found in ``inputs`` (files, folders, zips), one per student.

    Args:
        inputs: notebooks, folders or ``.zip`` archives.
        scratch: an existing folder where archives are unpacked.
        roster: ``{student id: entry}`` (entries with ``canvas_id``, ``first_name`` and
            ``last_name``): a Canvas or Moodle download's names are matched to it
            (:mod:`autograder.core.intake.lms_names`).
    """
    found: list[tuple[Path, Path | None, str]] = []  # (notebook, root found under, fallback)
    archives: dict[Path, tuple[Path, Path]] = {}  # root -> (unpacked folder, archive)
    problems: list[Problem] = []
    # Absolute paths: nbgrader changes the working directory while it converts a notebook, and
    # gradings run in parallel threads.
    for item in inputs:
        given = Path(item).absolute()
        if given.suffix.lower() == ".ipynb" and given.is_symlink():
            problems.append(Problem(given, LINK_REASON))
            continue
        given = given.resolve()
        if given.is_dir():
            notebooks, links = _notebooks(given)
            found += [(path, given, "") for path in notebooks]
            problems += links
        elif given.suffix.lower() == ".zip" and given.is_file():
            try:
                unpacked, refused = extract(given, scratch)
            except (zipfile.BadZipFile, OSError) as error:
                problems.append(Problem(given, f"unreadable zip archive ({error})"))
                continue
            problems += [Problem(Path(name), why, origin=origin) for name, why, origin in refused]
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
    named_subs: list[tuple[Submission, LmsName | None]] = []
    for path, root, fallback in found:
        base = archives[root][0] if root in archives else None
        named = _layout(path, root, fallback, base)
        exchange = named.exchange
        origin = str(path)
        if root in archives:
            unpacked, archive = archives[root]
            origin = f"{archive}:{path.relative_to(unpacked).as_posix()}"
        try:
            student, matched, lms = _lms_student(named, roster)
        except AmbiguousName as error:
            problems.append(Problem(path, f"not graded: {error}", origin=origin))
            continue
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
        if root in archives:  # an archive's exchange folders hold no timestamp.txt here
            exchange = None
        late = lms.late if lms is not None else None
        submission = Submission(
            student, path, path.stat().st_mtime, origin, exchange, matched, late
        )
        named_subs.append((submission, lms))
    return _one_per_student(named_subs, problems)


def _one_per_student(
    named_subs: list[tuple[Submission, LmsName | None]], problems: list[Problem]
) -> tuple[list[Submission], list[Problem]]:
    """One submission a student: the newest of a student's files (Canvas writes every member
    with the zip's time: its file number tells the later upload), the others reported as
    duplicates. Files that two of an LMS's users (two Moodle participants of one name) hand in
    for one roster student are nobody's: each is reported, naming the others."""
    groups: dict[str, list[tuple[Submission, LmsName | None]]] = {}
    for submission, lms in named_subs:
        groups.setdefault(submission.student, []).append((submission, lms))
    chosen: list[Submission] = []
    for student, group in groups.items():
        users = sorted({(lms.lms, lms.user) for _, lms in group if lms is not None})
        if len(users) > 1:
            named = ", ".join(f"{lms} {user}" for lms, user in users)
            for submission, _ in group:
                problems.append(
                    Problem(
                        submission.path,
                        f"not graded: files of {len(users)} different LMS users ({named}) are all "
                        f"matched to {student!r} by name; check whose each is, and grade it as "
                        "<student id>.ipynb",
                        origin=submission.origin,
                    )
                )
            continue
        newer = max(group, key=lambda item: (item[0].mtime, item[1].file if item[1] else 0))[0]
        chosen.append(newer)
        for older in [submission for submission, _ in group if submission is not newer]:
            problems.append(
                Problem(
                    older.path,
                    f"duplicate for student {student!r}: graded the newer "
                    f"{newer.origin or newer.path}, not this one",
                    student=student,
                    origin=older.origin,
                )
            )
    return sorted(chosen, key=lambda s: s.student), problems
