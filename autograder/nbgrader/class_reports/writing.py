"""What ``grade-all`` leaves in ``--out``: grades that accumulate, the summary, the files received.

One set of totals (:class:`CoursePoints`, read from the notebook's nbgrader metadata): **full
marks** are the autograded parts' points without the bonus (12) plus the hand-graded part 8
(``discussion``, 3): 15. The bonus part (``gae``, 2) counts in a student's total, above full
marks. Part 8 lives in the nbgrader gradebook only (formgrader writes it there): until it is
graded, every report says ``not graded yet``, never 0.

``<out>/`` holds

* ``grades.csv``: one row per student, ``student, status, total, max_total, <part>...,
  discussion, submitted_at, submitted_from, minutes_late, raw_total, late_penalty, sandboxed,
  notes, file, received, graded_at`` (``submitted_at``, where that time came from and
  ``minutes_late``: :mod:`autograder.nbgrader.submission_times`; ``total`` is ``raw_total`` less ``late_penalty``,
  :mod:`autograder.nbgrader.late_penalty`; ``notes`` names every cell that raised, every part that did
  not finish, a student not on the roster). A later run into the same folder **merges by
  student**: a student graded again gets the new row, every other row stays but for what the
  course changed (part 8 typed in formgrader, a new late-penalty rule), and what changed is
  printed, with why (:mod:`autograder.nbgrader.class_reports.change_lines`; appended to ``history.txt``). ``discussion`` and ``total`` are
  read from the gradebook of ``--course`` (or refreshed by ``python -m autograder export``).
  A row whose status is not ``graded`` has empty score columns (its provisional total is in
  ``notes``). Columns added by hand are kept as they are. Every text cell is made safe for
  spreadsheets (:func:`autograder.core.reports.safe_text.csv_cell`);
* ``summary.txt`` and ``scores.png``: the class's score distributions (every row, not just the
  last run's), and, where the grader played the students' agents, the leaderboard of verified
  scores with the students' ids and the same weights handed in twice; ``leaderboard.txt``: the
  same ranking without ids, to show the students (:mod:`.agent_board`);
* ``received/<student>/<UTC time>-<sha256[:12]>.ipynb``: every submitted file byte for byte,
  never overwritten (the same bytes are kept once), with the saved agent handed in beside it
  (``...ipynb`` -> ``....a2c_agent.json``); the course keeps the same copies in
  ``<course>/received/``;
* ``agents/``: the class's key for the weights' fingerprints and each student's recorded agent
  (:mod:`.agent_records`): a grading of the same weights keeps its verified score, and the
  board names the same agent handed in by several students.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import Problem, Submission
from autograder.core.intake.submission_file import agent_file_beside
from autograder.core.reports.grade_result import NOT_RUN, GradeResult
from autograder.nbgrader.class_reports.agent_board import leaderboard_lines
from autograder.nbgrader.class_reports.agent_records import AgentRecords
from autograder.nbgrader.class_reports.change_lines import change_lines
from autograder.nbgrader.class_reports.grade_row import GradeRow
from autograder.nbgrader.class_reports.grades_csv import (
    apply_late_penalty,
    csv_columns,
    merge_rows,
    read_class,
    refresh_manual,
    result_row,
    write_class,
)
from autograder.nbgrader.class_reports.summary import (
    matching_lines,
    save_histogram,
    summary_text,
)
from autograder.nbgrader.folders import keep_received
from autograder.nbgrader.late_penalty import LatePenalty, course_late_penalty, record_penalties
from autograder.nbgrader.plain_feedback import plain_feedback_page
from autograder.nbgrader.roster import NOT_ON_ROSTER, course_roster, name_unnamed
from autograder.nbgrader.submission_times import (
    CANVAS_LATE,
    course_deadline,
    record_times,
    submission_time,
)
from solutions.parts import ASSIGNMENT, NOTEBOOK

__all__ = ["LATE_BY_CANVAS", "Written", "write_outputs", "write_reports"]

#: The note of a row whose Canvas download says LATE (its minutes are unknown).
LATE_BY_CANVAS = (
    "late by Canvas (its download gives no time: minutes unknown, no late penalty of this kit; "
    "Canvas's own late policy can apply)"
)


@dataclass
class Written:
    """What :func:`write_outputs` did: the class's rows, the changes, the summary, and the
    students whose feedback page no longer matches their row (made again from the course): a
    late penalty recorded after their page was made, or an earlier row this run updated."""

    rows: list[GradeRow]
    changes: list[str]
    summary: str
    remake_feedback: list[str] = field(default_factory=list)


def write_outputs(
    out: Path,
    results: Sequence[GradeResult],
    points: CoursePoints,
    submissions: Sequence[Submission] = (),
    problems: Sequence[Problem] = (),
    course_root: Path | None = None,
    db_url: str | None = None,
    histogram: bool = True,
    deadline: datetime | None = None,
    roster: dict[str, Any] | None = None,
    late_penalty: LatePenalty | None = None,
) -> Written:
    """Keep the received files, merge this run's rows into ``out/grades.csv``, write the rest.

    ``results`` are this run's gradings (one per submission, named as the instructor knows
    its file in ``source``); ``problems`` the files that were not graded. With ``db_url`` (the
    course's gradebook), the hand-graded columns come from there, and each submission's time
    goes there (:mod:`autograder.nbgrader.submission_times`; ``deadline`` gives ``minutes_late``). A
    student missing from ``roster`` (:mod:`autograder.nbgrader.roster`) is noted. ``late_penalty``
    (:mod:`autograder.nbgrader.late_penalty`) is applied to every row, and stored in the gradebook
    with ``db_url``. Writes ``grades.csv``,
    ``summary.txt``, ``changes.txt`` (this run's changes), ``history.txt`` (every run's) and,
    with ``histogram``, ``scores.png``.
    """
    out = Path(out)
    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    stamp = when.replace(":", "").replace("-", "").replace("+0000", "Z")
    received: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    to_keep = [(sub.student, sub.path) for sub in submissions]
    for problem in problems:
        if problem.student:  # a duplicate: the student is known, keep that file as well
            to_keep.append((problem.student, problem.path))
            notes.setdefault(problem.student, []).append(
                f"also received {problem.origin or problem.path}: {problem.reason.split(':')[0]}"
                ", not graded (kept in received/)"
            )
    for student, path in to_keep:
        agent = agent_file_beside(path)  # the agent handed in with it, kept beside it
        kept = keep_received(out / "received", student, path, stamp, agent)
        if course_root is not None:
            keep_received(Path(course_root) / "received", student, path, stamp, agent)
        if kept is not None:
            received.setdefault(str(path), str(kept.relative_to(out)))
    origins = {str(sub.path): sub.origin for sub in submissions if sub.origin}
    times = {
        str(sub.path): submission_time(
            sub.path, sub.origin, deadline, sub.mtime, sub.exchange, sub.lms_late
        )
        for sub in submissions
    }
    new_rows = []
    for result in results:
        row = result_row(result, points, when, received.get(result.source, ""))
        row.file = origins.get(result.source, result.source)
        extra = notes.get(result.student, [])
        stamp = times.get(result.source)
        if stamp is not None:
            row.submitted_at, row.submitted_from = stamp.iso(), stamp.source
            # A file that never ran (not a notebook) is no submission to be late with: its
            # time says when it came, and the student's readable file will be timed.
            late = stamp.minutes_late(deadline) if result.ran else ""
            row.minutes_late = int(late) if late else None
            if stamp.source == CANVAS_LATE and result.ran:
                extra = [*extra, LATE_BY_CANVAS]
        if roster is not None and result.student and result.student not in roster:
            extra = [*extra, NOT_ON_ROSTER]
        row.notes = "; ".join(filter(None, [row.notes, *extra]))
        new_rows.append(row)
    for problem in problems:
        if problem.student:
            continue
        new_rows.append(
            GradeRow(
                student="",
                status=f"not graded: {problem.reason}",
                sandboxed=NOT_RUN,
                file=problem.origin or str(problem.path),
                graded_at=when,
            )
        )
    old, old_columns = read_class(out / "grades.csv", points)
    rows = merge_rows(old, new_rows)
    penalties = apply_late_penalty(rows, late_penalty, points)  # a changed rule: every row
    if db_url is not None:
        if course_root is not None:
            by_student = {r.student: times[r.source] for r in results if r.source in times}
            record_times(
                course_root, db_url, ASSIGNMENT, {k: v for k, v in by_student.items() if k}
            )
        record_penalties(db_url, ASSIGNMENT, NOTEBOOK, penalties, next(iter(points.manual), None))
        refresh_manual(rows, points, db_url)
    graded = {row.key for row in new_rows}
    changes, updated = change_lines(old, rows, graded, points.manual)
    # The pages made while recording came before the penalty; an updated row's page is older.
    fresh = {row.student for row in new_rows if row.student}
    remake = sorted(
        {s for s, (value, _) in penalties.items() if s in fresh and value} | set(updated)
    )
    columns = csv_columns(points, rows, old_columns)
    write_class(rows, columns, out / "grades.csv")
    records = AgentRecords(out)
    records.keep(results)
    graded_rows = [row.student for row in rows if row.student]
    board = leaderboard_lines(rows, copies=records.copies(graded_rows))
    matching = matching_lines(submissions)
    summary = "\n".join(
        [summary_text(rows, points), *([""] + matching if matching else []),
         *([""] + board if board else [])]
    )  # fmt: skip
    (out / "summary.txt").write_text(summary + "\n", encoding="utf-8")
    if board:  # the same ranking without names, for the students
        anonymous = "\n".join(leaderboard_lines(rows, anonymous=True))
        (out / "leaderboard.txt").write_text(anonymous + "\n", encoding="utf-8")
    (out / "changes.txt").write_text("\n".join(changes) + "\n", encoding="utf-8")
    with (out / "history.txt").open("a", encoding="utf-8") as log:
        log.write(f"--- {when}\n" + "\n".join(changes) + "\n")
    if histogram and any(row.graded for row in rows):
        save_histogram(rows, points, out / "scores.png")
    return Written(rows, changes, summary, remake)


def write_reports(
    course: Any,
    points: CoursePoints,
    out: Path,
    results: list[GradeResult],
    submissions: Sequence[Submission],
    problems: Sequence[Problem],
    histogram: bool = True,
    feedback_dir: Path | None = None,
    make_feedback: Callable[[Any, str], Path] | None = None,
    settings: Any = None,
) -> list[GradeResult]:
    """:func:`write_outputs` for a grader's run (the end of
    :func:`~autograder.nbgrader.grader.grade_many`), with its ``course`` (the instructor's
    nbgrader course, or ``None``) and the release's ``points``; returns the results sorted by student, each
    ``source`` named as the instructor knows the file, with a result for every file that was
    not graded (duplicates aside). With a course, students without a name get their id as
    one (:func:`autograder.nbgrader.roster.name_unnamed`), and the feedback of every student whose
    page no longer matches the CSV (:attr:`Written.remake_feedback`: a penalty written after the
    page was made, an earlier row updated with part 8 or a new rule) is made again from the
    course into ``feedback_dir`` with ``make_feedback(course, student)`` (nbgrader's feedback,
    given by the caller). ``settings``: the class's
    :class:`~autograder.nbgrader.grader.ClassSettings` (deadline, roster, late penalty), if any."""
    db_url = course.db_url if course is not None else None
    given = getattr(settings, "deadline", None)  # grade-all --deadline, --roster
    deadline = course_deadline(db_url, ASSIGNMENT, given) if db_url else given
    roster = course_roster(
        getattr(settings, "roster", None), course.root if course is not None else None, db_url
    )
    if db_url is not None:
        name_unnamed(db_url)
    rule = course_late_penalty(
        getattr(settings, "late_penalty", None), course.root if course is not None else None
    )
    results = sorted(results, key=lambda result: result.student)
    written = write_outputs(
        out,
        results,
        points,
        submissions,
        problems,
        course_root=course.root if course is not None else None,
        db_url=db_url,
        histogram=histogram,
        deadline=deadline,
        roster=roster,
        late_penalty=rule,
    )
    if course is not None and feedback_dir is not None and make_feedback is not None:
        graded = {row.student: row for row in written.rows if row.graded}
        Path(feedback_dir).mkdir(parents=True, exist_ok=True)
        for student in [name for name in written.remake_feedback if name in graded]:
            page = Path(feedback_dir) / f"{student}.html"
            try:
                shutil.copyfile(make_feedback(course, student), page)
            except RuntimeError as error:  # NbgraderError: the row stands, the page says why
                row, reason = graded[student], str(error).splitlines()[0]
                text = plain_feedback_page(
                    student, row.total or 0.0, row.max_total or 0.0, {},
                    f"The full feedback page could not be made ({reason}).",
                )  # fmt: skip
                page.write_text(text, encoding="utf-8")
    origins = {str(sub.path): sub.origin for sub in submissions if sub.origin}
    for result in results:
        result.source = origins.get(result.source, result.source)
    for problem in problems:
        if not problem.student:
            results.append(
                GradeResult(
                    problem.student,
                    status=f"not graded: {problem.reason}",
                    sandboxed=False,
                    source=problem.origin or str(problem.path),
                )
            )
    return results
