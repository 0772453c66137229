"""What one run changed in ``grades.csv``, and why: the lines ``grade-all`` prints and keeps.

Each row as it was before the run is compared with the row as written, after everything the run
did: the new gradings merged by student, part 8 read from the course's gradebook (formgrader
writes it there), the late-penalty rule applied to every row. A student graded in this run is
``added`` or ``replaced``; an earlier row that changed all the same is ``updated``, with the
reason; every other row is counted as ``kept ... as they were``. The same comparison says whose
feedback page no longer matches the CSV (:func:`change_lines` returns the updated students).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from autograder.core.reports.course_points import NOT_GRADED_YET
from autograder.nbgrader.part8_regrading import EARLIER

__all__ = ["change_lines", "describe", "row_key"]

#: The columns whose change changes a student's grade (part 8's columns are added by name).
_GRADE_COLUMNS = ("status", "total", "raw_total", "late_penalty")


def row_key(row: dict[str, str]) -> str:
    """Rows are merged by student; a file nobody could be named for, by its file."""
    return row.get("student") or f"file:{row.get('file', '')}"


def _number(text: str | None) -> float | None:
    try:
        return float(text or "")
    except ValueError:
        return None


def describe(row: dict[str, str]) -> str:
    """``"14 of 15 (late penalty 1.5 from 15.5) (part 8 not graded yet)"``, or the status."""
    status = row.get("status", "")
    if status == "graded":
        waiting = any(value == NOT_GRADED_YET for value in row.values())
        text = f"{row.get('total', '')} of {row.get('max_total', '')}"
        if _number(row.get("late_penalty")):
            text += f" (late penalty {row['late_penalty']} from {row.get('raw_total', '')})"
        return text + (" (part 8 not graded yet)" if waiting else "")
    return status.split(":")[0] or "?"


def _set_aside(row: dict[str, str]) -> str:
    """The note of a part 8 score of an earlier submission that no longer counts, or ``""``."""
    notes = row.get("notes", "").split("; ")
    return next((note for note in notes if note.startswith(EARLIER.lower())), "")


def _reasons(before: dict[str, str], after: dict[str, str], manual: Iterable[str]) -> list[str]:
    """Why ``before`` became ``after``: part 8 set aside or read, a late penalty applied."""
    reasons = []
    earlier = _set_aside(after)
    if earlier and earlier != _set_aside(before):
        reasons.append(f"{earlier} set aside: part 8 of this submission waits for a grader")
    for name in manual:
        was, now = before.get(name, ""), after.get(name, "")
        if now != was and _number(now) is not None:
            reasons.append(f"part 8 ({name}) read from the gradebook")
    was_penalty = _number(before.get("late_penalty")) or 0.0
    penalty = _number(after.get("late_penalty")) or 0.0
    if penalty != was_penalty and after.get("status") == "graded":
        reasons.append(
            f"late penalty {after.get('late_penalty')} (was {before.get('late_penalty') or 0})"
        )
    return reasons


def change_lines(
    old: Sequence[dict[str, str]],
    rows: Sequence[dict[str, str]],
    graded: Iterable[str],
    manual: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """The change lines from the rows before the run (``old``) to the rows written (``rows``),
    where ``graded`` are the row keys this run graded; and the students of the ``updated`` rows.
    """
    manual = tuple(manual)
    before = {row_key(row): row for row in old}
    graded = set(graded)
    lines: list[str] = []
    updated: list[str] = []
    kept = 0
    for row in rows:
        key = row_key(row)
        name = row.get("student") or row.get("file", "")
        was = before.get(key)
        if was is None:
            lines.append(f"added    {name}: {describe(row)}")
            continue
        reasons = _reasons(was, row, manual)
        why = f": {'; '.join(reasons)}" if reasons else ""
        if key in graded:
            then, now = describe(was), describe(row)
            what = f"{then} -> {now}" if then != now else f"{now} (total unchanged)"
            lines.append(f"replaced {name}: {what}{why}")
        elif any(
            was.get(column, "") != row.get(column, "") for column in (*_GRADE_COLUMNS, *manual)
        ):
            lines.append(f"updated  {name}: {describe(was)} -> {describe(row)}{why}")
            if row.get("student"):
                updated.append(row["student"])
        else:
            kept += 1
    ordered = [line for line in lines if not line.startswith("updated")]
    ordered += [line for line in lines if line.startswith("updated")]
    if kept:
        ordered.append(f"kept     {kept} earlier row(s) as they were")
    return ordered, updated
