"""The course's choices for the verified agent score (``a2c.agent`` in the source notebook's
metadata): whether the grader plays the saved agent, and the points it may earn.

Here, beside the course's points (:mod:`.points`, which counts the agent's points in full
marks), so that the reports read the settings without the agent's player; the player's side
(:mod:`autograder.core.agent_play.settings`) documents each setting and uses the same ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentSettings", "agent_settings"]


@dataclass(frozen=True)
class AgentSettings:
    """Whether the grader plays the saved agent, and the points it may earn (off by default)."""

    replay: bool = True
    target_score: float | None = None
    points: float = 0.0

    @property
    def scored(self) -> bool:
        return self.points > 0 and self.target_score is not None

    def points_for(self, score: float) -> float:
        """``points * min(1, score / target_score)``, at least 0, rounded to 0.01."""
        if not self.scored:
            return 0.0
        return round(self.points * min(1.0, max(0.0, score) / float(self.target_score)), 2)


def _number(value: Any, what: str, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"the notebook's a2c.agent.{what} must be a number, got {value!r}")
    if value < low:
        raise ValueError(f"the notebook's a2c.agent.{what} must be at least {low:g}, got {value!r}")
    return float(value)


def agent_settings(release: Any) -> AgentSettings:
    """The :class:`AgentSettings` in a release (or source) notebook's metadata; the defaults
    where it has none. Raises ``ValueError``, naming the setting, for a value that is wrong."""
    found = dict(release.get("metadata", {}).get("a2c", {}).get("agent", {}) or {})
    unknown = sorted(set(found) - {"replay", "target_score", "points"})
    if unknown:
        raise ValueError(
            f"the notebook's a2c.agent has unknown settings {unknown}: "
            "it takes replay (true/false), target_score and points"
        )
    replay = found.get("replay", True)
    if not isinstance(replay, bool):
        raise ValueError(f"the notebook's a2c.agent.replay must be true or false, got {replay!r}")
    target = found.get("target_score")
    target = None if target is None else _number(target, "target_score", 1e-9)
    points = _number(found.get("points", 0), "points", 0.0)
    if points and target is None:
        raise ValueError("the notebook's a2c.agent.points needs a target_score too")
    return AgentSettings(replay, target, points)
