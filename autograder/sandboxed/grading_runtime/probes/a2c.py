"""Probe of the ``a2c`` part: ``A2C(policy, optimizer, **coefs).step(batch)`` on fixture networks."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from course_lib.checks.properties import capture

from .. import fixtures
from ..record import Observation

__all__ = ["a2c_run"]


def _flat_parameters(model: nn.Module) -> np.ndarray:
    return torch.cat([p.detach().double().flatten() for p in model.parameters()]).numpy()


def _optimizer(kind: str, model: nn.Module) -> torch.optim.Optimizer:
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.1)
    return torch.optim.RMSprop(model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)


def a2c_run(A2C: type, case: dict[str, Any]) -> Observation:
    """Build ``A2C(policy, optimizer, **coefs)`` on a fixture network and ``step`` it.

    ``steps`` lists the seeds of the merged batches, one step each; with ``fresh_second``, a
    new A2C on a copy of the network after the first step also makes the second step.
    """
    if "runs" in case:  # several runs compared with each other by one check
        return {"runs": [a2c_run(A2C, run) for run in case["runs"]]}
    n_actions, rows = int(case["n_actions"]), int(case["rows"])
    model = fixtures.make_fixture_model(case["model"], n_actions, int(case["init_seed"]))
    agent = A2C(fixtures.ValuePolicy(model), _optimizer(case["optimizer"], model), **case["coefs"])
    observed: Observation = {"stats": [], "params": []}
    for index, seed in enumerate(case["steps"]):
        if index == 1 and case.get("fresh_second"):
            fresh = copy.deepcopy(model)
            for param in fresh.parameters():
                param.grad = None
            twin = A2C(
                fixtures.ValuePolicy(fresh), _optimizer(case["optimizer"], fresh), **case["coefs"]
            )
            twin.step(fixtures.merged_batch(fresh, seed, rows, n_actions))
            observed["fresh_params"] = _flat_parameters(fresh)
        stats = agent.step(fixtures.merged_batch(model, seed, rows, n_actions))
        entry = {"returned": capture(stats, data=False), "values": {}}
        if isinstance(stats, dict):
            entry["values"] = {str(key): capture(value) for key, value in stats.items()}
        observed["stats"].append(entry)
        observed["params"].append(_flat_parameters(model))
    return observed
