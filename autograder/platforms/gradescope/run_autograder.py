"""What Gradescope runs per submission: grade the notebook, write ``results/results.json``.

The results follow Gradescope's autograder specification: ``score`` (the autograded total,
bonus included, and the verified agent's points where the course gives some; 0 when the notebook could not be graded), ``execution_time`` (seconds),
``output`` (status, isolation mode, notes, and that part 8 is graded by hand), and one
``tests`` entry per autograded part with ``name``, ``score``, ``max_score``, ``status``
(``"passed"`` at full marks, else ``"failed"``: the two values Gradescope documents),
``output`` (the hidden tests' feedback, which names the failing case and never the expected
values) and ``visibility``. The bonus part is its own test. Part 8 has no test: on Gradescope it
is a question of its own, graded by hand, and a test for it could only pass or fail a part
nobody has read yet. Where the grader played the saved agent, a test (of the agent's points,
none unless the course gives some) says its verified score (:func:`~autograder.core.agent_play.feedback.agent_line`) and ``leaderboard``
holds it when the result is ``graded`` (Gradescope's leaderboard: the verified score, highest
first, its spread and the games; a result that is no grade ranks nowhere). The grader's own log stays hidden from students (``stdout_visibility``).
"""

from __future__ import annotations

import os
import sys
import time
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

__all__ = ["gradescope_results", "main"]

VISIBILITY = "visible"  #: the hidden tests' feedback is written for students


def gradescope_results(result: Any, seconds: float) -> dict[str, Any]:
    """Gradescope's ``results.json`` for a :class:`~autograder.core.reports.grade_result.GradeResult`."""
    tests = []
    autograded = [row for row in part_rows(result) if not row.manual]
    for number, row in enumerate(autograded, start=1):
        tests.append(
            {
                "name": row.name,
                "number": str(number),
                "score": row.score,
                "max_score": row.max_score,
                "status": "passed" if row.score >= row.max_score else "failed",
                "output": row.output,
                "visibility": VISIBILITY,
            }
        )
    results = {
        "score": result.total if result.status == "graded" else 0.0,
        "execution_time": round(seconds),
        "output": summary(result),
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if result.agent:
        # The agent's line as a test (of no points unless the course gives the agent some),
        # and the verified score on Gradescope's leaderboard (highest first).
        test = {"name": "Verified agent score", "number": str(len(tests) + 1),
                "output": agent_line(result.agent), "visibility": VISIBILITY}  # fmt: skip
        if result.agent_max:  # the course gives it points: they are in ``score`` too
            graded = result.status == "graded"
            test.update(score=result.agent_points if graded else 0.0, max_score=result.agent_max)
        tests.append(test)
        verified = result.agent.get("verified")
        if verified and result.status == "graded":  # a result that is no grade ranks nowhere
            results["leaderboard"] = [
                {"name": "Verified score", "value": round(verified["score"], 1)},
                {"name": "Spread (std)", "value": round(verified["std"], 1), "order": "asc"},
                {"name": "Games", "value": verified["games"]},
            ]
    return results


def _failure(why: str, seconds: float) -> dict[str, Any]:
    return {
        "score": 0.0,
        "execution_time": round(seconds),
        "output": f"not graded: {why}",
        "visibility": VISIBILITY,
        "stdout_visibility": "hidden",
        "tests": [],
    }


def main() -> int:
    """Grade ``$AUTOGRADER_ROOT/submission`` (default ``/autograder``); 0 once the results are
    written, 1 when the notebook could not be graded (the results then say why)."""
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")).resolve()
    results = root / "results" / "results.json"
    start = time.monotonic()
    try:
        close_folders([root / "source", root / "results"])
        results.unlink(missing_ok=True)
        # The sandbox's Python starts now (container mode: the one notebook's fresh run), its
        # imports beside the grader's own; folders closed first, as every run needs them.
        warm_start()
        path, why = find_notebook(root / "submission")
        if path is None:
            write_json(results, _failure(why, time.monotonic() - start))
            print(f"not graded: {why}", file=sys.stderr)
            return 1
        result = grade_notebook(path, student="submission")
    except SandboxUnavailable as error:
        write_json(results, _failure(str(error), time.monotonic() - start))
        print(f"error: {error}", file=sys.stderr)
        return 1
    write_json(results, gradescope_results(result, time.monotonic() - start))
    print(summary(result))
    return 0 if result.status == "graded" else 1
