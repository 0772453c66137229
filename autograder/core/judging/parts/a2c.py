"""Checks of the ``a2c`` part: ``A2C(policy, optimizer, ...).step(merged_trajectory) -> dict``.

Contract (docs/design.md), with B = T*N rows::

    advantages  = value_targets - values
    policy_loss = -mean(log_probs * advantages.detach())
    value_loss  = mean((value_targets - values) ** 2)
    entropy     = mean over rows of -sum_a pi(a|s) log pi(a|s)
    loss        = policy_loss + value_loss_coef * value_loss - entropy_coef * entropy
    step: zero_grad, backward, clip_grad_norm_(max_grad_norm), optimizer.step;
          returns floats loss, policy_loss, value_loss, entropy, grad_norm (before clipping)

The student's class and the reference run the same probe (:func:`autograder.sandboxed.grading_runtime.probes.a2c.a2c_run`):
the same fixture network, policy, optimizer and merged batch (seeds drawn for this grading), so
the reported numbers and the parameters after a step can be compared. Feedback says which
term is wrong and in which direction, never the reference's number. A student who recomputes the log-probs from
``observations`` with ``policy.model`` gets the same numbers: that is accepted.

So that one mistake costs its own points only, the mechanics of ``step`` (which optimizer,
clipping, zero_grad, the reported grad_norm) are checked against the student's *own*
gradient: e.g. a clipped SGD step must be the student's unclipped step scaled down to
``max_grad_norm``, whatever loss produced it. Those mechanics, and the returned types, are
claims a process could make up: they are gated on ``sgd_step`` (one whole update equal to the
reference's). Most checks use the two-headed fixture (its heads share no parameter); one uses
a small network with a shared trunk.

Why one module: one part's judges, as for every part (:mod:`autograder.core.judging.parts`);
A2C's step has the most to check.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from autograder.core.judging.parts.subcheck import (
    CheckFailed,
    SubCheck,
    describe,
    reference_observation,
)
from autograder.sandboxed.grading_runtime import fixtures
from solutions import reference

__all__ = ["GATE", "SUBCHECKS", "draw_cases"]

GATE = ("sgd_step",)

N_ACTIONS, ROWS, LR = 4, 12, 0.1
STAT_KEYS = ("loss", "policy_loss", "value_loss", "entropy", "grad_norm")
NO_CLIP = 1e6  # a max_grad_norm that never clips


def run(
    model: str = "two_heads",
    optimizer: str = "sgd",
    steps: tuple[int, ...] = (0,),
    init_seed: int = 0,
    **coefs: float,
) -> dict[str, Any]:
    """One run of the probe: which network, optimizer, coefficients and batches."""
    return {
        "model": model,
        "init_seed": init_seed,
        "n_actions": N_ACTIONS,
        "rows": ROWS,
        "optimizer": optimizer,
        "coefs": coefs,
        "steps": list(steps),
    }


@functools.lru_cache(maxsize=8)
def initial(model: str, init_seed: int) -> np.ndarray:
    """The fixture network's parameters before any step, flattened (float64)."""
    net = fixtures.make_fixture_model(model, N_ACTIONS, init_seed)
    return torch.cat([p.detach().double().flatten() for p in net.parameters()]).numpy()


def _stats(observation: dict[str, Any], index: int = 0) -> dict[str, dict[str, Any]]:
    entry = observation["stats"][index]
    if entry["returned"].get("kind") != "dict":
        raise CheckFailed(
            f"step() should return a dict of floats, got {describe(entry['returned'])}"
        )
    return entry["values"]


def number(observation: dict[str, Any], key: str) -> float:
    """``stats[key]`` as a float, or CheckFailed saying what is missing or wrong."""
    stats = _stats(observation)
    if key not in stats:
        raise CheckFailed(f"step() returned no {key!r} (its keys: {sorted(stats)})")
    record = stats[key]
    if record.get("kind") == "number":
        return float(record["value"])
    data = record.get("data")
    if record.get("kind") in ("tensor", "ndarray") and data is not None and np.size(data) == 1:
        return float(np.asarray(data).reshape(()))
    raise CheckFailed(f"stats[{key!r}] is not a number: {describe(record)}")


