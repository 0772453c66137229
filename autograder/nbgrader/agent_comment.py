"""The verified agent score in formgrader, beside part 8's score field.

The person grading part 8 reads the student's curves and numbers; the line the grader writes
at the end of part 8's comment (:data:`AGENT_LINE`, :func:`~autograder.core.agent_play.feedback.agent_line`)
puts the score the grader measured on its own games beside them, and its flag when the
notebook's own figures are above it by more than noise. A later grading replaces the line; the
student reads the same line in the save cell's output on the feedback page, so
:class:`~autograder.nbgrader.student_comments.StudentComments` keeps it off the comment there.
"""

from __future__ import annotations

import re

from autograder.core.agent_play.feedback import agent_line
from autograder.core.reports.grade_result import GradeResult
from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = ["AGENT_LINE", "record_agent_comment"]

AGENT_LINE = "Verified agent score:"  #: how the line starts (agent_line's own words)
_LINE = re.compile(r"^" + re.escape(AGENT_LINE) + r"[^\n]*\n?", re.MULTILINE)


def record_agent_comment(
    db_url: str, assignment: str, notebook: str, result: GradeResult, comment_cell: str | None
) -> None:
    """Put ``result``'s agent line at the end of ``comment_cell``'s comment (part 8), replacing
    an earlier one; nothing when no agent was handed in (the row's note says so), the agent
    was not played, or there is no such cell."""
    line = agent_line(result.agent)
    if not line or not (result.agent or {}).get("digest") or comment_cell is None:
        return
    if result.agent_max:  # like the late penalty: outside the gradebook's cells
        line += (
            " The agent's points are not in formgrader's total (the gradebook has no cell for "
            "them); the final total (grades.csv, the exports, the feedback) counts them."
        )
    from nbgrader.api import Gradebook, MissingEntry

    with gradebook_session(), Gradebook(db_url) as gradebook:
        try:
            submitted = gradebook.find_submission_notebook(notebook, assignment, result.student)
        except MissingEntry:
            return
        for comment in submitted.comments:
            if comment.name == comment_cell:
                kept = _LINE.sub("", comment.manual_comment or "").strip()
                comment.manual_comment = "\n".join(filter(None, [kept, line]))
        gradebook.db.commit()
