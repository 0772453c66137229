"""The bonus part's points as nbgrader's extra credit: full marks as the course counts them.

nbgrader (formgrader, its gradebook, ``nbgrader export``) sums every grade cell's maximum into
full marks, so the 2-point bonus would make them 17. :func:`bonus_as_extra_credit` gives the
bonus cell a maximum of 0 in the gradebook, and :class:`SaveExtraCredit` records the grader's
points for it as nbgrader's *extra credit*: counted in the student's score (15 + 2 at most),
never in full marks (15). :class:`BonusAsExtraCredit` does the first in nbgrader's own
``generate_assignment`` (formgrader's *Generate* button), right after nbgrader saved the cells
with their points, so that no button of nbgrader's makes full marks 17.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder.nbgrader.gradebook_session import gradebook_session
from solutions.parts import BONUS_PARTS

__all__ = ["BonusAsExtraCredit", "SaveExtraCredit", "bonus_as_extra_credit", "is_extra_credit"]


def is_extra_credit(cell: NotebookNode) -> bool:
    """A bonus part's test cell whose gradebook maximum is 0 (:func:`bonus_as_extra_credit`)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    grade_id = str(meta.get("grade_id") or "")
    bonus = grade_id.startswith("test_") and grade_id[len("test_") :] in BONUS_PARTS
    return bonus and float(meta.get("points") or 0.0) == 0.0


def bonus_as_extra_credit(db_url: str, assignment: str, notebook: str) -> None:
    """Give each bonus part's test cell a maximum of 0 in the gradebook (idempotent).

    nbgrader (formgrader, its gradebook, ``nbgrader export``) sums every grade cell's maximum
    into full marks, so the 2-point bonus would make them 17; nbgrader's own way of scoring
    above full marks is *extra credit*, which :class:`SaveExtraCredit` records for the bonus.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with gradebook_session(), Gradebook(db_url) as gradebook:
        for key in sorted(BONUS_PARTS):
            try:
                cell = gradebook.find_grade_cell(f"test_{key}", notebook, assignment)
                source = gradebook.find_source_cell(f"test_{key}", notebook, assignment)
            except MissingEntry:
                continue
            if cell.max_score == 0.0:
                continue
            # nbgrader's checksum of a locked cell covers its points: keep the two in step
            if source.checksum == _checksum(source, cell.max_score):
                source.checksum = _checksum(source, 0.0)
            cell.max_score = 0.0
        gradebook.db.commit()


def _checksum(source: Any, points: float) -> str:
    """nbgrader's checksum of a test cell (a stored ``SourceCell``) worth ``points``."""
    from nbformat.v4 import new_code_cell
    from nbgrader.utils import compute_checksum

    meta = {"grade": True, "solution": False, "locked": bool(source.locked)}
    meta.update(grade_id=source.name, points=points)
    cell = new_code_cell(source.source, metadata={"nbgrader": meta})
    return compute_checksum(cell)


class SaveExtraCredit(Preprocessor):
    """After nbgrader's ``SaveAutoGrades``: each bonus part's score as the cell's extra credit.

    The bonus cell is worth 0 in the gradebook (:func:`bonus_as_extra_credit`), so its score is
    0 and the grader's points (:class:`TrustedScores` kept them) are its extra credit: nbgrader
    counts them in the student's score, never in full marks.
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        from nbgrader.api import Gradebook

        extra = resources.get("a2c_extra_credit", {})
        meta = resources["nbgrader"]
        if not extra:
            return nb, resources
        with gradebook_session(), Gradebook(meta["db_url"]) as gradebook:
            for grade_id, score in extra.items():
                grade = gradebook.find_grade(
                    grade_id, meta["notebook"], meta["assignment"], meta["student"]
                )
                grade.auto_score, grade.extra_credit = 0.0, float(score)
                grade.needs_manual_grade = False
            gradebook.db.commit()
        return nb, resources


class BonusAsExtraCredit(Preprocessor):
    """In ``generate_assignment``, after nbgrader's ``SaveCells``: the bonus part's test cell is
    worth 0 in the gradebook again (:func:`bonus_as_extra_credit`). nbgrader saves every cell's
    points from the source notebook, so formgrader's *Generate* (``generate_assignment --force``)
    would otherwise move every student's maximum from 15 to 17."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        meta = resources.get("nbgrader") or {}
        if meta.get("db_url") and meta.get("assignment") and meta.get("notebook"):
            bonus_as_extra_credit(meta["db_url"], meta["assignment"], meta["notebook"])
        return nb, resources
