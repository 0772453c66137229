"""The one place a student's total is counted: parts, bonus, part 8, the agent's points, the
late penalty.

Every report and front end counts a total here: a grading's result
(:attr:`~autograder.core.reports.grade_result.GradeResult.total`), a row of ``grades.csv``, the
feedback page (:class:`~autograder.nbgrader.preprocessors.course_totals.CourseTotals`),
``nbgrader export`` (:mod:`autograder.nbgrader.export_plugin`) and, through the result,
Gradescope, PrairieLearn and the LMS files. The rule:

* ``raw``: the autograded parts' scores, the bonus included (it counts above full marks), plus
  the hand-graded cells scored so far (part 8; one not graded yet counts nothing and is named
  in ``pending``), plus the verified agent's points where the course gives the agent some;
* ``total``: ``raw`` less the late penalty, never below 0, rounded to 6 decimals as every
  report writes it.

Full marks are the course's (:attr:`~autograder.core.course.points.CoursePoints.full_marks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autograder.core.course.points import CoursePoints

__all__ = ["Total", "count_total"]


@dataclass(frozen=True)
class Total:
    """A student's total, counted by :func:`count_total`."""

    raw: float  #: the points before the late penalty
    late_penalty: float  #: the points taken off for lateness
    total: float  #: ``raw`` less the penalty, never below 0
    full_marks: float  #: the course's full marks (the bonus counts above them)
    pending: tuple[str, ...] = ()  #: hand-graded cells not graded yet (counted as nothing)


def count_total(
    points: CoursePoints,
    auto: Mapping[str, float | None],
    hand: Mapping[str, float | None] | None = None,
    agent: float | None = None,
    late_penalty: float = 0.0,
) -> Total:
    """The :class:`Total` of one student of the course ``points``: ``auto`` the scores of its
    autograded parts (bonus included; ``None``: none), ``hand`` the hand-graded cells' (``None``:
    not graded yet; a cell the course has but ``hand`` lacks is not graded yet either),
    ``agent`` the verified agent's points (counted only where the course gives the agent some)
    and ``late_penalty`` the points taken off.

    Only the course's own parts and cells count: a score of a part the course does not have
    (an older notebook's) is left out.
    """
    hand = hand or {}
    scores = [auto.get(key) for key in points.auto]
    scores += [hand.get(name) for name in points.manual]
    if points.agent:
        scores.append(agent)
    raw = round(sum(score for score in scores if score is not None), 6)
    pending = tuple(name for name in points.manual if hand.get(name) is None)
    penalty = float(late_penalty or 0.0)
    total = round(max(0.0, raw - penalty), 6)
    return Total(raw, penalty, total, points.full_marks, pending)
