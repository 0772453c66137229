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
  printed, with why (:mod:`autograder.nbgrader.change_lines`; appended to ``history.txt``). ``discussion`` and ``total`` are
  read from the gradebook of ``--course`` (or refreshed by ``python -m autograder export``).
  A row whose status is not ``graded`` has empty score columns (its provisional total is in
  ``notes``). Columns added by hand are kept as they are. Every text cell is made safe for
  spreadsheets (:func:`autograder.core.report.csv_cell`);
* ``summary.txt`` and ``scores.png``: the class's score distributions (every row, not just the
  last run's);
* ``received/<student>/<UTC time>-<sha256[:12]>.ipynb``: every submitted file byte for byte,
  never overwritten (the same bytes are kept once); the course keeps the same copies in
  ``<course>/received/``.
"""

from __future__ import annotations

import csv
import shutil
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from autograder.core.collect import Problem, Submission
from autograder.core.course_points import NOT_GRADED_YET, CoursePoints, course_points
from autograder.core.judges import PART_NAMES
from autograder.core.report import csv_cell, points_text
from autograder.core.results import GradeResult
from autograder.nbgrader.change_lines import change_lines, row_key
from autograder.nbgrader.folders import keep_received
from autograder.nbgrader.gradebook_session import gradebook_session
from autograder.nbgrader.late_penalty import (
    LATE_LINE,
    LatePenalty,
    course_late_penalty,
    record_penalties,
)
from autograder.nbgrader.roster import NOT_ON_ROSTER, course_roster, name_unnamed
from autograder.nbgrader.submission_times import (
    course_deadline,
    minutes_late,
    record_times,
    submission_time,
)
from solutions.build_notebooks import ASSIGNMENT, NOTEBOOK

__all__ = [
    "NOT_GRADED_YET",
    "CoursePoints",
    "apply_late_penalty",
    "Written",
    "course_points",
    "csv_columns",
    "hand_score",
    "histogram_figure",
    "manual_scores",
    "merge_rows",
    "read_rows",
    "refresh_manual",
    "save_histogram",
    "summary_text",
    "write_outputs",
    "write_reports",
    "write_rows",
]

HEAD = ["student", "status", "total", "max_total"]
TAIL = ["submitted_at", "submitted_from", "minutes_late", "raw_total", "late_penalty"]
TAIL += ["sandboxed", "notes"]
TAIL += ["file", "received", "graded_at"]


def manual_scores(db_url: str, students: Iterable[str]) -> dict[str, dict[str, float | None]]:
    """``{student: {grade id: points, or None when not graded yet}}`` of the hand-graded cells.

    Read from nbgrader's gradebook (where formgrader writes part 8). A cell nbgrader scored by
    itself (an answer left as the stub gets 0 and needs no grading) counts as graded.
    """
    from nbgrader.api import Gradebook, MissingEntry

    from solutions.build_notebooks import ASSIGNMENT, NOTEBOOK

    found: dict[str, dict[str, float | None]] = {}
    with gradebook_session(), Gradebook(db_url) as gradebook:
        for student in students:
            try:
                notebook = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
            except MissingEntry:
                continue
            found[student] = {
                grade.name: hand_score(grade)
                for grade in notebook.grades
                if not (grade.cell_type == "code" and grade.name.startswith("test_"))
            }
    return found


def hand_score(grade: Any) -> float | None:
    """A hand-graded cell's points: formgrader's score, nbgrader's own (0 for an answer left as
    the stub), or ``None`` while it waits for formgrader; extra credit given there counts too."""
    extra = float(grade.extra_credit or 0.0)  # formgrader's "extra credit" field
    if grade.manual_score is not None:
        return float(grade.manual_score) + extra
    if grade.auto_score is not None and not grade.needs_manual_grade:
        return float(grade.auto_score) + extra
    return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _fmt(value: float) -> str:
    return f"{round(value, 6):g}"


def result_row(result: GradeResult, points: CoursePoints, when: str, received: str = "") -> dict:
    """The CSV row of one grading (part 8 ``not graded yet`` until :func:`refresh_manual`)."""
    ran = not result.status.startswith(("unreadable", "not graded"))
    row = {
        "student": result.student,
        "status": result.status,
        "max_total": _fmt(points.full_marks),
        "sandboxed": ("yes" if result.sandboxed else "NO") if ran else "not run",
        "notes": "; ".join([*result.notes, *result.unfinished_notes()]),
        "file": result.source,
        "received": received,
        "graded_at": when,
    }
    for key in [*points.auto, *result.parts]:
        row[key] = ""
    if result.graded:
        for key, part in result.parts.items():
            row[key] = _fmt(part.score)
    elif result.parts:
        note = f"provisional total {_fmt(result.total)} (not a grade)"
        row["notes"] = "; ".join(filter(None, [note, row["notes"]]))
    for name in points.manual:
        if name in result.hand_scores:  # left as the stub: nbgrader scored it itself
            row[name] = _fmt(result.hand_scores[name])
        else:
            row[name] = NOT_GRADED_YET if result.parts else ""
    _retotal(row, points)
    return row


def _retotal(row: dict[str, str], points: CoursePoints) -> None:
    """``raw_total``: the autograded parts (bonus included) plus the hand-graded points so far;
    ``total``: that less ``late_penalty`` (:mod:`autograder.nbgrader.late_penalty`), never below 0."""
    if row.get("status") != "graded":
        row["total"] = row["raw_total"] = row["late_penalty"] = ""
        return
    auto = [_number(row.get(key, "")) for key in points.auto]
    manual = [_number(row.get(name, "")) for name in points.manual]
    raw = sum(v for v in auto + manual if v is not None)
    penalty = _number(row.get("late_penalty", "")) or 0.0
    row["raw_total"], row["late_penalty"] = _fmt(raw), _fmt(penalty)
    row["total"] = _fmt(max(0.0, raw - penalty))
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
        late = int(_number(row.get("minutes_late", "")) or 0)
        penalty = rule.points(late, points.full_marks) if rule is not None else 0.0
        row["late_penalty"] = _fmt(penalty)
        _retotal(row, points)
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
                row[name] = NOT_GRADED_YET if value is None else _fmt(value)
        _retotal(row, points)
        complete += row.get("status") == "graded" and all(
            _number(row.get(name, "")) is not None for name in points.manual
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
            if value.startswith("'") and value[1:2] in ("=", "+", "-", "@", "\t", "\r"):
                row[key] = value[1:]
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
        parts += [k for k in row if k in PART_NAMES and k not in parts]
    known = [*HEAD, *parts, *points.manual, *TAIL]
    extra = [column for column in old if column not in known]
    return [*known, *extra]


def summary_text(rows: Sequence[dict[str, str]], points: CoursePoints) -> str:
    """Per-part score distribution over the graded rows, and how the totals count."""
    graded = [row for row in rows if row.get("status") == "graded"]
    header = (
        f"{'part':<24}{'points':>7}{'mean':>7}{'min':>7}{'median':>8}{'max':>7}{'full marks':>12}"
    )
    lines = [f"{len(graded)} graded submission(s) of {len(rows)} row(s)", header]
    tops = {**points.auto, **points.manual, "total": points.full_marks}
    for key in [*tops]:
        scores = [v for v in (_number(row.get(key, "")) for row in graded) if v is not None]
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
    late = [row for row in rows if (_number(row.get("minutes_late", "")) or 0) > 0]
    if late:
        named = ", ".join(f"{row_key(row)} ({_lateness(row)})" for row in late)
        lines.append(f"late: {len(late)} submission(s) after the deadline: {named}")
    if any(_number(row.get("late_penalty", "")) for row in graded):
        lines.append("totals are after the late penalty (grades.csv: raw_total, late_penalty)")
    if any(row.get(name) == NOT_GRADED_YET for row in graded for name in points.manual):
        lines.append("totals leave out part 8 where it is not graded yet")
    return "\n".join(lines)


def _lateness(row: dict[str, str]) -> str:
    penalty = _number(row.get("late_penalty", ""))
    text = f"{row['minutes_late']} min"
    return text + (f", late penalty {row['late_penalty']}" if penalty else "")


def histogram_figure(rows: Sequence[dict[str, str]], points: CoursePoints) -> Any:
    """A matplotlib figure with one histogram of scores per part, part 8 and the total."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    graded = [row for row in rows if row.get("status") == "graded"]
    tops = {**points.auto, **points.manual, "total": points.full_marks}
    bonus = sum(points.auto[key] for key in points.bonus if key in points.auto)
    columns = min(4, len(tops))
    lines = -(-len(tops) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(3.2 * columns, 2.6 * lines), squeeze=False)
    for axis, (key, top) in zip(axes.flat, tops.items(), strict=False):
        scores = [v for v in (_number(row.get(key, "")) for row in graded) if v is not None]
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


