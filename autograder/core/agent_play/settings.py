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
  score), counted in every total and full marks (:class:`~autograder.core.course.points.CoursePoints`,
  :class:`~autograder.core.reports.grade_result.GradeResult`); courses that only want the
  report lose nothing.

:func:`agent_outcome` turns an :class:`~.verification.AgentReport` into the plain data a
:class:`~autograder.core.reports.grade_result.GradeResult` carries (it travels from a Dask
worker as JSON): the verified and claimed scores, the flag, the weights' digest and a small
PNG strip of the grader's own first game.
"""

from __future__ import annotations

import base64
from typing import Any

from autograder.core.agent_play.verification import AgentReport
from autograder.core.course.agent import AgentSettings, agent_settings

__all__ = ["REPLAY_FRAMES", "AgentSettings", "agent_outcome", "agent_settings"]

#: Frames of the grader's first game kept for the replay strip (the first ~40 s of play).
REPLAY_FRAMES = 600


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
    if report.verified:  # drawn after the parts' run, never shown to it: to replay a game
        outcome["seeds"] = list(report.seeds)
    if report.kept:  # the same weights' score from an earlier grading, not drawn anew
        outcome["kept"] = True
    if report.fingerprint is not None:  # to find copies on the class board
        outcome["fingerprint"] = report.fingerprint
    if settings.scored:  # no verified score earns 0 of them: the totals count them either way
        verified = report.verified
        outcome["points"] = settings.points_for(verified["score"]) if verified else 0.0
        outcome["max_points"] = settings.points
        outcome["target_score"] = settings.target_score
    if report.replay:
        from course_lib.video import still_frames

        strip = still_frames(list(report.replay), count=8, columns=4)
        outcome["replay_png"] = base64.b64encode(strip).decode("ascii")
    elif report.kept_replay_png:
        outcome["replay_png"] = report.kept_replay_png
    return outcome


def _plain_evaluation(evaluation: dict[str, Any] | None) -> dict[str, Any] | None:
    if not evaluation:
        return None
    protocol = evaluation.get("protocol")
    return {**evaluation, "protocol": protocol.to_dict() if hasattr(protocol, "to_dict") else protocol}
