"""The hidden-test entry point: ``grade_part(part_key, candidate, points) -> float``.

A graded test cell of the course notebook ends with::

    from autograder.hidden import grade_part
    grade_part("policy", Policy, 2)

``grade_part`` runs the sub-checks of the part (:mod:`autograder.checks`) against the
reference, prints one feedback line per sub-check, and returns the points earned as a Python
``float``, which is the cell's ``execute_result``. How nbgrader reads that result
(``nbgrader.utils.determine_grade``/``get_partial_grade``, nbgrader 0.9.6):

* an ``error`` output or **any stderr stream** in the cell gives 0 points, so nothing here
  raises because of the student's code and all stderr output is captured;
* the text of a float result ``>= 0`` is the partial credit; ``0.0`` gives 0 points;
* a negative number, ``nan``, or text that is not a float (``np.float64(1.0)`` under numpy 2)
  gives *full* points with only a warning, and a value above the cell's points raises; so the
  result is always a plain float clamped to ``[0, points]`` and rounded to 1e-6.

Determinism: every sub-check reseeds Python, numpy and torch with its own fixed seed, so grading
a notebook twice gives the same score; the caller's random states and grad mode are restored
afterwards, so grading does not change what the rest of the notebook computes.

Time: each sub-check has a limit (15 s by default, multiplied by the environment variable
``A2C_GRADER_TIME_SCALE`` on a slow grading machine); a reference part takes a few seconds in
all. After two sub-checks of a part have run out of time, the remaining ones are not run and
count as failed, so an endless loop costs about 30 s per part, not minutes. nbgrader's own cell
timeout (``ExecutePreprocessor.timeout``, 30 s by default) must be larger than that: the course
configuration sets it. See :mod:`autograder.sandbox` for how and where the limit is enforced.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import random
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .checks import PART_NAMES, subchecks
from .checks.base import seed_all
from .sandbox import Outcome, run_guarded

__all__ = ["PartResult", "SubResult", "grade_part", "run_part"]

#: Default time limit of one sub-check, in seconds (before ``A2C_GRADER_TIME_SCALE``).
SUBCHECK_SECONDS = 15.0
#: After this many sub-checks of a part ran out of time, the others are not run.
MAX_TIMEOUTS = 2
_SEED = 20240


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
    seconds: float


@dataclass(frozen=True)
class PartResult:
    """The graded outcome of one part."""

    part_key: str
    score: float  #: points earned, a float in [0, max_points]
    max_points: float
    subresults: tuple[SubResult, ...]

    def feedback(self) -> str:
        """The text printed under the graded cell: a header and one line per sub-check."""
        name = PART_NAMES[self.part_key]
        lines = [f"Part '{self.part_key}' ({name}): {self.score:g} / {self.max_points:g} points"]
        for sub in self.subresults:
            status = "PASS" if sub.passed else "FAIL"
            line = f"  {status} [{sub.points:.2f} pt] {sub.title}"
            if not sub.passed:
                line += f" -- {sub.message}"
            lines.append(textwrap.fill(line, width=110, subsequent_indent=" " * 9))
        return "\n".join(lines)


@contextlib.contextmanager
def _caller_state_kept() -> Iterator[None]:
    """Restore the random states, grad mode and default dtype the notebook had."""
    py_state, np_state, torch_state = (
        random.getstate(),
        np.random.get_state(),
        torch.get_rng_state(),
    )
    grad_enabled, default_dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        torch.set_grad_enabled(True)
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_rng_state(torch_state)
        torch.set_grad_enabled(grad_enabled)
        torch.set_default_dtype(default_dtype)


def _check_points(points: Any) -> float:
    if isinstance(points, bool) or not isinstance(points, numbers.Real) or not points >= 0:
        raise ValueError(
            f"points must be a number >= 0 (the cell's nbgrader points), got {points!r}."
        )
    return float(points)


def run_part(
    part_key: str,
    candidate: Any,
    points: float,
    seconds: float | None = SUBCHECK_SECONDS,
    max_timeouts: int = MAX_TIMEOUTS,
) -> PartResult:
    """Run every sub-check of ``part_key`` on ``candidate``; print nothing, raise nothing.

    Args:
        part_key: one of :data:`autograder.checks.PART_KEYS`.
        candidate: what the student defined (``make_model``, or the class of the part).
        points: the cell's points, shared among the sub-checks by their weights.
        seconds: the time limit of each sub-check, times :func:`time_scale` (``None``: no
            limit; a sub-check may also set a lower limit of its own).
        max_timeouts: after this many timed-out sub-checks, the remaining ones are not run.

    Raises:
        ValueError: an unknown ``part_key`` or bad ``points`` (mistakes of the notebook's
            author, never of the student).
    """
    checks = subchecks(part_key)
    max_points = _check_points(points)
    total_weight = sum(check.weight for check in checks)
    results = []
    timeouts = 0
    with _caller_state_kept():
        for index, check in enumerate(checks):
            limit = None if seconds is None else min(check.seconds, seconds) * time_scale()
            if timeouts >= max_timeouts:
                outcome = Outcome(
                    False,
                    f"not run: {timeouts} sub-checks above did not finish in time; "
                    "fix the endless loop first",
                    0.0,
                )
            else:
                seed_all(_SEED + index)
                outcome = run_guarded(lambda check=check: check.run(candidate), limit)
                timeouts += outcome.timed_out
            share = max_points * check.weight / total_weight
            results.append(
                SubResult(
                    check.key, check.title, share, outcome.passed, outcome.message, outcome.seconds
                )
            )
    earned = sum(result.points for result in results if result.passed)
    score = min(max_points, max(0.0, round(float(earned), 6)))
    return PartResult(part_key, float(score), max_points, tuple(results))


def grade_part(
    part_key: str,
    candidate: Any,
    points: float,
    seconds: float | None = SUBCHECK_SECONDS,
    max_timeouts: int = MAX_TIMEOUTS,
) -> float:
    """Grade one part: print the feedback (stdout only) and return the points earned.

    This is the last expression of a graded test cell; its value is nbgrader's partial credit.
    Never raises for a mistake in the student's code (see :func:`run_part` for the arguments).
    """
    result = run_part(part_key, candidate, points, seconds=seconds, max_timeouts=max_timeouts)
    print(result.feedback(), file=sys.stdout, flush=True)
    return result.score
