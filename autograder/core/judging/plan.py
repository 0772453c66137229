"""Each grading's probe steps, drawn from a secret seed, and the reference's side of them.

The checks of a part (:mod:`.parts`) say which *probes* (:mod:`autograder.sandboxed.grading_runtime`)
run the student's code on which cases. For a grading, the grader draws a seed with
:mod:`secrets` (:func:`new_seed`) and :func:`make_plan` turns it into every part's probe steps:
plain data for the sandboxed process that runs the notebook, which sees the cases, never the
seed, and only once it runs. :func:`prepare_references` computes the reference's observations
of a plan while the sandbox runs.

Every probe step is reseeded and time-limited (10 s of CPU time per step by default, 20 s for
the model's, times ``A2C_GRADER_TIME_SCALE``: :func:`time_scale`); after two steps of a part
ran out of time, the part's other steps are not run, so an endless loop costs about 20 s per
part.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from autograder.core.judging.parts import PART_KEYS, part_module, subchecks
from autograder.core.judging.parts.subcheck import reference_observation
from solutions import reference

__all__ = ["REFERENCE_PROBES", "make_plan", "new_seed", "part_steps", "prepare_references", "time_scale"]


def time_scale() -> float:
    """The factor ``A2C_GRADER_TIME_SCALE`` (default 1) applied to every time limit."""
    text = os.environ.get("A2C_GRADER_TIME_SCALE", "").strip()
    try:
        scale = float(text) if text else 1.0
    except ValueError:
        scale = 1.0
    return scale if scale > 0 else 1.0


def new_seed() -> int:
    """A secret seed for one grading."""
    return secrets.randbits(63)


def part_steps(part_key: str, seed: int, index: int = 0) -> list[dict[str, Any]]:
    """The probe steps of one part on the cases drawn from ``seed`` (plain data, in order)."""
    rng = np.random.default_rng([int(seed) % 2**63, index])
    drawn = part_module(part_key).draw_cases(rng)
    steps: dict[str, dict[str, Any]] = {}
    for check in subchecks(part_key):
        for key, case in check.selection(drawn):
            step = steps.setdefault(
                key, {"key": key, "probe": check.probe, "case": case, "seconds": check.seconds}
            )
            step["seconds"] = max(step["seconds"], check.seconds)
    return list(steps.values())


def make_plan(seed: int, scale: float | None = None) -> dict[str, Any]:
    """Every part's probe steps on the cases drawn from ``seed``, as plain data.

    ``{"parts": {part_key: [{"key", "probe", "case", "seconds"}, ...]}, "time_scale": float}``;
    the seed itself is not in the plan.
    """
    parts = {key: part_steps(key, seed, index) for index, key in enumerate(PART_KEYS)}
    return {"parts": parts, "time_scale": time_scale() if scale is None else float(scale)}


#: The parts whose judges compare with the reference run through the same probe.
REFERENCE_PROBES = {
    "compute_value_targets": reference.ComputeValueTargets,
    "merge_time_batch": reference.MergeTimeBatch,
    "a2c": reference.A2C,
    "gae": reference.ComputeGAE,
}


def prepare_references(plan: Mapping[str, Any]) -> float:
    """Compute (and cache) the reference's observations of a plan; returns the seconds taken.

    Optional: the judges compute what they miss. Call it while the sandbox runs.
    """
    start = time.perf_counter()
    for part_key, candidate in REFERENCE_PROBES.items():
        for step in plan["parts"].get(part_key, []):
            reference_observation(candidate, step["probe"], step["case"])
    return time.perf_counter() - start
