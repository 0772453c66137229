"""Checks of the ``a2c`` part: ``A2C(policy, optimizer, ...).step(merged_trajectory) -> dict``.

Contract (design.md section 5), with B = T*N rows::

    advantages  = value_targets - values
    policy_loss = -mean(log_probs * advantages.detach())
    value_loss  = mean((value_targets - values) ** 2)
    entropy     = mean over rows of -sum_a pi(a|s) log pi(a|s)
    loss        = policy_loss + value_loss_coef * value_loss - entropy_coef * entropy
    step: zero_grad, backward, clip_grad_norm_(max_grad_norm), optimizer.step;
          returns floats loss, policy_loss, value_loss, entropy, grad_norm (before clipping)

The student's class and the reference run side by side on two copies of the same network and
the same merged trajectory (the reference Policy drives both), so the reported numbers and the
parameters after one optimizer step can be compared. A student who recomputes the log-probs
from ``observations`` with ``policy.model`` gets the same numbers: that is accepted.

So that one mistake costs its own points only, the mechanics of ``step`` (which optimizer,
clipping, zero_grad, the reported grad_norm) are checked against the student's *own*
gradient: e.g. a clipped SGD step must be the student's unclipped step scaled down to
``max_grad_norm``, whatever loss produced it. Most checks use
:class:`~autograder.checks.fakes.TwoHeadModel` (fast, and its heads share no parameter); one
uses the course's network.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .a2c_bench import (
    N_ACTIONS,
    NO_CLIP,
    STAT_KEYS,
    N,
    T,
    initial_model,
    make_optimizer,
    merged_trajectory,
    number,
    require_update,
    run_steps,
    same_update,
    side_by_side,
    student_step,
    update,
)
from .base import CheckFailed, SubCheck, describe
from .fakes import GradingPolicy

__all__ = ["SUBCHECKS"]


def _check_stats_dict(cls: Any) -> None:
    got, _, _, _, _ = side_by_side(cls, max_grad_norm=0.05)
    missing = [key for key in STAT_KEYS if key not in got]
    if missing:
        raise CheckFailed(f"step() returned no {missing} (its keys: {sorted(got)})")
    for key in STAT_KEYS:
        value = got[key]
        if isinstance(value, bool) or not isinstance(value, (float, int, np.floating)):
            raise CheckFailed(
                f"stats[{key!r}] should be a Python float, got {describe(value)}: use .item() "
                "(a tensor would keep the graph and the GPU memory alive while you log it)"
            )


def _hint_ratio(got: float, want: float) -> str:
    if np.isclose(got, -want, rtol=1e-4, atol=1e-6):
        return " It has the opposite sign: check the minus sign in the formula."
    for factor, text in ((T * N, "a sum over the batch: use the mean"), (0.5, "a factor 1/2")):
        if np.isclose(got, factor * want, rtol=1e-4, atol=1e-6):
            return f" It is {text}."
    return ""


def _term_check(key: str, formula: str):
    def run(cls: Any) -> None:
        got_stats, want_stats, _, _, _ = side_by_side(cls, max_grad_norm=0.05)
        got, want = number(got_stats, key), float(want_stats[key])
        if not np.isclose(got, want, rtol=1e-4, atol=1e-6):
            raise CheckFailed(
                f"on a merged batch of B={T * N} rows with A={N_ACTIONS} actions, {key} should be "
                f"{formula} = {want:.6g}, got {got:.6g}.{_hint_ratio(got, want)}"
            )

    return run


def _check_loss(cls: Any) -> None:
    for coefs in ({}, {"value_loss_coef": 0.7, "entropy_coef": 0.2}):
        got_stats, want_stats, _, _, _ = side_by_side(cls, max_grad_norm=0.05, **coefs)
        got = number(got_stats, "loss")
        c_v, c_e = coefs.get("value_loss_coef", 0.25), coefs.get("entropy_coef", 0.01)
        pl, vl, ent = (float(want_stats[k]) for k in ("policy_loss", "value_loss", "entropy"))
        want = float(want_stats["loss"])
        if not np.isclose(got, want, rtol=1e-4, atol=1e-6):
            hint = ""
            if np.isclose(got, pl + c_v * vl + c_e * ent, rtol=1e-4, atol=1e-6):
                hint = " The entropy bonus must be subtracted (it rewards exploration)."
            elif np.isclose(got, pl + 0.25 * vl - 0.01 * ent, rtol=1e-4, atol=1e-6):
                hint = " You used the default coefficients: use the ones passed to __init__."
            raise CheckFailed(
                f"with value_loss_coef={c_v}, entropy_coef={c_e}: loss should be policy_loss + "
                f"{c_v} * value_loss - {c_e} * entropy = {want:.6g}, got {got:.6g}.{hint}"
            )


def _check_grad_norm(cls: Any) -> None:
    max_norm = 0.05
    unclipped, _ = student_step(cls, max_grad_norm=NO_CLIP)  # SGD, lr = 0.1
    own_norm = float(unclipped.norm()) / 0.1  # the norm of the student's own gradient
    got_stats, want_stats, _, _, _ = side_by_side(cls, max_grad_norm=max_norm)
    got, want = number(got_stats, "grad_norm"), float(want_stats["grad_norm"])
    # Either norm is right: the student's own gradient (when the loss has a mistake of its
    # own, already counted elsewhere) or the reference's (when the update itself is broken).
    if not any(np.isclose(got, norm, rtol=1e-3, atol=1e-6) for norm in (own_norm, want)):
        hint = ""
        if np.isclose(got, max_norm, rtol=1e-3):
            hint = " That is the norm after clipping: report what clip_grad_norm_ returns."
        raise CheckFailed(
            f"grad_norm should be the total norm of the gradient before clipping (the value "
            f"clip_grad_norm_ returns) = {want:.6g} with max_grad_norm={max_norm}, "
            f"got {got:.6g}.{hint}"
        )


def _check_sgd_step(cls: Any) -> None:
    _, _, student, ref, initial = side_by_side(cls, kind="nature", max_grad_norm=NO_CLIP)
    same_update(
        update(student, initial),
        update(ref, initial),
        "one SGD step of the course network (lr=0.1, no clipping, default coefficients), "
        "compared with the reference",
    )


def _check_coefficients(cls: Any) -> None:
    coefs = {"value_loss_coef": 0.7, "entropy_coef": 0.2, "max_grad_norm": NO_CLIP}
    _, _, student, ref, initial = side_by_side(cls, **coefs)
    same_update(
        update(student, initial),
        update(ref, initial),
        "one SGD step with value_loss_coef=0.7, entropy_coef=0.2, compared with the reference",
    )


def _check_detached(cls: Any) -> None:
    model = copy.deepcopy(initial_model("two_heads", 0))
    before = copy.deepcopy(model.value_head.state_dict())
    coefs = {"value_loss_coef": 0.0, "entropy_coef": 0.01, "max_grad_norm": NO_CLIP}
    run_steps(cls, model, "sgd", **coefs)
    moved = max(float((model.value_head.state_dict()[k] - before[k]).abs().max()) for k in before)
    if moved > 1e-7:
        raise CheckFailed(
            "with value_loss_coef=0 and a network whose value head shares no parameter with "
            f"the policy head, one SGD step moved the value head by {moved:.3g}: the policy "
            "loss sends gradient into the values. Use advantages.detach() in the policy loss "
            "(and multiply value_loss by value_loss_coef)"
        )


# The three checks below compare the student's code with itself (its own gradient), so a
# mistake in the loss does not cost these points again.


def _check_optimizer_used(cls: Any) -> None:
    sgd_update, _ = student_step(cls, max_grad_norm=NO_CLIP)  # SGD, lr = 0.1
    require_update(sgd_update)
    gradient = -sgd_update / 0.1
    rms_update, _ = student_step(cls, optimizer="rmsprop", max_grad_norm=NO_CLIP)
    # First RMSprop step: square_avg = (1 - alpha) g^2, update = -lr g / (sqrt(square_avg) + eps)
    expected = -7e-4 * gradient / ((0.01 * gradient**2).sqrt() + 1e-5)
    same_update(
        rms_update,
        expected,
        "with an RMSprop optimizer (lr=7e-4, alpha=0.99, eps=1e-5), one step should be "
        "RMSprop's step on your own gradient: step with the optimizer given to __init__",
    )


def _check_clipping(cls: Any) -> None:
    max_norm = 1e-3
    unclipped, _ = student_step(cls, max_grad_norm=NO_CLIP)  # SGD, lr = 0.1
    require_update(unclipped)
    clipped, _ = student_step(cls, max_grad_norm=max_norm)
    norm = float(unclipped.norm()) / 0.1
    expected = unclipped * min(1.0, max_norm / max(norm, 1e-12))
    same_update(
        clipped,
        expected,
        f"with max_grad_norm={max_norm:g} your gradient (norm {norm:.3g}) should be scaled down "
        f"to norm {max_norm:g}: call nn.utils.clip_grad_norm_(parameters, max_grad_norm) after "
        "backward() and before optimizer.step()",
    )


def _check_two_steps(cls: Any) -> None:
    model = copy.deepcopy(initial_model("two_heads", 0))
    agent = cls(GradingPolicy(model), make_optimizer("sgd", model), max_grad_norm=NO_CLIP)
    agent.step(merged_trajectory(model, seed=0))
    require_update(update(model, initial_model("two_heads", 0)))
    after_first = copy.deepcopy(model)
    fresh = copy.deepcopy(model)
    for param in fresh.parameters():
        param.grad = None  # a new agent starts without the first step's gradient
    agent.step(merged_trajectory(model, seed=1))
    run_steps(cls, fresh, "sgd", seeds=(1,), max_grad_norm=NO_CLIP)
    same_update(
        update(model, after_first),
        update(fresh, after_first),
        "the second of two steps in a row should equal the same step made by a fresh A2C "
        "(the first step's gradient leaked into the second: call optimizer.zero_grad() before "
        "loss.backward() in every step)",
    )


SUBCHECKS = (
    SubCheck(
        "stats", "step() returns a dict of floats: " + ", ".join(STAT_KEYS), 1, _check_stats_dict
    ),
    SubCheck(
        "policy_loss",
        "policy_loss = -mean(log_probs * advantages)",
        2,
        _term_check("policy_loss", "-mean(log_probs * (value_targets - values))"),
    ),
    SubCheck(
        "value_loss",
        "value_loss = mean((value_targets - values)^2)",
        1,
        _term_check("value_loss", "mean((value_targets - values) ** 2)"),
    ),
    SubCheck(
        "entropy",
        "entropy = mean(-sum_a pi log pi)",
        1,
        _term_check("entropy", "mean over rows of -sum_a softmax(logits) * log_softmax(logits)"),
    ),
    SubCheck("loss", "loss = policy_loss + c_v * value_loss - c_e * entropy", 1, _check_loss),
    SubCheck("grad_norm", "grad_norm is the norm before clipping", 1, _check_grad_norm),
    SubCheck("sgd_step", "one SGD step gives the reference's parameters", 3, _check_sgd_step),
    SubCheck("detached", "advantages are detached in the policy loss", 2, _check_detached),
    SubCheck(
        "coefficients",
        "value_loss_coef and entropy_coef are honoured in the update",
        1,
        _check_coefficients,
    ),
    SubCheck(
        "optimizer", "steps with the optimizer it was given (RMSprop)", 1, _check_optimizer_used
    ),
    SubCheck("clipping", "gradients are clipped to max_grad_norm", 2, _check_clipping),
    SubCheck("zero_grad", "two steps in a row (zero_grad in every step)", 2, _check_two_steps),
)
