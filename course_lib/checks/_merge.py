"""Visible check of the time-batch merge: :func:`check_merge_time_batch`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ._common import OBS_SHAPE, call_student, coded_obs, fail, report_ok
from .properties import batch_problem, capture, has_graph

#: The dtype each numpy key keeps (the runner's).
_DTYPES = {"actions": "int64", "observations": "uint8", "rewards": "float32", "resets": "bool"}
#: The sizes checked: T steps, N envs, value_targets as one (T, N) tensor or a list.
_CASES = ((3, 2, False), (3, 2, True), (1, 2, False), (3, 1, True))


def _merge_trajectory(T: int, N: int, targets_as_tensor: bool) -> tuple[dict[str, Any], Any]:
    """Every entry of step t, env i encodes 10 t + i, so the merged order is visible; the
    tensors hang on one trainable scalar (returned too), so their graph can be followed."""
    weight = torch.ones((), requires_grad=True)
    codes = [np.array([10 * t + i for i in range(N)]) for t in range(T)]
    targets = [torch.tensor(c, dtype=torch.float32) for c in codes]
    trajectory = {
        "actions": [c.astype(np.int64) for c in codes],
        "observations": [coded_obs(c.tolist()) for c in codes],
        "rewards": [c.astype(np.float32) for c in codes],
        "resets": [c % 2 == 1 for c in codes],
        "logits": [
            weight * torch.tensor(c, dtype=torch.float32)[:, None].repeat(1, 3) for c in codes
        ],
        "log_probs": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "values": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "value_targets": torch.stack(targets) if targets_as_tensor else targets,
        "state": {"latest_observation": coded_obs([30 + i for i in range(N)]), "env_steps": T},
    }
    return trajectory, weight


def _describe_state(state: Any) -> str:
    if not isinstance(state, dict):
        return type(state).__name__
    latest = state.get("latest_observation")
    return f"keys {sorted(state)}, latest_observation {getattr(latest, 'shape', type(latest).__name__)}"


def _check_merged(part: str, trajectory: dict[str, Any], T: int, N: int) -> None:
    """Fail unless every key is one (T*N, ...) batch of its kind and dtype, time-major."""
    B = T * N
    order = np.array([10 * t + i for t in range(T) for i in range(N)])  # row t*N + i
    shapes = {"observations": (B, *OBS_SHAPE), "logits": (B, 3)}
    for key, kind in (
        ("actions", "ndarray"),
        ("observations", "ndarray"),
        ("rewards", "ndarray"),
        ("resets", "ndarray"),
        ("logits", "tensor"),
        ("log_probs", "tensor"),
        ("values", "tensor"),
        ("value_targets", "tensor"),
    ):
        x = trajectory[key]
        problem = batch_problem(capture(x, data=False), key, kind, shapes.get(key, (B,)))
        if problem:
            fail(
                part,
                f"with T={T}, N={N}: {problem}",
                hint="one row per (step, env) pair: (T*N, ...), not (T, N, ...).",
            )
        if key in _DTYPES and str(x.dtype) != _DTYPES[key]:
            fail(
                part,
                f"trajectory[{key!r}] should keep its dtype.",
                _DTYPES[key],
                str(x.dtype),
                "merging only changes the shape: the values, and their dtype, stay as they were.",
            )
        first = x.reshape(B, -1)[:, 0]
        got = np.asarray(first.detach().numpy() if isinstance(x, torch.Tensor) else first)
        want = order % 2 == 1 if key == "resets" else order
        if not np.array_equal(got.astype(want.dtype), want):
            hint = "rows must be time-major: all envs of step 0 first, then step 1..."
            env_major = np.array([10 * t + i for i in range(N) for t in range(T)])
            if np.array_equal(
                got.astype(want.dtype), env_major % 2 == 1 if key == "resets" else env_major
            ):
                hint = "this is env-major order; " + hint
            fail(
                part,
                f"with T={T}, N={N}: `{key}` rows are in the wrong order (entries encode 10*t + i).",
                want,
                got,
                hint,
            )


def check_merge_time_batch(MergeTimeBatch: type) -> None:
    """``MergeTimeBatch()(trajectory)``: lists of T ``(N, ...)`` become ``(T*N, ...)``, time-major,
    dtypes and graph kept, for T = 1 and N = 1 too."""
    part = "MergeTimeBatch"
    for T, N, targets_as_tensor in _CASES:
        trajectory, weight = _merge_trajectory(T, N, targets_as_tensor)
        state = trajectory["state"]
        call_student(part, call_student(part, MergeTimeBatch), trajectory)
        new_state = trajectory.get("state")
        latest = new_state.get("latest_observation") if isinstance(new_state, dict) else None
        if new_state is not state or getattr(latest, "shape", None) != (N, *OBS_SHAPE):
            fail(
                part,
                "trajectory['state'] must be left untouched (it is not a per-step list).",
                f"the same dict, latest_observation ({N}, 4, 84, 84)",
                _describe_state(new_state),
                "the transform merges the per-step lists only.",
            )
        _check_merged(part, trajectory, T, N)
        graph = {k: has_graph(trajectory[k]) for k in ("values", "log_probs", "logits")}
        if all(graph.values()):
            sum(trajectory[k].sum() for k in graph).backward()
            codes = sum(10 * t + i for t in range(T) for i in range(N))
            # d/dweight of sum(logits) + sum(log_probs) + sum(values) = (3 + 1 + 1) * codes
            reached = weight.grad is not None and math.isclose(float(weight.grad), 5 * codes)
            graph = {key: reached for key in graph}
        if not all(graph.values()):
            fail(
                part,
                "merged tensors lost their autograd graph (A2C backpropagates through them).",
                {key: True for key in graph},
                graph,
                "stay in torch for tensors: a detour through numpy, or a detached copy, cuts "
                "the graph.",
            )
    report_ok(
        "MergeTimeBatch: every key (T*N, ...) in time-major order [t0e0, t0e1, t1e0, ...], "
        "types and dtypes kept, graph kept, state untouched (targets as a list or a (T, N) "
        "tensor; T = 1 and N = 1 too)"
    )
