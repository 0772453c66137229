"""Probe and judge a part in this process, for the instructor's and self-learner's own notebook.

The hidden-test cells of ``solutions/a2c.ipynb`` call :func:`grade_part`: it draws fresh cases,
runs the probes on the notebook's own definitions here, judges them against the reference,
prints the feedback and returns the points (a float, nbgrader's partial credit). Grading a
submission never does this: the student's code runs in the sandbox
(:class:`autograder.core.assessor.Assessor`).
"""

from __future__ import annotations

import sys
from typing import Any

from autograder.core.judging.part_scoring import PartResult, check_points, judge_part
from autograder.core.judging.parts import PART_KEYS, part_module
from autograder.core.judging.plan import new_seed, part_steps, time_scale
from autograder.sandboxed.grading_runtime.harness import run_steps

__all__ = ["grade_part", "run_part"]


def run_part(
    part_key: str, candidate: Any, points: float, scale: float = 1.0, seed: int | None = None
) -> PartResult:
    """Probe ``candidate`` in this process on cases drawn from ``seed`` (a fresh secret one by
    default) and judge it; prints nothing."""
    check_points(points)
    part_module(part_key)  # raises the ValueError naming the known keys
    seed = new_seed() if seed is None else seed
    steps = part_steps(part_key, seed, PART_KEYS.index(part_key))
    plan = {"parts": {part_key: steps}, "time_scale": scale}
    records = dict(run_steps(candidate, steps, scale))
    return judge_part(part_key, records, points, plan)


def grade_part(part_key: str, candidate: Any, points: float) -> float:
    """Grade one part here and now: print the feedback (stdout) and return the points earned.

    For the instructor's and self-learner's own notebook; grading a submission never runs the
    student's code in the grader's process (see :mod:`autograder.core.assessor`).
    """
    result = run_part(part_key, candidate, points, scale=time_scale())
    print(result.feedback(), file=sys.stdout, flush=True)
    return result.score
