"""The class roster: students' names and e-mails, and who is on it.

``grade-all --roster roster.csv`` reads a CSV with a header row and the columns ``id``
(required: the student id the grader names each submission by, i.e. the folder or file name),
and optionally ``first_name``, ``last_name`` and ``email``, and for the LMS files of ``export``
(:mod:`autograder.nbgrader.class_reports.lms_files`) ``section``, ``canvas_id`` (Canvas's own
user number), ``sis_user_id`` (the institution's student number: Canvas's *SIS User ID*,
Moodle's *ID number*) and ``sis_login_id`` (Canvas's *SIS Login ID*). With ``--course``, the names and
e-mails go into the gradebook (formgrader and ``nbgrader export`` show them) and the roster is
kept in the course as ``roster.csv``, so that later runs into the course use it without the
option.

A Canvas or Moodle download is matched to the roster by the LMS's own ids and names
(:mod:`autograder.core.intake.lms_names`): a Canvas file by its user number (``canvas_id``), a
Moodle folder by the student's full name (``first_name`` and ``last_name``).

A submission whose student is not on the roster is **flagged, never dropped**: it is graded,
and its row in the grades CSV says ``not on the roster`` (a typo in a folder name, or a
student who joined late).

A student the gradebook knows by id only (no roster, or not on it) gets the id as last name
and an empty first name and e-mail (:func:`name_unnamed`): formgrader would otherwise list
every such student as "None, None" with the e-mail "None". ``nbgrader export`` leaves such a
placeholder out of its name columns (:func:`is_placeholder`).
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import dataclass
from pathlib import Path

from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = [
    "MAX_ROWS",
    "NOT_ON_ROSTER",
    "RosterStudent",
    "course_roster",
    "is_placeholder",
    "name_unnamed",
    "read_roster",
]

#: A roster longer than this is refused (no class is that big; a wrong file may be).
MAX_ROWS = 100_000
#: The note a row gets when its student is not on the roster.
NOT_ON_ROSTER = "not on the roster: check the folder or file name"
_COLUMNS = ("id", "first_name", "last_name", "email")
_LMS_COLUMNS = ("section", "canvas_id", "sis_user_id", "sis_login_id")


@dataclass(frozen=True)
class RosterStudent:
    """One student of the roster."""

    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    section: str = ""
    canvas_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""


def read_roster(path: Path) -> dict[str, RosterStudent]:
    """``{student id: RosterStudent}`` from the roster CSV at ``path``.

    Raises:
        ValueError: no ``id`` column, an empty or repeated id, a repeated ``canvas_id``, or
            more than :data:`MAX_ROWS` rows (the message names the row).
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--roster {path}: no such file (a CSV with an `id` column)")
    students: dict[str, RosterStudent] = {}
    canvas_ids: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [str(name).strip().lower() for name in reader.fieldnames or []]
        if "id" not in fields:
            raise ValueError(
                f"--roster {path}: no `id` column (the header row must name the columns: id, "
                f"and optionally first_name, last_name, email, and for the LMS files section, "
                f"canvas_id, sis_user_id, sis_login_id); found {fields[:8]}"
            )
        reader.fieldnames = fields
        for line, row in enumerate(reader, start=2):
            if line - 1 > MAX_ROWS:
                raise ValueError(f"--roster {path}: more than {MAX_ROWS} rows")
            values = {key: str(row.get(key) or "").strip() for key in _COLUMNS + _LMS_COLUMNS}
            if not values["id"]:
                raise ValueError(f"--roster {path}, row {line}: the `id` is empty")
            if values["id"] in students:
                raise ValueError(f"--roster {path}, row {line}: id {values['id']!r} repeated")
            canvas = values["canvas_id"]
            if canvas and canvas in canvas_ids:
                raise ValueError(
                    f"--roster {path}, row {line}: canvas_id {canvas!r} repeated (also "
                    f"{canvas_ids[canvas]!r}): each Canvas user number names one student"
                )
            if canvas:
                canvas_ids[canvas] = values["id"]
            students[values["id"]] = RosterStudent(**values)
    return students


def course_roster(
    given: Path | None, course_root: Path | None, db_url: str | None
) -> dict[str, RosterStudent] | None:
    """The roster of this run: ``given`` (kept in the course, its names put in the gradebook),
    else the course's ``roster.csv``, else ``None`` (no roster: nobody is flagged)."""
    kept = Path(course_root) / "roster.csv" if course_root is not None else None
    if given is None:
        return read_roster(kept) if kept is not None and kept.is_file() else None
    roster = read_roster(given)
    if kept is not None and Path(given).resolve() != kept.resolve():
        shutil.copyfile(given, kept)
    if db_url is not None:
        from nbgrader.api import Gradebook

        with gradebook_session(), Gradebook(db_url) as gradebook:
            for student in roster.values():
                named = student.first_name or student.last_name
                gradebook.update_or_create_student(
                    student.id,
                    first_name=student.first_name if named else "",
                    last_name=student.last_name if named else student.id,
                    email=student.email or None,
                )
    return roster


def name_unnamed(db_url: str) -> int:
    """Give every student of the gradebook with neither name the id as last name (formgrader
    shows ``<id>, ``, not ``None, None``); returns how many were named."""
    from nbgrader.api import Gradebook

    named = 0
    with gradebook_session(), Gradebook(db_url) as gradebook:
        for student in gradebook.students:
            if not (student.first_name or student.last_name):
                student.first_name, student.last_name = "", student.id
                student.email = student.email or ""  # formgrader shows a missing one as None
                named += 1
        gradebook.db.commit()
    return named


def is_placeholder(student_id: str, first_name: str | None, last_name: str | None) -> bool:
    """Whether these names are :func:`name_unnamed`'s placeholder (the id, no first name)."""
    return not first_name and last_name == student_id
