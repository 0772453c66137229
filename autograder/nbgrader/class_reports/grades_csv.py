"""``grades.csv``, one row per student: a grading's row, its totals, and merging into a file.

The columns: ``student, status, total, max_total, <part>..., discussion, submitted_at,
submitted_from, minutes_late, raw_total, late_penalty, sandboxed, notes, file, received,
graded_at`` (:data:`HEAD`, the parts, part 8, the verified agent's columns when the grader
played agents (:mod:`.agent_board`), :data:`TAIL`), then any column added by hand (kept).
``raw_total`` counts ``agent_points`` where the course gives the agent points, and ``max_total``
is full marks with them (:class:`CoursePoints`); ``total`` is ``raw_total`` less
``late_penalty`` (:func:`apply_late_penalty`); part 8
comes from the gradebook (:func:`refresh_manual`) and says ``not graded yet`` until it is
graded, never 0. A row whose status is not ``graded`` has empty score columns (its
provisional total is in ``notes``). Every text cell is made safe for spreadsheets
(:func:`autograder.core.reports.safe_text.csv_cell`).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from autograder.core.reports.course_points import NOT_GRADED_YET, CoursePoints
from autograder.core.reports.grade_result import NOT_RUN, GradeResult
from autograder.core.reports.safe_text import csv_cell, csv_text, points_text
from autograder.nbgrader.class_reports.agent_board import AGENT_COLUMNS, agent_cells
from autograder.nbgrader.class_reports.change_lines import row_key
from autograder.nbgrader.class_reports.hand_scores import manual_scores
from autograder.nbgrader.late_penalty import LATE_LINE, LatePenalty
from solutions.parts import PARTS

__all__ = [
    "HEAD",
    "TAIL",
    "apply_late_penalty",
    "csv_columns",
    "merge_rows",
    "number_in",
    "points_cell",
    "read_rows",
    "refresh_manual",
    "result_row",
    "retotal",
    "write_rows",
]

HEAD = ["student", "status", "total", "max_total"]
TAIL = ["submitted_at", "submitted_from", "minutes_late", "raw_total", "late_penalty"]
TAIL += ["sandboxed", "notes"]
TAIL += ["file", "received", "graded_at"]


def number_in(text: str) -> float | None:
    """The number a CSV cell holds, or ``None`` (empty, ``not graded yet``)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def points_cell(value: float) -> str:
    """Points as the CSV writes them (up to six decimals, no trailing zeros)."""
    return f"{round(value, 6):g}"


def result_row(result: GradeResult, points: CoursePoints, when: str, received: str = "") -> dict:
    """The CSV row of one grading (part 8 ``not graded yet`` until :func:`refresh_manual`)."""
    row = {
        "student": result.student,
        "status": result.status,
        "max_total": points_cell(points.full_marks),
        "sandboxed": ("yes" if result.sandboxed else "NO") if result.ran else NOT_RUN,
        "notes": "; ".join([*result.notes, *result.unfinished_notes()]),
        "file": result.source,
        "received": received,
        "graded_at": when,
    }
    for key in [*points.auto, *result.parts]:
        row[key] = ""
    if result.graded:
        for key, part in result.parts.items():
            row[key] = points_cell(part.score)
    elif result.parts:
        note = f"provisional total {points_cell(result.total)} (not a grade)"
        row["notes"] = "; ".join(filter(None, [note, row["notes"]]))
    for name in points.manual:
        if name in result.hand_scores:  # left as the stub: nbgrader scored it itself
            row[name] = points_cell(result.hand_scores[name])
        else:
            row[name] = NOT_GRADED_YET if result.parts else ""
    if result.agent is not None:
        row.update(agent_cells(result))
    retotal(row, points)
    return row


