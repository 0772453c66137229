"""Checks of the ``model`` part: ``make_model(n_actions)`` -> the Nature-DQN ``nn.Module``.

Contract (docs/design.md, graded parts): ``module(obs)`` with ``obs`` a uint8 or float tensor
``(N, 4, 84, 84)`` in [0, 255] returns ``(logits (N, A), values (N,))``; the notebook asks for
the Nature-DQN network: ``obs / 255``, conv 32 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3
stride 1 (ReLU after each), a 512-unit linear layer (ReLU), and two linear heads (``A`` logits,
one value).

The probe reports the layers the student's forward pass used, in order, then loads weights
drawn for this grading (:func:`autograder.sandboxed.grading_runtime.fixtures.nature_weights`, from the case's
``weight_seed``) into those layers and reports the outputs on frames drawn for this grading,
once more with the value head negated (so some values are negative). The grader computes what
the Nature-DQN network gives with the same weights (:func:`nature_dqn`, which the sandbox never
sees): the gate ``uint8`` passes only when the student's network computes that, so no reported
weights (all zeros, say) explain the outputs. Names, initialisation and the way the layers are
written are the student's choice. The other checks (a batch of one, float input, other action
counts, gradients, registration, the first policy, a value head that can go negative) are
gated on it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from autograder.core.judging.parts.subcheck import (
    CheckFailed,
    SubCheck,
    array_of,
    describe,
    is_close,
    log_softmax,
)
from autograder.sandboxed.grading_runtime import fixtures
from course_lib.checks.layers import (
    NATURE_TEXT,
    NATURE_TRUNK,
    describe_layers,
    nature_dqn_order,
    nature_dqn_parameters,
)
from course_lib.checks.properties import output_pair_problem

__all__ = [
    "GATE",
    "SUBCHECKS",
    "draw_cases",
    "nature_dqn",
    "output_mismatch",
    "outputs_close",
]

#: The outputs must be the Nature-DQN's on the secret frames, and the critic must be able to go
#: negative: a value head squashed by a ReLU matches the network only on the frames where its
#: value happens to be positive, so without the second check its verdict would depend on the
#: grading's draw.
GATE = ("uint8", "negative_values")


def _structure(layers: list[dict[str, Any]], n_actions: int) -> list[bool]:
    """Whether each of conv1..3, fc, policy head, value head has a bias; CheckFailed if the
    layers the forward pass used are not the Nature-DQN network's."""
    ordered = nature_dqn_order(layers, n_actions)
    if ordered is None:
        raise CheckFailed(
            f"the model's forward pass should use {NATURE_TEXT}. Yours used: "
            f"{describe_layers(layers)}"
        )
    return [layer.get("bias_shape") is not None for layer in ordered]


@functools.lru_cache(maxsize=8)
def _drawn(weight_seed: int, n_actions: int, biases: tuple[bool, ...]):
    """The case's drawn weights, without the biases of the layers that have none."""
    drawn = fixtures.nature_weights(weight_seed, n_actions)
    return [(w, b if has else np.zeros_like(b)) for (w, b), has in zip(drawn, biases, strict=True)]


