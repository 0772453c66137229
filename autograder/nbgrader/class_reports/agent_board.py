"""The verified agent scores in the class's reports: ``grades.csv``'s agent columns, the
leaderboard (``summary.txt`` for the instructor, ``leaderboard.txt`` without names for the
students) and the same weights handed in by two students.

A row's agent columns come from the grading's ``agent`` outcome
(:func:`autograder.core.agent_play.settings.agent_outcome`): the grader's mean raw score over
its own games (``agent_score``), their spread (``agent_std``), games, agent steps and capped
games, the score the notebook claims (``claimed_score``: its last 100 training games), the
flag when the notebook's own evaluation is above the grader's by more than the games'
randomness explains (``agent_flag``), the agent's points when the course gives some, and the
weights' SHA-256 (``agent_digest``), which finds the same file in two submissions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from autograder.core.reports.grade_result import GradeResult
from autograder.core.reports.safe_text import points_text

__all__ = [
    "AGENT_COLUMNS",
    "agent_cells",
    "duplicate_agents",
    "leaderboard_lines",
]

AGENT_COLUMNS = [
    "agent_score", "agent_std", "agent_games", "agent_steps", "agent_capped", "claimed_score",
    "agent_flag", "agent_points", "agent_digest",
]  # fmt: skip
LEADERBOARD_SIZE = 300  #: rows of the leaderboard (a class of 300 fits)


def _number(value: Any, digits: int = 1) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def agent_cells(result: GradeResult) -> dict[str, str]:
    """The agent columns of ``result``'s row (all empty when the agent was not played)."""
    cells = dict.fromkeys(AGENT_COLUMNS, "")
    agent = result.agent
    if not agent:
        return cells
    verified, claimed = agent.get("verified"), agent.get("claimed") or {}
    if verified:
        cells.update(
            agent_score=_number(verified["score"]),
            agent_std=_number(verified["std"]),
            agent_games=str(verified["games"]),
            agent_steps=str(verified["steps"]),
            agent_capped=str(verified["capped"]),
        )
    cells["claimed_score"] = _number(claimed.get("score"))
    if agent.get("flagged"):
        cells["agent_flag"] = "claim above verified"
    elif not verified:
        cells["agent_flag"] = "no verified score"
    if "points" in agent:
        cells["agent_points"] = points_text(agent["points"])
    cells["agent_digest"] = str(agent.get("digest", ""))[:64]
    return cells


def duplicate_agents(rows: Sequence[dict[str, str]]) -> list[list[str]]:
    """The students (sorted) of each weights file handed in by more than one of them."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row.get("agent_digest") and row.get("student"):
            by_digest[row["agent_digest"]].append(row["student"])
    return sorted(sorted(names) for names in by_digest.values() if len(names) > 1)


def _ranked(rows: Sequence[dict[str, str]]) -> list[tuple[float, dict[str, str]]]:
    scored = []
    for row in rows:
        try:
            scored.append((float(row.get("agent_score", "")), row))
        except ValueError:
            continue
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].get("student", "")))


def leaderboard_lines(
    rows: Sequence[dict[str, str]],
    anonymous: bool = False,
    copies: Sequence[Sequence[str]] | None = None,
) -> list[str]:
    """The class's agents ranked by verified score: rank, student (not with ``anonymous``),
    score, spread, games, capped games, and the flags; ``[]`` when no agent was played. Ties
    share a rank. ``copies``: the groups of students who handed in the same agent (their
    weights compared: :meth:`~autograder.nbgrader.class_reports.agent_records.AgentRecords.copies`);
    by default, the same weights' digest."""
    ranked = _ranked(rows)
    if not ranked:
        return []
    games = ranked[0][1].get("agent_games", "")
    lines = [
        f"leaderboard: verified agent scores (the grader's own games, {games} a student, mean raw "
        "score; +- the games' spread)",
    ]
    rank, last = 0, None
    for index, (score, row) in enumerate(ranked[:LEADERBOARD_SIZE], start=1):
        if score != last:
            rank, last = index, score
        who = "" if anonymous else f"{row.get('student', ''):<20}"
        line = f"{rank:>4}. {who}{score:>8.1f} +- {row.get('agent_std', '')}"
        if row.get("agent_capped") not in ("", "0"):
            line += f" ({row['agent_capped']} game(s) capped)"
        if not anonymous and row.get("agent_flag"):
            line += f"  [{row['agent_flag']}: claimed {row.get('claimed_score') or '?'}]"
        lines.append(line)
    if not anonymous:
        for names in duplicate_agents(rows) if copies is None else copies:
            lines.append(f"same agent weights handed in by: {', '.join(names)}")
        missing = sum(1 for row in rows if row.get("agent_flag") == "no verified score")
        if missing:
            lines.append(f"no verified score (see each row's notes): {missing} submission(s)")
    return lines
