"""The names an LMS gives the files of its "download all submissions" zip, and who they name.

**Canvas** (*Download Submissions*) puts every file at the top of the zip, named
``<name>[_LATE]_<user id>_<file id>_<file name>``: ``<name>`` is the student's sortable name
("Lee, Alice") in lower case with everything but letters, digits and ``_`` dropped
(``leealice``), ``LATE`` is there when Canvas counts the submission late (against the student's
own due date, extensions included), ``<user id>`` is the student's Canvas user number (the ``ID``
column of Canvas's gradebook export, the roster's ``canvas_id``), ``<file id>`` the uploaded
file's number, and ``<file name>`` what the student uploaded, with Canvas's ``-1``, ``-2``
for a file uploaded again under the same name (``a2c-1.ipynb``). Under anonymous grading the name
is left out and the user number is ``anon_<id>``. Canvas writes every member with the time the
zip was made, so a Canvas file's zip time says nothing about when it was handed in.

**Moodle** (*Download all submissions*) puts each student's files in a folder
``<Full Name>_<participant id>_assignsubmission_file`` (with a trailing ``_`` before Moodle 4.1;
files of the student's own sub-folders below it), or, with *Download submissions in folders*
off, at the top as ``<Full Name>_<participant id>_assignsubmission_file_<file name>``. ``<Full
Name>`` is the name as the site shows it (``_`` made spaces), and the participant id is
Moodle's number for the student in that assignment only (in no export of the course's
participants), so a Moodle file is matched to the roster by the full name. Under blind marking
the name is ``Participant``.

Only the entry at the top of what the instructor gives is read this way (the file there, or
the first folder), as :mod:`autograder.core.intake.collect` names students: the student's own
part of a name (the file name they uploaded) comes last and is never read for who it is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CANVAS",
    "MOODLE",
    "AmbiguousName",
    "LmsName",
    "lms_name",
    "readings",
    "roster_student",
]

CANVAS, MOODLE = "Canvas", "Moodle"

#: One reading of a Canvas name: the user and file numbers after a name (the rest is the file
#: name the student uploaded). A name never holds ``_<digits>_`` (Canvas folds them), but it may
#: end in ``_<digits>``, so an entry can have more than one reading (:func:`readings`).
_CANVAS_NUMBERS = re.compile(r"_(?P<late>LATE_)?(?P<user>\d+)_(?P<file>\d+)_(?P<rest>.+)")
_CANVAS_NAME = re.compile(r"\w*", re.UNICODE)
_CANVAS_ANONYMOUS = re.compile(
    r"(?P<late>LATE_)?(?P<user>anon_[A-Za-z0-9]+)_(?P<file>\d+)_(?P<rest>.+)"
)
_MOODLE = re.compile(
    r"(?P<name>[^_/]+)_(?P<user>\d+)_assignsubmission_file(?:_(?P<rest>.*))?", re.DOTALL
)


@dataclass(frozen=True)
class LmsName:
    """What an LMS's file or folder name says about its student."""

    lms: str  #: :data:`CANVAS` or :data:`MOODLE`
    user: str  #: Canvas's user number (``anon_...`` anonymous) or Moodle's participant id
    name: str  #: the student's name as the LMS wrote it (``leealice``, ``Alice Lee``)
    #: Canvas's ``LATE`` mark (``None`` for Moodle, whose download says nothing of it)
    late: bool | None = None
    #: Canvas's file number: a file uploaded later has a larger one
    file: int = 0

    @property
    def fallback(self) -> str:
        """The student id when no roster names the student: the name and the LMS's number,
        which stay the same for every file of that student (``leealice_10231``,
        ``Alice_Lee_4321``)."""
        plain = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.name}_{self.user}").strip("._-")
        return plain[:100]

    def says(self) -> str:
        """How the file names its student, for the instructor."""
        if self.lms == CANVAS:
            return f"Canvas user id {self.user}"
        return f"Moodle full name {self.name!r} (participant {self.user})"


def readings(entry: str) -> list[LmsName]:
    """Every way ``entry``, a file or folder name at the top of an LMS's zip, reads as one of
    Canvas's or Moodle's names (module docstring), leftmost first; empty when it is neither."""
    moodle = _MOODLE.fullmatch(entry)
    if moodle and moodle.group("name").strip():
        return [LmsName(MOODLE, moodle.group("user"), " ".join(moodle.group("name").split()))]
    anonymous = _CANVAS_ANONYMOUS.fullmatch(entry)
    if anonymous:
        late = anonymous.group("late") is not None
        return [LmsName(CANVAS, anonymous.group("user"), "", late, int(anonymous.group("file")))]
    found = []
    for start in (at for at, char in enumerate(entry) if char == "_"):
        numbers = _CANVAS_NUMBERS.match(entry, start)
        if numbers and _CANVAS_NAME.fullmatch(entry[:start]):
            late = numbers.group("late") is not None
            found.append(
                LmsName(CANVAS, numbers.group("user"), entry[:start], late, int(numbers.group("file")))
            )
    return found


def lms_name(entry: str) -> LmsName | None:
    """The first of :func:`readings` of ``entry`` (``None``: not an LMS's name)."""
    found = readings(entry)
    return found[0] if found else None


class AmbiguousName(ValueError):
    """An LMS's name fits more than one student of the roster."""


def _folded(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def roster_student(
    found: Sequence[LmsName], roster: Mapping[str, Any] | None
) -> tuple[str, LmsName]:
    """``(roster id, the reading that names it)`` of an entry's :func:`readings`: Canvas by the
    roster's ``canvas_id``; Moodle by ``first_name last_name``, or ``last_name first_name`` for a
    site that shows names that way, compared without case. The id is ``""`` (and the reading the
    first) when the roster has none.

    Raises:
        AmbiguousName: two students of the roster fit (named in the message): two roster students
            of one Moodle name, or a Canvas name read two ways, each a roster student's (a name
            ending in digits, or one made to pass for another's).
    """
    first = found[0]
    if not roster:
        return "", first
    if first.lms == CANVAS:
        fits = [
            (sid, reading)
            for reading in found
            for sid, entry in roster.items()
            if getattr(entry, "canvas_id", "") == reading.user
        ]
        if len({sid for sid, _ in fits}) > 1:
            named = ", ".join(f"{sid} (canvas_id {reading.user})" for sid, reading in fits)
            raise AmbiguousName(
                f"Canvas's file name reads as the file of {len(fits)} roster students: {named}. "
                "Check in Canvas whose it is, then grade it as <student id>.ipynb."
            )
        return fits[0] if fits else ("", first)
    wanted = _folded(first.name)
    matches = []
    for sid, entry in roster.items():
        given, family = getattr(entry, "first_name", ""), getattr(entry, "last_name", "")
        names = (_folded(f"{given} {family}"), _folded(f"{family} {given}"))
        if given and family and wanted in names:
            matches.append((sid, f"{given} {family}"))
    if len(matches) > 1:
        named = ", ".join(f"{sid} ({name})" for sid, name in matches)
        raise AmbiguousName(
            f"Moodle names this student {first.name!r} (participant {first.user}), and the "
            f"roster has {len(matches)} students of that name: {named}. Unzip the download, "
            "rename the folder to the student's roster id, and grade the folder."
        )
    return (matches[0][0] if matches else ""), first
