"""Checks of the ``compute_value_targets`` part: ``ComputeValueTargets(policy, gamma)(trajectory)``.

Contract (docs/design.md)::

    v_T = V(latest_observation)                      no gradient
    v_t = r_t + gamma * (1 - reset_t) * v_{t+1}      t = T-1, ..., 0

stored in place as ``trajectory["value_targets"]``: a list of T ``(N,)`` tensors or one
``(T, N)`` tensor (numpy accepted), without autograd graph. The student's class is driven with a
fixture policy whose values are known per observation; the expected targets are the reference's
on the same case, drawn for this grading. Each sub-check isolates one idea (the backward sum,
the resets, the bootstrap, gamma), so one mistake costs its own share; "no graph" and "inputs
unchanged" are gated on the discounted sums. Feedback shows the input, the student's targets
and where they are wrong, never the expected targets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.core.judging.parts.returns import (
    bootstrap,
    make_case,
    nstep_targets,
    read_per_step,
    render,
    state_values,
)
from autograder.core.judging.parts.subcheck import (
    CheckFailed,
    SubCheck,
    fmt,
    is_close,
    reference_observation,
    where_wrong,
)
from solutions import reference

__all__ = ["GATE", "SUBCHECKS", "diagnose", "draw_cases"]

GATE = ("discounted_sum",)


def diagnose(case: dict[str, Any], got: np.ndarray) -> str:
    """A hint when ``got`` equals the result of a well-known mistake, else ``""``."""
    r, d, boot, gamma = (
        case["rewards"],
        case["resets"].astype(float),
        bootstrap(case),
        case["gamma"],
    )
    expected = nstep_targets(r, d, boot, gamma)
    mistakes = [
        (
            nstep_targets(r, np.zeros_like(d), boot, gamma),
            "your targets ignore the resets: multiply gamma * v_{t+1} by (1 - resets[t]) so a "
            "return stops at the end of its episode",
        ),
        (
            nstep_targets(r, d, state_values(case)[-1], gamma),
            "you bootstrapped from V(observations[-1]), the observation the last action was "
            "taken in; bootstrap from V(trajectory['state']['latest_observation']), the one after it",
        ),
        (
            nstep_targets(r, d, np.zeros_like(boot), gamma),
            "there is no bootstrap: start the backward loop from v_T = V(latest_observation), "
            "not from 0",
        ),
        (
            nstep_targets(r, d, boot, gamma, reset_shift=1),
            "off by one: use resets[t] (the episode ended at step t) at step t, not resets[t+1]",
        ),
        (
            nstep_targets(r, d, boot, gamma, reset_shift=-1),
            "off by one: use resets[t] (the episode ended at step t) at step t, not resets[t-1]",
        ),
        (
            nstep_targets(r, d, boot, 0.99),
            "your result matches gamma=0.99: use the gamma passed to __init__ (self.gamma)",
        ),
    ]
    if r.shape[0] > 1 and is_close(got, expected[::-1]):
        return (
            "Hint: your targets are in reverse time order: the loop runs t = T-1, ..., 0, so "
            "reverse the list at the end (or write v_t at index t)."
        )
    for result, hint in mistakes:
        if not is_close(result, expected) and is_close(got, result):
            return f"Hint: {hint}."
    return ""


def _targets(observation: dict[str, Any], case: dict[str, Any]) -> None:
    want = reference_observation(reference.ComputeValueTargets, "value_targets", case)
    expected = read_per_step(want, "value_targets", case["rewards"].shape)
    try:
        got = read_per_step(observation, "value_targets", case["rewards"].shape)
    except CheckFailed as failure:
        raise CheckFailed(f"{failure} (input: {render(case)})") from None
    if not is_close(got, expected):
        raise CheckFailed(
            f"failing input: {render(case)}. Your value_targets (T, N) = {fmt(got)}: "
            f"{where_wrong(got, expected)}. {diagnose(case, got)}".rstrip()
        )


def _no_graph(observation: dict[str, Any], case: dict[str, Any]) -> None:
    read_per_step(observation, "value_targets", case["rewards"].shape)
    if observation["value_targets_has_graph"]:
        raise CheckFailed(
            "value_targets carry an autograd graph (requires_grad=True) on input "
            f"{render(case)}. Targets are constants: compute V(latest_observation) without "
            "recording a graph, otherwise the value loss also moves the bootstrap value"
        )


def _inputs_unchanged(observation: dict[str, Any], case: dict[str, Any]) -> None:
    changed = [key for key in observation["changed"] if key != "value_targets"]
    if changed:
        raise CheckFailed(
            f"your transform changed trajectory entries it should only read: {changed} "
            f"(input: {render(case)}). Compute the targets into new arrays or tensors "
            "instead of updating the trajectory's arrays in place"
        )


_NO_VALUES = {"with_values": False}


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: fixed sizes and discounts, drawn rewards, resets and values."""

    def case(T: int, N: int, gamma: float, **options: Any) -> dict[str, Any]:
        return make_case(int(rng.integers(0, 2**31)), T, N, gamma, **options)

    return {
        "discounted_sum": [
            case(T, N, 0.99, **_NO_VALUES) for T, N in ((1, 1), (2, 1), (3, 2), (5, 3), (8, 4))
        ],
        "resets": [
            case(2, 1, 0.99, resets=[[True], [False]], **_NO_VALUES),
            case(3, 2, 0.99, reset_prob=0.4, **_NO_VALUES),
            case(6, 3, 0.99, reset_prob=0.3, **_NO_VALUES),
            case(10, 4, 0.99, reset_prob=0.3, **_NO_VALUES),
        ],
        "bootstrap": [case(1, 1, 0.99), case(2, 2, 0.99), case(5, 3, 0.99)],
        "together": [
            case(1, 1, 0.99, last_resets=[True]),
            case(2, 2, 0.99, last_resets=[True, False]),
            case(5, 4, 0.99, reset_prob=0.3, last_resets=[False, True, False, True]),
            case(20, 8, 0.99, reset_prob=0.2),
        ],
        "gamma": [
            case(3, 2, 0.0, reset_prob=0.3),
            case(4, 2, 0.5, reset_prob=0.3),
            case(3, 2, 1.0, reset_prob=0.3),
            case(6, 3, 1.0, reset_prob=0.2),
        ],
    }


def _compare(key: str, title: str, weight: int) -> SubCheck:
    return SubCheck(key, title, weight, "value_targets", key, _targets)


SUBCHECKS = (
    _compare(
        "discounted_sum",
        "discounted sum v_t = r_t + gamma * v_{t+1}, computed backwards (values 0, no resets)",
        2,
    ),
    _compare("resets", "a reset at step t stops the sum: (1 - resets[t]) (values 0)", 3),
    _compare("bootstrap", "bootstrap v_T = V(latest_observation) (no resets)", 2),
    _compare("together", "rewards, resets (also at the last step) and bootstrap together", 2),
    _compare("gamma", "gamma from __init__ is used (gamma = 0, 0.5 and 1)", 1),
    SubCheck(
        "no_graph",
        "value_targets carry no autograd graph",
        1,
        "value_targets",
        "together:2",
        _no_graph,
        gated=True,
    ),
    SubCheck(
        "inputs_unchanged",
        "rewards, resets, values and observations are left unchanged",
        1,
        "value_targets",
        "together:2",
        _inputs_unchanged,
        gated=True,
    ),
)
