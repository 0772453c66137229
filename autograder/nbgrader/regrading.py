"""``python -m autograder regrade OUT``: grade the class's kept files again after a fix.

When a hidden test, the reference or a point value changes, every student's file that counts
(the copy ``grade-all`` kept in ``OUT/received/``, named in ``grades.csv``'s ``received``
column) is assessed again with the grader as it is now, locally or on Dask, as ``grade-all``
assesses. Then, student by student:

* a student whose status and part scores came out as before is **left as it was**: nothing is
  recorded, their row and gradebook entry are untouched, and so is their feedback page unless
  the full marks changed (then every graded student's page is made again);
* a student whose grade moved is recorded again (``--course``: into the course's gradebook),
  **keeping part 8**: the same file is graded, so the hand-graded scores and comments are put
  back as they were (:func:`~autograder.nbgrader.part8_regrading.put_back_hand_grades`), and
  **keeping the late data**: the submission time, where it came from and the minutes late stay
  those of the row (the late penalty is the course's rule on them, as before); their feedback
  page is made again.

A changed point value is first brought into the course
(:func:`~autograder.nbgrader.course_point_changes.update_course_points`: the
new source notebook and nbgrader's ``generate_assignment --force`` there), so that the course's
gradebook, which records scores only up to its release's points, holds the new maxima; part 8
scores and comments, submissions and their times stay as they were. With or without a course,
every row's ``max_total`` follows new full marks. ``grade-all --course`` with such a source is
refused before grading and names this command
(:func:`~autograder.nbgrader.course_point_changes.refuse_changed_points`).

The lines it prints say which parts' points changed, who changed and by how much (before,
after, the parts that moved, :func:`moved_lines`), then ``grade-all``'s change log of
``grades.csv``. ``--dry-run`` assesses and prints the same lines without writing anything.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from autograder.core.course.points import CoursePoints
from autograder.core.fan_out import LocalGrading, grade_class, unreadable
from autograder.core.intake.collect import Submission
from autograder.core.intake.submission_file import UnreadableNotebook, agent_file_for, read_bytes
from autograder.core.reports.grade_result import GradeResult
from autograder.core.reports.safe_text import points_text
from autograder.nbgrader.class_reports.agent_records import AgentRecords
from autograder.nbgrader.class_reports.change_lines import describe
from autograder.nbgrader.class_reports.grade_row import GradeRow, number_in, points_cell
from autograder.nbgrader.class_reports.grades_csv import (
    apply_late_penalty,
    read_class,
    read_rows,
    result_row,
    write_class,
)
from autograder.nbgrader.course_point_changes import (
    check_part8_fits,
    point_changes,
    update_course_points,
)
from autograder.nbgrader.late_penalty import course_late_penalty, record_penalties
from solutions.parts import ASSIGNMENT, NOTEBOOK

__all__ = [
    "KEPT_COLUMNS",
    "Regrade",
    "moved_lines",
    "regrade",
    "stored_submissions",
]

#: The columns of a row a regrade keeps as they were: when and how late the file came in.
KEPT_COLUMNS = ("submitted_at", "submitted_from", "minutes_late")


@dataclass
class Regrade:
    """What a regrade found: the lines to print, who moved, and how many were left as they were."""

    lines: list[str]
    moved: list[str]
    unchanged: int


def stored_submissions(out: Path) -> tuple[list[Submission], list[str]]:
    """Each student's kept file that counts (``grades.csv``'s ``received``), and the rows that
    have none (never read, or kept nowhere), as lines.

    Raises:
        FileNotFoundError: ``out`` holds no ``grades.csv``.
    """
    out = Path(out).resolve()
    rows, _ = read_rows(out / "grades.csv")
    if not rows:
        raise FileNotFoundError(
            f"{out / 'grades.csv'} does not exist: give the --out folder of grade-all."
        )
    kept, found, skipped = (out / "received").resolve(), [], []
    for row in rows:
        student, received = row.get("student", ""), row.get("received", "")
        path = (out / received).resolve() if received else None
        if not student or path is None or not path.is_relative_to(kept) or not path.is_file():
            skipped.append(f"{student or row.get('file', '?')}: no kept file, not graded again")
            continue
        try:
            when = datetime.fromisoformat(row.get("submitted_at", "")).timestamp()
        except ValueError:
            when = path.stat().st_mtime
        found.append(Submission(student, path, when))
    return found, skipped


def _scores(row: GradeRow, points: CoursePoints) -> tuple:
    """The status, the autograded parts' points and, where the course gives the agent points,
    the agent's, at the CSV's precision."""
    agent = (points_cell(row.agent_points),) if points.agent else ()
    return (row.status, *(points_cell(row.scores.get(key)) for key in points.auto), *agent)


def _new_row(result: GradeResult, old: GradeRow, points: CoursePoints) -> GradeRow:
    """``result``'s row with what a regrade keeps from ``old`` (part 8, the late data)."""
    row = result_row(result, points, old.graded_at, old.received)
    for name in points.manual:
        if name in old.hand:
            row.hand[name] = old.hand[name]
    if old.submitted_at:
        row.submitted_at = old.submitted_at
    if old.submitted_from:
        row.submitted_from = old.submitted_from
    if old.minutes_late is not None:
        row.minutes_late = old.minutes_late
    if old.late_penalty is not None:
        row.late_penalty = old.late_penalty
    row.count(points)
    return row


