"""From one sandboxed run to a grade: part scores, cell notes and the status, in that order.

:class:`autograder.core.assessor.Assessor` decodes the run's channel (:mod:`autograder.core.judging.channel`),
then calls these, each with one job:

* :func:`score_parts`: every part judged on its records (:func:`autograder.core.judging.part_scoring.judge_part`);
  a judge that fails, or observations the probes do not write, mark the channel malformed;
* :func:`cell_notes`: one note per cell that raised, named by its ``grade_id`` when it has one;
* :func:`run_status`: the status by precedence: malformed results (``tampered``) before a run
  past its wall clock (``timeout``), before a run that ended early (``error``), before a run
  without the sandbox (``unsandboxed``); ``None`` leaves ``graded``.

Tamper detection that needs the grader's own state (its copy of ``course_lib``, the Python
environment) stays in the grader, which adds what it finds to the channel's malformed list.
"""

from __future__ import annotations

from typing import Any

from autograder.core.judging.channel import Channel
from autograder.core.judging.part_scoring import TAMPERED, judge_part
from autograder.core.reports.grade_result import GradeResult, PartScore

__all__ = ["cell_notes", "run_status", "score_parts", "why_ended"]


def score_parts(
    result: GradeResult, channel: Channel, points: dict[str, float], plan: dict[str, Any]
) -> None:
    """Judge every part of ``points`` on the channel's records into ``result.parts``."""
    for part, part_points in points.items():
        try:
            judged = judge_part(part, channel.records[part], part_points, plan)
        except Exception as error:  # noqa: BLE001 - untrusted data must not stop the class
            result.parts[part] = PartScore(0.0, part_points, f"Part '{part}': could not be judged")
            channel.malformed.append(f"{part}: judging failed ({type(error).__name__})")
            continue
        result.parts[part] = PartScore(judged.score, judged.max_points, judged.feedback())
        if judged.malformed:
            what = TAMPERED if judged.tampered else "observations the probes do not produce"
            channel.malformed.append(f"{part}: {what}")


def cell_notes(channel: Channel, nb: Any) -> list[str]:
    """``cell 12 (policy): NameError: ...`` for each cell of ``nb`` that raised, in order."""
    notes = []
    for index, event in sorted(channel.cells.items()):
        if not event["ok"] and 0 <= index < len(nb.cells):
            label = (nb.cells[index].metadata.get("nbgrader") or {}).get("grade_id")
            notes.append(f"cell {index}{f' ({label})' if label else ''}: {event['error'][:300]}")
    return notes


def run_status(channel: Channel, ran: Any) -> str | None:
    """The status of the run ``ran`` whose channel is ``channel``; ``None``: ``graded``."""
    if channel.malformed:
        return "tampered: the sandbox returned malformed results"
    if getattr(ran, "cpu_capped", False):
        return (
            f"timeout: the notebook's processes used up the CPU its run may use "
            f"({ran.cpu_seconds:.0f} s, every process it started counted) and were stopped; "
            "parts judged before that are shown"
        )
    if ran.timed_out:
        return (
            f"timeout: the notebook ran past the grading limit ({ran.wall_seconds:g} s) and "
            "was stopped; parts judged before that are shown"
        )
    if not channel.ended:
        return f"error: the grading run ended early: {why_ended(ran)}"
    if not ran.sandboxed:
        return (
            "unsandboxed: scores computed without the sandbox, so not a grade (install "
            "bubblewrap and grade again)"
        )
    return None


def why_ended(ran: Any) -> str:
    """Why a sandboxed run ended without the runner's last line, and the end of its log."""
    code = ran.returncode
    if code is not None and code > 128:
        why = f"the grading process was killed (signal {code - 128}"
        why += ": the run's memory limit, or a kill)" if code - 128 == 9 else ")"
    elif code == 125:
        why = "the sandbox could not start"
    else:
        why = f"the grading process exited with status {code}"
    tail = ran.output.strip()[-300:]
    return f"{why}; its last output: {tail}" if tail else f"{why}, with no output"
