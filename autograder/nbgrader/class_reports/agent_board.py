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

from autograder.core.reports.grade_result import GradeResult
from autograder.nbgrader.class_reports.grade_row import AgentColumns, GradeRow

__all__ = [
    "agent_columns",
    "duplicate_agents",
    "leaderboard_lines",
]

LEADERBOARD_SIZE = 300  #: rows of the leaderboard (a class of 300 fits)


def agent_columns(result: GradeResult) -> AgentColumns:
    """The agent columns of ``result``'s row (all empty when the agent was not played), at the
    precision the CSV keeps (scores to 0.1, points to 0.01): the row read back is the same."""
    agent = result.agent
    if not agent:
        return AgentColumns()
    verified, claimed = agent.get("verified"), agent.get("claimed") or {}
    columns = AgentColumns()
    if verified:
        columns.score, columns.std = round(verified["score"], 1), round(verified["std"], 1)
        columns.games, columns.steps = int(verified["games"]), int(verified["steps"])
        columns.capped = int(verified["capped"])
    if claimed.get("score") is not None:
        columns.claimed = round(float(claimed["score"]), 1)
    if agent.get("flagged"):
        columns.flag = "claim above verified"
    elif not verified:
        columns.flag = "no verified score"
    if "points" in agent:
        columns.points = round(float(agent["points"]), 2)
    columns.digest = str(agent.get("digest", ""))[:64]
    return columns


def duplicate_agents(rows: Sequence[GradeRow]) -> list[list[str]]:
    """The students (sorted) of each weights file handed in by more than one of them."""
    by_digest: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row.agent is not None and row.agent.digest and row.student:
            by_digest[row.agent.digest].append(row.student)
    return sorted(sorted(names) for names in by_digest.values() if len(names) > 1)


def _ranked(rows: Sequence[GradeRow]) -> list[tuple[float, GradeRow]]:
    scored = [(row.agent.score, row) for row in rows if row.agent and row.agent.score is not None]
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].student))


def leaderboard_lines(
    rows: Sequence[GradeRow],
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
    games = ranked[0][1].agent.cells()["agent_games"]
    lines = [
        f"leaderboard: verified agent scores (the grader's own games, {games} a student, mean raw "
        "score; +- the games' spread)",
    ]
    rank, last = 0, None
    for index, (score, row) in enumerate(ranked[:LEADERBOARD_SIZE], start=1):
        if score != last:
            rank, last = index, score
        cells = row.agent.cells()
        who = "" if anonymous else f"{row.student:<20}"
        line = f"{rank:>4}. {who}{score:>8.1f} +- {cells['agent_std']}"
        if cells["agent_capped"] not in ("", "0"):
            line += f" ({cells['agent_capped']} game(s) capped)"
        if not anonymous and cells["agent_flag"]:
            line += f"  [{cells['agent_flag']}: claimed {cells['claimed_score'] or '?'}]"
        lines.append(line)
    if not anonymous:
        for names in duplicate_agents(rows) if copies is None else copies:
            lines.append(f"same agent weights handed in by: {', '.join(names)}")
        missing = sum(1 for row in rows if row.agent and row.agent.flag == "no verified score")
        if missing:
            lines.append(f"no verified score (see each row's notes): {missing} submission(s)")
    return lines
