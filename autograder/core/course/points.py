"""The points of a course's graded cells, and full marks made from them.

Read from an nbgrader notebook's cell metadata (the release or the source), and the verified
agent's points from its notebook-level settings (``a2c.agent``, :mod:`.agent`); used by the
reports (:mod:`autograder.nbgrader.class_reports`), the export, the feedback step and the
platforms alike: full marks are counted here and nowhere else, a student's total by
:mod:`.totals`. The bonus parts are the course's (:data:`solutions.parts.BONUS_PARTS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solutions.parts import BONUS_PARTS

__all__ = ["NOT_GRADED_YET", "CoursePoints", "course_points"]

#: What every report says of a hand-graded part that has no score yet (never 0).
NOT_GRADED_YET = "not graded yet"


@dataclass(frozen=True)
class CoursePoints:
    """The points of every graded cell, and the one full-marks figure made from them."""

    #: autograded part key -> points, in notebook order (bonus parts included)
    auto: dict[str, float]
    #: grade id of a hand-graded cell (part 8: ``discussion``) -> points
    manual: dict[str, float] = field(default_factory=dict)
    bonus: tuple[str, ...] = tuple(BONUS_PARTS)
    #: the verified agent's points (``a2c.agent.points``; 0 unless the course gives some)
    agent: float = 0.0

    @property
    def autograded(self) -> float:
        """The autograded parts' points without the bonus."""
        return round(sum(points for key, points in self.auto.items() if key not in self.bonus), 6)

    @property
    def graded_here(self) -> float:
        """What the grader gives by itself: :attr:`autograded` and the agent's points (a
        platform's full marks: it leaves the hand-graded part to its own staff)."""
        return round(self.autograded + self.agent, 6)

    @property
    def full_marks(self) -> float:
        """Autograded points without the bonus, plus the hand-graded points and the agent's."""
        return round(self.graded_here + sum(self.manual.values()), 6)

    def columns(self) -> list[str]:
        return [*self.auto, *self.manual]

    def explain(self) -> str:
        """``"full marks 15 = 12 autograded + 3 by hand (discussion); bonus gae: up to 2 more"``."""
        text = f"full marks {self.full_marks:g} = {self.autograded:g} autograded"
        if self.manual:
            names = ", ".join(self.manual)
            text += f" + {sum(self.manual.values()):g} graded by hand ({names}, part 8)"
        if self.agent:
            text += f" + {self.agent:g} for the verified agent score"
        bonus = {key: points for key, points in self.auto.items() if key in self.bonus}
        if bonus:
            listed = ", ".join(f"{key} {points:g}" for key, points in bonus.items())
            text += f"; bonus ({listed}) counts on top, up to {sum(bonus.values()):g} more"
        return text


def course_points(notebook: Any) -> CoursePoints:
    """The :class:`CoursePoints` of an nbgrader notebook (the release or the source)."""
    auto: dict[str, float] = {}
    manual: dict[str, float] = {}
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        grade_id = str(meta.get("grade_id") or "")
        if not meta.get("grade"):
            continue
        points = float(meta.get("points", 0))
        if cell.get("cell_type") == "code" and grade_id.startswith("test_"):
            auto[grade_id[len("test_") :]] = points
        elif meta.get("solution") or meta.get("task"):
            manual[grade_id] = points
    return CoursePoints(auto, manual, agent=_agent_points(notebook))


def _agent_points(notebook: Any) -> float:
    """The points the course's settings give the verified agent (0 when it is not played, has
    no points, or the settings are wrong: grading refuses those at its start)."""
    from autograder.core.course.agent import agent_settings

    try:
        settings = agent_settings(notebook)
    except ValueError:
        return 0.0
    return settings.points if settings.replay and settings.scored else 0.0
