"""The grade of one submission, read from the gradebook and checked against the notebook.

Scores come from nbgrader's gradebook (``nbgrader.api.Gradebook``): the ``auto_score`` of each
graded test cell ``test_<part key>``. The feedback of a part is what its hidden test printed,
taken from the autograded notebook (:func:`autograder.feedback.cell_feedback`).

A second reading guards the first: each graded cell's score is recomputed from its outputs with
nbgrader's own rule (``nbgrader.utils.determine_grade``), and a graded cell that shows no float
result, although its hidden test always ends with one, gets 0. This catches a submission that
stopped the score from being displayed (nbgrader gives full points to a cell with no output)
or that wrote to the gradebook while its code ran. The lower of the readings counts, and the
part's feedback says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.utils import determine_grade

from .checks import BONUS_PARTS
from .course import ASSIGNMENT, NOTEBOOK
from .feedback import cell_feedback

__all__ = ["GradeResult", "PartScore", "read_result"]

_TEST_PREFIX = "test_"


@dataclass(frozen=True)
class PartScore:
    """The score of one autograded part."""

    score: float
    max: float
    feedback: str

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "max": self.max, "feedback": self.feedback}


@dataclass
class GradeResult:
    """The grade of one submission, as ``python -m autograder grade --json`` prints it."""

    student: str
    parts: dict[str, PartScore] = field(default_factory=dict)
    #: "graded", or what stopped the grading ("unreadable: ...", "error: ...")
    status: str = "graded"
    #: repairs and warnings for the instructor (restored cells, suspicious outputs...)
    notes: list[str] = field(default_factory=list)
    #: manually graded cells: grade_id -> max points (scored later, by hand)
    manual: dict[str, float] = field(default_factory=dict)
    source: str = ""  #: the submitted file
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return round(sum(part.score for part in self.parts.values()), 6)

    @property
    def max_total(self) -> float:
        """Full marks: the points of every part except the bonus ones (``BONUS_PARTS``)."""
        return round(sum(part.max for key, part in self.parts.items() if key not in BONUS_PARTS), 6)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of the design: ``{"total", "max_total", "parts"}``."""
        return {
            "total": self.total,
            "max_total": self.max_total,
            "parts": {key: part.as_dict() for key, part in self.parts.items()},
        }


def _part_key(grade_id: str) -> str:
    return grade_id[len(_TEST_PREFIX) :] if grade_id.startswith(_TEST_PREFIX) else grade_id


def _has_float_result(cell: dict[str, Any]) -> bool:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "execute_result":
            text = output.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            try:
                return math.isfinite(float(text))
            except ValueError:
                return False
    return False


def _notebook_scores(autograded: Path) -> dict[str, tuple[float, str, bool]]:
    """grade_id -> (score by nbgrader's rule, feedback, has a float result) of graded code cells."""
    nb = nbformat.read(autograded, as_version=4)
    found: dict[str, tuple[float, str, bool]] = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        score, _ = determine_grade(cell)
        found[meta["grade_id"]] = (
            float(score or 0.0),
            cell_feedback(cell),
            _has_float_result(cell),
        )
    return found


def read_result(db_url: str, autograded: Path, student: str, result: GradeResult) -> GradeResult:
    """Fill ``result`` with the scores of ``student`` (see the module docstring); returns it."""
    from_notebook = _notebook_scores(autograded)
    with Gradebook(db_url) as gradebook:
        try:
            submission = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        except MissingEntry:
            result.status = "error: the gradebook has no graded submission"
            return result
        order = {name: index for index, name in enumerate(from_notebook)}
        grades = sorted(submission.grades, key=lambda grade: order.get(grade.name, len(order)))
        for grade in grades:
            name, max_score = grade.name, float(grade.max_score)
            if grade.cell_type != "code" or not name.startswith(_TEST_PREFIX):
                result.manual[name] = max_score
                continue
            score = float(grade.auto_score or 0.0)
            note_score, feedback, has_float = from_notebook.get(name, (0.0, "", False))
            if name not in from_notebook:
                feedback = "this graded cell is missing from the autograded notebook"
            elif not has_float:
                if "Error" not in feedback:  # an error already explains the 0
                    feedback += "\n(no score: the hidden test did not report one, so 0 points)"
                note_score = 0.0
            if note_score < score:
                result.notes.append(
                    f"{name}: gradebook says {score:g}, the cell's outputs say {note_score:g}; "
                    "kept the lower"
                )
                score = note_score
            key = _part_key(name)
            result.parts[key] = PartScore(round(score, 6), max_score, feedback.strip())
    return result
