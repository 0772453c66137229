"""The course's choices for the verified agent score, and what a grading keeps of it.

The settings live in the assignment's source notebook, in its notebook-level metadata
(``"a2c": {"agent": {...}}``), so the one release every front end grades against
(``grade``, ``grade-all``, Dask, Gradescope's and PrairieLearn's bundles) carries them too:

* ``"replay"`` (default ``true``): play each submission's saved agent after its parts are judged.
  On by default because it costs at most ~20 s of CPU per submission and gives the instructor
  what part 8 is otherwise graded on by trust alone (a score the notebook printed);
  ``false`` turns it off for a course that does not train agents.
* ``"target_score"`` and ``"points"`` (default: none and 0, no points): with both, the agent
  earns ``points * min(1, verified score / target_score)`` (never below 0; 0 without a verified
  score), counted in every total and full marks (:class:`~autograder.core.reports.course_points.CoursePoints`,
  :class:`~autograder.core.reports.grade_result.GradeResult`); courses that only want the
  report lose nothing.

:func:`agent_outcome` turns an :class:`~.verification.AgentReport` into the plain data a
:class:`~autograder.core.reports.grade_result.GradeResult` carries (it travels from a Dask
worker as JSON): the verified and claimed scores, the flag, the weights' digest and a small
PNG strip of the grader's own first game.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from typing import Any

from autograder.core.agent_play.verification import AgentReport

__all__ = ["REPLAY_FRAMES", "AgentSettings", "agent_outcome", "agent_settings"]

#: Frames of the grader's first game kept for the replay strip (the first ~40 s of play).
REPLAY_FRAMES = 600


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


def agent_outcome(report: AgentReport, settings: AgentSettings) -> dict[str, Any]:
    """What a grading keeps of the agent (plain data; see the module docstring)."""
    outcome: dict[str, Any] = {
        "verified": report.verified,
        "claimed": report.claimed,
        "notebook_evaluation": _plain_evaluation(report.notebook_evaluation),
        "note": report.note,
        "digest": report.digest,
        "seconds": round(report.seconds, 3),
        "flagged": bool(report.verified and report.claim_flag),
        "flag": report.claim_flag if report.verified else "",
        "cpu_capped": report.cpu_capped,
    }
    if settings.scored:  # no verified score earns 0 of them: the totals count them either way
        verified = report.verified
        outcome["points"] = settings.points_for(verified["score"]) if verified else 0.0
        outcome["max_points"] = settings.points
        outcome["target_score"] = settings.target_score
    if report.replay:
        from course_lib.video import still_frames

        strip = still_frames(list(report.replay), count=8, columns=4)
        outcome["replay_png"] = base64.b64encode(strip).decode("ascii")
    return outcome


def _plain_evaluation(evaluation: dict[str, Any] | None) -> dict[str, Any] | None:
    if not evaluation:
        return None
    protocol = evaluation.get("protocol")
    return {**evaluation, "protocol": protocol.to_dict() if hasattr(protocol, "to_dict") else protocol}
