"""Visible check of the time-batch merge: :func:`check_merge_time_batch`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._common import OBS_SHAPE, _call, _fail, _obs, _ok
from .properties import batch_problem, capture, has_graph


def _merge_trajectory(targets_as_tensor: bool) -> dict[str, Any]:
    """Every entry of step t, env i encodes 10 t + i, so the merged order is visible."""
    weight = torch.ones((), requires_grad=True)
    codes = [np.array([10 * t, 10 * t + 1]) for t in range(3)]
    targets = [torch.tensor(c, dtype=torch.float32) for c in codes]
    return {
        "actions": [c.astype(np.int64) for c in codes],
        "observations": [_obs(c.tolist()) for c in codes],
        "rewards": [c.astype(np.float32) for c in codes],
        "resets": [c % 2 == 1 for c in codes],
        "logits": [
            weight * torch.tensor(c, dtype=torch.float32)[:, None].repeat(1, 3) for c in codes
        ],
        "log_probs": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "values": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "value_targets": torch.stack(targets) if targets_as_tensor else targets,
        "state": {"latest_observation": _obs([30, 31]), "env_steps": 3},
    }


def _describe_state(state: Any) -> str:
    if not isinstance(state, dict):
        return type(state).__name__
    latest = state.get("latest_observation")
    return f"keys {sorted(state)}, latest_observation {getattr(latest, 'shape', type(latest).__name__)}"


def check_merge_time_batch(MergeTimeBatch: type) -> None:
    """``MergeTimeBatch()(trajectory)``: lists of T ``(N, ...)`` become ``(T*N, ...)``, time-major."""
    part = "MergeTimeBatch"
    order = np.array([0, 1, 10, 11, 20, 21])  # row t*N + i holds step t, env i
    for targets_as_tensor in (False, True):
        trajectory = _merge_trajectory(targets_as_tensor)
        state = trajectory["state"]
        _call(part, _call(part, MergeTimeBatch), trajectory)
        new_state = trajectory.get("state")
        latest = new_state.get("latest_observation") if isinstance(new_state, dict) else None
        if new_state is not state or getattr(latest, "shape", None) != (2, *OBS_SHAPE):
            _fail(
                part,
                "trajectory['state'] must be left untouched (it is not a per-step list).",
                "the same dict, latest_observation (2, 4, 84, 84)",
                _describe_state(new_state),
                "skip the key 'state'.",
            )
        shapes = {"observations": (6, *OBS_SHAPE), "logits": (6, 3)}
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
            problem = batch_problem(capture(x, data=False), key, kind, shapes.get(key, (6,)))
            if problem:
                _fail(
                    part, problem, hint="one row per (step, env) pair: (T*N, ...), not (T, N, ...)."
                )
            first = x.reshape(6, -1)[:, 0]
            got = np.asarray(first.detach().numpy() if isinstance(x, torch.Tensor) else first)
            want = order % 2 == 1 if key == "resets" else order
            if not np.array_equal(got.astype(want.dtype), want):
                hint = "this is env-major order; rows must be time-major: all envs of step 0 first."
                _fail(
                    part,
                    f"`{key}` rows are in the wrong order (entries encode 10*t + i).",
                    want,
                    got,
                    hint,
                )
        graph = {k: has_graph(trajectory[k]) for k in ("values", "log_probs", "logits")}
        if not all(graph.values()):
            _fail(
                part,
                "merged tensors lost their autograd graph (A2C backpropagates through them).",
                {key: True for key in graph},
                graph,
                "stay in torch for tensors: no numpy round trip, no .detach().",
            )
    _ok(
        "MergeTimeBatch: every key (6, ...) in time-major order [t0e0, t0e1, t1e0, ...], "
        "types kept, graph kept, state untouched (targets as a list or a (T, N) tensor)"
    )