def retotal(row: dict[str, str], points: CoursePoints) -> None:
    """``raw_total``: the autograded parts (bonus included) plus the hand-graded points so far
    and, where the course gives the verified agent points, ``agent_points``; ``total``: that
    less ``late_penalty`` (:mod:`autograder.nbgrader.late_penalty`), never below 0."""
    if row.get("status") != "graded":
        row["total"] = row["raw_total"] = row["late_penalty"] = ""
        return
    auto = [number_in(row.get(key, "")) for key in points.auto]
    manual = [number_in(row.get(name, "")) for name in points.manual]
    agent = [number_in(row.get("agent_points", ""))] if points.agent else []
    raw = sum(v for v in auto + manual + agent if v is not None)
    penalty = number_in(row.get("late_penalty", "")) or 0.0
    row["raw_total"], row["late_penalty"] = points_cell(raw), points_cell(penalty)
    row["total"] = points_cell(max(0.0, raw - penalty))
    pending = [name for name, value in zip(points.manual, manual, strict=True) if value is None]
    notes = [n for n in row.get("notes", "").split("; ") if n and "not graded yet" not in n]
    if pending:
        notes.insert(0, f"part 8 ({', '.join(pending)}) not graded yet: total without it")
    row["notes"] = "; ".join(notes)


def apply_late_penalty(
    rows: Sequence[dict[str, str]], rule: LatePenalty | None, points: CoursePoints
) -> dict[str, tuple[float, str]]:
    """Set each graded row's ``late_penalty`` from its ``minutes_late`` and ``rule`` (0 without
    one) and its totals; returns ``{student: (points, line for part 8's comment)}``."""
    found = {}
    for row in rows:
        if row.get("status") != "graded":
            continue
        late = int(number_in(row.get("minutes_late", "")) or 0)
        penalty = rule.points(late, points.full_marks) if rule is not None else 0.0
        row["late_penalty"] = points_cell(penalty)
        retotal(row, points)
        line = ""
        if penalty and rule is not None:
            line = (
                f"{LATE_LINE} {late} minute(s) after the deadline; late penalty "
                f"{points_text(penalty)} "
                f"point(s) ({rule.describe()}). The cells' scores and formgrader's total are "
                "before it; the final total (grades.csv, the exports, the feedback) is after it."
            )
        if row.get("student"):
            found[row["student"]] = (penalty, line)
    return found


def refresh_manual(rows: list[dict[str, str]], points: CoursePoints, db_url: str) -> int:
    """Fill the hand-graded columns and totals of ``rows`` from the gradebook; returns how many
    rows have every hand-graded cell graded."""
    if not points.manual:
        return 0
    scores = manual_scores(db_url, [row["student"] for row in rows if row.get("student")])
    complete = 0
    for row in rows:
        got = scores.get(row.get("student", ""), {})
        for name in points.manual:
            if row.get("status") == "graded" or got.get(name) is not None:
                value = got.get(name)
                row[name] = NOT_GRADED_YET if value is None else points_cell(value)
        retotal(row, points)
        complete += row.get("status") == "graded" and all(
            number_in(row.get(name, "")) is not None for name in points.manual
        )
    return complete


def read_rows(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    """The rows and columns of an existing grades CSV (none when there is no file).

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


def merge_rows(
    old: Sequence[dict[str, str]], new: Sequence[dict[str, str]]
) -> list[dict[str, str]]:
    """``old`` with every student of ``new`` replaced or added (columns added by hand kept),
    sorted by student (rows nobody could be named for last)."""
    merged = {row_key(row): dict(row) for row in old}
    for row in new:
        before = merged.get(row_key(row), {})
        extra = {k: v for k, v in before.items() if k not in row}  # hand-added columns
        merged[row_key(row)] = {**row, **extra}
    return sorted(merged.values(), key=lambda row: (row.get("student") == "", row_key(row)))


def write_rows(rows: Sequence[dict[str, str]], columns: Sequence[str], path: Path) -> Path:
    """Write ``rows`` as a CSV with ``columns`` (spreadsheet-safe cells); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([csv_cell(row.get(column, "")) for column in columns])
    temporary.replace(path)  # a reader never sees half a file
    return path


def csv_columns(points: CoursePoints, rows: Sequence[dict[str, str]], old: Sequence[str]) -> list:
    """The grades CSV's columns: the grader's, then any column added by hand (kept)."""
    parts = [*points.auto]
    for row in rows:  # parts of an older or other notebook stay visible
        parts += [k for k in row if k in PARTS and k not in parts]
    played = any(row.get(column) for row in rows for column in AGENT_COLUMNS)
    known = [*HEAD, *parts, *points.manual, *(AGENT_COLUMNS if played else []), *TAIL]
    extra = [column for column in old if column not in known]
    return [*known, *extra]
