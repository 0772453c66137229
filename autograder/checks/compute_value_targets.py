"""Checks of the ``compute_value_targets`` part: ``ComputeValueTargets(policy, gamma)(trajectory)``.

Contract (design.md section 5)::

    v_T = V(latest_observation)                      no gradient
    v_t = r_t + gamma * (1 - reset_t) * v_{t+1}      t = T-1, ..., 0

stored in place as ``trajectory["value_targets"]``: a list of T ``(N,)`` tensors or one
``(T, N)`` tensor (numpy accepted), without autograd graph. The student's class is driven with
a stub policy (:mod:`autograder.checks.fakes`) whose values are known per observation, and the
expected targets come from the reference class on the same input. Each sub-check isolates one
idea (the backward sum, the resets, the bootstrap, gamma), so one mistake costs its own share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solutions import reference

from .base import CheckFailed, SubCheck, fmt, is_close
from .returns import (
    ReturnsCase,
    changed_keys,
    has_graph,
    make_case,
    nstep_targets,
    read_per_step,
    snapshot,
)

__all__ = ["SUBCHECKS", "diagnose"]


def _targets(cls: Any, case: ReturnsCase) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    policy, trajectory = case.build()
    before = snapshot(trajectory)
    cls(policy, case.gamma)(trajectory)
    return read_per_step(trajectory, "value_targets", case.shape), trajectory, before


def expected_targets(case: ReturnsCase) -> np.ndarray:
    """The reference's value targets for ``case``, float64 (T, N)."""
    return _targets(reference.ComputeValueTargets, case)[0]


def diagnose(case: ReturnsCase, got: np.ndarray) -> str:
    """A hint when ``got`` equals the result of a well-known mistake, else ``""``."""
    r, d, boot, gamma = case.rewards, case.resets.astype(float), case.bootstrap, case.gamma
    mistakes = [
        (
            nstep_targets(r, np.zeros_like(d), boot, gamma),
            "your targets ignore the resets: multiply gamma * v_{t+1} by (1 - resets[t]) so a "
            "return stops at the end of its episode",
        ),
        (
            nstep_targets(r, d, case.values[-1], gamma),
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
    expected = nstep_targets(r, d, boot, gamma)
    if case.shape[0] > 1 and is_close(got, expected[::-1]):
        return (
            "Hint: your targets are in reverse time order: the loop runs t = T-1, ..., 0, so "
            "reverse the list at the end (or write v_t at index t)."
        )
    for result, hint in mistakes:
        if not is_close(result, expected) and is_close(got, result):
            return f"Hint: {hint}."
    return ""


def _compare_on(cases: list[ReturnsCase]):
    """A sub-check that compares the student's targets with the reference on ``cases``."""

    def run(cls: Any) -> None:
        for case in cases:  # ordered smallest first: the first failure is the smallest input
            expected = expected_targets(case)
            try:
                got = _targets(cls, case)[0]
            except CheckFailed as failure:
                raise CheckFailed(f"{failure} (input: {case.render()})") from None
            if not is_close(got, expected):
                raise CheckFailed(
                    f"smallest failing input: {case.render()}. Expected value_targets (T, N) = "
                    f"{fmt(expected)}, got {fmt(got)}. {diagnose(case, got)}".rstrip()
                )

    return run


_NO_VALUES = dict(with_values=False)

DISCOUNTED_SUM = [
    make_case(1, 1, 1, 0.99, **_NO_VALUES),
    make_case(2, 2, 1, 0.99, **_NO_VALUES),
    make_case(3, 3, 2, 0.99, **_NO_VALUES),
    make_case(4, 5, 3, 0.99, **_NO_VALUES),
    make_case(5, 8, 4, 0.99, **_NO_VALUES),
]
RESETS = [
    make_case(11, 2, 1, 0.99, resets=[[True], [False]], **_NO_VALUES),
    make_case(12, 3, 2, 0.99, reset_prob=0.4, **_NO_VALUES),
    make_case(13, 6, 3, 0.99, reset_prob=0.3, **_NO_VALUES),
    make_case(14, 10, 4, 0.99, reset_prob=0.3, **_NO_VALUES),
]
BOOTSTRAP = [
    make_case(21, 1, 1, 0.99),
    make_case(22, 2, 2, 0.99),
    make_case(23, 5, 3, 0.99),
]
TOGETHER = [
    make_case(31, 1, 1, 0.99, last_resets=[True]),
    make_case(32, 2, 2, 0.99, last_resets=[True, False]),
    make_case(33, 5, 4, 0.99, reset_prob=0.3, last_resets=[False, True, False, True]),
    make_case(34, 20, 8, 0.99, reset_prob=0.2),
]
GAMMAS = [
    make_case(41, 3, 2, 0.0, reset_prob=0.3),
    make_case(44, 4, 2, 0.5, reset_prob=0.3),
    make_case(42, 3, 2, 1.0, reset_prob=0.3),
    make_case(43, 6, 3, 1.0, reset_prob=0.2),
]


def _no_graph(cls: Any) -> None:
    case = TOGETHER[2]
    _, trajectory, _ = _targets(cls, case)
    if has_graph(trajectory["value_targets"]):
        raise CheckFailed(
            "value_targets carry an autograd graph (requires_grad=True) on input "
            f"{case.render()}. Targets are constants: compute V(latest_observation) under "
            "`with torch.no_grad():` (or .detach() it), otherwise the value loss also moves "
            "the bootstrap value"
        )


def _inputs_unchanged(cls: Any) -> None:
    case = TOGETHER[2]
    _, trajectory, before = _targets(cls, case)
    changed = changed_keys(before, trajectory, ignore={"value_targets"})
    if changed:
        raise CheckFailed(
            f"your transform changed trajectory entries it should only read: {changed} "
            f"(input: {case.render()}). Work on copies, e.g. `np.stack(trajectory['rewards'])` "
            "or `torch.as_tensor(...).clone()`, instead of updating the arrays in place"
        )


SUBCHECKS = (
    SubCheck(
        "discounted_sum",
        "discounted sum v_t = r_t + gamma * v_{t+1}, computed backwards (values 0, no resets)",
        2,
        _compare_on(DISCOUNTED_SUM),
    ),
    SubCheck(
        "resets",
        "a reset at step t stops the sum: (1 - resets[t]) (values 0)",
        3,
        _compare_on(RESETS),
    ),
    SubCheck(
        "bootstrap",
        "bootstrap v_T = V(latest_observation) (no resets)",
        2,
        _compare_on(BOOTSTRAP),
    ),
    SubCheck(
        "together",
        "rewards, resets (also at the last step) and bootstrap together",
        2,
        _compare_on(TOGETHER),
    ),
    SubCheck("gamma", "gamma from __init__ is used (gamma = 0, 0.5 and 1)", 1, _compare_on(GAMMAS)),
    SubCheck("no_graph", "value_targets carry no autograd graph", 1, _no_graph),
    SubCheck(
        "inputs_unchanged",
        "rewards, resets, values and observations are left unchanged",
        1,
        _inputs_unchanged,
    ),
)
