"""Probe of the ``merge_time_batch`` part: ``MergeTimeBatch()(trajectory)`` on coded entries."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from course_lib.checks.properties import capture

from .. import fixtures
from ..record import Observation

__all__ = ["PER_STEP_KEYS", "merge"]

PER_STEP_KEYS = (
    "actions",
    "logits",
    "log_probs",
    "values",
    "observations",
    "rewards",
    "resets",
    "value_targets",
)


def merge(MergeTimeBatch: type, case: dict[str, Any]) -> Observation:
    """``MergeTimeBatch()(trajectory)`` on a trajectory whose entries encode (t, i)."""
    T, N = int(case["T"]), int(case["N"])
    trajectory, leaf = fixtures.coded_trajectory(
        T, N, bool(case["targets_as_tensor"]), salt=int(case.get("salt", 0))
    )
    state = trajectory["state"]
    returned = MergeTimeBatch()(trajectory)
    observed: Observation = {
        "returned": capture(returned, data=False),
        "unchanged": all(isinstance(trajectory.get(k), list) for k in PER_STEP_KEYS),
        "keys": {},
    }
    for key in PER_STEP_KEYS:
        value = trajectory.get(key)
        if key == "observations" and isinstance(value, (np.ndarray, torch.Tensor)):
            record = capture(value, data=False)
            if value.ndim == 4:  # one code per frame: its first pixel
                record["codes"] = np.asarray(value[:, 0, 0, 0], dtype=np.float64)[: 64 * 64]
            observed["keys"][key] = record
        else:
            observed["keys"][key] = capture(value)
    new_state = trajectory.get("state")
    observed["state_same_object"] = new_state is state
    if isinstance(new_state, dict):
        latest = new_state.get("latest_observation")
        observed["state"] = {
            "keys": sorted(map(str, new_state)),
            "env_steps": new_state.get("env_steps") if "env_steps" in new_state else None,
            "latest": capture(latest, data=False),
            "latest_codes": (
                np.asarray(latest[:, 0, 0, 0], dtype=np.float64)
                if isinstance(latest, np.ndarray) and latest.ndim == 4
                else None
            ),
        }
    tensors = [trajectory.get(k) for k in ("logits", "log_probs", "values")]
    if all(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        sum(t.sum() for t in tensors).backward()
        observed["leaf_grad"] = None if leaf.grad is None else float(leaf.grad)
    return observed