def nature_dqn(
    weights: list[tuple[np.ndarray, np.ndarray]],
    obs: np.ndarray,
    scale: float = 1 / 255,
    dtype: torch.dtype = torch.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """The grader's own Nature-DQN forward pass with the given weights (conv1..3, fc, policy
    and value heads): float64 for the judges, float32 for playing a saved agent
    (:mod:`autograder.core.agent_play`)."""
    tensors = [(torch.from_numpy(w).to(dtype), torch.from_numpy(b).to(dtype)) for w, b in weights]
    with torch.no_grad():
        obs = np.asarray(obs)
        x = torch.from_numpy(obs if obs.flags.writeable else obs.copy()).to(dtype) * scale
        for (weight, bias), (_, _, stride) in zip(tensors[:3], NATURE_TRUNK, strict=False):
            x = F.relu(F.conv2d(x, weight, bias, stride=stride))
        x = F.relu(F.linear(x.flatten(1), *tensors[3]))
        logits = F.linear(x, *tensors[4])
        values = F.linear(x, *tensors[5]).squeeze(-1)
    return logits.numpy(), values.numpy()


@functools.lru_cache(maxsize=16)
def _frames(n: int, seed: int) -> np.ndarray:
    frames = fixtures.random_frames(n, seed)
    frames.flags.writeable = False
    return frames


def outputs_close(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether a network's outputs ``got`` are the Nature-DQN's ``want``, within float32
    rounding (relative to the largest output)."""
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    return is_close(got, want, rtol=1e-4, atol=1e-4 * scale)


def _verified(observation: dict[str, Any], case: dict[str, Any], output_key: str, n: int):
    """The student's outputs ``output_key`` on the first ``n`` frames with the case's drawn
    weights loaded, checked against the grader's Nature-DQN with the same weights."""
    A = case["n_actions"]
    biases = _structure(observation["layers"], A)
    drawn = observation["drawn"]
    if "error" in drawn:
        raise CheckFailed(
            f"the grader could not load its test weights into your network: {drawn['error']}. "
            f"The forward pass should use {NATURE_TEXT}"
        )
    weights = _drawn(case["weight_seed"], A, tuple(biases))
    obs = _frames(case["n"], case["obs_seed"])[:n]
    keys = [output_key] + (["mirror_output"] if output_key == "output" else [])
    for key in keys:
        problem = output_pair_problem(drawn[key], n, A)
        if problem:
            raise CheckFailed(problem)
        if key == "mirror_output":  # the value head negated: the values change sign
            weights = [*weights[:5], (-weights[5][0], -weights[5][1])]
        _compare(tuple(array_of(item) for item in drawn[key]["items"]), weights, obs, A, n)


def output_mismatch(got, weights, obs: np.ndarray) -> tuple[list[str], str]:
    """Which of ``got`` (logits, values) differ from what the Nature-DQN network computes with
    ``weights`` on ``obs``, and a hint at the likely mistake (``[]`` and ``""`` when none)."""
    want = nature_dqn(weights, obs)
    pairs = zip(("logits", "values"), got, want, strict=True)
    wrong = [name for name, g, w in pairs if not outputs_close(g, w)]
    if not wrong:
        return [], ""
    hint = ""
    unscaled = nature_dqn(weights, obs, scale=1.0)
    if all(outputs_close(g, w) for g, w in zip(got, unscaled, strict=True)):
        hint = (
            " They match the network without the scaling: the network divides its input by "
            "255 first (Part 1's table)."
        )
    elif wrong == ["values"] and any(
        outputs_close(got[1], squashed)
        for squashed in (np.maximum(want[1], 0), np.logaddexp(want[1], 0))
    ):
        hint = (
            " Yours are the network's values passed through a ReLU or softplus: the value head "
            "is a plain linear layer, no ReLU or softplus after it (returns can be negative)."
        )
    return wrong, hint


def _compare(got, weights, obs: np.ndarray, A: int, n: int) -> None:
    """CheckFailed with a hint unless ``got`` is what the Nature-DQN network gives."""
    wrong, hint = output_mismatch(got, weights, obs)
    if not wrong:
        return
    raise CheckFailed(
        f"on {n} uint8 frames with n_actions={A} and test weights loaded into your layers, your "
        f"{' and '.join(wrong)} differ from what {NATURE_TEXT} computes with those weights.{hint}"
    )


def _module(observation: dict[str, Any], case: dict[str, Any]) -> None:
    if not observation["is_module"]:
        raise CheckFailed(
            f"make_model({case['n_actions']}) should return a torch.nn.Module, got "
            f"{describe(observation['type'])}"
        )


def _uint8(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _verified(observation, case, "output", case["n"])


def _float(observation: dict[str, Any], case: dict[str, Any]) -> None:
    try:
        _verified(observation, case, "float_output", case["n"])
    except CheckFailed as failure:
        raise CheckFailed(f"with float input in [0, 255]: {failure}") from None
    if not observation["drawn"]["float_input_unchanged"]:
        raise CheckFailed(
            "model(obs) changed its float input in place: converting a tensor that is already "
            "float gives the same tensor back, so an in-place division changes the caller's "
            "observations; compute a new tensor instead"
        )


def _batch_of_one(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _verified(observation, case, "one_output", 1)


def _n_actions(observation: dict[str, Any], case: dict[str, Any]) -> None:
    problem = output_pair_problem(observation["output"], case["n"], case["n_actions"])
    if problem:
        raise CheckFailed(problem)


def _size(observation: dict[str, Any], case: dict[str, Any]) -> None:
    count, want = observation["trainable"], nature_dqn_parameters(case["n_actions"])
    if count != want:
        raise CheckFailed(
            f"the model has {count:,} trainable parameters; the Nature-DQN network with "
            f"n_actions={case['n_actions']} has {want:,}. Are all layers created in __init__, "
            "stored as attributes (or in nn.Sequential), trainable, and no extra ones?"
        )


def _gradients(observation: dict[str, Any], case: dict[str, Any]) -> None:
    for name in ("logits", "values"):
        if not observation[f"{name}_requires_grad"]:
            raise CheckFailed(
                f"{name} carry no autograd graph (computed with gradients switched off?)"
            )
        if not observation[name]:
            raise CheckFailed(f"the gradient of {name} reaches no parameter of the model")


def _not_saturated(observation: dict[str, Any], case: dict[str, Any]) -> None:
    problem = output_pair_problem(observation["output"], case["n"], case["n_actions"])
    if problem:
        raise CheckFailed(problem)
    logits = array_of(observation["output"]["items"][0])
    top = float(np.exp(log_softmax(logits)).max(axis=-1).mean())
    if top > 0.99:
        raise CheckFailed(
            f"on random frames the untrained policy is already almost deterministic (mean largest "
            f"action probability {top:.3f}); keep the initial logits small (e.g. a small gain "
            "for the policy head), or the agent cannot explore"
        )


def _registered(observation: dict[str, Any], case: dict[str, Any]) -> None:
    hint = (
        "keep every layer as an attribute of the module, in "
        "nn.Sequential or nn.ModuleList, never in a plain Python list or dict"
    )
    outside = observation["outside_parameters"]
    if outside:
        raise CheckFailed(
            f"{len(outside)} tensor(s) that shape the outputs are not among the module's parameters "
            f"(shapes {outside[:4]}): the optimizer never trains them; {hint}"
        )
    A = case["n_actions"]
    original, reloaded = observation["original"], observation["reloaded"]
    if output_pair_problem(original, case["n"], A) or output_pair_problem(reloaded, case["n"], A):
        raise CheckFailed(f"model(obs) does not give a (logits, values) pair: {describe(original)}")
    pairs = zip(original["items"], reloaded["items"], strict=True)
    if not all(is_close(array_of(a), array_of(b), 1e-5, 1e-6) for a, b in pairs):
        raise CheckFailed(
            "a second make_model loaded with the first one's state_dict() gives other outputs: "
            f"part of the network is missing from state_dict(), so checkpoints lose it; {hint}"
        )


def _negative_values(observation: dict[str, Any], case: dict[str, Any]) -> None:
    history = observation["max_value"]
    if not history or history[-1] >= case["target"] / 2:
        start = f"{history[0]:.3g}" if history else "?"
        end = f"{history[-1]:.3g}" if history else "?"
        raise CheckFailed(
            f"regressing the values of {case['n']} frames on the target {case['target']:g} "
            f"with Adam (lr={case['lr']:g}), the largest value went from {start} to only "
            f"{end} in {len(history)} steps: the value head cannot go negative. Returns can be "
            "negative (Pong, losing lives): no ReLU (or other non-negative function) after "
            "the value layer"
        )


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: action counts, batch sizes, initialisation and frame seeds."""

    def case(n_actions: int, n: int, **extra: Any) -> dict[str, Any]:
        seeds = rng.integers(0, 2**31, 3)
        return {
            "n_actions": int(n_actions),
            "init_seed": int(seeds[0]),
            "n": n,
            "obs_seed": int(seeds[1]),
            "weight_seed": int(seeds[2]),
            **extra,
        }

    others = rng.choice([2, 4, 5, 7, 9, 14, 18], size=3, replace=False)
    return {
        "net": [case(rng.choice([3, 4, 5, 6, 7, 8, 9]), int(rng.integers(3, 7)))],
        "n_actions": [case(a, 2) for a in sorted(others)],
        "negative": [case(6, 4, target=-float(rng.uniform(0.5, 2.0)), lr=1e-3, steps=60)],
    }


def _net(key: str, title: str, weight: int, judge, gated: bool = True) -> SubCheck:
    return SubCheck(key, title, weight, "model_net", "net", judge, seconds=20.0, gated=gated)


SUBCHECKS = (
    _net("module", "make_model(n_actions) returns an nn.Module", 1, _module),
    _net(
        "uint8",
        "uint8 input (N, 4, 84, 84) -> logits (N, A), values (N,) of the Nature-DQN network",
        2,
        _uint8,
        gated=False,
    ),
    _net(
        "float", "float input in [0, 255] gives the same outputs, input untouched", 1, _float, False
    ),
    _net(
        "batch_of_one",
        "works for a batch of one (values (1,), not a scalar)",
        1,
        _batch_of_one,
        False,
    ),
    SubCheck(
        "n_actions",
        "works for other numbers of actions",
        1,
        "model_outputs",
        "n_actions",
        _n_actions,
        gated=True,
    ),
    _net("size", "the Nature-DQN network's number of trainable parameters", 1, _size),
    _net("gradients", "gradients flow from logits and from values into the model", 2, _gradients),
    _net(
        "not_saturated",
        "the first policy is not saturated (small initial logits)",
        1,
        _not_saturated,
    ),
    _net(
        "registered",
        "every layer is registered: in parameters(), saved by state_dict()",
        1,
        _registered,
    ),
    SubCheck(
        "negative_values",
        "the value head can reach a negative target",
        1,
        "model_negative_values",
        "negative",
        _negative_values,
        seconds=20.0,
        gated=True,
    ),
)
