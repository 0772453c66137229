"""Visible self-checks for the A2C notebook: call them after writing each part.

Every check feeds your code a tiny hand-made input whose answer was worked out by hand
(gamma = 0.5 so the numbers stay readable), prints ``OK ...`` lines when the answer matches,
and otherwise raises :class:`CheckFailed` with what was expected, what came back (values and
shapes) and the most likely mistake. They need nothing but ``course_lib`` and torch, and they
are not the grading tests: the autograder compares your code with the reference more widely.

>>> from course_lib import checks
>>> checks.check_model(make_model)                       # doctest: +SKIP
OK make_model: logits (2, 6), values (2,), uint8 and float inputs agree, gradients reach all 10 tensors
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = [
    "CheckFailed",
    "check_a2c",
    "check_compute_value_targets",
    "check_gae",
    "check_merge_time_batch",
    "check_model",
    "check_policy",
    "require_implemented",
]

OBS_SHAPE = (4, 84, 84)


class CheckFailed(AssertionError):
    """A visible check found a wrong answer; the message says expected vs actual and a hint."""


def _fail(
    part: str, problem: str, expected: Any = None, actual: Any = None, hint: str = ""
) -> None:
    lines = [f"[{part}] {problem}"]
    if expected is not None:
        lines.append(f"  expected: {_show(expected)}")
    if actual is not None:
        lines.append(f"  actual:   {_show(actual)}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise CheckFailed("\n".join(lines))


def _show(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return (
            f"tensor {tuple(x.shape)} {x.dtype}: {np.round(x.detach().cpu().numpy(), 4).tolist()}"
        )
    if isinstance(x, np.ndarray):
        return f"array {x.shape} {x.dtype}: {np.round(x, 4).tolist()}"
    return repr(x)


def _ok(message: str) -> None:
    print(f"OK {message}")


def _as_array(x: Any, part: str, name: str) -> np.ndarray:
    """A tensor, an array or a list of either, as one float64 array (no graph)."""
    if isinstance(x, (list, tuple)):
        if not x:
            _fail(part, f"`{name}` is an empty list.")
        return np.stack([_as_array(v, part, name) for v in x])
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    _fail(part, f"`{name}` has an unexpected type.", "a torch tensor (or a list of them)", type(x))
    raise AssertionError("unreachable")


def _has_graph(x: Any) -> bool:
    items = x if isinstance(x, (list, tuple)) else [x]
    return any(isinstance(v, torch.Tensor) and v.requires_grad for v in items)


def _obs(codes: list[int]) -> np.ndarray:
    """A uint8 batch ``(len(codes), 4, 84, 84)`` whose pixels all equal the given codes."""
    return np.stack([np.full(OBS_SHAPE, c, dtype=np.uint8) for c in codes])


# ---------------------------------------------------------------- tiny fake models and policies
class _TableModel(nn.Module):
    """Reads an index from pixel [0, 0, 0] of each observation and looks up logits and a value."""

    def __init__(self, logits: list[list[float]], values: list[float]) -> None:
        super().__init__()
        self.logit_table = nn.Parameter(torch.tensor(logits, dtype=torch.float32))
        self.value_table = nn.Parameter(torch.tensor(values, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(obs, torch.Tensor):
            raise TypeError(
                f"the model expects a torch tensor, got {type(obs).__name__}: "
                "convert the observations with torch.as_tensor(obs, device=...)"
            )
        index = obs[:, 0, 0, 0].long()  # (N,)
        return self.logit_table[index], self.value_table[index]  # (N, A), (N,)


class _TablePolicy:
    """A correct policy around a :class:`_TableModel`, so that one part is checked at a time."""

    def __init__(self, model: _TableModel) -> None:
        self.model = model

    def act(self, inputs: np.ndarray) -> dict[str, Any]:
        logits, values = self.model(torch.as_tensor(inputs))
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": dist.log_prob(actions),
            "values": values,
        }


def _value_policy() -> _TablePolicy:
    """V(obs) = the pixel code of obs, for codes 0..9 (with an autograd graph)."""
    return _TablePolicy(_TableModel([[0.0, 0.0]] * 10, [float(c) for c in range(10)]))


# ---------------------------------------------------------------------------- model
def check_model(make_model: Callable[[int], nn.Module]) -> None:
    """``make_model(n_actions)(obs) -> (logits (N, A), values (N,))`` for uint8 or float obs."""
    part = "make_model"
    torch.manual_seed(0)
    model = make_model(6)
    if not isinstance(model, nn.Module):
        _fail(part, "make_model must return an nn.Module.", "nn.Module", type(model))
    obs = torch.as_tensor(np.random.default_rng(0).integers(0, 256, (2, *OBS_SHAPE), np.uint8))
    try:
        out = model(obs)
    except RuntimeError as err:
        _fail(
            part,
            f"the model fails on uint8 input (N, 4, 84, 84): {err}",
            hint="convert inside forward: x = obs.float() / 255.0 (Conv2d needs floats).",
        )
    if not (isinstance(out, tuple) and len(out) == 2):
        _fail(
            part, "the model must return a pair (logits, values).", "tuple of 2 tensors", type(out)
        )
    logits, values = out
    if tuple(logits.shape) != (2, 6):
        _fail(
            part,
            "logits have the wrong shape for N=2 observations, 6 actions.",
            (2, 6),
            tuple(logits.shape),
            "the policy head is nn.Linear(512, n_actions).",
        )
    if tuple(values.shape) != (2,):
        _fail(
            part,
            "values have the wrong shape.",
            (2,),
            tuple(values.shape),
            "the value head gives (N, 1): return values.squeeze(-1).",
        )
    float_logits, float_values = model(obs.float())
    if not (
        torch.allclose(logits, float_logits, atol=1e-5)
        and torch.allclose(values, float_values, atol=1e-5)
    ):
        _fail(
            part,
            "uint8 and float32 copies of the same observations give different outputs.",
            hint="convert with obs.float() / 255 for every input dtype; do not rescale floats twice.",
        )
    if not (torch.isfinite(logits).all() and torch.isfinite(values).all()):
        _fail(part, "outputs contain NaN or inf.", actual=logits)
    (logits.sum() + values.sum()).backward()
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    dead = [n for n, p in params if p.grad is None]
    if dead:
        _fail(
            part,
            f"these parameters get no gradient: {dead}",
            hint="are they used in forward? (no .detach(), no numpy inside the model)",
        )
    if tuple(make_model(4)(obs)[0].shape) != (2, 4):
        _fail(part, "make_model(4) does not give 4 logits.", hint="use n_actions, not a constant.")
    n_params = sum(p.numel() for _, p in params)
    _ok(
        f"make_model: logits (2, 6), values (2,), uint8 and float inputs agree, "
        f"gradients reach all {len(params)} tensors ({n_params:,} parameters)"
    )


# ---------------------------------------------------------------------------- policy
def check_policy(Policy: type, make_model: Callable[[int], nn.Module] | None = None) -> None:
    """``Policy(model).act(obs)`` returns actions, logits, log_probs, values; samples softmax(logits)."""
    part = "Policy"
    probs = [0.7, 0.2, 0.1]
    model = _TableModel([[math.log(p) for p in probs]], [0.5])
    policy = Policy(model)
    torch.manual_seed(0)
    n = 64
    counts = np.zeros(3)
    for _ in range(25):
        out = policy.act(_obs([0] * n))
        counts += np.bincount(np.asarray(out["actions"]).reshape(-1), minlength=3)[:3]
    freq = counts / counts.sum()
    if freq[0] > 0.97:
        _fail(
            part,
            "actions are (almost) always the most likely one.",
            probs,
            freq.round(3),
            "sample from Categorical(logits=logits) instead of taking argmax.",
        )
    if np.abs(freq - probs).max() > 0.05:
        _fail(
            part,
            "action frequencies do not follow softmax(logits).",
            probs,
            freq.round(3),
            "Categorical(logits=logits) takes raw logits; Categorical(probs=...) needs a softmax.",
        )
    _ok(f"Policy samples softmax(logits): frequencies {freq.round(2).tolist()} for {probs}")
    if make_model is None:
        return
    torch.manual_seed(0)
    policy = Policy(make_model(6))
    out = policy.act(_obs([0, 128, 255]))
    missing = {"actions", "logits", "log_probs", "values"} - set(out)
    if missing:
        _fail(
            part,
            f"act() misses the keys {sorted(missing)}.",
            hint="return a dict with these four keys.",
        )
    actions, logits, log_probs, values = (
        out[k] for k in ("actions", "logits", "log_probs", "values")
    )
    if not isinstance(actions, np.ndarray) or actions.shape != (3,) or actions.dtype != np.int64:
        _fail(
            part,
            "actions must be a numpy int64 array (N,) for the env batch.",
            "ndarray (3,) int64",
            actions,
            "actions.cpu().numpy()",
        )
    if not ((actions >= 0) & (actions < 6)).all():
        _fail(part, "actions out of range [0, 6).", actual=actions)
    for name, x, shape in (
        ("logits", logits, (3, 6)),
        ("log_probs", log_probs, (3,)),
        ("values", values, (3,)),
    ):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            _fail(part, f"`{name}` must be a torch tensor of shape {shape}.", shape, x)
    expected = torch.log_softmax(logits, dim=-1)[torch.arange(3), torch.as_tensor(actions)]
    if not torch.allclose(log_probs, expected, atol=1e-5):
        _fail(
            part,
            "log_probs are not log softmax(logits)[actions].",
            expected,
            log_probs,
            "use dist.log_prob(actions) of the same distribution you sampled from.",
        )
    if not (values.requires_grad and log_probs.requires_grad):
        _fail(
            part,
            "values and log_probs must keep their autograd graph (A2C backpropagates through them).",
            hint="do not wrap act() in torch.no_grad() and do not .detach() its outputs.",
        )
    _ok(
        "Policy.act with your model: actions (3,) int64, logits (3, 6), log_probs (3,), values (3,) with graph"
    )


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
        "no bootstrap: start the recursion from v_T = V(latest_observation), not 0.",
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
        "observations": [_obs([7, 7]), _obs([1, 3]), _obs([2, 6])],  # V(obs_t)
        "rewards": [np.array(r, dtype=np.float32) for r in _REWARDS],
        "resets": [np.array(d, dtype=bool) for d in _RESETS],
        "state": {"latest_observation": _obs([4, 8]), "env_steps": 3},
    }


def check_compute_value_targets(ComputeValueTargets: type) -> None:
    """``ComputeValueTargets(policy, gamma)(trajectory)`` adds n-step targets, shape (T, N), no graph."""
    part = "ComputeValueTargets"
    trajectory = _target_trajectory()
    ComputeValueTargets(_value_policy(), gamma=0.5)(trajectory)
    if "value_targets" not in trajectory:
        _fail(
            part, "trajectory['value_targets'] is missing.", hint="add it in place; return nothing."
        )
    raw = trajectory["value_targets"]
    targets = _as_array(raw, part, "value_targets")
    if targets.shape != (3, 2):
        _fail(
            part,
            "value_targets must be T=3 tensors of shape (N=2,) or one (3, 2) tensor.",
            (3, 2),
            targets.shape,
        )
    if not np.allclose(targets, _TARGETS, atol=1e-5):
        hint = "compute backwards: v = V(s_T); for t = T-1..0: v = r_t + gamma * (1 - reset_t) * v."
        for wrong, why in _TARGET_MISTAKES:
            if np.allclose(targets, wrong, atol=1e-5):
                hint = why
        _fail(
            part,
            "wrong targets for r=[[1,0],[0,1],[1,1]], resets at (t=1, env 1), "
            "V(latest)=[4,8], gamma=0.5 (rows: t, columns: env).",
            np.array(_TARGETS),
            targets,
            hint,
        )
    if _has_graph(raw):
        _fail(
            part,
            "value_targets carry an autograd graph.",
            hint="compute V(latest_observation) under torch.no_grad() (targets are constants).",
        )
    _ok(
        "ComputeValueTargets: (3, 2) targets [[1.75, 0.5], [1.5, 1.0], [3.0, 5.0]] with the reset, no graph"
    )


# ---------------------------------------------------------------------------- merge
def _merge_trajectory(targets_as_tensor: bool) -> dict[str, Any]:
    """Every entry of step t, env i encodes 10 t + i, so the merged order is visible."""
    weight = torch.ones((), requires_grad=True)
    codes = [np.array([10 * t, 10 * t + 1]) for t in range(3)]
    targets = [torch.tensor(c, dtype=torch.float32) for c in codes]
    return {
        "actions": [c.astype(np.int64) for c in codes],
        "observations": [_obs(c.tolist()) for c in codes],
        "rewards": [c.astype(np.float32) for c in codes],
        "resets": [c % 2 == 1 for c in codes],
        "logits": [
            weight * torch.tensor(c, dtype=torch.float32)[:, None].repeat(1, 3) for c in codes
        ],
        "log_probs": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "values": [weight * torch.tensor(c, dtype=torch.float32) for c in codes],
        "value_targets": torch.stack(targets) if targets_as_tensor else targets,
        "state": {"latest_observation": _obs([30, 31]), "env_steps": 3},
    }


def check_merge_time_batch(MergeTimeBatch: type) -> None:
    """``MergeTimeBatch()(trajectory)``: lists of T ``(N, ...)`` become ``(T*N, ...)``, time-major."""
    part = "MergeTimeBatch"
    order = np.array([0, 1, 10, 11, 20, 21])  # row t*N + i holds step t, env i
    for targets_as_tensor in (False, True):
        trajectory = _merge_trajectory(targets_as_tensor)
        state = trajectory["state"]
        MergeTimeBatch()(trajectory)
        if trajectory.get("state") is not state or trajectory["state"][
            "latest_observation"
        ].shape != (2, *OBS_SHAPE):
            _fail(part, "trajectory['state'] must be left untouched.")
        shapes = {"observations": (6, *OBS_SHAPE), "logits": (6, 3)}
        for key, kind in (
            ("actions", np.ndarray),
            ("observations", np.ndarray),
            ("rewards", np.ndarray),
            ("resets", np.ndarray),
            ("logits", torch.Tensor),
            ("log_probs", torch.Tensor),
            ("values", torch.Tensor),
            ("value_targets", torch.Tensor),
        ):
            x = trajectory[key]
            if not isinstance(x, kind):
                _fail(
                    part,
                    f"`{key}` changed type.",
                    kind.__name__,
                    type(x).__name__,
                    "arrays stay arrays (np.concatenate), tensors stay tensors (torch.cat).",
                )
            if tuple(x.shape) != shapes.get(key, (6,)):
                _fail(
                    part,
                    f"`{key}` has the wrong merged shape (T=3, N=2).",
                    shapes.get(key, (6,)),
                    tuple(x.shape),
                    "concatenate along the first axis: (T*N, ...), not (T, N, ...).",
                )
            first = x.reshape(6, -1)[:, 0]
            got = np.asarray(first.detach().numpy() if isinstance(x, torch.Tensor) else first)
            want = order % 2 == 1 if key == "resets" else order
            if not np.array_equal(got.astype(want.dtype), want):
                hint = "this is env-major order; keep time-major: concatenate the T steps in order."
                _fail(
                    part,
                    f"`{key}` rows are in the wrong order (entries encode 10*t + i).",
                    want,
                    got,
                    hint,
                )
        if trajectory["values"].grad_fn is None or trajectory["log_probs"].grad_fn is None:
            _fail(
                part,
                "merged values/log_probs lost their autograd graph.",
                hint="use torch.cat, not numpy or .detach().",
            )
    _ok(
        "MergeTimeBatch: every key (6, ...) in time-major order [t0e0, t0e1, t1e0, ...], "
        "types kept, graph kept, state untouched (targets as a list or a (T, N) tensor)"
    )


# ---------------------------------------------------------------------------- a2c
#: The hand-worked batch: B=4 samples, 2 actions, all logits 0 (so pi = 0.5, log pi = -ln 2,
#: entropy = ln 2), V = [1, 2, 0.5, 0], targets = [2, 2, 0, 1], advantages A = [1, 0, -0.5, 1].
_A2C_VALUES = [1.0, 2.0, 0.5, 0.0]
_A2C_TARGETS = [2.0, 2.0, 0.0, 1.0]
_LN2 = math.log(2.0)
_A2C_EXPECTED = {
    "policy_loss": _LN2 * 1.5 / 4,  # -mean(-ln2 * A) = ln2 * mean(A)
    "value_loss": (1 + 0 + 0.25 + 1) / 4,  # mean(A^2)
    "entropy": _LN2,
}
_A2C_EXPECTED["loss"] = (
    _A2C_EXPECTED["policy_loss"]
    + 0.25 * _A2C_EXPECTED["value_loss"]
    - 0.01 * _A2C_EXPECTED["entropy"]
)
#: d loss / d V_k = 0.25 * 2 (V_k - target_k) / 4; d loss / d logit_k = -(A_k / 4) (onehot(a_k) - 0.5);
#: the entropy gradient is 0 at the uniform policy. Norm of all gradients: sqrt(0.10546875).
_A2C_VALUE_GRAD = [-0.125, 0.0, 0.0625, -0.125]
_A2C_GRAD_NORM = math.sqrt(0.10546875)


def _a2c_setup(A2C: type, max_grad_norm: float) -> tuple[Any, _TableModel, dict[str, Any]]:
    model = _TableModel([[0.0, 0.0]] * 4, _A2C_VALUES)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # so that a step = -clipped gradient
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # stale gradients that zero_grad() must remove
    algo = A2C(
        _TablePolicy(model),
        optimizer,
        value_loss_coef=0.25,
        entropy_coef=0.01,
        max_grad_norm=max_grad_norm,
    )
    obs = _obs([0, 1, 2, 3])  # (4, 4, 84, 84)
    actions = np.array([0, 1, 1, 0], dtype=np.int64)
    logits, values = model(torch.as_tensor(obs))  # (4, 2), (4,)
    log_probs = torch.log_softmax(logits, dim=-1)[torch.arange(4), torch.as_tensor(actions)]
    trajectory = {
        "observations": obs,
        "actions": actions,
        "logits": logits,
        "log_probs": log_probs,
        "values": values,
        "value_targets": torch.tensor(_A2C_TARGETS),
        "rewards": np.zeros(4, np.float32),
        "resets": np.zeros(4, bool),
        "state": {"latest_observation": _obs([0, 1]), "env_steps": 2},
    }
    return algo, model, trajectory


def check_a2c(
    A2C: type, Policy: type | None = None, make_model: Callable[[int], nn.Module] | None = None
) -> None:
    """``A2C(...).step(merged_trajectory)``: the three losses, detached advantages, clipping."""
    part = "A2C"
    before = [1.0, 2.0, 0.5, 0.0]
    algo, model, trajectory = _a2c_setup(A2C, max_grad_norm=10.0)
    stats = algo.step(trajectory)
    if not isinstance(stats, dict):
        _fail(part, "step() must return a dict of floats.", "dict", type(stats))
    for key in ("loss", "policy_loss", "value_loss", "entropy", "grad_norm"):
        if key not in stats:
            _fail(
                part,
                f"step() result misses `{key}`.",
                hint="return loss, policy_loss, value_loss, entropy, grad_norm.",
            )
        if isinstance(stats[key], torch.Tensor):
            _fail(
                part, f"`{key}` is a tensor; return plain floats.", hint="use .item() on each loss."
            )
    hints = {
        "policy_loss": "policy_loss = -mean(log_probs * advantages.detach()), advantages = targets - values.",
        "value_loss": "value_loss = mean((value_targets - values) ** 2): a mean, not a sum, no 0.5 factor.",
        "entropy": "entropy = mean over the batch of -sum_a pi(a) log pi(a), pi = softmax(logits).",
        "loss": "loss = policy_loss + value_loss_coef * value_loss - entropy_coef * entropy (minus: the bonus).",
    }
    for key, expected in _A2C_EXPECTED.items():
        if not math.isclose(float(stats[key]), expected, abs_tol=1e-4):
            _fail(
                part,
                f"wrong `{key}` for V=[1, 2, 0.5, 0], targets=[2, 2, 0, 1], logits 0, "
                "value_loss_coef 0.25, entropy_coef 0.01.",
                round(expected, 5),
                round(float(stats[key]), 5),
                hints[key],
            )
    step = (model.value_table.detach() - torch.tensor(before)).numpy()  # SGD lr 1: -gradient
    if np.allclose(step, [-g - 5.0 for g in _A2C_VALUE_GRAD], atol=1e-4):
        _fail(
            part,
            "old gradients were added to the new ones.",
            hint="call optimizer.zero_grad() first.",
        )
    if not np.allclose(-step, _A2C_VALUE_GRAD, atol=1e-4):
        _fail(
            part,
            "wrong gradient on the values.",
            np.array(_A2C_VALUE_GRAD),
            -step,
            "advantages.detach() in the policy loss: only the value loss may move V.",
        )
    if not math.isclose(float(stats["grad_norm"]), _A2C_GRAD_NORM, abs_tol=1e-4):
        _fail(
            part,
            "grad_norm should be the total norm before clipping.",
            round(_A2C_GRAD_NORM, 5),
            float(stats["grad_norm"]),
            "grad_norm = clip_grad_norm_(parameters, max_grad_norm).",
        )
    _ok(
        f"A2C losses: policy {stats['policy_loss']:.4f}, value {stats['value_loss']:.4f}, "
        f"entropy {stats['entropy']:.4f}, total {stats['loss']:.4f}; advantages detached"
    )
    algo, model, trajectory = _a2c_setup(A2C, max_grad_norm=0.1)
    algo.step(trajectory)
    moved = torch.cat(
        [
            (model.value_table.detach() - torch.tensor(before)),
            model.logit_table.detach().reshape(-1),
        ]
    )
    if not math.isclose(float(moved.norm()), 0.1, abs_tol=1e-4):
        _fail(
            part,
            "with max_grad_norm=0.1 and SGD(lr=1) the parameters should move by exactly 0.1.",
            0.1,
            round(float(moved.norm()), 5),
            "clip_grad_norm_ after backward(), before optimizer.step().",
        )
    _ok("A2C clips the gradient norm (0.3248 -> 0.1) before the optimizer step")
    if Policy is None or make_model is None:
        return
    torch.manual_seed(0)
    policy = Policy(make_model(4))
    params = [p.detach().clone() for p in policy.model.parameters()]
    out = policy.act(np.random.default_rng(0).integers(0, 256, (6, *OBS_SHAPE), np.uint8))
    out["value_targets"] = torch.linspace(-1.0, 1.0, 6)
    out["observations"] = np.zeros((6, *OBS_SHAPE), np.uint8)
    optimizer = torch.optim.RMSprop(policy.model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    stats = A2C(policy, optimizer).step(out)
    if not all(
        math.isfinite(float(stats[k])) for k in ("loss", "policy_loss", "value_loss", "entropy")
    ):
        _fail(part, "non-finite statistics with your Policy and model.", actual=stats)
    if all(
        torch.equal(a, b.detach()) for a, b in zip(params, policy.model.parameters(), strict=True)
    ):
        _fail(
            part,
            "one step with your Policy and model left every parameter unchanged.",
            hint="is the optimizer built on policy.model.parameters()? is optimizer.step() called?",
        )
    _ok("A2C.step with your Policy and make_model: finite losses, parameters updated")


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
        "lambda_ is missing: A_t = delta_t + gamma * lambda_ * ...",
    ),
    ([[-5.5, -6.0], [0.0, -2.0], [0.0, -2.0]], "bootstrap V_T from state['latest_observation']."),
]


def check_gae(ComputeGAE: type) -> None:
    """``ComputeGAE(policy, gamma, lambda_)(trajectory)`` adds (T, N) advantages and value targets."""
    part = "ComputeGAE"
    trajectory = _target_trajectory()
    policy = _value_policy()
    trajectory["values"] = [policy.model(torch.as_tensor(o))[1] for o in trajectory["observations"]]
    ComputeGAE(policy, gamma=0.5, lambda_=0.5)(trajectory)
    for key in ("advantages", "value_targets"):
        if key not in trajectory:
            _fail(part, f"trajectory['{key}'] is missing.", hint="add both keys in place.")
        if _has_graph(trajectory[key]):
            _fail(
                part,
                f"`{key}` carries an autograd graph.",
                hint="use values[t].detach() and torch.no_grad().",
            )
    advantages = _as_array(trajectory["advantages"], part, "advantages")
    if advantages.shape != (3, 2) or not np.allclose(advantages, _GAE_ADVANTAGES, atol=1e-5):
        hint = "go backwards: A_t = delta_t + gamma * lambda_ * (1 - d_t) * A_{t+1}, A_T = 0."
        for wrong, why in _GAE_MISTAKES:
            if advantages.shape == (3, 2) and np.allclose(advantages, wrong, atol=1e-5):
                hint = why
        _fail(
            part,
            "wrong advantages (gamma = lambda_ = 0.5, V_t = [[7, 7], [1, 3], [2, 6]], V_T = [4, 8]).",
            np.array(_GAE_ADVANTAGES),
            advantages,
            hint,
        )
    targets = _as_array(trajectory["value_targets"], part, "value_targets")
    if targets.shape != (3, 2) or not np.allclose(targets, _GAE_TARGETS, atol=1e-5):
        _fail(
            part,
            "wrong value_targets.",
            np.array(_GAE_TARGETS),
            targets,
            "value_targets = advantages + V_t.",
        )
    _ok(
        "ComputeGAE: (3, 2) advantages and value_targets = advantages + V, with the reset, no graph"
    )


# ---------------------------------------------------------------------------- stubs
def require_implemented(check: Callable[..., None], *args: Any) -> None:
    """Fail only while a part is still the ``NotImplementedError`` stub; otherwise stay quiet.

    Graded cells call this so that an untouched notebook scores 0 at once; any other problem
    is left to the autograder's hidden tests (which may give partial credit).
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check(*args)
    except NotImplementedError as err:
        raise NotImplementedError(
            f"{check.__name__}: a part is still the stub; write your solution in the cell above."
        ) from err
    except Exception:  # noqa: BLE001 - graded by the hidden tests instead
        pass
