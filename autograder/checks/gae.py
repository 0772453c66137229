"""Checks of the bonus ``gae`` part: ``ComputeGAE(policy, gamma, lambda_)(trajectory)``.

Contract (``solutions/reference.py``), with V_t = values[t] (detached), V_T =
V(latest_observation)::

    delta_t = r_t + gamma * (1 - d_t) * V_{t+1} - V_t
    A_t     = delta_t + gamma * lambda_ * (1 - d_t) * A_{t+1},     A_T = 0
    value_targets_t = A_t + V_t

both stored in place (``advantages`` and ``value_targets``, each a ``(T, N)`` tensor or a
list of T ``(N,)``), without autograd graph. ``lambda_ = 1`` must give the n-step targets of
``ComputeValueTargets``; ``lambda_ = 0`` the one-step TD errors. Driven like
``compute_value_targets``, with the stub policy of :mod:`autograder.checks.fakes`; the
trajectory's ``values`` are the stub's values of its observations, so recomputing them with
``policy.model`` is as good as reading them.
"""

from __future__ import annotations

from typing import Any

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

__all__ = ["SUBCHECKS"]


def _run(cls: Any, case: ReturnsCase):
    """(advantages, value_targets, trajectory, snapshot before) after ``cls`` ran on ``case``."""
    policy, trajectory = case.build()
    before = snapshot(trajectory)
    cls(policy, case.gamma, case.lambda_)(trajectory)
    advantages = read_per_step(trajectory, "advantages", case.shape)
    targets = read_per_step(trajectory, "value_targets", case.shape)
    return advantages, targets, trajectory, before


def _compare_on(cases: list[ReturnsCase], explain: str = ""):
    def run(cls: Any) -> None:
        for case in cases:  # smallest first
            want_adv, want_targets, _, _ = _run(reference.ComputeGAE, case)
            try:
                got_adv, got_targets, _, _ = _run(cls, case)
            except CheckFailed as failure:
                raise CheckFailed(f"{failure} (input: {case.render(with_values=True)})") from None
            for key, got, want in (
                ("advantages", got_adv, want_adv),
                ("value_targets", got_targets, want_targets),
            ):
                if not is_close(got, want):
                    hint = ""
                    if key == "value_targets" and is_close(got, want_adv):
                        hint = " Hint: value_targets = advantages + values, not the advantages."
                    raise CheckFailed(
                        f"smallest failing input: {case.render(with_values=True)}. Expected "
                        f"{key} (T, N) = {fmt(want)}, got {fmt(got)}.{explain}{hint}"
                    )

    return run


def _lambda_one_is_nstep(cls: Any) -> None:
    for case in LAMBDA_ONE:
        expected = nstep_targets(case.rewards, case.resets, case.bootstrap, case.gamma)
        got_adv, got_targets, _, _ = _run(cls, case)
        if not (is_close(got_targets, expected) and is_close(got_adv, expected - case.values)):
            raise CheckFailed(
                f"with lambda_=1 on {case.render(with_values=True)}: value_targets should equal "
                f"the n-step targets {fmt(expected)} and advantages those minus the values "
                f"{fmt(expected - case.values)}; got value_targets {fmt(got_targets)}, "
                f"advantages {fmt(got_adv)}"
            )


def _no_graph(cls: Any) -> None:
    _, _, trajectory, _ = _run(cls, MIXED[2])
    for key in ("advantages", "value_targets"):
        if has_graph(trajectory[key]):
            raise CheckFailed(
                f"{key} carry an autograd graph: compute them from detached values "
                "(values[t].detach(), or under torch.no_grad())"
            )


def _inputs_unchanged(cls: Any) -> None:
    _, _, trajectory, before = _run(cls, MIXED[2])
    changed = changed_keys(before, trajectory, ignore={"advantages", "value_targets"})
    if changed:
        raise CheckFailed(
            f"your transform changed trajectory entries it should only read: {changed}"
        )


LAMBDA_ONE = [
    make_case(51, 1, 1, 0.9, lambda_=1.0),
    make_case(52, 4, 2, 0.99, reset_prob=0.3, last_resets=[True, False], lambda_=1.0),
]
LAMBDA_ZERO = [
    make_case(61, 2, 1, 0.9, lambda_=0.0),
    make_case(62, 5, 3, 0.99, reset_prob=0.3, lambda_=0.0),
]
NO_RESETS = [
    make_case(71, 1, 1, 0.9, lambda_=0.5),
    make_case(72, 3, 2, 0.99, lambda_=0.95),
    make_case(73, 6, 3, 0.9, lambda_=0.8),
]
MIXED = [
    make_case(80, 3, 1, 0.9, lambda_=0.9, resets=[[False], [True], [False]]),
    make_case(81, 2, 2, 0.9, lambda_=0.5, last_resets=[True, False]),
    make_case(82, 5, 4, 0.99, reset_prob=0.3, lambda_=0.95),
    make_case(83, 8, 3, 1.0, reset_prob=0.25, lambda_=0.7),
    make_case(84, 20, 8, 0.99, reset_prob=0.2, lambda_=0.95),
]

SUBCHECKS = (
    SubCheck(
        "lambda_one",
        "lambda_ = 1 gives the n-step targets (advantages = targets - values)",
        2,
        _lambda_one_is_nstep,
    ),
    SubCheck(
        "lambda_zero",
        "lambda_ = 0 gives the one-step TD error delta_t",
        1,
        _compare_on(LAMBDA_ZERO, " (with lambda_=0, A_t = delta_t)"),
    ),
    SubCheck(
        "no_resets",
        "several gamma and lambda_ without resets, bootstrap from V(latest_observation)",
        2,
        _compare_on(NO_RESETS),
    ),
    SubCheck(
        "resets",
        "resets (also at the last step) cut both delta_t and the recursion",
        2,
        _compare_on(MIXED, " Both the bootstrap V_{t+1} and A_{t+1} are multiplied by (1 - d_t)."),
    ),
    SubCheck("no_graph", "advantages and value_targets carry no autograd graph", 1, _no_graph),
    SubCheck(
        "inputs_unchanged",
        "rewards, resets, values and observations are left unchanged",
        1,
        _inputs_unchanged,
    ),
)
