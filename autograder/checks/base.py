"""What every part's checks share: the :class:`SubCheck` record, the reference's observations
and the helpers that read an observation.

A sub-check names a *probe* (:mod:`course_lib.checks.probes`) and the cases to run it on. The
probe runs where the student's code runs (a sandboxed process when grading) and reports plain
data; :meth:`SubCheck.judge` runs here, in the trusted process, on that data only, and raises
:class:`CheckFailed` with a student-facing message (the smallest failing input, expected and
actual values, a hint) when the student's observation is wrong. Expected values come from the
reference run through the same probe on the same case (:func:`reference_observation`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_lib.checks import CheckFailed
from course_lib.checks.harness import SEED, guarded, seed_all, state_kept
from course_lib.checks.probes import run_probe
from course_lib.checks.record import array_of, describe, dumps

__all__ = [
    "CheckFailed",
    "SubCheck",
    "array_of",
    "describe",
    "fmt",
    "is_close",
    "log_softmax",
    "reference_observation",
]

Judge = Callable[[dict[str, Any], dict[str, Any]], None]


@dataclass(frozen=True)
class SubCheck:
    """One line of feedback, its share of the part's points, and how it is probed and judged."""

    key: str  #: short stable name, for reports and tests ("resets")
    title: str  #: what is checked, in the student's terms ("targets stop at episode ends")
    weight: int  #: share of the part's points: weight / sum of the part's weights
    probe: str  #: the probe that runs the student's code (course_lib.checks.probes.PROBES)
    cases: tuple[dict[str, Any], ...]  #: inputs, smallest first; every one must pass
    judge: Judge  #: judge(observation, case) returns, or raises CheckFailed
    seconds: float = 10.0  #: time limit of one case (student code included)

    def steps(self) -> list[dict[str, Any]]:
        """The plan's steps of this sub-check (plain data for the student's process)."""
        return [
            {
                "key": f"{self.key}.{index}",
                "probe": self.probe,
                "case": case,
                "seconds": self.seconds,
            }
            for index, case in enumerate(self.cases)
        ]


_CACHE: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()


def reference_observation(candidate: Any, probe: str, case: dict[str, Any]) -> dict[str, Any]:
    """What ``probe`` observes of the reference ``candidate`` on ``case`` (computed once)."""
    key = f"{getattr(candidate, '__qualname__', candidate)}|{probe}|{dumps(case)}"
    with _LOCK:
        if key not in _CACHE:
            with state_kept():
                seed_all(SEED)
                record = guarded(lambda: run_probe(probe, candidate, case), None)
            if not record["ok"]:
                raise RuntimeError(f"the reference failed probe {probe!r}: {record['error']}")
            _CACHE[key] = record["observation"]
        return _CACHE[key]


def fmt(value: Any, precision: int = 4) -> str:
    """A compact rendering of numbers for feedback (at most ~40 elements)."""
    array = np.asarray(value)
    if array.dtype.kind == "f":
        array = np.round(array, precision)
    return np.array2string(
        array, precision=precision, separator=", ", threshold=40, edgeitems=3, max_line_width=200
    ).replace("\n", "")


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, in float64, stable for large logits."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def is_close(got: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-4) -> bool:
    """Same shape and allclose; NaN anywhere fails."""
    if got is None or expected is None:
        return False
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return False
    return bool(np.allclose(got, expected, rtol=rtol, atol=atol))
