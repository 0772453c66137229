"""Judge each graded part from what the student's code returned: scores and feedback.

The checks of a part (:mod:`autograder.checks`) are *probes* that run the student's code, and
*judges* that compare what came back with the reference. Two ways to use them:

* grading (:mod:`autograder.pipeline`): :func:`make_plan` lists every probe step as plain data
  for the sandboxed process that runs the notebook; that process writes one record per step
  (:func:`course_lib.checks.harness.record_part`), and :func:`judge_part` turns the records
  into a :class:`PartResult` here, in the trusted process, which never runs student code;
* in the same process, for the instructor's and self-learner's own notebook (the hidden-test
  cells of ``solutions/a2c.ipynb``): :func:`grade_part` probes and judges at once, prints the
  feedback and returns the points (a plain float, nbgrader's partial credit).

Every probe step is reseeded and time-limited (10 s of CPU time per step by default, 20 s for
the model's training probe, times ``A2C_GRADER_TIME_SCALE``); after two steps of a part ran out
of time, the part's other steps are not run, so an endless loop costs about 20 s per part.
"""

from __future__ import annotations

import numbers
import os
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from course_lib.checks.harness import run_steps

from .checks import PART_KEYS, PART_NAMES, subchecks
from .checks.base import CheckFailed

__all__ = [
    "PartResult",
    "SubResult",
    "grade_part",
    "judge_part",
    "make_plan",
    "run_part",
    "time_scale",
]


def time_scale() -> float:
    """The factor ``A2C_GRADER_TIME_SCALE`` (default 1) applied to every time limit."""
    text = os.environ.get("A2C_GRADER_TIME_SCALE", "").strip()
    try:
        scale = float(text) if text else 1.0
    except ValueError:
        scale = 1.0
    return scale if scale > 0 else 1.0


@dataclass(frozen=True)
class SubResult:
    """The outcome of one sub-check, with its share of the points."""

    key: str
    title: str
    points: float  #: what this sub-check is worth
    passed: bool
    message: str


@dataclass(frozen=True)
class PartResult:
    """The graded outcome of one part."""

    part_key: str
    score: float  #: points earned, a float in [0, max_points]
    max_points: float
    subresults: tuple[SubResult, ...]
    #: some observation was not what the probes write: forged or damaged in the student's process
    malformed: bool = False

    def feedback(self) -> str:
        """The text shown under the graded cell: a header and one line per sub-check."""
        name = PART_NAMES[self.part_key]
        lines = [f"Part '{self.part_key}' ({name}): {self.score:g} / {self.max_points:g} points"]
        for sub in self.subresults:
            line = f"  {'PASS' if sub.passed else 'FAIL'} [{sub.points:.2f} pt] {sub.title}"
            if not sub.passed:
                line += f" -- {sub.message}"
            lines.append(textwrap.fill(line, width=110, subsequent_indent=" " * 9))
        return "\n".join(lines)


def _check_points(points: Any) -> float:
    if isinstance(points, bool) or not isinstance(points, numbers.Real) or not points >= 0:
        raise ValueError(
            f"points must be a number >= 0 (the cell's nbgrader points), got {points!r}."
        )
    return float(points)


def part_steps(part_key: str) -> list[dict[str, Any]]:
    """The probe steps of one part, in order (plain data)."""
    return [step for check in subchecks(part_key) for step in check.steps()]


def make_plan(scale: float | None = None) -> dict[str, Any]:
    """Every part's probe steps, as plain data for the process that runs the notebook."""
    parts = {key: part_steps(key) for key in PART_KEYS}
    return {"parts": parts, "time_scale": time_scale() if scale is None else scale}


UNREADABLE = "unreadable result"


def _verdict(check: Any, records: Mapping[str, dict[str, Any]]) -> tuple[bool, str]:
    for step, case in zip(check.steps(), check.cases, strict=True):
        record = records.get(step["key"])
        if record is None:
            return False, "no result: the notebook stopped or was stopped before this check ran"
        if record.get("missing"):
            return False, "not defined: the notebook does not define this name"
        if not record.get("ok"):
            return False, str(record.get("error", "failed"))[:2000]
        try:
            check.judge(record["observation"], case)
        except CheckFailed as failure:
            return False, str(failure)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
            # A malformed observation (not what the probe writes): the student's process forged
            # or damaged it. It earns nothing, and says so.
            return False, f"{UNREADABLE} ({type(error).__name__}: {error})"
    return True, ""


def judge_part(part_key: str, records: Mapping[str, dict[str, Any]], points: float) -> PartResult:
    """Score ``part_key`` from the records of its probe steps (keyed by step key)."""
    checks = subchecks(part_key)
    max_points = _check_points(points)
    total_weight = sum(check.weight for check in checks)
    results = []
    for check in checks:
        passed, message = _verdict(check, records)
        share = max_points * check.weight / total_weight
        results.append(SubResult(check.key, check.title, share, passed, message))
    earned = sum(result.points for result in results if result.passed)
    score = min(max_points, max(0.0, round(float(earned), 6)))
    malformed = any(result.message.startswith(UNREADABLE) for result in results)
    return PartResult(part_key, float(score), max_points, tuple(results), malformed)


def run_part(part_key: str, candidate: Any, points: float, scale: float = 1.0) -> PartResult:
    """Probe ``candidate`` in this process and judge it; prints nothing, raises nothing."""
    records = dict(run_steps(candidate, part_steps(part_key), scale))
    return judge_part(part_key, records, points)


def grade_part(part_key: str, candidate: Any, points: float) -> float:
    """Grade one part here and now: print the feedback (stdout) and return the points earned.

    For the instructor's and self-learner's own notebook; grading a submission never runs the
    student's code in the grader's process (see :mod:`autograder.pipeline`).
    """
    if part_key not in PART_NAMES:
        subchecks(part_key)  # raises the ValueError naming the known keys
    result = run_part(part_key, candidate, points, scale=time_scale())
    print(result.feedback(), file=sys.stdout, flush=True)
    return result.score
