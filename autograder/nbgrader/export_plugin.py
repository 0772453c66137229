"""``nbgrader export`` in this course: the course's one set of totals, part 8 never shown as 0.

nbgrader's own CSV counts the bonus part's points in ``max_score`` (17) and an ungraded part 8
as 0. :class:`CourseExport` (selected by the course configuration, ``ExportApp.plugin_class``)
writes nbgrader's columns with ``max_score`` the full-marks figure (15: autograded points
without the bonus + part 8), ``score`` with the bonus included, and two more columns:
``part_8`` (its points, or ``not graded yet``) and ``complete`` (``yes`` once part 8 is graded).
A student of the gradebook without a submission (on the roster, never handed in) has empty
score cells and ``complete`` ``no: not submitted``, as the kit's LMS files leave their cell
empty: no grade, never a 0. ``late_submission_penalty`` is the course's late penalty (:mod:`autograder.nbgrader.late_penalty`,
stored in the gradebook by the grader), ``score`` is ``raw_score`` less it, never below 0; a
student known by id only has empty name columns (:func:`autograder.nbgrader.roster.is_placeholder`).

Where the course gives the verified agent points (the source notebook's ``a2c.agent``), they
count as in every other channel: in ``max_score``, and in ``raw_score`` as the grader recorded
them in the student's autograded notebook (its ``a2c_agent_points``, written from the grader's
own record, never from the student's notebook). nbgrader's gradebook has no cell for them, so
they are read from the course folder, which ``nbgrader export`` names (its ``coursedir``).
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import MissingEntry
from nbgrader.plugins.export import ExportPlugin

from autograder.core.course.points import NOT_GRADED_YET, CoursePoints, course_points
from autograder.core.course.totals import count_total
from autograder.core.reports.safe_text import csv_cell
from autograder.nbgrader.class_reports.hand_scores import hand_score
from autograder.nbgrader.preprocessors.trusted_scores import AGENT_POINTS_KEY
from autograder.nbgrader.roster import is_placeholder

__all__ = ["CourseExport", "gradebook_points"]

#: The largest autograded notebook read for the agent's points (the grader caps what it keeps).
NOTEBOOK_BYTES = 256 * 1024**2

COLUMNS = (
    "assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
    "raw_score", "late_submission_penalty", "score", "max_score", "part_8", "complete",
)  # fmt: skip


def gradebook_points(assignment: Any) -> CoursePoints:
    """The :class:`~autograder.core.course.points.CoursePoints` of an assignment in the gradebook."""
    auto, manual = {}, {}
    for notebook in assignment.notebooks:
        for cell in notebook.grade_cells:
            if cell.cell_type == "code" and cell.name.startswith("test_"):
                auto[cell.name[len("test_") :]] = float(cell.max_score)
            else:
                manual[cell.name] = float(cell.max_score)
    return CoursePoints(auto, manual)  # the course's bonus parts


class CourseExport(ExportPlugin):
    """nbgrader's CSV export with the course's totals (see the module docstring)."""

    def export(self, gradebook: Any) -> None:
        dest = self.to or "grades.csv"
        students = [str(item) for item in self.student]
        assignments = [str(item) for item in self.assignment]
        self.log.info("Exporting grades to %s (full marks: autograded + part 8)", dest)
        with open(dest, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS)
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                points = dataclasses.replace(
                    gradebook_points(assignment), agent=self._agent_max(assignment)
                )
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    row = self._row(gradebook, assignment, student, points)
                    writer.writerow([csv_cell(row[key]) for key in COLUMNS])

    def _notebooks(self, kind: str, student: str, assignment: Any) -> list[Path]:
        """The assignment's notebooks in the course folder's ``kind`` folder (none without one)."""
        coursedir = getattr(self.parent, "coursedir", None)
        if coursedir is None:
            return []
        folder = getattr(coursedir, f"{kind}_directory")
        where = Path(coursedir.format_path(folder, student, assignment.name))
        return [where / f"{notebook.name}.ipynb" for notebook in assignment.notebooks]

    def _agent_max(self, assignment: Any) -> float:
        """The points the source notebook's settings give the verified agent, as full marks
        count them everywhere else (:func:`~autograder.core.course.points.course_points`)."""
        for path in self._notebooks("source", ".", assignment):
            try:
                agent = course_points(nbformat.reads(path.read_text(encoding="utf-8"), 4)).agent
            except (OSError, ValueError) as error:
                self.log.warning("no agent points read from %s: %s", path, error)
                continue
            if agent:
                return agent
        return 0.0

    def _agent_earned(self, assignment: Any, student: str, most: float) -> float:
        """The agent's points the grader recorded for ``student`` (0 where none)."""
        earned = 0.0
        for path in self._notebooks("autograded", student, assignment):
            try:
                if path.stat().st_size > NOTEBOOK_BYTES:
                    continue
                value = json.loads(path.read_text(encoding="utf-8"))["metadata"].get(
                    AGENT_POINTS_KEY
                )
            except (OSError, ValueError, KeyError, AttributeError, TypeError):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                earned += max(0.0, float(value))
        return min(earned, most)

    def _row(self, gradebook: Any, assignment: Any, student: Any, points: CoursePoints) -> dict:
        placeholder = is_placeholder(student.id, student.first_name, student.last_name)
        row = {
            "assignment": assignment.name,
            "duedate": assignment.duedate or "",
            "student_id": student.id,
            "last_name": "" if placeholder else student.last_name or "",
            "first_name": "" if placeholder else student.first_name or "",
            "email": student.email or "",
            "max_score": f"{points.full_marks:g}",
            # no submission: empty cells (no grade), as in the kit's LMS files, never a 0
            "timestamp": "",
            "raw_score": "",
            "late_submission_penalty": "",
            "score": "",
            "part_8": "",
            "complete": "no: not submitted",
        }
        try:
            submission = gradebook.find_submission(assignment.name, student.id)
        except MissingEntry:
            return row
        grades = [grade for notebook in submission.notebooks for grade in notebook.grades]
        auto = {_part(grade.name): float(grade.score) for grade in grades if _part(grade.name)}
        hand = {grade.name: hand_score(grade) for grade in grades if grade.name in points.manual}
        agent = self._agent_earned(assignment, student.id, points.agent) if points.agent else 0.0
        penalty = float(submission.late_submission_penalty or 0.0)
        total = count_total(points, auto, hand, agent, penalty)
        pending = bool(total.pending) or not hand
        row.update(
            timestamp=str(submission.timestamp or ""),
            raw_score=f"{total.raw:g}",
            late_submission_penalty=f"{penalty:g}",
            score=f"{total.total:g}",
            part_8=NOT_GRADED_YET if pending else f"{sum(v or 0.0 for v in hand.values()):g}",
            complete="no: part 8 not graded yet" if pending else "yes",
        )
        return row


def _part(grade_id: str) -> str:
    """The part key of an autograded cell's grade id (``test_<key>``), else ``""``."""
    return grade_id[len("test_") :] if grade_id.startswith("test_") else ""
