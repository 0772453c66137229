"""The points of a course's graded cells, and full marks made from them.

Read from an nbgrader notebook's cell metadata (the release or the source); used by the reports
(:mod:`autograder.nbgrader.class_reports`), the export and the feedback step alike, so that every total is
counted one way.
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

    @property
    def full_marks(self) -> float:
        """Autograded points without the bonus, plus the hand-graded points."""
        core = sum(points for key, points in self.auto.items() if key not in self.bonus)
        return core + sum(self.manual.values())

    def columns(self) -> list[str]:
        return [*self.auto, *self.manual]

    def explain(self) -> str:
        """``"full marks 15 = 12 autograded + 3 by hand (discussion); bonus gae: up to 2 more"``."""
        core = sum(points for key, points in self.auto.items() if key not in self.bonus)
        text = f"full marks {self.full_marks:g} = {core:g} autograded"
        if self.manual:
            names = ", ".join(self.manual)
            text += f" + {sum(self.manual.values()):g} graded by hand ({names}, part 8)"
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
    return CoursePoints(auto, manual)
