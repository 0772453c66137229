"""Checks of the ``model`` part: ``make_model(n_actions)`` -> ``nn.Module``.

Contract (docs/design.md, graded parts): ``module(obs)`` with ``obs`` a uint8 or float tensor
``(N, 4, 84, 84)`` in [0, 255] returns ``(logits (N, A), values (N,))``.

The architecture is the student's choice: these checks look at behaviour only (shapes, dtypes,
both input types, a batch of one, several action counts, a sane size, gradients into both
outputs, a first policy that is not saturated, every tensor that shapes the outputs registered
in the module, and a critic that can reach negative values).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import CheckFailed, SubCheck, array_of, describe, fmt, is_close, log_softmax

__all__ = ["SUBCHECKS"]

MIN_PARAMETERS = 10_000
MAX_PARAMETERS = 20_000_000
BASE = {"n_actions": 6, "init_seed": 0}


def _pair(output: dict[str, Any], n: int, n_actions: int) -> tuple[np.ndarray, np.ndarray]:
    """logits (n, A) and values (n,) of a captured ``model(obs)``, or CheckFailed."""
    if output.get("kind") not in ("tuple", "list") or output.get("len") != 2:
        raise CheckFailed(
            f"model(obs) should return a pair (logits, values), got {describe(output)}"
        )
    arrays = []
    for name, item, shape in zip(
        ("logits", "values"), output["items"], ((n, n_actions), (n,)), strict=True
    ):
        got = tuple(item.get("shape", ()))
        if item.get("kind") != "tensor" or got != shape:
            hint = ""
            if name == "values" and item.get("kind") == "tensor":
                if got == (n, 1):
                    hint = ": squeeze the last axis (.squeeze(-1)), else targets - values "
                    hint += "broadcasts to (N, N)"
                elif got == ():
                    hint = ": .squeeze() also removed the batch axis of size 1; use .squeeze(-1)"
            raise CheckFailed(
                f"on uint8 obs (N={n}, 4, 84, 84) with n_actions={n_actions}, {name} should "
                f"have shape {shape}, got {describe(item)}{hint}"
            )
        if not str(item.get("dtype", "")).startswith(("float", "bfloat")):
            raise CheckFailed(f"{name} should be a float tensor, got {describe(item)}")
        arrays.append(array_of(item))
    return arrays[0], arrays[1]


def _module(obs: dict[str, Any], case: dict[str, Any]) -> None:
    if not obs["is_module"]:
        raise CheckFailed(
            f"make_model({case['n_actions']}) should return a torch.nn.Module, got "
            f"{describe(obs['type'])}"
        )


def _outputs(obs: dict[str, Any], case: dict[str, Any]) -> None:
    _pair(obs["output"], case["n"], case["n_actions"])


def _float(obs: dict[str, Any], case: dict[str, Any]) -> None:
    a = _pair(obs["output"], case["n"], case["n_actions"])
    b = _pair(obs["float_output"], case["n"], case["n_actions"])
    if not obs["float_input_unchanged"]:
        raise CheckFailed(
            "model(obs) changed its float input in place (e.g. `x = obs.float(); x /= 255`: "
            ".float() returns the same tensor when obs is already float): use `x = obs.float() / 255`"
        )
    for name, got_u8, got_f in zip(("logits", "values"), a, b, strict=True):
        if not is_close(got_u8, got_f, rtol=1e-4, atol=1e-5):
            raise CheckFailed(
                f"the same observations as uint8 and as float in [0, 255] give different {name}: "
                f"{fmt(got_u8)} vs {fmt(got_f)}. Convert inside forward with obs.float() / 255 "
                "for both"
            )


def _size(obs: dict[str, Any], case: dict[str, Any]) -> None:
    count = obs["trainable"]
    if not MIN_PARAMETERS <= count <= MAX_PARAMETERS:
        raise CheckFailed(
            f"the model has {count:,} trainable parameters; expected between {MIN_PARAMETERS:,} "
            f"and {MAX_PARAMETERS:,} (the Nature-DQN network of the course has about 1.7 million). "
            "Are the layers created in __init__ and stored as attributes (or in nn.Sequential)?"
        )


def _gradients(obs: dict[str, Any], case: dict[str, Any]) -> None:
    for name in ("logits", "values"):
        if not obs[f"{name}_requires_grad"]:
            raise CheckFailed(f"{name} carry no autograd graph (computed under torch.no_grad()?)")
        if not obs[name]:
            raise CheckFailed(f"the gradient of {name} reaches no parameter of the model")
    logits, values = _pair(obs["output"], case["n"], case["n_actions"])
    if np.allclose(logits, logits[:1]) and np.allclose(values, values[:1]):
        raise CheckFailed("logits and values are the same for every observation: use the input")


def _not_saturated(obs: dict[str, Any], case: dict[str, Any]) -> None:
    logits, values = _pair(obs["output"], case["n"], case["n_actions"])
    if not (np.isfinite(logits).all() and np.isfinite(values).all()):
        raise CheckFailed("the model outputs inf or nan on random frames")
    top = float(np.exp(log_softmax(logits)).max(axis=-1).mean())
    if top > 0.99:
        raise CheckFailed(
            f"on random frames the untrained policy is already almost deterministic (mean largest "
            f"action probability {top:.3f}); scale the input by 1/255 and keep the initial "
            "logits small, or the agent cannot explore"
        )


def _registered(obs: dict[str, Any], case: dict[str, Any]) -> None:
    hint = (
        "keep every layer as an attribute of the module (self.conv = nn.Conv2d(...)), in "
        "nn.Sequential or nn.ModuleList, never in a plain Python list or dict"
    )
    outside = obs["outside_parameters"]
    if outside:
        raise CheckFailed(
            f"{len(outside)} tensor(s) that shape the outputs are not in model.parameters() "
            f"(shapes {outside[:4]}): the optimizer never trains them; {hint}"
        )
    if "meta_error" in obs:
        raise CheckFailed(
            "after model.to(device) the forward pass fails: some tensors did not move with the "
            f"module ({obs['meta_error']}); on a GPU this crashes. {hint}"
        )
    n, n_actions = case["n"], case["n_actions"]
    original = _pair(obs["original"], n, n_actions)
    reloaded = _pair(obs["reloaded"], n, n_actions)
    if not all(
        is_close(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(original, reloaded, strict=True)
    ):
        raise CheckFailed(
            "a second make_model loaded with the first one's state_dict() gives other outputs: "
            f"part of the network is missing from state_dict(), so checkpoints lose it; {hint}"
        )


def _negative_values(obs: dict[str, Any], case: dict[str, Any]) -> None:
    history = obs["max_value"]
    if not history or history[-1] >= case["target"] / 2:
        raise CheckFailed(
            f"regressing the values of {case['n']} frames on the target {case['target']:g} "
            f"with Adam (lr={case['lr']:g}), the largest value went from {history[0]:.3g} to "
            f"only {history[-1]:.3g} in {len(history)} steps: the value head cannot go "
            "negative. Returns can be negative (Pong, losing lives): no ReLU (or other "
            "non-negative function) after the value layer"
        )


def _outputs_case(n: int, obs_seed: int, **extra: Any) -> dict[str, Any]:
    return {**BASE, "n": n, "obs_seed": obs_seed, **extra}


SUBCHECKS = (
    SubCheck(
        "module", "make_model(n_actions) returns an nn.Module", 1, "model_build", (BASE,), _module
    ),
    SubCheck(
        "uint8",
        "uint8 input (N, 4, 84, 84) -> logits (N, A), values (N,)",
        2,
        "model_outputs",
        (_outputs_case(3, 0),),
        _outputs,
    ),
    SubCheck(
        "float",
        "float input in [0, 255] gives the same outputs, input untouched",
        1,
        "model_outputs",
        (_outputs_case(3, 1, float_too=True),),
        _float,
    ),
    SubCheck(
        "batch_of_one",
        "works for a batch of one (values (1,), not a scalar)",
        1,
        "model_outputs",
        (_outputs_case(1, 2),),
        _outputs,
    ),
    SubCheck(
        "n_actions",
        "works for n_actions = 2, 4 and 18",
        1,
        "model_outputs",
        tuple({**_outputs_case(2, 3), "n_actions": n} for n in (2, 4, 18)),
        _outputs,
    ),
    SubCheck("size", "a sane number of trainable parameters", 1, "model_size", (BASE,), _size),
    SubCheck(
        "gradients",
        "gradients flow from logits and from values into the model",
        2,
        "model_gradients",
        (_outputs_case(4, 4),),
        _gradients,
    ),
    SubCheck(
        "not_saturated",
        "outputs finite, first policy not saturated (input scaled)",
        1,
        "model_outputs",
        (_outputs_case(16, 5),),
        _not_saturated,
    ),
    SubCheck(
        "registered",
        "every layer is registered: in parameters(), moved by .to(), saved by state_dict()",
        1,
        "model_registered",
        (_outputs_case(2, 6),),
        _registered,
    ),
    SubCheck(
        "negative_values",
        "the value head can reach a negative target",
        1,
        "model_negative_values",
        (_outputs_case(4, 7, target=-1.0, lr=1e-3, steps=60),),
        _negative_values,
        seconds=20.0,
    ),
)
