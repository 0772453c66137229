"""What PrairieLearn's external grader runs per submission: grade, write ``results.json``.

The results follow PrairieLearn's external grading schema: ``gradable``, ``score`` (the
autograded total over full marks, bonus included (and the verified agent's points where the
course gives some), at most 1; 0 when the notebook could not be
graded), ``message`` (the status), ``output`` (status, isolation mode, notes) and one
``tests`` entry per part with ``name``, ``description``, ``points``, ``max_points``, ``output``
(the hidden tests' feedback) and ``message``; where the grader played the saved agent, a test
with its verified score (of no points unless the course gives the agent some) and the replay strip in ``images``. Part 8 is a test worth 0 of 0 that says it is
graded by hand (the question's manual points): PrairieLearn shows such a test as information,
neither passed nor failed. A job with no notebook, or where student code cannot be
isolated, or whose file is not a readable notebook, is ``gradable: false`` with the reason in
``format_errors``: PrairieLearn then counts no attempt.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from autograder.core.agent_play.feedback import agent_line
from autograder.core.isolation import SandboxUnavailable
from autograder.core.sandbox_view import warm_start
from autograder.platforms.one_notebook import (
    close_folders,
    find_notebook,
    grade_notebook,
    part_rows,
    summary,
    write_json,
)

__all__ = ["main", "prairielearn_results"]

KIT = Path(__file__).resolve().parents[2]  #: the kit this runs from (closed before grading)
MAX_DATA_BYTES = 1024**2  #: data/data.json is read up to this size


def prairielearn_results(result: Any) -> dict[str, Any]:
    """PrairieLearn's ``results.json`` for a :class:`~autograder.core.reports.grade_result.GradeResult`; a file
    that is not a notebook the grader can read (``unreadable: ...``) is not gradable, so the
    student loses no attempt on it."""
    if result.status.startswith("unreadable"):
        return _not_gradable(result.status)
    tests = []
    for row in part_rows(result):
        tests.append(
            {
                "name": row.name,
                "description": "graded by hand" if row.manual else "hidden tests",
                "points": 0.0 if row.manual else row.score,
                "max_points": 0.0 if row.manual else row.max_score,
                "output": row.output,
                "message": row.output.splitlines()[0] if row.output else "",
            }
        )
    full = result.points.graded_here  # the agent's points, when the course gives some
    graded = result.status == "graded"
    score = min(1.0, result.total / full) if graded and full > 0 else 0.0
    results = {
        "gradable": True,
        "score": round(score, 6),
        "message": f"status: {result.status}",
        "output": summary(result),
        "tests": tests,
    }
    if result.agent:  # a test (of the agent's points, if any), and the replay strip as an image
        line = agent_line(result.agent)
        earned = result.agent_points if graded else 0.0
        tests.append({"name": "Verified agent score", "description": "the grader's own games",
                      "points": earned, "max_points": result.agent_max, "output": line,
                      "message": line})  # fmt: skip
        if result.agent.get("replay_png"):
            results["images"] = [{
                "label": "the agent in the grader's first game",
                "url": "data:image/png;base64," + result.agent["replay_png"],
            }]  # fmt: skip
    return results


def _not_gradable(why: str) -> dict[str, Any]:
    """Results PrairieLearn shows as "invalid, not gradable", ``format_errors`` saying why."""
    return {
        "gradable": False,
        "score": 0.0,
        "message": why,
        "output": why,
        "format_errors": [why],
        "tests": [],
    }


def _notebook_name(root: Path) -> str:
    """``params.notebook`` of ``data/data.json`` when the question sets it, else a2c.ipynb."""
    path = root / "data" / "data.json"
    try:
        with open(path, "rb") as data:
            raw = data.read(MAX_DATA_BYTES + 1)
        params = json.loads(raw)["params"] if len(raw) <= MAX_DATA_BYTES else {}
        name = params.get("notebook") if isinstance(params, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        name = None
    if isinstance(name, str) and name.endswith(".ipynb") and "/" not in name:
        return name
    return "a2c.ipynb"


def main() -> int:
    """Grade ``$PL_GRADE_ROOT/student`` (default ``/grade``); 0 once the results are written
    and the notebook graded, 1 otherwise (the results say why)."""
    root = Path(os.environ.get("PL_GRADE_ROOT", "/grade")).resolve()
    results = root / "results" / "results.json"
    try:
        extra = [root / name for name in ("serverFilesCourse", "tests") if (root / name).exists()]
        close_folders([KIT, root / "results", *extra])
        results.unlink(missing_ok=True)
        # The sandbox's Python starts now (container mode: the one notebook's fresh run), its
        # imports beside the grader's own; folders closed first, as every run needs them.
        warm_start()
        path, why = find_notebook(root / "student", _notebook_name(root))
        if path is None:
            write_json(results, _not_gradable(why))
            print(f"not graded: {why}", file=sys.stderr)
            return 1
        result = grade_notebook(path, student="submission")
    except SandboxUnavailable as error:
        write_json(results, _not_gradable(f"the grader cannot isolate student code: {error}"))
        print(f"error: {error}", file=sys.stderr)
        return 1
    write_json(results, prairielearn_results(result))
    print(summary(result))
    return 0 if result.status == "graded" else 1
