"""The class at a glance: ``summary.txt`` (score distributions, how totals count) and ``scores.png``.

Every row of ``grades.csv`` counts, not just the last run's.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autograder.core.course.points import NOT_GRADED_YET, CoursePoints
from autograder.core.reports.grade_result import NOT_RUN
from autograder.nbgrader.class_reports.grade_row import GradeRow, points_cell
from autograder.nbgrader.submission_times import CANVAS_LATE

__all__ = ["histogram_figure", "matching_lines", "save_histogram", "summary_text"]


def summary_text(rows: Sequence[GradeRow], points: CoursePoints) -> str:
    """Per-part score distribution over the graded rows, and how the totals count."""
    graded = [row for row in rows if row.graded]
    header = (
        f"{'part':<24}{'points':>7}{'mean':>7}{'min':>7}{'median':>8}{'max':>7}{'full marks':>12}"
    )
    lines = [f"{len(graded)} graded submission(s) of {len(rows)} row(s)", header]
    tops = {**points.auto, **points.manual, "total": points.full_marks}
    for key in [*tops]:
        scores = [v for v in (row.number(key) for row in graded) if v is not None]
        if not scores:
            if key in points.manual:
                lines.append(f"{key:<24}{tops[key]:>7g}  {NOT_GRADED_YET} (0 of {len(graded)})")
            continue
        full = sum(score >= tops[key] - 1e-9 for score in scores) / len(scores)
        label = key
        if key in points.bonus:
            label = f"{key} (bonus)"
        elif key in points.manual and len(scores) < len(graded):
            label = f"{key} ({len(scores)} of {len(graded)})"
        lines.append(
            f"{label:<24}{tops[key]:>7g}{statistics.fmean(scores):>7.2f}{min(scores):>7.2f}"
            f"{statistics.median(scores):>8.2f}{max(scores):>7.2f}{full:>11.0%}"
        )
    lines.append(points.explain())
    late = [
        row
        for row in rows
        if row.sandboxed != NOT_RUN
        and ((row.minutes_late or 0) > 0 or row.submitted_from == CANVAS_LATE)
    ]
    if late:
        named = ", ".join(f"{row.key} ({_lateness(row)})" for row in late)
        lines.append(f"late: {len(late)} submission(s) after the deadline: {named}")
    waiting = [row for row in rows if not row.graded]
    if waiting:
        named = ", ".join(
            f"{row.key} ({row.status.split(':')[0] or 'no status'})" for row in waiting
        )
        lines.append(f"not graded: {len(waiting)} row(s), grades.csv says why: {named}")
    if any(row.late_penalty for row in graded):
        lines.append("totals are after the late penalty (grades.csv: raw_total, late_penalty)")
    if any(name in row.pending() for row in graded for name in points.manual):
        lines.append("totals leave out part 8 where it is not graded yet")
    return "\n".join(lines)


def matching_lines(submissions: Sequence[Any]) -> list[str]:
    """How this run's files were matched to students: each file an LMS named (Canvas, Moodle:
    :attr:`~autograder.core.intake.collect.Submission.matched`), and how many a folder or file
    name names."""
    lms = [sub for sub in submissions if getattr(sub, "matched", "")]
    if not lms:
        return []
    lines = [f"how this run's {len(submissions)} file(s) were matched to students:"]
    for sub in sorted(lms, key=lambda sub: sub.student):
        where = str(sub.origin or sub.path).rpartition(".zip:")[2] or str(sub.path)
        lines.append(f"  {where} -> {sub.student}: {sub.matched}")
    others = len(submissions) - len(lms)
    if others:
        lines.append(f"  {others} more named by their folder or file name (the student id)")
    return lines


def _lateness(row: GradeRow) -> str:
    if row.submitted_from == CANVAS_LATE and row.minutes_late is None:
        return "late by Canvas, minutes unknown"
    text = f"{row.minutes_late} min"
    return text + (f", late penalty {points_cell(row.late_penalty)}" if row.late_penalty else "")


def histogram_figure(rows: Sequence[GradeRow], points: CoursePoints) -> Any:
    """A matplotlib figure with one histogram of scores per part, part 8 and the total."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    graded = [row for row in rows if row.graded]
    tops = {**points.auto, **points.manual, "total": points.full_marks}
    bonus = sum(points.auto[key] for key in points.bonus if key in points.auto)
    columns = min(4, len(tops))
    lines = -(-len(tops) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.6 * lines), squeeze=False)
    for axis, (key, top) in zip(axes.flat, tops.items(), strict=False):
        scores = [v for v in (row.number(key) for row in graded) if v is not None]
        upper = top + bonus if key == "total" else top
        axis.hist(scores, bins=10, range=(0, max(upper, 1e-9)))
        title = f"{key} ({'bonus, ' if key in points.bonus else ''}of {top:g})"
        axis.set_title(title if key != "total" else f"total (full marks {top:g})", fontsize=9)
        axis.set_xlabel("points")
        axis.set_ylabel("students")
        axis.yaxis.set_major_locator(MaxNLocator(integer=True))
        axis.set_ylim(0, max(1.0, axis.get_ylim()[1]))
        if not scores:
            axis.text(0.5, 0.5, NOT_GRADED_YET, ha="center", transform=axis.transAxes)
    for axis in list(axes.flat)[len(tops) :]:
        axis.set_visible(False)
    figure.suptitle(f"score distributions ({len(graded)} graded submissions)")
    figure.tight_layout()
    return figure


def save_histogram(rows: Sequence[GradeRow], points: CoursePoints, path: Path) -> Path:
    """:func:`histogram_figure` saved as a PNG; returns ``path``."""
    import matplotlib.pyplot as plt

    figure = histogram_figure(rows, points)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
