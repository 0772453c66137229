"""Visible check of the time-batch merge: :func:`check_merge_time_batch`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._common import OBS_SHAPE, _fail, _obs, _ok


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


def check_merge_time_batch(MergeTimeBatch: type) -> None:
    """``MergeTimeBatch()(trajectory)``: lists of T ``(N, ...)`` become ``(T*N, ...)``, time-major."""
    part = "MergeTimeBatch"
    order = np.array([0, 1, 10, 11, 20, 21])  # row t*N + i holds step t, env i
    for targets_as_tensor in (False, True):
        trajectory = _merge_trajectory(targets_as_tensor)
        state = trajectory["state"]
        MergeTimeBatch()(trajectory)
        if trajectory.get("state") is not state or trajectory["state"][
            "latest_observation"
        ].shape != (2, *OBS_SHAPE):
            _fail(part, "trajectory['state'] must be left untouched.")
        shapes = {"observations": (6, *OBS_SHAPE), "logits": (6, 3)}
        for key, kind in (
            ("actions", np.ndarray),
            ("observations", np.ndarray),
            ("rewards", np.ndarray),
            ("resets", np.ndarray),
            ("logits", torch.Tensor),
            ("log_probs", torch.Tensor),
            ("values", torch.Tensor),
            ("value_targets", torch.Tensor),
        ):
            x = trajectory[key]
            if not isinstance(x, kind):
                _fail(
                    part,
                    f"`{key}` changed type.",
                    kind.__name__,
                    type(x).__name__,
                    "arrays stay arrays (np.concatenate), tensors stay tensors (torch.cat).",
                )
            if tuple(x.shape) != shapes.get(key, (6,)):
                _fail(
                    part,
                    f"`{key}` has the wrong merged shape (T=3, N=2).",
                    shapes.get(key, (6,)),
                    tuple(x.shape),
                    "concatenate along the first axis: (T*N, ...), not (T, N, ...).",
                )
            first = x.reshape(6, -1)[:, 0]
            got = np.asarray(first.detach().numpy() if isinstance(x, torch.Tensor) else first)
            want = order % 2 == 1 if key == "resets" else order
            if not np.array_equal(got.astype(want.dtype), want):
                hint = "this is env-major order; keep time-major: concatenate the T steps in order."
                _fail(
                    part,
                    f"`{key}` rows are in the wrong order (entries encode 10*t + i).",
                    want,
                    got,
                    hint,
                )
        if trajectory["values"].grad_fn is None or trajectory["log_probs"].grad_fn is None:
            _fail(
                part,
                "merged values/log_probs lost their autograd graph.",
                hint="use torch.cat, not numpy or .detach().",
            )
    _ok(
        "MergeTimeBatch: every key (6, ...) in time-major order [t0e0, t0e1, t1e0, ...], "
        "types kept, graph kept, state untouched (targets as a list or a (T, N) tensor)"
    )
