"""Visible checks of the value targets: n-step :func:`check_compute_value_targets` and the
bonus :func:`check_gae`, both on the same hand-worked trajectory (T=3, N=2, gamma 0.5).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._common import as_array, call_student, coded_obs, fail, report_ok, value_policy
from .properties import changed_keys, snapshot
from .properties import has_graph as _has_graph

# ---------------------------------------------------------------------------- targets
#: The hand-worked trajectory: T=3 steps, N=2 envs, gamma 0.5, env 1 ends at t=1.
_REWARDS = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # r_t, (T, N)
_RESETS = [[False, False], [False, True], [False, False]]  # reset_t, (T, N)
#: v_T = V(latest_observation) = [4, 8]; v_t = r_t + 0.5 (1 - reset_t) v_{t+1}, backwards.
_TARGETS = [[1.75, 0.5], [1.5, 1.0], [3.0, 5.0]]
_TARGET_MISTAKES = [
    (
        [[1.75, 1.75], [1.5, 3.5], [3.0, 5.0]],
        "env 1 ended at t=1, so v_1 must not add gamma * v_2: did you forget (1 - reset_t)?",
    ),
    (
        [[1.5, 0.5], [1.0, 1.0], [2.0, 4.0]],
        "you bootstrapped from observations[-1] (V=[2, 6]); use state['latest_observation'] (V=[4, 8]).",
    ),
    (
        [[1.25, 0.5], [0.5, 1.0], [1.0, 1.0]],
        "no bootstrap: these targets treat everything after the rollout as worth 0; the last "
        "step's targets must count the critic's value of the observation that follows it.",
    ),
    (
        [[6.0, 1.0], [5.0, 1.0], [5.0, 9.0]],
        "gamma is missing (these are gamma=1 sums): use self.gamma.",
    ),
    (
        [[3.0, 5.0], [1.5, 1.0], [1.75, 0.5]],
        "the targets are in reverse time order: reverse the list you built backwards.",
    ),
]


def _target_trajectory() -> dict[str, Any]:
    return {
        "observations": [coded_obs([7, 7]), coded_obs([1, 3]), coded_obs([2, 6])],  # V(obs_t)
        "rewards": [np.array(r, dtype=np.float32) for r in _REWARDS],
        "resets": [np.array(d, dtype=bool) for d in _RESETS],
        "state": {"latest_observation": coded_obs([4, 8]), "env_steps": 3},
    }


#: A second trajectory, T=1, N=2, where env 0's episode ends at the last step: V(obs_0) =
#: [2, 6], V(latest) = [4, 8], r = [1, 0], gamma 0.5, so v_0 = [1 + 0, 0 + 0.5 * 8] = [1, 4]
#: (and with GAE, A_0 = v_0 - V(obs_0) = [-1, -2]).
_LAST_TARGETS = [[1.0, 4.0]]
_LAST_ADVANTAGES = [[-1.0, -2.0]]


def _last_step_trajectory() -> dict[str, Any]:
    return {
        "observations": [coded_obs([2, 6])],
        "rewards": [np.array([1.0, 0.0], dtype=np.float32)],
        "resets": [np.array([True, False])],
        "state": {"latest_observation": coded_obs([4, 8]), "env_steps": 1},
    }


def _only_read(part: str, before: dict[str, Any], trajectory: dict[str, Any]) -> None:
    """Fail when the transform changed an entry it should only read."""
    changed = changed_keys(before, trajectory)
    if changed:
        fail(
            part,
            f"your transform changed trajectory entries it should only read: {changed}.",
            hint="compute the result into new arrays or tensors; an in-place update of the "
            "trajectory's own arrays (`+=` on them) changes the data the rest of training uses.",
        )


def _ends_at_last_step(part: str, key: str, got: Any, want: list[list[float]]) -> None:
    """Fail unless ``got`` (``key`` of the last-step trajectory) equals the hand-worked ``want``."""
    got = as_array(got, part, key)
    if got.shape != (1, 2) or not np.allclose(got, want, atol=1e-5):
        fail(
            part,
            f"wrong `{key}` when an episode ends at the last step: T=1, N=2, r=[[1, 0]], "
            "resets=[[True, False]], V(obs_0)=[2, 6], V(latest)=[4, 8], gamma=0.5.",
            np.array(want),
            got,
            "an episode that ends at the last step does not bootstrap either: (1 - reset_t) "
            "also multiplies the value that follows the rollout.",
        )


def check_compute_value_targets(ComputeValueTargets: type) -> None:
    """``ComputeValueTargets(policy, gamma)(trajectory)`` adds n-step targets, shape (T, N), no graph."""
    part = "ComputeValueTargets"
    trajectory = _target_trajectory()
    keys = sorted(trajectory)
    before = snapshot(trajectory)
    call_student(part, call_student(part, ComputeValueTargets, value_policy(), gamma=0.5), trajectory)
    if "value_targets" not in trajectory:
        fail(
            part,
            "trajectory['value_targets'] is missing.",
            [*keys, "value_targets"],
            sorted(trajectory),
            "add it to the trajectory in place; what __call__ returns is ignored.",
        )
    raw = trajectory["value_targets"]
    targets = as_array(raw, part, "value_targets")
    if targets.shape != (3, 2):
        fail(
            part,
            "value_targets must be T=3 tensors of shape (N=2,) or one (3, 2) tensor.",
            (3, 2),
            targets.shape,
        )
    if not np.allclose(targets, _TARGETS, atol=1e-5):
        hint = (
            "each target is the step's reward plus the discounted target of the next step, cut "
            "where an episode ended; work from the last step back, starting from the critic's "
            "value after the rollout (part 3's recursion)."
        )
        for wrong, why in _TARGET_MISTAKES:
            if np.allclose(targets, wrong, atol=1e-5):
                hint = why
        fail(
            part,
            "wrong targets for r=[[1,0],[0,1],[1,1]], resets at (t=1, env 1), "
            "V(latest)=[4,8], gamma=0.5 (rows: t, columns: env).",
            np.array(_TARGETS),
            targets,
            hint,
        )
    if _has_graph(raw):
        fail(
            part,
            "value_targets carry an autograd graph.",
            hint="targets are constants for the loss: the bootstrap value V(latest_observation) "
            "is computed without recording a graph.",
        )
    _only_read(part, before, trajectory)
    last = _last_step_trajectory()
    call_student(part, call_student(part, ComputeValueTargets, value_policy(), gamma=0.5), last)
    _ends_at_last_step(part, "value_targets", last.get("value_targets", []), _LAST_TARGETS)
    report_ok(
        "ComputeValueTargets: (3, 2) targets [[1.75, 0.5], [1.5, 1.0], [3.0, 5.0]] with the reset, "
        "no graph, inputs left as they were; a reset at the last step stops the bootstrap"
    )


# ---------------------------------------------------------------------------- gae (bonus)
#: Same trajectory as the targets, V(obs_t) = [[7, 7], [1, 3], [2, 6]], V_T = [4, 8],
#: gamma = lambda_ = 0.5: delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t,
#: A_t = delta_t + gamma lambda_ (1 - d_t) A_{t+1}, A_T = 0; value_targets = A + V.
_GAE_ADVANTAGES = [[-5.4375, -6.0], [0.25, -2.0], [1.0, -1.0]]
_GAE_TARGETS = [[1.5625, 1.0], [1.25, 1.0], [3.0, 5.0]]
_GAE_MISTAKES = [
    (
        [[-5.4375, -5.3125], [0.25, 0.75], [1.0, -1.0]],
        "mask both delta_t and the A_{t+1} term with (1 - d_t).",
    ),
    ([[-5.4375, -6.0625], [0.25, -2.25], [1.0, -1.0]], "the A_{t+1} term also needs (1 - d_t)."),
    (
        [[-5.25, -6.5], [0.5, -2.0], [1.0, -1.0]],
        "lambda_ is missing: these advantages weight the next step's advantage by gamma alone.",
    ),
    ([[-5.5, -6.0], [0.0, -2.0], [0.0, -2.0]], "bootstrap V_T from state['latest_observation']."),
]


def check_gae(ComputeGAE: type) -> None:
    """``ComputeGAE(policy, gamma, lambda_)(trajectory)`` adds (T, N) advantages and value targets."""
    part = "ComputeGAE"
    trajectory = _target_trajectory()
    policy = value_policy()
    trajectory["values"] = [policy.model(torch.as_tensor(o))[1] for o in trajectory["observations"]]
    keys = sorted(trajectory)
    before = snapshot(trajectory)
    call_student(part, call_student(part, ComputeGAE, policy, gamma=0.5, lambda_=0.5), trajectory)
    for key in ("advantages", "value_targets"):
        if key not in trajectory:
            fail(
                part,
                f"trajectory['{key}'] is missing.",
                sorted([*keys, "advantages", "value_targets"]),
                sorted(trajectory),
                "add both keys in place.",
            )
        if _has_graph(trajectory[key]):
            fail(
                part,
                f"`{key}` carries an autograd graph.",
                hint="advantages and targets are constants for the loss: compute them from "
                "the values' numbers, without recording a graph.",
            )
    advantages = as_array(trajectory["advantages"], part, "advantages")
    if advantages.shape != (3, 2) or not np.allclose(advantages, _GAE_ADVANTAGES, atol=1e-5):
        hint = (
            "each advantage is the step's TD error plus the next step's advantage, discounted "
            "by gamma and lambda_ and cut where an episode ended; work from the last step back "
            "(part 6's formulas)."
        )
        for wrong, why in _GAE_MISTAKES:
            if advantages.shape == (3, 2) and np.allclose(advantages, wrong, atol=1e-5):
                hint = why
        fail(
            part,
            "wrong advantages (gamma = lambda_ = 0.5, V_t = [[7, 7], [1, 3], [2, 6]], V_T = [4, 8]).",
            np.array(_GAE_ADVANTAGES),
            advantages,
            hint,
        )
    targets = as_array(trajectory["value_targets"], part, "value_targets")
    if targets.shape != (3, 2) or not np.allclose(targets, _GAE_TARGETS, atol=1e-5):
        fail(
            part,
            "wrong value_targets.",
            np.array(_GAE_TARGETS),
            targets,
            "the value targets follow from the advantages and the values V_t (part 6).",
        )
    _only_read(part, before, trajectory)
    last = _last_step_trajectory()
    last["values"] = [policy.model(torch.as_tensor(o))[1] for o in last["observations"]]
    call_student(part, call_student(part, ComputeGAE, policy, gamma=0.5, lambda_=0.5), last)
    _ends_at_last_step(part, "advantages", last.get("advantages", []), _LAST_ADVANTAGES)
    report_ok(
        "ComputeGAE: (3, 2) advantages and value_targets = advantages + V, with the reset, no "
        "graph, inputs left as they were; a reset at the last step stops the bootstrap"
    )
