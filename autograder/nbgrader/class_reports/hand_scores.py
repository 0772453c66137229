"""The hand-graded cells' scores, read from nbgrader's gradebook (where formgrader writes part 8).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = ["hand_score", "manual_scores"]


def manual_scores(db_url: str, students: Iterable[str]) -> dict[str, dict[str, float | None]]:
    """``{student: {grade id: points, or None when not graded yet}}`` of the hand-graded cells.

    Read from nbgrader's gradebook (where formgrader writes part 8). A cell nbgrader scored by
    itself (an answer left as the stub gets 0 and needs no grading) counts as graded.
    """
    from nbgrader.api import Gradebook, MissingEntry

    from solutions.parts import ASSIGNMENT, NOTEBOOK

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
