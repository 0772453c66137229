"""Visible check of the policy: :func:`check_policy` (sampling, outputs, graph, N = 1)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ._common import call_student, coded_obs, fail, report_ok
from .fixtures import TableModel
from .properties import actions_problem, capture, chi_square_p_value, log_probs_problem


def _keys_of(out: Any) -> Any:
    return sorted(out) if isinstance(out, dict) else type(out).__name__


def _action_array(actions: Any) -> np.ndarray:
    if isinstance(actions, torch.Tensor):
        return actions.detach().cpu().numpy()
    return np.asarray(actions)


#: The outputs check's table: three observations (codes 0, 1, 2) with their logits and values.
_TABLE_LOGITS = [[0.0, 1.0, 2.0], [2.0, 0.0, 1.0], [1.0, 2.0, -1.0]]
_TABLE_VALUES = [0.5, -1.0, 2.0]


def _act(part: str, policy: Any, obs: np.ndarray, model: nn.Module, A: int) -> dict[str, Any]:
    """``policy.act(obs)``, failing unless it returns the four keys with their types and
    shapes, log-probabilities of its own actions, and a graph from logits, log_probs and values
    back to ``model``'s parameters."""
    n = len(obs)
    out = call_student(part, policy.act, obs)
    keys = ["actions", "logits", "log_probs", "values"]
    missing = set(keys) - set(out) if isinstance(out, dict) else set(keys)
    if missing:
        fail(
            part,
            f"act() misses the keys {sorted(missing)}.",
            keys,
            _keys_of(out),
            "return a dict with these four keys.",
        )
    actions, logits, log_probs, values = (out[k] for k in keys)
    problem = actions_problem(capture(actions), n, A)  # an integer tensor is accepted too
    if problem:
        fail(part, problem, actual=actions, hint="one sampled action index per env.")
    for name, x, shape in (
        ("logits", logits, (n, A)),
        ("log_probs", log_probs, (n,)),
        ("values", values, (n,)),
    ):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            fail(
                part,
                f"with N={n} observations, `{name}` must be a torch tensor of shape {shape}.",
                shape,
                x,
                "one entry per observation, also when N = 1.",
            )
    problem = log_probs_problem(
        log_probs.detach().cpu().numpy(), logits.detach().cpu().numpy(), _action_array(actions)
    )
    if problem:
        fail(
            part,
            problem,
            actual=log_probs,
            hint="each entry is the log-probability of the action you returned for that env, "
            "under the same softmax(logits) it was drawn from (not of a second draw).",
        )
    for name, x in (("logits", logits), ("log_probs", log_probs), ("values", values)):
        reached = x.requires_grad and any(
            g is not None and bool(g.any())
            for g in torch.autograd.grad(
                x.sum(), list(model.parameters()), allow_unused=True, retain_graph=True
            )
        )
        if not reached:
            fail(
                part,
                f"`{name}` must keep its autograd graph back to the model's parameters (A2C "
                "backpropagates through logits, log_probs and values).",
                hint="act() must record the graph (gradients switched on) and return the tensors "
                "as the model made them, not detached copies.",
            )
    return out


def check_policy(Policy: type, make_model: Callable[[int], nn.Module] | None = None) -> None:
    """``Policy(model).act(obs)`` returns actions, logits, log_probs, values: the model's
    outputs on the observations as given, with their graph, for N envs and for one; actions
    sampled from softmax(logits), one independent draw per env."""
    part = "Policy"
    probs = [0.7, 0.2, 0.1]
    model = TableModel([[math.log(p) for p in probs]], [0.5])
    policy = call_student(part, Policy, model)
    torch.manual_seed(0)
    n = 64
    counts = np.zeros(3)
    for _ in range(25):
        out = call_student(part, policy.act, coded_obs([0] * n))
        if not isinstance(out, dict) or "actions" not in out:
            fail(part, "act() must return a dict with the key 'actions'.", "dict", _keys_of(out))
        counts += np.bincount(_action_array(out["actions"]).reshape(-1), minlength=3)[:3]
    freq = counts / counts.sum()
    if chi_square_p_value(counts, np.array(probs)) < 1e-6:
        greedy = freq[0] > 0.97
        fail(
            part,
            "actions are (almost) always the most likely one."
            if greedy
            else "action frequencies do not follow softmax(logits).",
            probs,
            freq.round(3),
            "the agent must explore: draw each action at random with the probabilities "
            "softmax(logits), instead of taking the most likely one (the argmax)."
            if greedy
            else "each env draws its own action from the softmax of its own row of logits, "
            "taken over the actions (the last axis); a softmax over the batch axis, or "
            "probabilities given where logits are expected, draws with other frequencies.",
        )
    report_ok(f"Policy samples softmax(logits): frequencies {freq.round(2).tolist()} for {probs}")
    table = TableModel(_TABLE_LOGITS, _TABLE_VALUES)
    policy = call_student(part, Policy, table)
    out = _act(part, policy, coded_obs([0, 1, 2]), table, 3)
    got_values = out["values"].detach().cpu().double()
    got_logits = torch.log_softmax(out["logits"].detach().cpu().double(), dim=-1)
    want_logits = torch.log_softmax(torch.tensor(_TABLE_LOGITS, dtype=torch.float64), dim=-1)
    if not (
        torch.allclose(got_values, torch.tensor(_TABLE_VALUES, dtype=torch.float64), atol=1e-5)
        and torch.allclose(got_logits, want_logits, atol=1e-5)
    ):
        fail(
            part,
            "logits and values are not the model's outputs on the observations (a lookup "
            "model whose values for these three observations are [0.5, -1.0, 2.0]).",
            _TABLE_VALUES,
            out["values"],
            "give the model the observations as they come (uint8 in [0, 255]): scaling them is "
            "the model's job (Part 1), and scaling twice changes what it sees.",
        )
    _act(part, policy, coded_obs([2]), table, 3)
    report_ok(
        "Policy.act: the model's logits and values with their graph, log_probs of the sampled "
        "actions, for N = 3 and N = 1"
    )
    if make_model is None:
        return
    torch.manual_seed(0)
    model = call_student(part, make_model, 6)
    _act(part, call_student(part, Policy, model), coded_obs([0, 128, 255]), model, 6)
    report_ok(
        "Policy.act with your model: actions (3,) integers, logits (3, 6), log_probs (3,), values (3,) with graph"
    )
