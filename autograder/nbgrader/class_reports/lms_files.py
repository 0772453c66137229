"""The class's grades as learning management systems import them: Canvas, Moodle, a long format.

``python -m autograder export`` writes three files into ``<out>/lms/`` from the rows of
``grades.csv`` (the course's one set of totals: the late penalty taken off, part 8 as graded so
far, the bonus on top, the verified agent's points where the course gives some) and the course's roster (:mod:`autograder.nbgrader.roster`):

* ``canvas.csv``, Canvas's gradebook import: ``Student, ID, SIS User ID, SIS Login ID,
  Section``, then one assignment column (:data:`DEFAULT_COLUMN`, or the header Canvas's own
  export gives an existing assignment, ``A2C (123456)``), and under the header Canvas's
  *Points Possible* row (full marks), which Canvas reads for an assignment the file creates.
  Canvas finds each student by ``ID`` (the roster's ``canvas_id``), ``SIS User ID`` or ``SIS
  Login ID`` (the roster's ``sis_login_id``, else the student id the grader uses);
* ``moodle.csv``, Moodle's CSV grade import: ``ID number`` (the roster's ``sis_user_id``),
  ``Email address``, ``First name``, ``Last name`` and the grade column; Moodle is told to map
  users from *Email address* to ``useremail`` or from *ID number* to ``useridnumber``;
* ``grades_long.csv``, one row per student and item (each part, part 8, ``agent_points`` where
  the course gives the agent points, the total) with
  ``points, max``, and on the total row ``minutes_late`` and ``late_penalty``, for any other
  system or a spreadsheet.

Every student of the roster has a row. One without a submission gets an empty cell (no grade),
or 0 when the instructor asks for it (``missing_as_zero``); a submission that could not be
graded always gets an empty cell (it needs a look, not a 0). A student who is graded but not on
the roster is written with the id only, and named in what :func:`write_lms_files` returns.
Every text cell is spreadsheet-safe (:func:`~autograder.core.reports.safe_text.csv_cell`).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from autograder.core.course.points import NOT_GRADED_YET, CoursePoints
from autograder.core.reports.safe_text import csv_cell
from autograder.nbgrader.class_reports.grade_row import GradeRow, points_cell
from autograder.nbgrader.roster import RosterStudent

__all__ = [
    "CANVAS_HEAD",
    "CANVAS_POINTS_POSSIBLE",
    "DEFAULT_COLUMN",
    "LMS_FOLDER",
    "LONG_HEAD",
    "MOODLE_HEAD",
    "LmsStudent",
    "class_list",
    "write_lms_files",
]

#: The folder of ``--out`` the LMS files go to.
LMS_FOLDER = "lms"
#: The assignment column's header when the instructor names none.
DEFAULT_COLUMN = "a2c"
CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
#: The first cell of the row under Canvas's header (Canvas writes it with four spaces).
CANVAS_POINTS_POSSIBLE = "    Points Possible"
MOODLE_HEAD = ["ID number", "Email address", "First name", "Last name"]
LONG_HEAD = ["student", "item", "points", "max", "minutes_late", "late_penalty", "status"]
#: The status of a roster student without a submission (long format).
NO_SUBMISSION = "no submission"


@dataclass(frozen=True)
class LmsStudent:
    """One student of the LMS files: their roster entry (``None``: not on it) and their row of
    ``grades.csv`` as it is written (``None``: no submission)."""

    id: str
    roster: RosterStudent | None
    row: Mapping[str, str] | None

    def grade(self, missing_as_zero: bool) -> str:
        """The assignment cell: the total of ``grades.csv``; empty without a grade."""
        if self.row is None:
            return "0" if missing_as_zero else ""
        return self.row.get("total", "") if self.row.get("status") == "graded" else ""

    def field(self, name: str) -> str:
        return getattr(self.roster, name) if self.roster is not None else ""


def class_list(
    rows: Sequence[GradeRow], roster: Mapping[str, RosterStudent] | None
) -> list[LmsStudent]:
    """Every student of the roster and every named row of ``grades.csv``, sorted by id."""
    by_id = {row.student: row.cells() for row in rows if row.student}
    ids = sorted(set(by_id) | set(roster or {}))
    return [LmsStudent(s, (roster or {}).get(s), by_id.get(s)) for s in ids]


def _canvas(students: Sequence[LmsStudent], column: str, full: str, zero: bool) -> list[list]:
    table = [[*CANVAS_HEAD, column], [CANVAS_POINTS_POSSIBLE, "", "", "", "", full]]
    for student in students:
        first, last = student.field("first_name"), student.field("last_name")
        name = f"{last}, {first}" if first and last else (last or first or student.id)
        login = student.field("sis_login_id") or student.id
        ids = [student.field("canvas_id"), student.field("sis_user_id"), login]
        table.append([name, *ids, student.field("section"), student.grade(zero)])
    return table


def _moodle(students: Sequence[LmsStudent], column: str, zero: bool) -> list[list]:
    table = [[*MOODLE_HEAD, column]]
    for student in students:
        names = [student.field(n) for n in ("sis_user_id", "email", "first_name", "last_name")]
        table.append([*names, student.grade(zero)])
    return table


def _long(students: Sequence[LmsStudent], points: CoursePoints, zero: bool) -> list[list]:
    table = [LONG_HEAD]
    full = points_cell(points.full_marks)
    for student in students:
        row = student.row
        if row is None:
            table.append([student.id, "total", student.grade(zero), full, "", "", NO_SUBMISSION])
            continue
        status = row.get("status", "")
        graded = status == "graded"
        for key, top in points.auto.items():
            kind = "bonus" if key in points.bonus else status
            score = row.get(key, "") if graded else ""
            table.append([student.id, key, score, points_cell(top), "", "", kind])
        pending = []
        for name, top in points.manual.items():
            value = row.get(name, "")
            if value == NOT_GRADED_YET:
                pending.append(name)
            manual = value if graded and value != NOT_GRADED_YET else ""
            item_status = NOT_GRADED_YET if value == NOT_GRADED_YET else status
            table.append([student.id, name, manual, points_cell(top), "", "", item_status])
        if points.agent:  # the verified agent's points, counted in the total
            agent = row.get("agent_points", "") if graded else ""
            table.append([student.id, "agent_points", agent, points_cell(points.agent), "", "",
                          status])  # fmt: skip
        total_status = f"{status} (part 8 not graded yet: total so far)" if pending else status
        late = [row.get("minutes_late", ""), row.get("late_penalty", "")]
        table.append([student.id, "total", student.grade(zero), full, *late, total_status])
    return table


def _write(table: Sequence[Sequence[str]], path: Path) -> Path:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for line in table:
            writer.writerow([csv_cell(cell) for cell in line])
    temporary.replace(path)  # a reader never sees half a file
    return path


def write_lms_files(
    rows: Sequence[GradeRow],
    points: CoursePoints,
    roster: Mapping[str, RosterStudent] | None,
    out: Path,
    column: str = DEFAULT_COLUMN,
    missing_as_zero: bool = False,
) -> list[str]:
    """Write ``canvas.csv``, ``moodle.csv`` and ``grades_long.csv`` into ``out/lms``; returns
    the lines that tell the instructor what to check before importing them.

    Raises:
        ValueError: ``column`` is empty or holds a line break.
    """
    if not column.strip() or "\n" in column or "\r" in column:
        raise ValueError(f"--lms-column {column!r}: give the assignment's column name, one line")
    students = class_list(rows, roster)
    folder = Path(out) / LMS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    full = points_cell(points.full_marks)
    _write(_canvas(students, column, full, missing_as_zero), folder / "canvas.csv")
    _write(_moodle(students, column, missing_as_zero), folder / "moodle.csv")
    _write(_long(students, points, missing_as_zero), folder / "grades_long.csv")
    missing = [s.id for s in students if s.row is None]
    ungraded = [s.id for s in students if s.row is not None and s.row.get("status") != "graded"]
    unknown = [s.id for s in students if roster is not None and s.roster is None]
    pending = [
        s.id
        for s in students
        if s.row is not None and s.grade(False) and NOT_GRADED_YET in s.row.values()
    ]
    lines = [f"LMS files (Canvas, Moodle, long format): {folder}"]
    if missing:
        cell = "0" if missing_as_zero else "an empty cell (no grade; --missing-as-zero gives 0)"
        lines.append(f"  no submission, {cell}: {', '.join(missing)}")
    if ungraded:
        lines.append(f"  not graded, an empty cell (see grades.csv): {', '.join(ungraded)}")
    if pending:
        lines.append(f"  part 8 not graded yet, the total so far: {', '.join(pending)}")
    if roster is None:
        lines.append(
            "  no roster in the course (grade-all --roster): Canvas can find students by SIS "
            "Login ID (the student id) only, Moodle not at all"
        )
    elif unknown:
        lines.append(f"  not on the roster, written with the id only: {', '.join(unknown)}")
    return lines
