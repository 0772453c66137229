"""The course as one value: its parts and points, the verified agent's settings, every limit.

A :class:`Course` is read once, where grading starts: the points of the release notebook's
graded cells and the agent's settings in its metadata (``a2c.agent``), the limits from their
declared defaults, a course settings file and the command line (:mod:`.limits`). It is frozen
plain data: handed whole to the grading core's
:class:`~autograder.core.assessor.Assessor`, sent as JSON to each Dask worker
(:meth:`Course.to_plain`, :meth:`Course.from_plain`) and written into the Gradescope and
PrairieLearn bundles (``course.json``), so that an instructor's ``--timeout`` or agent cap holds
on every front end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from autograder.core.course.agent import AgentSettings, agent_settings
from autograder.core.course.limits import Limits
from autograder.core.course.points import CoursePoints, course_points

__all__ = ["Course"]


@dataclass(frozen=True)
class Course:
    """Everything a grading of this course needs to know besides the release's cells."""

    points: CoursePoints
    agent: AgentSettings = AgentSettings()
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def of_release(cls, release: Any, limits: Limits | None = None) -> Course:
        """The course of a release (or source) notebook, with ``limits`` (default: the declared
        ones). Raises ``ValueError`` for agent settings that are wrong (naming the setting)."""
        return cls(course_points(release), agent_settings(release), limits or Limits())

    def to_plain(self) -> dict[str, Any]:
        """The course as JSON: ``{"points", "agent", "limits"}``."""
        points = self.points
        return {
            "points": {"auto": dict(points.auto), "manual": dict(points.manual),
                       "bonus": list(points.bonus), "agent": points.agent},
            "agent": asdict(self.agent),
            "limits": self.limits.to_plain(),
        }  # fmt: skip

    @classmethod
    def from_plain(cls, data: Any, where: str = "the course") -> Course:
        """The course :meth:`to_plain` wrote; a ``ValueError`` naming what is wrong."""
        try:
            points = data["points"]
            course_points_ = CoursePoints(
                {str(k): float(v) for k, v in dict(points["auto"]).items()},
                {str(k): float(v) for k, v in dict(points["manual"]).items()},
                tuple(str(key) for key in points["bonus"]),
                float(points["agent"]),
            )
            # checked as the release's own settings are (a2c.agent), naming what is wrong
            agent = agent_settings({"metadata": {"a2c": {"agent": dict(data["agent"])}}})
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{where} is not a course the grader wrote ({error!r})") from None
        return cls(course_points_, agent, Limits.from_plain(data["limits"], f"{where}'s limits"))