def _at_csv_precision(value: float | None) -> float:
    return number_in(points_cell(value)) or 0.0


def moved_lines(
    old: Mapping[str, GradeRow], results: Sequence[GradeResult], points: CoursePoints
) -> tuple[list[str], list[str]]:
    """``(lines, students)``: for each result whose status or part scores differ from its old
    row, ``"bob: 10.5 of 15 -> 6.5 of 15 (a2c 4 -> 0)"``, and those students."""
    lines, moved = [], []
    for result in sorted(results, key=lambda r: r.student):
        before = old[result.student]
        after = _new_row(result, before, points)
        if _scores(before, points) == _scores(after, points):
            continue
        was, now = before.cells(), after.cells()
        parts = [
            f"{key} {was.get(key) or '-'} -> {now.get(key) or '-'}"
            for key in points.auto
            if number_in(was.get(key)) != number_in(now.get(key))
        ]
        change = _at_csv_precision(after.total) - _at_csv_precision(before.total)
        by = f", {'+' if change >= 0 else ''}{points_text(change)}" if after.graded else ""
        what = f" ({', '.join(parts)})" if parts else ""
        lines.append(f"{result.student}: {describe(before)} -> {describe(after)}{by}{what}")
        moved.append(result.student)
    return lines, moved


def _write_new_maximum(
    out: Path,
    points: CoursePoints,
    old: Mapping[str, Mapping[str, str]],
    moved: set,
    course: Any = None,
) -> None:
    """Rewrite ``grades.csv`` with the late data of the first grading for the ``moved``
    students, every row's ``max_total`` as full marks are now (a point value changed), and,
    with a ``course``, every late penalty by the course's rule on the kept minutes late (a
    penalty is a share of full marks), in the gradebook too (only a course has a late rule:
    ``grade-all --late-penalty`` needs ``--course``)."""
    rows, columns = read_class(out / "grades.csv", points)
    for row in rows:
        if row.student in moved:
            kept = old[row.student]
            row.submitted_at, row.submitted_from = kept.submitted_at, kept.submitted_from
            row.minutes_late = kept.minutes_late
        if row.max_total is not None:
            row.max_total = points.full_marks
    if course is not None:
        penalties = apply_late_penalty(rows, course_late_penalty(None, course.root), points)
        record_penalties(
            course.db_url, ASSIGNMENT, NOTEBOOK, penalties, next(iter(points.manual), None)
        )
    write_class(rows, columns, out / "grades.csv")


def _assess_all(
    grader: Any,
    subs: Sequence[Submission],
    jobs: int,
    cluster: Any,
    records: AgentRecords,
    dry_run: bool,
) -> list:
    """The assessments of ``subs`` (nothing recorded; an unreadable file left out), on
    ``cluster`` or in ``jobs`` threads: the fan-out of ``grade-all``; each with the agent kept
    beside its file and what ``records`` holds of the student's."""
    found: list = []

    def keep(assessment: Any) -> GradeResult:
        if not assessment.result.status.startswith("unreadable"):
            found.append(assessment)
        return assessment.result

    def one(sub: Submission, threads: int) -> Any:
        try:
            data = read_bytes(sub.path)
        except UnreadableNotebook as error:
            return unreadable(sub, error)
        memory = records.memory(sub.student, not dry_run)
        return grader.assess(
            data, sub.student, sub.path.name, threads, agent_file_for(sub.path), memory
        )

    if cluster is not None:
        engine = cluster.engine(grader.assessor, lambda sub: records.memory(sub.student, not dry_run))
    else:
        engine = LocalGrading(jobs).engine(one)
    grade_class(engine, keep, subs)
    order = {str(sub.path): index for index, sub in enumerate(subs)}
    return sorted(found, key=lambda assessment: order.get(assessment.result.source, len(order)))


