"""Part 8 (graded by hand) when a student is graded again: the course's one policy.

Part 8 is graded by a person in formgrader; its score lives in the course's gradebook only.
When ``grade-all --course`` records a new submission of a student whose part 8 was graded,
nbgrader's ``autograde`` keeps the old score but marks it *needs manual grading*: the score
would count in every total while formgrader asks for a grade, and typing the same score again
would save nothing (formgrader saves a changed field only), so the flag would stay.

The policy, applied by :func:`hold_for_grader` right after every ``autograde`` into the course:

* the new submission's part 8 **waits for a grader**: its score (and extra credit) is cleared,
  so the CSV, the change line, the summary, both exports, the feedback and formgrader all say
  *part 8: not graded yet*, and every total leaves part 8 out until it is graded again;
* the earlier score is **shown beside it**: formgrader's comment box for the cell starts with
  ``Part 8 of an earlier submission: 2.5 of 3``, and the grades CSV notes it in the row;
* **confirming the same score is one action**: the field is empty, so typing the earlier score
  in formgrader saves it and clears the flag.
"""

from __future__ import annotations

import re
from typing import Any

from autograder.core.reports.safe_text import points_text

__all__ = [
    "EARLIER",
    "earlier_in",
    "earlier_note",
    "hold_for_grader",
    "put_back_hand_grades",
    "saved_hand_grades",
]

#: How the earlier score starts the cell's comment (formgrader shows it beside the score field).
EARLIER = "Part 8 of an earlier submission"
_EARLIER_LINE = re.compile(
    re.escape(EARLIER) + r" \((?P<name>[^)]*)\): (?P<score>[0-9.eE+-]+) of (?P<max>[0-9.eE+-]+)"
    r"[^\n]*\n?"
)


def _hand_graded(grade: Any) -> bool:
    return not (grade.cell_type == "code" and grade.name.startswith("test_"))


def hold_for_grader(gradebook: Any, student: str, notebook: str, assignment: str) -> dict:
    """Clear the hand-graded scores of ``student``'s (new) submission; returns the earlier ones.

    ``gradebook`` is an open :class:`nbgrader.api.Gradebook`. A cell graded before (a manual
    score) gets no score, needs manual grading, and a comment that starts with the earlier
    score; a cell never graded by hand is left as nbgrader made it.
    """
    submission = gradebook.find_submission_notebook(notebook, assignment, student)
    comments = {comment.name: comment for comment in submission.comments}
    earlier: dict[str, float] = {}
    for grade in submission.grades:
        if not _hand_graded(grade) or grade.manual_score is None:
            continue
        score = float(grade.manual_score) + float(grade.extra_credit or 0.0)
        earlier[grade.name] = score
        grade.manual_score = None
        grade.extra_credit = None
        grade.needs_manual_grade = True
        comment = comments.get(grade.name)
        if comment is not None:
            kept = _EARLIER_LINE.sub("", comment.manual_comment or "").strip()
            line = (
                f"{EARLIER} ({grade.name}): {points_text(score)} of "
                f"{points_text(float(grade.max_score))}; "
                "this submission is graded again (type the same score to keep it)."
            )
            comment.manual_comment = "\n".join(filter(None, [line, kept]))
    gradebook.db.commit()
    return earlier


def earlier_in(submission: Any) -> dict[str, tuple[float, float]]:
    """``{grade id: (earlier score, max)}`` that :func:`hold_for_grader` wrote in the comments
    of ``submission`` (an nbgrader ``SubmittedNotebook``)."""
    found = {}
    for comment in submission.comments:
        match = _EARLIER_LINE.match(comment.manual_comment or "")
        if match and match["name"] == comment.name:
            found[comment.name] = (float(match["score"]), float(match["max"]))
    return found


def earlier_note(earlier: dict[str, tuple[float, float]]) -> str:
    """The grades CSV's note for :func:`earlier_in`'s scores (empty when there are none)."""
    return "; ".join(
        f"{EARLIER.lower()} ({name}): {score:g} of {top:g}"
        for name, (score, top) in earlier.items()
    )


def saved_hand_grades(gradebook: Any, student: str, notebook: str, assignment: str) -> dict:
    """``{grade id: (manual score, extra credit, needs manual grade, comment)}`` of ``student``'s
    hand-graded cells, for :func:`put_back_hand_grades` (``python -m autograder regrade``: the
    same file graded again keeps its part 8)."""
    submission = gradebook.find_submission_notebook(notebook, assignment, student)
    comments = {comment.name: comment.manual_comment for comment in submission.comments}
    return {
        grade.name: (
            grade.manual_score,
            grade.extra_credit,
            grade.needs_manual_grade,
            comments.get(grade.name),
        )
        for grade in submission.grades
        if _hand_graded(grade)
    }


def put_back_hand_grades(
    gradebook: Any, student: str, notebook: str, assignment: str, saved: dict
) -> None:
    """Put ``saved`` (:func:`saved_hand_grades`) back after the same file was recorded again,
    undoing :func:`hold_for_grader`: the answer graded is the one that was graded."""
    submission = gradebook.find_submission_notebook(notebook, assignment, student)
    comments = {comment.name: comment for comment in submission.comments}
    for grade in submission.grades:
        if grade.name not in saved:
            continue
        grade.manual_score, grade.extra_credit, grade.needs_manual_grade, text = saved[grade.name]
        if grade.name in comments:
            comments[grade.name].manual_comment = text
    gradebook.db.commit()
