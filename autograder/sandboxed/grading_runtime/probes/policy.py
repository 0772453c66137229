"""Probes of the ``policy`` part: ``Policy(model).act(observations)``, on fixture networks."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from course_lib.checks.properties import capture

from .. import fixtures
from ..record import Observation

__all__ = ["policy_act", "policy_samples"]


def policy_act(Policy: type, case: dict[str, Any]) -> Observation:
    """``Policy(model).act(obs)`` on a fixture network; what came back, key by key."""
    model = fixtures.make_fixture_model(case["model"], case["n_actions"], case["init_seed"])
    observations = fixtures.random_frames(case["n"], case["obs_seed"])
    out = Policy(model).act(observations)
    observed: Observation = {"returned": capture(out, data=False), "keys": {}}
    if isinstance(out, dict):
        for key in ("actions", "logits", "log_probs", "values"):
            if key in out:
                observed["keys"][key] = capture(out[key])
        parameters = list(model.parameters())
        for key in ("logits", "log_probs", "values"):
            observed[f"{key}_reach_model"] = _reaches(out.get(key), parameters)
    return observed


def _reaches(output: Any, parameters: list[torch.Tensor]) -> bool:
    """Does a gradient of ``output`` reach one of ``parameters`` (the graph is kept)?"""
    if not isinstance(output, torch.Tensor) or not output.requires_grad:
        return False
    grads = torch.autograd.grad(
        output.float().sum(), parameters, retain_graph=True, allow_unused=True
    )
    return any(grad is not None and bool(grad.abs().sum() > 0) for grad in grads)


def _action_indices(actions: Any, n: int, n_actions: int) -> np.ndarray | None:
    if isinstance(actions, torch.Tensor):
        actions = actions.detach().cpu().numpy()
    if not isinstance(actions, np.ndarray) or actions.dtype.kind not in "iu":
        return None
    if actions.shape != (n,) or actions.min() < 0 or actions.max() >= n_actions:
        return None
    return actions.astype(np.int64)


def policy_samples(Policy: type, case: dict[str, Any]) -> Observation:
    """Action counts per profile over ``calls`` calls of ``act`` on profile-coded frames."""
    logits = np.asarray(case["logits"], dtype=np.float64)  # (2, A)
    rows = np.asarray(case["rows"], dtype=np.int64)  # (n,), profile of each env
    model = fixtures.ProfileModel(logits, values=np.array([0.5, -0.5]))
    observations = fixtures.frames(np.where(rows == 1, 255, 0))
    counts = np.zeros(logits.shape, dtype=np.int64)
    policy = Policy(model)
    for _ in range(int(case["calls"])):
        actions = policy.act(observations)
        actions = actions.get("actions") if isinstance(actions, dict) else actions
        indices = _action_indices(actions, len(rows), logits.shape[1])
        if indices is None:
            return {"counts": None, "bad_actions": capture(actions)}
        np.add.at(counts, (rows, indices), 1)
    return {"counts": counts}
