"""What every part's checks share: the :class:`SubCheck` record, the reference's observations
and the helpers that read an observation.

A sub-check names a *probe* (:mod:`autograder.sandboxed.grading_runtime.probes`) and the list of cases it runs
on. A part's cases are drawn for each grading from a secret seed (each part module's
``draw_cases(rng)``), so no one knows them before the run. The probe runs where the student's
code runs (a sandboxed process when grading) and reports plain data; :meth:`SubCheck.judge`
runs here, in the trusted process, on that data only, and raises :class:`CheckFailed` with a
student-facing message (the failing input, what is wrong, a hint; never the reference's
numbers) when the observation is wrong. Expected values come from the reference run through
the same probe on the same case (:func:`reference_observation`), or from the grader's own
computation.

Sub-checks that compare values with the reference (or with the grader's own computation) earn
points on their own. A *gated* sub-check asks a property a process could merely claim (shapes,
"no graph", "inputs unchanged", a parameter count): it earns its points only when the part's
gate sub-checks (``GATE`` of the part module) passed on this grading's secret cases.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.sandboxed.grading_runtime.harness import SEED, guarded, state_kept
from autograder.sandboxed.grading_runtime.probes import run_probe
from autograder.sandboxed.grading_runtime.record import dumps
from autograder.sandboxed.grading_runtime.seeding import seed_all
from course_lib.checks import CheckFailed
from course_lib.checks.properties import array_of, describe, log_softmax

__all__ = [
    "CheckFailed",
    "SubCheck",
    "array_of",
    "describe",
    "fmt",
    "is_close",
    "log_softmax",
    "reference_observation",
    "step_key",
    "where_wrong",
]

Judge = Callable[[dict[str, Any], dict[str, Any]], None]


def step_key(probe: str, cases: str, index: int) -> str:
    """The plan's key of case ``index`` of the case list ``cases`` run through ``probe``."""
    return f"{probe}.{cases}.{index}"


@dataclass(frozen=True)
class SubCheck:
    """One line of feedback, its share of the part's points, and how it is probed and judged."""

    key: str  #: short stable name, for reports and tests ("resets")
    title: str  #: what is checked, in the student's terms ("targets stop at episode ends")
    weight: int  #: share of the part's points: weight / sum of the part's weights
    probe: str  #: the probe that runs the student's code (autograder.sandboxed.grading_runtime.probes.PROBES)
    #: which case lists of the part's draw_cases(rng): "name", "name:2" (one element),
    #: "one+other" (both lists)
    cases: str
    judge: Judge  #: judge(observation, case) returns, or raises CheckFailed
    seconds: float = 10.0  #: time limit of one case (student code included)
    gated: bool = False  #: earns only when the part's gate sub-checks passed

    def selection(self, drawn: dict[str, list[dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        """``(step key, case)`` for each case this sub-check runs on."""
        chosen = []
        for part in self.cases.split("+"):
            name, _, index = part.partition(":")
            indices = [int(index)] if index else range(len(drawn[name]))
            chosen += [(step_key(self.probe, name, i), drawn[name][i]) for i in indices]
        return chosen


#: Reference observations by (candidate, probe, case): each grading draws new cases, so the
#: cache is bounded; one grading's cases are computed once (see autograder.core.judging.plan.prepare_references).
_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 512
_LOCK = threading.Lock()


def reference_observation(candidate: Any, probe: str, case: dict[str, Any]) -> dict[str, Any]:
    """What ``probe`` observes of the reference ``candidate`` on ``case`` (computed once)."""
    key = f"{getattr(candidate, '__qualname__', candidate)}|{probe}|{dumps(case)}"
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
        with state_kept():
            seed_all(SEED)
            record = guarded(lambda: run_probe(probe, candidate, case), None)
        if not record["ok"]:
            raise RuntimeError(f"the reference failed probe {probe!r}: {record['error']}")
        _CACHE[key] = record["observation"]
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return _CACHE[key]


def fmt(value: Any, precision: int = 4) -> str:
    """A compact rendering of numbers for feedback (at most ~40 elements)."""
    array = np.asarray(value)
    if array.dtype.kind == "f":
        array = np.round(array, precision)
    return np.array2string(
        array, precision=precision, separator=", ", threshold=40, edgeitems=3, max_line_width=200
    ).replace("\n", "")


def is_close(got: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-4) -> bool:
    """Same shape and allclose; NaN anywhere fails."""
    if got is None or expected is None:
        return False
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return False
    return bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def where_wrong(
    got: np.ndarray, expected: np.ndarray, rtol: float = 1e-4, atol: float = 1e-4
) -> str:
    """Which entries of ``got`` are wrong and in which direction, without the expected values."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    places = [tuple(int(i) for i in index) for index in np.argwhere(wrong)]
    if not places:
        return "no entry is wrong"
    high = int(np.sum(wrong & (got > expected)))
    low = int(np.sum(wrong & (got < expected)))
    shown = ", ".join(str(p[0]) if len(p) == 1 else str(p) for p in places[:8])
    more = f" and {len(places) - 8} more" if len(places) > 8 else ""
    return (
        f"{len(places)} of {got.size} entries are wrong (at {shown}{more}): {high} too large, "
        f"{low} too small"
    )