def regrade(
    grader: Any,
    out: Path,
    dry_run: bool = False,
    jobs: int = 1,
    cluster: Any = None,
    make_feedback: Any = None,
) -> Regrade:
    """Assess every kept file of ``out`` again with ``grader`` (a
    :class:`~autograder.nbgrader.grader.Grader`) and record those whose grade moved (none with
    ``dry_run``); ``make_feedback(course, student)`` makes a moved student's page."""
    out = Path(out).resolve()
    course = grader.course
    check_part8_fits(grader.points, course)
    changed = point_changes(grader.points, course)
    subs, skipped = stored_submissions(out)
    old_rows, columns = read_class(out / "grades.csv", grader.points)
    old = {row.student: row for row in old_rows if row.student}
    assessments = _assess_all(grader, subs, jobs, cluster, AgentRecords(out), dry_run)
    lines, moved = moved_lines(old, [a.result for a in assessments], grader.points)
    header = f"{len(moved)} of {len(assessments)} student(s) changed; the others left as they were"
    lines = [header, *[f"  {line}" for line in lines], *[f"  {line}" for line in skipped]]
    full = points_cell(grader.points.full_marks)
    stale = sorted({points_cell(row.max_total) for row in old_rows} - {"", full})
    if stale:
        lines.insert(0, f"full marks {' or '.join(stale)} -> {full} in every row")
    if changed:
        verb = "would follow" if dry_run else "follow"
        lines.insert(0, f"the course's points {verb} the source notebook: {', '.join(changed)}")
    if dry_run:
        lines.append("dry run: nothing written")
        return Regrade(lines, moved, len(assessments) - len(moved))
    if changed:
        update_course_points(grader)
    if not moved:
        if stale:
            _write_new_maximum(out, grader.points, {}, set(), course)
            _remake_pages(course, out, make_feedback, _graded(out), lines)
        return Regrade(lines, moved, len(assessments) - len(moved))
    from autograder.nbgrader.class_reports.writing import write_reports
    from autograder.nbgrader.part8_regrading import put_back_hand_grades, saved_hand_grades

    graded_by_hand = [
        student
        for student in moved
        if any(old[student].hand.get(name) is not None for name in grader.points.manual)
    ]
    if course is None and graded_by_hand:
        raise ValueError(
            f"part 8 of {', '.join(graded_by_hand)} was graded in a course: give regrade the "
            "--course you graded into, so that part 8 is kept (nothing was written)."
        )
    chosen = [a for a in assessments if a.result.student in moved]
    results = []
    for assessment in chosen:
        student = assessment.result.student
        saved = None
        if course is not None:
            from nbgrader.api import Gradebook, MissingEntry

            with Gradebook(course.db_url) as gradebook:
                try:
                    saved = saved_hand_grades(gradebook, student, NOTEBOOK, ASSIGNMENT)
                except MissingEntry:
                    saved = None
        result = grader.record(assessment)
        if course is not None and saved is not None:
            from nbgrader.api import Gradebook

            with Gradebook(course.db_url) as gradebook:
                put_back_hand_grades(gradebook, student, NOTEBOOK, ASSIGNMENT, saved)
        results.append(result)
    by_path = {str(sub.path): sub for sub in subs}
    written = write_reports(
        course,
        grader.points,
        out,
        results,
        [by_path[r.source] for r in results if r.source in by_path],
        [],
        feedback_dir=None,
    )
    _write_new_maximum(out, grader.points, old, set(moved), course)
    # New full marks change every student's page, not only the pages of those who moved.
    pages = _graded(out) if stale else [r.student for r in written if r.graded]
    _remake_pages(course, out, make_feedback, pages, lines)
    changes = (out / "changes.txt").read_text(encoding="utf-8").strip()
    lines += ["grades.csv, what changed:", changes]
    return Regrade(lines, moved, len(assessments) - len(moved))


def _graded(out: Path) -> list[str]:
    """The students whose row of ``out/grades.csv`` is graded."""
    rows, _ = read_rows(out / "grades.csv")
    return [row["student"] for row in rows if row.get("status") == "graded" and row.get("student")]


def _remake_pages(
    course: Any, out: Path, make_feedback: Any, students: Sequence[str], lines: list[str]
) -> None:
    """Make the feedback page of each of ``students`` again from the course into
    ``out/feedback/`` (nothing without a course or ``make_feedback``); a page that cannot be
    made leaves the grade as it is and a line saying so."""
    if make_feedback is None or course is None:
        return
    (out / "feedback").mkdir(exist_ok=True)
    for student in students:
        try:
            page = make_feedback(course, student)
        except RuntimeError as error:  # NbgraderError: the grade stands, the page is old
            lines.append(f"  feedback of {student} not made: {str(error)[:200]}")
            continue
        shutil.copyfile(page, out / "feedback" / f"{student}.html")
