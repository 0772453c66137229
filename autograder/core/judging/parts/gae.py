"""Checks of the bonus ``gae`` part: ``ComputeGAE(policy, gamma, lambda_)(trajectory)``.

Contract (``solutions/reference.py``), with V_t = values[t] (detached), V_T =
V(latest_observation)::

    delta_t = r_t + gamma * (1 - d_t) * V_{t+1} - V_t
    A_t     = delta_t + gamma * lambda_ * (1 - d_t) * A_{t+1},     A_T = 0
    value_targets_t = A_t + V_t

both stored in place (``advantages`` and ``value_targets``, each a ``(T, N)`` tensor or a list
of T ``(N,)``), without autograd graph. ``lambda_ = 1`` must give the n-step targets of
``ComputeValueTargets``; ``lambda_ = 0`` the one-step TD errors. Driven like
``compute_value_targets``: the trajectory's ``values`` are the fixture's values of its
observations, so recomputing them with ``policy.model`` is as good as reading them.
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

__all__ = ["GATE", "SUBCHECKS", "draw_cases"]

GATE = ("lambda_one",)


def _both(observation: dict[str, Any], case: dict[str, Any]):
    shape = case["rewards"].shape
    try:
        return (
            read_per_step(observation, "advantages", shape),
            read_per_step(observation, "value_targets", shape),
        )
    except CheckFailed as failure:
        raise CheckFailed(f"{failure} (input: {render(case, with_values=True)})") from None


def _compare(explain: str = ""):
    def judge(observation: dict[str, Any], case: dict[str, Any]) -> None:
        want = _both(reference_observation(reference.ComputeGAE, "gae", case), case)
        got = _both(observation, case)
        for key, got_value, want_value in zip(
            ("advantages", "value_targets"), got, want, strict=True
        ):
            if not is_close(got_value, want_value):
                hint = ""
                if key == "value_targets" and is_close(got_value, want[0]):
                    hint = " Hint: value_targets = advantages + values, not the advantages."
                raise CheckFailed(
                    f"failing input: {render(case, with_values=True)}. Your {key} (T, N) = "
                    f"{fmt(got_value)}: {where_wrong(got_value, want_value)}.{explain}{hint}"
                )

    return judge


def _lambda_one(observation: dict[str, Any], case: dict[str, Any]) -> None:
    expected = nstep_targets(case["rewards"], case["resets"], bootstrap(case), case["gamma"])
    advantages, targets = _both(observation, case)
    if not (is_close(targets, expected) and is_close(advantages, expected - state_values(case))):
        raise CheckFailed(
            f"with lambda_=1 on {render(case, with_values=True)}: value_targets should equal "
            f"the n-step targets and advantages those minus the values; got value_targets "
            f"{fmt(targets)} ({where_wrong(targets, expected)}), advantages {fmt(advantages)} "
            f"({where_wrong(advantages, expected - state_values(case))}). Both the bootstrap "
            "V_{t+1} and A_{t+1} are multiplied by (1 - d_t)"
        )


def _no_graph(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _both(observation, case)
    for key in ("advantages", "value_targets"):
        if observation[f"{key}_has_graph"]:
            raise CheckFailed(
                f"{key} carry an autograd graph: they are constants for the loss, computed "
                "from the values' numbers without recording a graph"
            )


def _inputs_unchanged(observation: dict[str, Any], case: dict[str, Any]) -> None:
    changed = [k for k in observation["changed"] if k not in ("advantages", "value_targets")]
    if changed:
        raise CheckFailed(
            f"your transform changed trajectory entries it should only read: {changed}"
        )


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: fixed sizes, discounts and lambdas; drawn rewards, resets, values."""

    def case(T: int, N: int, gamma: float, **options: Any) -> dict[str, Any]:
        return make_case(int(rng.integers(0, 2**31)), T, N, gamma, **options)

    return {
        "lambda_one": [
            case(1, 1, 0.9, lambda_=1.0),
            case(4, 2, 0.99, reset_prob=0.3, last_resets=[True, False], lambda_=1.0),
            # a reset inside the rollout in every grading: the trace must stop there too
            case(
                4,
                2,
                0.99,
                lambda_=1.0,
                resets=[[False, False], [True, False], [False, True], [False, False]],
            ),
        ],
        "lambda_zero": [
            case(2, 1, 0.9, lambda_=0.0),
            case(5, 3, 0.99, reset_prob=0.3, lambda_=0.0),
        ],
        "no_resets": [
            case(1, 1, 0.9, lambda_=0.5),
            case(3, 2, 0.99, lambda_=0.95),
            case(6, 3, 0.9, lambda_=0.8),
        ],
        "resets": [
            case(3, 1, 0.9, lambda_=0.9, resets=[[False], [True], [False]]),
            case(2, 2, 0.9, lambda_=0.5, last_resets=[True, False]),
            case(5, 4, 0.99, reset_prob=0.3, lambda_=0.95),
            case(8, 3, 1.0, reset_prob=0.25, lambda_=0.7),
            case(20, 8, 0.99, reset_prob=0.2, lambda_=0.95),
        ],
    }


SUBCHECKS = (
    SubCheck(
        "lambda_one",
        "lambda_ = 1 gives the n-step targets (advantages = targets - values)",
        2,
        "gae",
        "lambda_one",
        _lambda_one,
    ),
    SubCheck(
        "lambda_zero",
        "lambda_ = 0 gives the one-step TD error delta_t",
        1,
        "gae",
        "lambda_zero",
        _compare(" (with lambda_=0, A_t = delta_t)"),
    ),
    SubCheck(
        "no_resets",
        "several gamma and lambda_ without resets, bootstrap from V(latest_observation)",
        2,
        "gae",
        "no_resets",
        _compare(),
    ),
    SubCheck(
        "resets",
        "resets (also at the last step) cut both delta_t and the recursion",
        2,
        "gae",
        "resets",
        _compare(" Both the bootstrap V_{t+1} and A_{t+1} are multiplied by (1 - d_t)."),
    ),
    SubCheck(
        "no_graph",
        "advantages and value_targets carry no autograd graph",
        1,
        "gae",
        "resets:2",
        _no_graph,
        gated=True,
    ),
    SubCheck(
        "inputs_unchanged",
        "rewards, resets, values and observations are left unchanged",
        1,
        "gae",
        "resets:2",
        _inputs_unchanged,
        gated=True,
    ),
)
