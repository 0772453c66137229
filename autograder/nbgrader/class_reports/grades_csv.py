"""``grades.csv``, one row per student: a grading's row, the late penalty and part 8 on the
class's rows, reading and merging into a file, writing it.

The rows are :class:`~.grade_row.GradeRow` (typed until the CSV is written, totals counted by
the course's one rule: :meth:`~.grade_row.GradeRow.count`); the columns are
``student, status, total, max_total, <part>..., discussion, submitted_at, submitted_from,
minutes_late, raw_total, late_penalty, sandboxed, notes, file, received, graded_at``
(:data:`~.grade_row.HEAD`, the parts, part 8, the verified agent's columns when the grader
played agents (:mod:`.agent_board`), :data:`~.grade_row.TAIL`), then any column added by hand
(kept). ``raw_total`` counts ``agent_points`` where the course gives the agent points, and
``max_total`` is full marks with them (:class:`CoursePoints`); ``total`` is ``raw_total`` less
``late_penalty`` (:func:`apply_late_penalty`); part 8 comes from the gradebook
(:func:`refresh_manual`) and says ``not graded yet`` until it is graded, never 0. A row whose
status is not ``graded`` has empty score columns (its provisional total is in ``notes``).
Every text cell is made safe for spreadsheets (:func:`autograder.core.reports.safe_text.csv_cell`).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.course.points import CoursePoints
from autograder.core.reports.grade_result import NOT_RUN, GradeResult
from autograder.core.reports.safe_text import csv_cell, csv_text, points_text
from autograder.nbgrader.class_reports.agent_board import agent_columns
from autograder.nbgrader.class_reports.grade_row import (
    AGENT_COLUMNS,
    HEAD,
    TAIL,
    GradeRow,
    points_cell,
)
from autograder.nbgrader.class_reports.hand_scores import manual_scores
from autograder.nbgrader.late_penalty import LATE_LINE, LatePenalty
from solutions.parts import PARTS

__all__ = [
    "apply_late_penalty",
    "csv_columns",
    "merge_rows",
    "read_class",
    "read_rows",
    "refresh_manual",
    "result_row",
    "write_class",
    "write_rows",
]


def result_row(result: GradeResult, points: CoursePoints, when: str, received: str = "") -> GradeRow:
    """The row of one grading (part 8 ``not graded yet`` until :func:`refresh_manual`)."""
    row = GradeRow(
        student=result.student,
        status=result.status,
        max_total=points.full_marks,
        sandboxed=("yes" if result.sandboxed else "NO") if result.ran else NOT_RUN,
        notes="; ".join([*result.notes, *result.unfinished_notes()]),
        file=result.source,
        received=received,
        graded_at=when,
    )
    row.scores = dict.fromkeys([*points.auto, *result.parts])
    if result.graded:
        row.scores.update({key: part.score for key, part in result.parts.items()})
    elif result.parts:
        note = f"provisional total {points_cell(result.total)} (not a grade)"
        row.notes = "; ".join(filter(None, [note, row.notes]))
    row.hand_columns = list(points.manual)
    for name in points.manual:
        if name in result.hand_scores:  # left as the stub: nbgrader scored it itself
            row.hand[name] = result.hand_scores[name]
        elif result.parts:
            row.hand[name] = None  # not graded yet
    if result.agent is not None:
        row.agent = agent_columns(result)
    row.count(points)
    return row


def apply_late_penalty(
    rows: Sequence[GradeRow], rule: LatePenalty | None, points: CoursePoints
) -> dict[str, tuple[float, str]]:
    """Set each graded row's ``late_penalty`` from its ``minutes_late`` and ``rule`` (0 without
    one) and its totals; returns ``{student: (points, line for part 8's comment)}``."""
    found = {}
    for row in rows:
        if not row.graded:
            continue
        late = int(row.minutes_late or 0)
        penalty = rule.points(late, points.full_marks) if rule is not None else 0.0
        row.late_penalty = penalty
        row.count(points)
        line = ""
        if penalty and rule is not None:
            line = (
                f"{LATE_LINE} {late} minute(s) after the deadline; late penalty "
                f"{points_text(penalty)} "
                f"point(s) ({rule.describe()}). The cells' scores and formgrader's total are "
                "before it; the final total (grades.csv, the exports, the feedback) is after it."
            )
        if row.student:
            found[row.student] = (penalty, line)
    return found


def refresh_manual(rows: Sequence[GradeRow], points: CoursePoints, db_url: str) -> int:
    """Fill the hand-graded cells and totals of ``rows`` from the gradebook; returns how many
    rows have every hand-graded cell graded."""
    if not points.manual:
        return 0
    scores = manual_scores(db_url, [row.student for row in rows if row.student])
    complete = 0
    for row in rows:
        got = scores.get(row.student, {})
        for name in points.manual:
            if row.graded or got.get(name) is not None:
                row.hand[name] = got.get(name)  # None: not graded yet
        row.count(points)
        complete += row.graded and all(row.hand.get(name) is not None for name in points.manual)
    return complete


def read_rows(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The rows (as text) and columns of an existing grades CSV (none when there is no file).

    Raises:
        ValueError: the file is not a grades CSV written by this grader (no ``student`` and
            ``status`` columns), so it is never merged into or replaced.
    """
    if not path.is_file():
        return [], []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = list(reader.fieldnames or [])
        if not {"student", "status"} <= set(columns):
            raise ValueError(
                f"{path} is not a grades CSV of python -m autograder (it has no `student` and "
                "`status` columns): give another --out folder, or move that file away."
            )
        rows = [{key: value or "" for key, value in row.items() if key} for row in reader]
    for row in rows:  # undo csv_cell's quote mark so the next write does not add a second one
        for key, value in row.items():
            row[key] = csv_text(value)
    return rows, columns


def read_class(path: Path, points: CoursePoints) -> tuple[list[GradeRow], list[str]]:
    """The rows of an existing grades CSV, typed for the course ``points``, and its columns
    (:func:`read_rows`)."""
    rows, columns = read_rows(path)
    return [GradeRow.from_cells(row, points) for row in rows], columns


def merge_rows(old: Sequence[GradeRow], new: Sequence[GradeRow]) -> list[GradeRow]:
    """``old`` with every student of ``new`` replaced or added (columns added by hand kept:
    :meth:`~.grade_row.GradeRow.merged_over`), sorted by student (rows nobody could be named
    for last); ``old``'s rows are left as they are."""
    merged = {row.key: row.copy() for row in old}
    for row in new:
        before = merged.get(row.key)
        merged[row.key] = row.copy() if before is None else row.merged_over(before)
    return sorted(merged.values(), key=lambda row: (row.student == "", row.key))


def write_rows(rows: Sequence[Mapping[str, str]], columns: Sequence[str], path: Path) -> Path:
    """Write rows of text cells as a CSV with ``columns`` (spreadsheet-safe cells); returns
    ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([csv_cell(row.get(column, "")) for column in columns])
    temporary.replace(path)  # a reader never sees half a file
    return path


def write_class(rows: Sequence[GradeRow], columns: Sequence[str], path: Path) -> Path:
    """Write the class's rows as ``grades.csv``: the one place they become text."""
    return write_rows([row.cells() for row in rows], columns, path)


def csv_columns(points: CoursePoints, rows: Sequence[GradeRow], old: Sequence[str]) -> list:
    """The grades CSV's columns: the grader's, then any column added by hand (kept)."""
    parts = [*points.auto]
    for row in rows:  # parts of an older or other notebook stay visible
        parts += [k for k in row.scores if k in PARTS and k not in parts]
    played = any(row.agent is not None and any(row.agent.cells().values()) for row in rows)
    known = [*HEAD, *parts, *points.manual, *(AGENT_COLUMNS if played else []), *TAIL]
    extra = [column for column in old if column not in known]
    return [*known, *extra]
