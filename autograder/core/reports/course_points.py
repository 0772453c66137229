"""The points of a course's graded cells, and full marks made from them.

Read from an nbgrader notebook's cell metadata (the release or the source), and the verified
agent's points from its notebook-level settings (``a2c.agent``,
:mod:`autograder.core.reports.agent_settings`); used by the reports
(:mod:`autograder.nbgrader.class_reports`), the export and the feedback step alike, so that every
total is counted one way.
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
    def full_marks(self) -> float:
        """Autograded points without the bonus, plus the hand-graded points and the agent's."""
        core = sum(points for key, points in self.auto.items() if key not in self.bonus)
        return core + sum(self.manual.values()) + self.agent

    def columns(self) -> list[str]:
        return [*self.auto, *self.manual]

    def explain(self) -> str:
        """``"full marks 15 = 12 autograded + 3 by hand (discussion); bonus gae: up to 2 more"``."""
        core = sum(points for key, points in self.auto.items() if key not in self.bonus)
        text = f"full marks {self.full_marks:g} = {core:g} autograded"
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
    from autograder.core.reports.agent_settings import agent_settings

    try:
        settings = agent_settings(notebook)
    except ValueError:
        return 0.0
    return settings.points if settings.replay and settings.scored else 0.0
