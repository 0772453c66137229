"""``python -m autograder export``: the final grades and feedback, once part 8 is graded.

Part 8 (``discussion``) is graded by hand in formgrader, which writes its score into the
course's gradebook, the only place it lives. :func:`export` reads it from there into
``grades.csv`` (the ``discussion`` column and ``total``; the autograded columns are kept as
``grade-all`` wrote them; the late penalty is the course's rule applied to each row's
``minutes_late``, as ``grade-all`` applies it, :mod:`autograder.nbgrader.late_penalty`), rewrites
``summary.txt`` and ``scores.png``, and makes each student's feedback again with nbgrader's
``generate_feedback`` (the course's template says *final* once part 8 is graded, *part 8: not
graded yet* otherwise) into ``<out>/feedback/<student>.html``, and writes the same totals as
Canvas, Moodle and a long format import them into ``<out>/lms/``
(:mod:`autograder.nbgrader.class_reports.lms_files`).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from autograder.core.course.points import course_points
from autograder.nbgrader.class_reports.grades_csv import (
    apply_late_penalty,
    csv_columns,
    read_class,
    refresh_manual,
    write_class,
)
from autograder.nbgrader.class_reports.lms_files import DEFAULT_COLUMN, write_lms_files
from autograder.nbgrader.class_reports.summary import save_histogram, summary_text
from autograder.nbgrader.course import (
    ASSIGNMENT,
    NOTEBOOK,
    CourseTemplate,
    NbgraderError,
)
from autograder.nbgrader.feedback_renderer import FeedbackRenderer
from autograder.nbgrader.late_penalty import course_late_penalty, record_penalties
from autograder.nbgrader.preprocessors.save_extra_credit import bonus_as_extra_credit
from autograder.nbgrader.roster import course_roster

__all__ = ["export"]


def export(
    course_dir: Path,
    out: Path,
    feedback: bool = True,
    lms_column: str = DEFAULT_COLUMN,
    missing_as_zero: bool = False,
) -> str:
    """Part 8 from ``course_dir``'s gradebook into ``out/grades.csv``, the LMS files (their
    assignment column named ``lms_column``; a roster student without a submission 0 with
    ``missing_as_zero``, else an empty cell) and the feedback; returns what was done.

    Raises:
        FileNotFoundError: ``course_dir`` holds no gradebook, or ``out`` no ``grades.csv``
            (run ``grade-all --out OUT --course COURSE`` first).
    """
    course = CourseTemplate(Path(course_dir).resolve(), persistent=True)
    out = Path(out).resolve()
    if not course.gradebook.is_file() or not course.release_notebook.is_file():
        raise FileNotFoundError(
            f"{course.root} is not a course made by `python -m autograder grade-all --course` "
            "(no gradebook.db or release/): give the folder you graded into."
        )
    points = course_points(nbformat.read(course.release_notebook, as_version=4))
    rows, columns = read_class(out / "grades.csv", points)
    if not rows:
        raise FileNotFoundError(
            f"{out / 'grades.csv'} does not exist: give the --out folder of grade-all."
        )
    # A course whose gradebook counts the bonus in full marks again (nbgrader's generate by a
    # course configuration older than BonusAsExtraCredit) is put right before anything is read.
    bonus_as_extra_credit(course.db_url, ASSIGNMENT, NOTEBOOK)
    penalties = apply_late_penalty(rows, course_late_penalty(None, course.root), points)
    manual = next(iter(points.manual), None)
    record_penalties(course.db_url, ASSIGNMENT, NOTEBOOK, penalties, manual)
    complete = refresh_manual(rows, points, course.db_url)
    write_class(rows, csv_columns(points, rows, columns), out / "grades.csv")
    summary = summary_text(rows, points)
    (out / "summary.txt").write_text(summary + "\n", encoding="utf-8")
    if any(row.graded for row in rows):
        save_histogram(rows, points, out / "scores.png")
    graded = [row for row in rows if row.graded]
    pending = [row.student for row in graded if any(n in row.pending() for n in points.manual)]
    lines = [
        f"part 8 graded for {complete} of {len(graded)} graded student(s)",
        *([f"part 8 not graded yet: {', '.join(pending)}"] if pending else []),
        f"grades: {out / 'grades.csv'}",
    ]
    roster = course_roster(None, course.root, None)
    lines += write_lms_files(rows, points, roster, out, lms_column, missing_as_zero)
    if feedback and graded:
        (out / "feedback").mkdir(parents=True, exist_ok=True)
        made, failed = [], []
        renderer = FeedbackRenderer()  # one process for the class, each page time-limited
        try:
            for row in tqdm(graded, desc="feedback pages", unit="page", file=sys.stderr):
                try:
                    html = renderer.render(course, row.student)
                except NbgraderError as error:
                    failed.append(f"{row.student} ({str(error).splitlines()[0]})")
                    continue
                shutil.copyfile(html, out / "feedback" / f"{row.student}.html")
                made.append(row.student)
        finally:
            renderer.close()
        final = len(made) - len([s for s in pending if s in made])
        lines.append(
            f"feedback: {len(made)} file(s) in {out / 'feedback'} "
            f"({final} final, {len(made) - final} saying part 8: not graded yet)"
        )
        if failed:
            lines.append(f"feedback not made, the grades stand: {'; '.join(failed)}")
    return "\n".join([summary, "", *lines])