def save_histogram(rows: Sequence[dict[str, str]], points: CoursePoints, path: Path) -> Path:
    """:func:`histogram_figure` saved as a PNG; returns ``path``."""
    import matplotlib.pyplot as plt

    figure = histogram_figure(rows, points)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


@dataclass
class Written:
    """What :func:`write_outputs` did: the class's rows, the changes, the summary, and the
    students whose feedback page no longer matches their row (made again from the course): a
    late penalty recorded after their page was made, or an earlier row this run updated."""

    rows: list[dict[str, str]]
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
        kept = keep_received(out / "received", student, path, stamp)
        if course_root is not None:
            keep_received(Path(course_root) / "received", student, path, stamp)
        if kept is not None:
            received.setdefault(str(path), str(kept.relative_to(out)))
    origins = {str(sub.path): sub.origin for sub in submissions if sub.origin}
    times = {
        str(sub.path): submission_time(sub.path, sub.origin, deadline, sub.mtime, sub.exchange)
        for sub in submissions
    }
    new_rows = []
    for result in results:
        row = result_row(result, points, when, received.get(result.source, ""))
        row["file"] = origins.get(result.source, result.source)
        extra = notes.get(result.student, [])
        stamp = times.get(result.source)
        if stamp is not None:
            row["submitted_at"], row["submitted_from"] = stamp.iso(), stamp.source
            row["minutes_late"] = str(minutes_late(stamp.when, deadline)) if deadline else ""
        if roster is not None and result.student and result.student not in roster:
            extra = [*extra, NOT_ON_ROSTER]
        row["notes"] = "; ".join(filter(None, [row["notes"], *extra]))
        new_rows.append(row)
    for problem in problems:
        if problem.student:
            continue
        new_rows.append(
            {
                "student": "",
                "status": f"not graded: {problem.reason}",
                "sandboxed": "not run",
                "file": problem.origin or str(problem.path),
                "graded_at": when,
            }
        )
    old, old_columns = read_rows(out / "grades.csv")
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
    graded = {row_key(row) for row in new_rows}
    changes, updated = change_lines(old, rows, graded, points.manual)
    # The pages made while recording came before the penalty; an updated row's page is older.
    fresh = {row["student"] for row in new_rows if row.get("student")}
    remake = sorted(
        {s for s, (value, _) in penalties.items() if s in fresh and value} | set(updated)
    )
    columns = csv_columns(points, rows, old_columns)
    write_rows(rows, columns, out / "grades.csv")
    summary = summary_text(rows, points)
    (out / "summary.txt").write_text(summary + "\n", encoding="utf-8")
    (out / "changes.txt").write_text("\n".join(changes) + "\n", encoding="utf-8")
    with (out / "history.txt").open("a", encoding="utf-8") as log:
        log.write(f"--- {when}\n" + "\n".join(changes) + "\n")
    if histogram and any(row.get("status") == "graded" for row in rows):
        save_histogram(rows, points, out / "scores.png")
    return Written(rows, changes, summary, remake)


