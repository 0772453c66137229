"""What the feedback page shows of a cell's comment: the lines written for graders stay out.

Formgrader shows a cell's comment beside its score field, and the grader writes two lines there
for the person grading part 8: the score of an earlier submission, with how to keep it
(:data:`autograder.nbgrader.part8_regrading.EARLIER`), and the late penalty, with which totals are before
it (:data:`autograder.nbgrader.late_penalty.LATE_LINE`), and the verified agent score
(:data:`autograder.nbgrader.agent_comment.AGENT_LINE`, which the page shows in the save cell).
nbgrader's feedback page shows every
comment to the student, who has nothing to type into formgrader and reads the penalty in the
page's header: :class:`StudentComments`, run after nbgrader's ``GetGrades``, removes those
lines and keeps whatever the grader wrote.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder.nbgrader.agent_comment import AGENT_LINE
from autograder.nbgrader.late_penalty import LATE_LINE
from autograder.nbgrader.part8_regrading import EARLIER

__all__ = ["GRADER_LINES", "StudentComments", "for_students"]

#: How the lines written for graders start.
GRADER_LINES = (EARLIER, LATE_LINE, AGENT_LINE)


def for_students(comment: str) -> str:
    """``comment`` without the lines written for graders (empty when nothing else is left)."""
    kept = [line for line in comment.splitlines() if not line.startswith(GRADER_LINES)]
    return "\n".join(kept).strip()


class StudentComments(Preprocessor):
    """Remove the lines written for graders from each cell's comment on the feedback page."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        info = cell.get("metadata", {}).get("nbgrader", {})
        if info.get("comment"):
            info["comment"] = for_students(str(info["comment"])) or None
        return cell, resources
