"""When the source notebook's points differ from those of the course graded into.

nbgrader records a score only up to the points of the course's release (and removes the graded
notebook of a student it refuses), so new points go into the course before anything is
recorded on them: :func:`point_changes` names the parts whose points differ,
:func:`refuse_changed_points` stops ``grade-all --course`` before grading and names the
``regrade`` to run, :func:`check_part8_fits` refuses part 8 points below a score already given,
and :func:`update_course_points` brings the course to the new points (``regrade``,
:mod:`autograder.nbgrader.regrading`).
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import nbformat

from autograder.core.course.points import CoursePoints, course_points
from solutions.parts import ASSIGNMENT, NOTEBOOK

__all__ = ["check_part8_fits", "point_changes", "refuse_changed_points", "update_course_points"]


def point_changes(points: CoursePoints, course: Any) -> list[str]:
    """``["a2c 4 -> 2", ...]``: the parts (part 8 included) whose ``points`` (the grader's
    source) differ from those of ``course``'s release; empty without a course or when they agree."""
    if course is None or not Path(course.release_notebook).is_file():
        return []
    kept = course_points(nbformat.read(course.release_notebook, as_version=4))
    return [
        f"{key} {old.get(key, 0):g} -> {now.get(key, 0):g}"
        for old, now in ((kept.auto, points.auto), (kept.manual, points.manual))
        for key in sorted(set(old) | set(now))
        if old.get(key) != now.get(key)
    ]


def refuse_changed_points(grader: Any, out: Path) -> None:
    """Stop ``grade-all --course`` before anything is graded when the source's points differ
    from the course's release: nbgrader records a score only up to the release's points (and
    removes the graded notebook of a student it refuses), so the course is brought to the new
    points first, by ``regrade`` (:func:`update_course_points`).

    Raises:
        ValueError: the points differ (the message names the parts and the command to run).
    """
    changed = point_changes(grader.points, grader.course)
    if changed:
        command = (
            f"python -m autograder regrade {shlex.quote(str(out))} "
            f"--course {shlex.quote(str(grader.course.root))}"
        )
        raise ValueError(
            f"the source notebook's points differ from the course's release "
            f"({', '.join(changed)}), and the course's gradebook records scores on the release's "
            f"points only: nothing was graded. Run `{command}` first (with the same --source, if "
            "you gave one): it brings the course to the new points, keeping part 8 and the late "
            "data, and grades the kept files again on them; then run grade-all again."
        )


def check_part8_fits(points: CoursePoints, course: Any) -> None:
    """Refuse new points for part 8 that are below a part 8 score already given in ``course``
    (formgrader would hold a score above its maximum).

    Raises:
        ValueError: such scores exist (the message names the students).
    """
    if course is None or not point_changes(points, course):
        return
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.nbgrader.course import gradebook_session

    above = []
    with gradebook_session(), Gradebook(course.db_url) as gradebook:
        for student in gradebook.students:
            try:
                submission = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student.id)
            except MissingEntry:  # on the roster, never submitted
                continue
            for grade in submission.grades:
                top = points.manual.get(grade.name)
                if top is not None and (grade.manual_score or 0.0) > top:
                    above.append(f"{student.id} ({grade.name}: {grade.manual_score:g} > {top:g})")
    if above:
        raise ValueError(
            f"part 8's new points are below scores already given: {', '.join(above)}. Lower "
            "those scores in formgrader first, or keep part 8's points; nothing was changed."
        )


def update_course_points(grader: Any) -> list[str]:
    """Bring the course's release and gradebook to ``grader``'s points: the grader's source
    notebook goes into the course and nbgrader's ``generate_assignment --force`` runs there,
    which sets each graded cell's new maximum and keeps every submission, score, part 8 score
    and comment. Returns :func:`point_changes` as it was (empty: nothing was done)."""
    changed = point_changes(grader.points, grader.course)
    if not changed:
        return []
    from autograder.nbgrader.course import run_nbgrader
    from autograder.nbgrader.preprocessors.save_extra_credit import bonus_as_extra_credit

    course, name = grader.course, Path("source") / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    shutil.copyfile(grader.template.course / name, course.course / name)
    run_nbgrader(course, "generate_assignment", {"assignment_id": ASSIGNMENT, "force": True})
    bonus_as_extra_credit(course.db_url, ASSIGNMENT, NOTEBOOK)
    return changed
