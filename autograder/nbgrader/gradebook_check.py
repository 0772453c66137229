"""Read a recorded submission back from nbgrader's gradebook and compare it with the grader's.

The grader writes its scores into the gradebook once (:mod:`autograder.nbgrader.preprocessors`);
:func:`check_gradebook` reads them back and flags any difference, so the gradebook an instructor
exports is the one reported in ``grades.csv``. It also fills in what only the gradebook knows:
the hand-graded cells' maxima and an earlier submission's part 8 score.
"""

from __future__ import annotations

from nbgrader.api import Gradebook, MissingEntry

from autograder.core.reports.grade_result import GradeResult
from autograder.nbgrader.part8_regrading import earlier_in, earlier_note
from solutions.parts import ASSIGNMENT, NOTEBOOK

__all__ = ["check_gradebook"]


def check_gradebook(db_url: str, student: str, result: GradeResult) -> list[str]:
    """Compare the gradebook's autograded scores with ``result``; fill ``result.manual`` and
    ``result.hand_scores`` (a hand-graded answer left as the stub: nbgrader scored it 0 itself,
    and it needs no grading, with or without a course).

    A part 8 score of an earlier submission (:mod:`autograder.nbgrader.part8_regrading`) is added to the notes.

    Returns one line per difference (empty: the gradebook holds exactly the grader's scores).
    """
    problems = []
    with Gradebook(db_url) as gradebook:
        try:
            submission = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student)
        except MissingEntry:
            return ["the gradebook has no graded submission"]
        seen = set()
        for grade in submission.grades:
            name = grade.name
            if grade.cell_type != "code" or not name.startswith("test_"):
                result.manual[name] = float(grade.max_score)
                if grade.manual_score is None and not grade.needs_manual_grade:
                    result.hand_scores[name] = float(grade.auto_score or 0.0)
                continue
            key = name[len("test_") :]
            seen.add(key)
            part = result.parts.get(key)
            got = float(grade.auto_score or 0.0) + float(grade.extra_credit or 0.0)
            # a bonus part is worth 0 in the gradebook, its points are extra credit
            top = 0.0 if key in result.points.bonus else (part.max if part else 0.0)
            if part is None or abs(got - part.score) > 1e-6 or abs(grade.max_score - top) > 1e-6:
                want = "no score" if part is None else f"{part.score:g} / {part.max:g}"
                problems.append(f"{name}: gradebook {got:g} / {grade.max_score:g}, grader {want}")
        for key in set(result.parts) - seen:
            problems.append(f"test_{key}: in the grader's record but not in the gradebook")
        note = earlier_note(earlier_in(submission))
        if note and note not in result.notes:
            result.notes.append(note)
    return problems
