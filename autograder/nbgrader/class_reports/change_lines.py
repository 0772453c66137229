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

from autograder.nbgrader.class_reports.grade_row import GradeRow, points_cell
from autograder.nbgrader.part8_regrading import EARLIER

__all__ = ["change_lines", "describe"]


def describe(row: GradeRow) -> str:
    """``"14 of 15 (late penalty 1.5 from 15.5) (part 8 not graded yet)"``, or the status."""
    if row.graded:
        text = f"{points_cell(row.total)} of {points_cell(row.max_total)}"
        if row.late_penalty:
            penalty, raw = points_cell(row.late_penalty), points_cell(row.raw_total)
            text += f" (late penalty {penalty} from {raw})"
        return text + (" (part 8 not graded yet)" if row.pending() else "")
    return row.status.split(":")[0] or "?"


def _set_aside(row: GradeRow) -> str:
    """The note of a part 8 score of an earlier submission that no longer counts, or ``""``."""
    notes = row.notes.split("; ")
    return next((note for note in notes if note.startswith(EARLIER.lower())), "")


def _reasons(before: GradeRow, after: GradeRow, manual: Iterable[str]) -> list[str]:
    """Why ``before`` became ``after``: part 8 set aside or read, a late penalty applied."""
    reasons = []
    earlier = _set_aside(after)
    if earlier and earlier != _set_aside(before):
        reasons.append(f"{earlier} set aside: part 8 of this submission waits for a grader")
    for name in manual:
        now = after.hand.get(name)
        if _hand_cell(before, name) != _hand_cell(after, name) and now is not None:
            reasons.append(f"part 8 ({name}) read from the gradebook")
    was_penalty, penalty = before.late_penalty or 0.0, after.late_penalty or 0.0
    if penalty != was_penalty and after.graded:
        was = points_cell(before.late_penalty) or 0
        reasons.append(f"late penalty {points_cell(after.late_penalty)} (was {was})")
    return reasons


def _hand_cell(row: GradeRow, name: str) -> tuple[bool, str]:
    """A hand-graded cell as the CSV tells it apart: empty, not graded yet, or its points."""
    return (name in row.hand, points_cell(row.hand.get(name)))


def _grade(row: GradeRow, manual: Sequence[str]) -> tuple:
    """What changes a student's grade, at the CSV's precision: the status, the totals, the
    penalty, part 8."""
    numbers = (row.total, row.raw_total, row.late_penalty)
    hand = tuple(_hand_cell(row, name) for name in manual)
    return (row.status, *(points_cell(number) for number in numbers), *hand)


def change_lines(
    old: Sequence[GradeRow],
    rows: Sequence[GradeRow],
    graded: Iterable[str],
    manual: Iterable[str] = (),
) -> tuple[list[str], list[str]]:
    """The change lines from the rows before the run (``old``) to the rows written (``rows``),
    where ``graded`` are the row keys this run graded; and the students of the ``updated`` rows.
    """
    manual = tuple(manual)
    before = {row.key: row for row in old}
    graded = set(graded)
    lines: list[str] = []
    updated: list[str] = []
    kept = 0
    for row in rows:
        name = row.student or row.file
        was = before.get(row.key)
        if was is None:
            lines.append(f"added    {name}: {describe(row)}")
            continue
        reasons = _reasons(was, row, manual)
        why = f": {'; '.join(reasons)}" if reasons else ""
        if row.key in graded:
            then, now = describe(was), describe(row)
            what = f"{then} -> {now}" if then != now else f"{now} (total unchanged)"
            lines.append(f"replaced {name}: {what}{why}")
        elif _grade(was, manual) != _grade(row, manual):
            lines.append(f"updated  {name}: {describe(was)} -> {describe(row)}{why}")
            if row.student:
                updated.append(row.student)
        else:
            kept += 1
    ordered = [line for line in lines if not line.startswith("updated")]
    ordered += [line for line in lines if line.startswith("updated")]
    if kept:
        ordered.append(f"kept     {kept} earlier row(s) as they were")
    return ordered, updated