def update(observation: dict[str, Any], case: dict[str, Any], step: int = 0) -> np.ndarray:
    """All parameter changes of step ``step`` (from the state before it) in run ``case``."""
    before = (
        initial(case["model"], case["init_seed"])
        if step == 0
        else np.asarray(observation["params"][step - 1])
    )
    after = np.asarray(observation["params"][step])
    if after.shape != before.shape:
        raise CheckFailed("the network's parameters changed shape during step()")
    return after - before


def reference_run(case: dict[str, Any]) -> dict[str, Any]:
    return reference_observation(reference.A2C, "a2c_run", case)


def same_update(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Fail unless update ``got`` equals ``want`` up to float32 rounding."""
    if float(np.linalg.norm(got)) == 0.0 and float(np.linalg.norm(want)) > 0.0:
        raise CheckFailed(
            f"{what}: the parameters did not change: the gradient of the loss must be "
            "computed and the optimizer must then take its step (clear the old gradients "
            "before computing the new ones, not between the two)"
        )
    diff, norm = float(np.linalg.norm(got - want)), float(np.linalg.norm(want))
    if not diff <= 1e-3 * norm + 1e-7:
        relative = diff / max(norm, 1e-12)
        size = f"{relative:.1%} of" if relative < 10 else f"{relative:.3g} times"
        ratio = float(np.linalg.norm(got)) / max(norm, 1e-12)
        direction = "larger" if ratio > 1.001 else "smaller" if ratio < 0.999 else "as large"
        raise CheckFailed(
            f"{what}: your parameter update differs from the expected one by {size} its size "
            f"(your update is {direction} than the expected one"
            f"{', and points elsewhere' if direction == 'as large' else ''})"
        )


def require_update(delta: np.ndarray) -> None:
    """Fail when one step left the parameters as they were (nothing to compare then)."""
    if float(np.linalg.norm(delta)) == 0.0:
        raise CheckFailed(
            "one SGD step did not change the parameters: the gradient of the loss must be "
            "computed and the optimizer must then take its step (clear the old gradients "
            "before computing the new ones, not between the two)"
        )


def _check_stats(observation: dict[str, Any], case: dict[str, Any]) -> None:
    stats = _stats(observation)
    missing = [key for key in STAT_KEYS if key not in stats]
    if missing:
        raise CheckFailed(f"step() returned no {missing} (its keys: {sorted(stats)})")
    for key in STAT_KEYS:
        if stats[key].get("kind") != "number":
            raise CheckFailed(
                f"stats[{key!r}] should be a Python float, got {describe(stats[key])}: return "
                "plain numbers (a tensor would keep the graph and the GPU memory alive while you "
                "log it)"
            )


def _direction(got: float, want: float) -> str:
    return "too large" if got > want else "too small"


def _hint_ratio(got: float, want: float) -> str:
    if np.isclose(got, -want, rtol=1e-4, atol=1e-6):
        return " It has the opposite sign: check the minus sign in the formula."
    for factor, text in ((ROWS, "a sum over the batch: use the mean"), (0.5, "a factor 1/2")):
        if np.isclose(got, factor * want, rtol=1e-4, atol=1e-6):
            return f" It is {text}."
    return ""


def _term(key: str, formula: str):
    def judge(observation: dict[str, Any], case: dict[str, Any]) -> None:
        got, want = number(observation, key), number(reference_run(case), key)
        if not np.isclose(got, want, rtol=1e-4, atol=1e-6):
            raise CheckFailed(
                f"on a merged batch of B={ROWS} rows with A={N_ACTIONS} actions, {key} should be "
                f"{formula}; yours, {got:.6g}, is {_direction(got, want)}.{_hint_ratio(got, want)}"
            )

    return judge


def _check_loss(observation: dict[str, Any], case: dict[str, Any]) -> None:
    coefs = case["coefs"]
    c_v, c_e = coefs.get("value_loss_coef", 0.25), coefs.get("entropy_coef", 0.01)
    want_run = reference_run(case)
    pl, vl, ent = (number(want_run, k) for k in ("policy_loss", "value_loss", "entropy"))
    got, want = number(observation, "loss"), number(want_run, "loss")
    if not np.isclose(got, want, rtol=1e-4, atol=1e-6):
        hint = ""
        if np.isclose(got, pl + c_v * vl + c_e * ent, rtol=1e-4, atol=1e-6):
            hint = " The entropy bonus must be subtracted (it rewards exploration)."
        elif np.isclose(got, pl + 0.25 * vl - 0.01 * ent, rtol=1e-4, atol=1e-6):
            hint = " You used the default coefficients: use the ones passed to __init__."
        raise CheckFailed(
            f"with value_loss_coef={c_v}, entropy_coef={c_e}: loss should be policy_loss + "
            f"{c_v} * value_loss - {c_e} * entropy; yours, {got:.6g}, is "
            f"{_direction(got, want)}.{hint}"
        )


def _check_grad_norm(observation: dict[str, Any], case: dict[str, Any]) -> None:
    unclipped, clipped = observation["runs"]
    max_norm = case["runs"][1]["coefs"]["max_grad_norm"]
    own_norm = float(np.linalg.norm(update(unclipped, case["runs"][0]))) / LR
    got, want = number(clipped, "grad_norm"), number(reference_run(case)["runs"][1], "grad_norm")
    # Either norm is right: the student's own gradient (when the loss has a mistake of its own,
    # already counted elsewhere) or the reference's (when the update itself is broken).
    if not any(np.isclose(got, norm, rtol=1e-3, atol=1e-6) for norm in (own_norm, want)):
        hint = ""
        if np.isclose(got, max_norm, rtol=1e-3):
            hint = " That is the norm after clipping: report what clip_grad_norm_ returns."
        raise CheckFailed(
            f"grad_norm should be the total norm of the gradient before clipping (the value "
            f"clip_grad_norm_ returns) with max_grad_norm={max_norm}; yours, {got:.6g}, is "
            f"{_direction(got, want)}.{hint}"
        )


def _against_reference(what: str):
    def judge(observation: dict[str, Any], case: dict[str, Any]) -> None:
        same_update(update(observation, case), update(reference_run(case), case), what)

    return judge


def _check_detached(observation: dict[str, Any], case: dict[str, Any]) -> None:
    value_head = 4 * 7 * 7 + 1  # TwoHeadModel: value_head.weight (1, 196) and its bias, last
    moved = float(np.abs(update(observation, case)[-value_head:]).max())
    if moved > 1e-7:
        raise CheckFailed(
            "with value_loss_coef=0 and a network whose value head shares no parameter with "
            f"the policy head, one SGD step moved the value head by {moved:.3g}: the policy "
            "loss sends gradient into the values. Detach the advantages in the policy loss "
            "(and multiply value_loss by value_loss_coef)"
        )


def _check_optimizer(observation: dict[str, Any], case: dict[str, Any]) -> None:
    sgd, rms = observation["runs"]
    sgd_update = update(sgd, case["runs"][0])
    require_update(sgd_update)
    gradient = -sgd_update / LR
    # First RMSprop step: square_avg = (1 - alpha) g^2, update = -lr g / (sqrt(square_avg) + eps)
    expected = -7e-4 * gradient / (np.sqrt(0.01 * gradient**2) + 1e-5)
    same_update(
        update(rms, case["runs"][1]),
        expected,
        "with an RMSprop optimizer (lr=7e-4, alpha=0.99, eps=1e-5), one step should be "
        "RMSprop's step on your own gradient: step with the optimizer given to __init__",
    )


def _check_clipping(observation: dict[str, Any], case: dict[str, Any]) -> None:
    unclipped_run, clipped_run = observation["runs"]
    max_norm = case["runs"][1]["coefs"]["max_grad_norm"]
    unclipped = update(unclipped_run, case["runs"][0])
    require_update(unclipped)
    norm = float(np.linalg.norm(unclipped)) / LR
    expected = unclipped * min(1.0, max_norm / max(norm, 1e-12))
    same_update(
        update(clipped_run, case["runs"][1]),
        expected,
        f"with max_grad_norm={max_norm:g} your gradient (norm {norm:.3g}) should be scaled down "
        f"to norm {max_norm:g} before the optimizer step",
    )


def _check_two_steps(observation: dict[str, Any], case: dict[str, Any]) -> None:
    require_update(update(observation, case, 0))
    second = update(observation, case, 1)
    fresh = np.asarray(observation["fresh_params"]) - np.asarray(observation["params"][0])
    same_update(
        second,
        fresh,
        "the second of two steps in a row should equal the same step made by a fresh A2C "
        "(the first step's gradient leaked into the second: zero the gradients in every step)",
    )


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: network initialisations and batches drawn, coefficients fixed."""

    def drawn(**options: Any) -> dict[str, Any]:
        seeds = rng.integers(0, 2**31, 3)
        steps = (
            (int(seeds[1]), int(seeds[2])) if options.pop("two_steps", False) else (int(seeds[1]),)
        )
        return run(init_seed=int(seeds[0]), steps=steps, **options)

    def pair(first: dict[str, Any], **second: Any) -> dict[str, Any]:
        """Two runs on the same network and batch, with other settings."""
        other = run(init_seed=first["init_seed"], steps=tuple(first["steps"]), **second)
        return {"runs": [first, other]}

    clipped = drawn(max_grad_norm=0.05)
    return {
        "clipped": [clipped],
        "weighted_clipped": [drawn(value_loss_coef=0.7, entropy_coef=0.2, max_grad_norm=0.05)],
        "grad_norm": [pair(drawn(max_grad_norm=NO_CLIP), max_grad_norm=0.05)],
        "shared": [drawn(model="shared", max_grad_norm=NO_CLIP)],
        "detached": [drawn(value_loss_coef=0.0, entropy_coef=0.01, max_grad_norm=NO_CLIP)],
        "weighted": [drawn(value_loss_coef=0.7, entropy_coef=0.2, max_grad_norm=NO_CLIP)],
        "optimizer": [
            pair(drawn(max_grad_norm=NO_CLIP), optimizer="rmsprop", max_grad_norm=NO_CLIP)
        ],
        "clipping": [pair(drawn(max_grad_norm=NO_CLIP), max_grad_norm=1e-3)],
        "zero_grad": [{**drawn(two_steps=True, max_grad_norm=NO_CLIP), "fresh_second": True}],
    }


def _sub(key: str, title: str, weight: int, cases: str, judge, gated: bool = False) -> SubCheck:
    return SubCheck(key, title, weight, "a2c_run", cases, judge, gated=gated)


SUBCHECKS = (
    _sub(
        "stats",
        "step() returns a dict of floats: " + ", ".join(STAT_KEYS),
        1,
        "clipped",
        _check_stats,
        gated=True,
    ),
    _sub(
        "policy_loss",
        "policy_loss = -mean(log_probs * advantages)",
        2,
        "clipped",
        _term("policy_loss", "-mean(log_probs * (value_targets - values))"),
    ),
    _sub(
        "value_loss",
        "value_loss = mean((value_targets - values)^2)",
        1,
        "clipped",
        _term("value_loss", "mean((value_targets - values) ** 2)"),
    ),
    _sub(
        "entropy",
        "entropy = mean(-sum_a pi log pi)",
        1,
        "clipped",
        _term("entropy", "mean over rows of -sum_a softmax(logits) * log_softmax(logits)"),
    ),
    _sub(
        "loss",
        "loss = policy_loss + c_v * value_loss - c_e * entropy",
        1,
        "clipped+weighted_clipped",
        _check_loss,
    ),
    _sub(
        "grad_norm", "grad_norm is the norm before clipping", 1, "grad_norm", _check_grad_norm, True
    ),
    _sub(
        "sgd_step",
        "one SGD step gives the reference's parameters",
        3,
        "shared",
        _against_reference(
            "one SGD step of a network with a shared trunk (lr=0.1, no clipping, default "
            "coefficients), compared with the reference"
        ),
    ),
    _sub(
        "detached",
        "advantages are detached in the policy loss",
        2,
        "detached",
        _check_detached,
        True,
    ),
    _sub(
        "coefficients",
        "value_loss_coef and entropy_coef are honoured in the update",
        1,
        "weighted",
        _against_reference(
            "one SGD step with value_loss_coef=0.7, entropy_coef=0.2, compared with the reference"
        ),
    ),
    _sub(
        "optimizer",
        "steps with the optimizer it was given (RMSprop)",
        1,
        "optimizer",
        _check_optimizer,
        True,
    ),
    _sub(
        "clipping", "gradients are clipped to max_grad_norm", 2, "clipping", _check_clipping, True
    ),
    _sub(
        "zero_grad",
        "two steps in a row (zero_grad in every step)",
        2,
        "zero_grad",
        _check_two_steps,
        True,
    ),
)
