"""Visible checks of the network and the policy: :func:`check_model`, :func:`check_policy`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ._common import OBS_SHAPE, _call, _fail, _obs, _ok
from .fixtures import TableModel
from .properties import (
    actions_problem,
    capture,
    chi_square_p_value,
    log_probs_problem,
    output_pair_problem,
)


def _keys_of(out: Any) -> Any:
    return sorted(out) if isinstance(out, dict) else type(out).__name__


def _action_array(actions: Any) -> np.ndarray:
    if isinstance(actions, torch.Tensor):
        return actions.detach().cpu().numpy()
    return np.asarray(actions)


def check_model(make_model: Callable[[int], nn.Module]) -> None:
    """``make_model(n_actions)(obs) -> (logits (N, A), values (N,))`` for uint8 or float obs."""
    part = "make_model"
    torch.manual_seed(0)
    model = _call(part, make_model, 6)
    if not isinstance(model, nn.Module):
        _fail(part, "make_model must return an nn.Module.", "nn.Module", type(model))
    obs = torch.as_tensor(np.random.default_rng(0).integers(0, 256, (2, *OBS_SHAPE), np.uint8))
    try:
        out = model(obs)
    except RuntimeError as err:
        _fail(
            part,
            f"the model fails on uint8 input (N, 4, 84, 84): {err}",
            hint="Conv2d refuses uint8 tensors: convert to float (and scale to [0, 1]) in forward.",
        )
    problem = output_pair_problem(capture(out), 2, 6)
    if problem:
        _fail(
            part,
            problem,
            hint="forward returns two things per observation: one logit per action, and one "
            "value, a number without an axis of its own; check each head's output size and the "
            "shapes forward returns.",
        )
    logits, values = out
    float_logits, float_values = _call(part, model, obs.float())
    if not (
        torch.allclose(logits, float_logits, atol=1e-5)
        and torch.allclose(values, float_values, atol=1e-5)
    ):
        _fail(
            part,
            "uint8 and float32 copies of the same observations give different outputs "
            "(values: uint8 input first, float input second).",
            values,
            float_values,
            "scale every input dtype the same way, once; do not rescale floats twice.",
        )
    if not (torch.isfinite(logits).all() and torch.isfinite(values).all()):
        _fail(part, "outputs contain NaN or inf.", actual=logits)
    (logits.sum() + values.sum()).backward()
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    dead = [n for n, p in params if p.grad is None]
    if dead:
        _fail(
            part,
            f"these parameters get no gradient: {dead}",
            hint="are they used in forward? (no .detach(), no numpy inside the model)",
        )
    four = _call(part, _call(part, make_model, 4), obs)[0]
    if tuple(four.shape) != (2, 4):
        _fail(
            part,
            "make_model(4) does not give 4 logits per observation.",
            (2, 4),
            tuple(four.shape),
            "use n_actions, not a constant.",
        )
    n_params = sum(p.numel() for _, p in params)
    _ok(
        f"make_model: logits (2, 6), values (2,), uint8 and float inputs agree, "
        f"gradients reach all {len(params)} tensors ({n_params:,} parameters)"
    )


def check_policy(Policy: type, make_model: Callable[[int], nn.Module] | None = None) -> None:
    """``Policy(model).act(obs)`` returns actions, logits, log_probs, values; samples softmax(logits)."""
    part = "Policy"
    probs = [0.7, 0.2, 0.1]
    model = TableModel([[math.log(p) for p in probs]], [0.5])
    policy = _call(part, Policy, model)
    torch.manual_seed(0)
    n = 64
    counts = np.zeros(3)
    for _ in range(25):
        out = _call(part, policy.act, _obs([0] * n))
        if not isinstance(out, dict) or "actions" not in out:
            _fail(part, "act() must return a dict with the key 'actions'.", "dict", _keys_of(out))
        counts += np.bincount(_action_array(out["actions"]).reshape(-1), minlength=3)[:3]
    freq = counts / counts.sum()
    if chi_square_p_value(counts, np.array(probs)) < 1e-6:
        greedy = freq[0] > 0.97
        _fail(
            part,
            "actions are (almost) always the most likely one."
            if greedy
            else "action frequencies do not follow softmax(logits).",
            probs,
            freq.round(3),
            "the agent must explore: draw each action at random with the probabilities "
            "softmax(logits), instead of taking the most likely one (the argmax)."
            if greedy
            else "Categorical(logits=logits) takes raw logits; Categorical(probs=...) needs a softmax.",
        )
    _ok(f"Policy samples softmax(logits): frequencies {freq.round(2).tolist()} for {probs}")
    if make_model is None:
        return
    torch.manual_seed(0)
    policy = _call(part, Policy, _call(part, make_model, 6))
    out = _call(part, policy.act, _obs([0, 128, 255]))
    missing = {"actions", "logits", "log_probs", "values"} - set(out)
    if missing:
        _fail(
            part,
            f"act() misses the keys {sorted(missing)}.",
            ["actions", "logits", "log_probs", "values"],
            sorted(out),
            "return a dict with these four keys.",
        )
    actions, logits, log_probs, values = (
        out[k] for k in ("actions", "logits", "log_probs", "values")
    )
    problem = actions_problem(capture(actions), 3, 6)  # an integer tensor is accepted too
    if problem:
        _fail(part, problem, actual=actions, hint="one sampled action index per env.")
    for name, x, shape in (
        ("logits", logits, (3, 6)),
        ("log_probs", log_probs, (3,)),
        ("values", values, (3,)),
    ):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            _fail(part, f"`{name}` must be a torch tensor of shape {shape}.", shape, x)
    actions = _action_array(actions)
    problem = log_probs_problem(
        log_probs.detach().cpu().numpy(), logits.detach().cpu().numpy(), actions
    )
    if problem:
        _fail(
            part,
            problem,
            actual=log_probs,
            hint="each entry is the log-probability of the action you returned for that env, "
            "under the same softmax(logits) it was drawn from (not of a second draw).",
        )
    if not (values.requires_grad and log_probs.requires_grad):
        _fail(
            part,
            "values and log_probs must keep their autograd graph (A2C backpropagates through them).",
            hint="do not wrap act() in torch.no_grad() and do not .detach() its outputs.",
        )
    _ok(
        "Policy.act with your model: actions (3,) integers, logits (3, 6), log_probs (3,), values (3,) with graph"
    )