def write_reports(
    grader: Any,
    out: Path,
    results: list[GradeResult],
    submissions: Sequence[Submission],
    problems: Sequence[Problem],
    histogram: bool = True,
    feedback_dir: Path | None = None,
    make_feedback: Callable[[Any, str], Path] | None = None,
    settings: Any = None,
) -> list[GradeResult]:
    """:func:`write_outputs` for a :class:`~autograder.nbgrader.grader.Grader`'s run (the end of
    :func:`~autograder.nbgrader.grader.grade_many`); returns the results sorted by student, each
    ``source`` named as the instructor knows the file, with a result for every file that was
    not graded (duplicates aside). With a course, students without a name get their id as
    one (:func:`autograder.nbgrader.roster.name_unnamed`), and the feedback of every student whose
    page no longer matches the CSV (:attr:`Written.remake_feedback`: a penalty written after the
    page was made, an earlier row updated with part 8 or a new rule) is made again from the
    course into ``feedback_dir`` with ``make_feedback(course, student)`` (nbgrader's feedback,
    given by the caller). ``settings``: the class's
    :class:`~autograder.nbgrader.grader.ClassSettings` (deadline, roster, late penalty), if any."""
    import nbformat

    course = getattr(grader, "course", None)
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
    template = getattr(grader, "template", None)
    if template is not None:
        points = course_points(nbformat.read(template.release_notebook, as_version=4))
    else:  # a stand-in grader (tests): the parts it reported
        points = CoursePoints({k: p.max for r in results for k, p in r.parts.items()})
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
        graded = {row["student"] for row in written.rows if row.get("status") == "graded"}
        for student in [name for name in written.remake_feedback if name in graded]:
            html = make_feedback(course, student)
            Path(feedback_dir).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(html, Path(feedback_dir) / f"{student}.html")
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
