"""Checks of the ``model`` part: ``make_model(n_actions)`` -> ``nn.Module``.

Contract (design.md section 5): ``module(obs)`` with ``obs`` a uint8 or float tensor
``(N, 4, 84, 84)`` in [0, 255] returns ``(logits (N, A), values (N,))``.

The architecture is the student's choice: these checks look at behaviour only (shapes, dtypes,
both input types, a batch of one, several action counts, a sane size, gradients into both
outputs, and a first policy that is not already saturated, which is what happens when the
input is not scaled to [0, 1]).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import CheckFailed, SubCheck, describe, fmt, is_close

__all__ = ["SUBCHECKS"]

MIN_PARAMETERS = 10_000
MAX_PARAMETERS = 20_000_000


def _observations(N: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (N, 4, 84, 84), dtype=torch.uint8, generator=generator)


_BUILT: dict[tuple[Any, int], nn.Module] = {}


def _build(make_model: Any, n_actions: int) -> nn.Module:
    """A fresh copy of ``make_model(n_actions)``; built once per function and action count.

    Building the Nature-DQN network takes a noticeable fraction of a second (orthogonal init),
    so sub-checks share one build and each works on its own deep copy.
    """
    key = (make_model, n_actions)
    if key not in _BUILT:
        model = make_model(n_actions)
        if not isinstance(model, nn.Module):
            raise CheckFailed(
                f"make_model({n_actions}) should return a torch.nn.Module, got {describe(model)}"
            )
        if len(_BUILT) >= 8:
            _BUILT.clear()
        _BUILT[key] = model
    try:
        return copy.deepcopy(_BUILT[key])
    except Exception:  # noqa: BLE001 - a module that cannot be copied is used as it is
        return _BUILT[key]


def _forward(model: nn.Module, obs: torch.Tensor, n_actions: int) -> tuple[Any, Any]:
    output = model(obs)
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise CheckFailed(
            f"model(obs) should return a pair (logits, values), got {describe(output)}"
        )
    logits, values = output
    N = obs.shape[0]
    for name, value, shape in (("logits", logits, (N, n_actions)), ("values", values, (N,))):
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            hint = ""
            if name == "values" and isinstance(value, torch.Tensor):
                if tuple(value.shape) == (N, 1):
                    hint = ": squeeze the last axis (.squeeze(-1)), else targets - values "
                    hint += "broadcasts to (N, N)"
                elif tuple(value.shape) == ():
                    hint = ": .squeeze() also removed the batch axis of size 1; use .squeeze(-1)"
            raise CheckFailed(
                f"on obs {describe(obs)} with n_actions={n_actions}, {name} should have "
                f"shape {shape}, got {describe(value)}{hint}"
            )
        if not value.is_floating_point():
            raise CheckFailed(f"{name} should be a float tensor, got {describe(value)}")
    return logits, values


def _check_module(make_model: Any) -> None:
    _build(make_model, 6)


def _check_uint8(make_model: Any) -> None:
    model = _build(make_model, 6)
    _forward(model, _observations(3), 6)


def _check_float(make_model: Any) -> None:
    model = _build(make_model, 6)
    obs = _observations(3, seed=1)
    as_float = obs.float()
    kept = as_float.clone()
    with torch.no_grad():
        logits_u8, values_u8 = _forward(model, obs, 6)
        logits_f, values_f = _forward(model, as_float, 6)
    if not torch.equal(as_float, kept):
        raise CheckFailed(
            "model(obs) changed its float input in place (e.g. `x = obs.float(); x /= 255`: "
            ".float() returns the same tensor when obs is already float): use `x = obs.float() / 255`"
        )
    for name, a, b in (("logits", logits_u8, logits_f), ("values", values_u8, values_f)):
        if not is_close(a.double().numpy(), b.double().numpy(), rtol=1e-4, atol=1e-5):
            raise CheckFailed(
                f"the same observations as uint8 and as float in [0, 255] give different {name}: "
                f"{fmt(a)} vs {fmt(b)}. Convert inside forward with obs.float() / 255 for both"
            )


def _check_batch_of_one(make_model: Any) -> None:
    model = _build(make_model, 6)
    _forward(model, _observations(1, seed=2), 6)


def _check_action_counts(make_model: Any) -> None:
    for n_actions in (2, 4, 18):
        model = _build(make_model, n_actions)
        _forward(model, _observations(2, seed=3), n_actions)


def _check_size(make_model: Any) -> None:
    model = _build(make_model, 6)
    count = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if not MIN_PARAMETERS <= count <= MAX_PARAMETERS:
        raise CheckFailed(
            f"the model has {count:,} trainable parameters; expected between {MIN_PARAMETERS:,} "
            f"and {MAX_PARAMETERS:,} (the Nature-DQN network of the course has about 1.7 million). "
            "Are the layers created in __init__ and stored as attributes (or in nn.Sequential)?"
        )


def _check_gradients(make_model: Any) -> None:
    model = _build(make_model, 6)
    obs = _observations(4, seed=4)
    for index, name in enumerate(("logits", "values")):
        model.zero_grad()
        outputs = _forward(model, obs, 6)
        output = outputs[index]
        if not output.requires_grad:
            raise CheckFailed(f"{name} carry no autograd graph (computed under torch.no_grad()?)")
        (output**2).sum().backward()
        reached = [n for n, p in model.named_parameters() if p.grad is not None and p.grad.any()]
        if not reached:
            raise CheckFailed(f"the gradient of {name} reaches no parameter of the model")
    with torch.no_grad():
        logits, values = _forward(model, obs, 6)
    if torch.allclose(logits, logits[:1].expand_as(logits)) and torch.allclose(
        values, values[:1].expand_as(values)
    ):
        raise CheckFailed("logits and values are the same for every observation: use the input")


def _check_not_saturated(make_model: Any) -> None:
    model = _build(make_model, 6)
    with torch.no_grad():
        logits, values = _forward(model, _observations(16, seed=5), 6)
    if not (torch.isfinite(logits).all() and torch.isfinite(values).all()):
        raise CheckFailed("the model outputs inf or nan on random frames")
    top = F.softmax(logits.double(), dim=-1).max(dim=-1).values.mean().item()
    if top > 0.99:
        raise CheckFailed(
            f"on random frames the untrained policy is already almost deterministic (mean largest "
            f"action probability {top:.3f}); scale the input by 1/255 and keep the initial "
            "logits small, or the agent cannot explore"
        )


SUBCHECKS = (
    SubCheck("module", "make_model(n_actions) returns an nn.Module", 1, _check_module),
    SubCheck("uint8", "uint8 input (N, 4, 84, 84) -> logits (N, A), values (N,)", 2, _check_uint8),
    SubCheck(
        "float", "float input in [0, 255] gives the same outputs, input untouched", 1, _check_float
    ),
    SubCheck(
        "batch_of_one",
        "works for a batch of one (values (1,), not a scalar)",
        1,
        _check_batch_of_one,
    ),
    SubCheck("n_actions", "works for n_actions = 2, 4 and 18", 1, _check_action_counts),
    SubCheck("size", "a sane number of trainable parameters", 1, _check_size),
    SubCheck(
        "gradients",
        "gradients flow from logits and from values into the model",
        2,
        _check_gradients,
    ),
    SubCheck(
        "not_saturated",
        "outputs finite, first policy not saturated (input scaled)",
        1,
        _check_not_saturated,
    ),
)
