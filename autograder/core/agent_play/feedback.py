"""What people read of the verified agent score: one line of course words, and the grader's
output in the notebook's save cell.

:func:`agent_line` is the one sentence every channel shows (formgrader's comment on part 8, the
feedback page, Gradescope's and PrairieLearn's results): the grader's mean raw score over its
own games, their spread, games and steps, the capped games, the score the notebook claims and,
when they disagree beyond noise, the flag. :func:`show_in_notebook` replaces the outputs of the
locked cell that saves the agent (``save_agent``) by the grader's own: that line and the replay
strip, eight frames of the grader's first game rendered from its own emulator (never from the
sandbox), so formgrader and every feedback page made from the gradebook show them, and a
student's forged output there is gone.
"""

from __future__ import annotations

from typing import Any

from nbformat import NotebookNode
from nbformat.v4 import new_output

__all__ = ["SAVE_CELL", "agent_line", "show_in_notebook"]

SAVE_CELL = "save_agent"  #: grade_id of the locked cell that saves the trained agent


def agent_line(agent: dict[str, Any] | None) -> str:
    """The verified score in one sentence (``""`` when the agent was not played)."""
    if not agent:
        return ""
    verified, claimed = agent.get("verified"), agent.get("claimed") or {}
    claim = ""
    if claimed.get("score") is not None:
        claim = f"; the notebook claims {claimed['score']:.1f} (its last training games)"
    if not verified:
        return f"Verified agent score: none ({agent.get('note') or 'not played'}){claim}."
    protocol = verified.get("protocol", {})
    actions = protocol.get("actions", "sampled")
    text = (
        f"Verified agent score: {verified['score']:.1f} (std {verified['std']:.1f}) over the "
        f"grader's own {verified['games']} games ({verified['steps']:,} agent steps, actions "
        f"{actions}, seeds drawn at grading)"
    )
    if verified.get("capped"):
        cap = protocol.get("max_agent_steps")
        text += f", {verified['capped']} game(s) capped at {cap:,} steps (score so far)"
    text += claim
    if "points" in agent:
        text += (
            f"; {agent['points']:g} of {agent['max_points']:g} point(s) "
            f"(target {agent['target_score']:g})"
        )
    if agent.get("cpu_capped"):
        text += f"; {agent['cpu_capped']}, scored"
    if agent.get("flagged") and (agent.get("flag") or agent.get("note")):
        text += f". Flag: {agent.get('flag') or agent['note']}"
    return text + "."


def show_in_notebook(nb: NotebookNode, agent: dict[str, Any] | None) -> None:
    """Put the grader's line and replay strip in place of the save cell's outputs."""
    if not agent:
        return
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade_id") != SAVE_CELL:
            continue
        line = "[grader] " + agent_line(agent)
        cell.outputs = [new_output("display_data", data={"text/plain": line})]
        if agent.get("replay_png"):  # its own output: a page shows an image or text, not both
            strip = {"image/png": agent["replay_png"],
                     "text/plain": "[grader] the agent in the grader's first game"}  # fmt: skip
            cell.outputs.append(new_output("display_data", data=strip))
        return
