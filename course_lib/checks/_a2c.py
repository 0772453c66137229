"""Visible check of the A2C update: :func:`check_a2c` (losses, detached advantages, clipping)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ._common import OBS_SHAPE, call_student, coded_obs, fail, report_ok
from .fixtures import TableModel, ValuePolicy

#: The hand-worked batch: B=4 samples, 2 actions, all logits 0 (so pi = 0.5, log pi = -ln 2,
#: entropy = ln 2), V = [1, 2, 0.5, 0], targets = [2, 2, 0, 1], advantages A = [1, 0, -0.5, 1].
_A2C_VALUES = [1.0, 2.0, 0.5, 0.0]
_A2C_TARGETS = [2.0, 2.0, 0.0, 1.0]
_LN2 = math.log(2.0)
A2C_EXPECTED = {
    "policy_loss": _LN2 * 1.5 / 4,  # -mean(-ln2 * A) = ln2 * mean(A)
    "value_loss": (1 + 0 + 0.25 + 1) / 4,  # mean(A^2)
    "entropy": _LN2,
}
A2C_EXPECTED["loss"] = (
    A2C_EXPECTED["policy_loss"]
    + 0.25 * A2C_EXPECTED["value_loss"]
    - 0.01 * A2C_EXPECTED["entropy"]
)
#: d loss / d V_k = 0.25 * 2 (V_k - target_k) / 4; d loss / d logit_k = -(A_k / 4) (onehot(a_k) - 0.5);
#: the entropy gradient is 0 at the uniform policy. Norm of all gradients: sqrt(0.10546875).
_A2C_VALUE_GRAD = [-0.125, 0.0, 0.0625, -0.125]
_A2C_LOGIT_GRAD = [[-0.125, 0.125], [0.0, 0.0], [-0.0625, 0.0625], [-0.125, 0.125]]
_A2C_GRAD_NORM = math.sqrt(0.10546875)
#: The same batch with value_loss_coef 0.5 and entropy_coef 0.1: the value gradient doubles
#: (the entropy's gradient is still 0 at the uniform policy).
_A2C_WEIGHTED = {"value_loss_coef": 0.5, "entropy_coef": 0.1}
_A2C_WEIGHTED_LOSS = (
    A2C_EXPECTED["policy_loss"]
    + 0.5 * A2C_EXPECTED["value_loss"]
    - 0.1 * A2C_EXPECTED["entropy"]
)


def _a2c_setup(
    A2C: type, max_grad_norm: float, value_loss_coef: float = 0.25, entropy_coef: float = 0.01
) -> tuple[Any, TableModel, dict[str, Any]]:
    model = TableModel([[0.0, 0.0]] * 4, _A2C_VALUES)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)  # so that a step = -clipped gradient
    for p in model.parameters():
        p.grad = torch.full_like(p, _STALE)  # stale gradients that zero_grad() must remove
    algo = call_student(
        "A2C",
        A2C,
        ValuePolicy(model),
        optimizer,
        value_loss_coef=value_loss_coef,
        entropy_coef=entropy_coef,
        max_grad_norm=max_grad_norm,
    )
    obs = coded_obs([0, 1, 2, 3])  # (4, 4, 84, 84)
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
        "state": {"latest_observation": coded_obs([0, 1]), "env_steps": 2},
    }
    return algo, model, trajectory


#: The gradient every parameter holds before ``step()`` (:func:`_a2c_setup`).
_STALE = 5.0


def _piled_up(moved: np.ndarray, max_grad_norm: float) -> bool:
    """Whether the parameters ``moved`` (values, then logits; SGD with lr 1) by the stale
    gradient plus this step's, clipped to ``max_grad_norm`` or not: ``zero_grad`` was not
    called."""
    piled = np.concatenate([_A2C_VALUE_GRAD, np.ravel(_A2C_LOGIT_GRAD)]) + _STALE
    clipped = piled * min(1.0, max_grad_norm / float(np.linalg.norm(piled)))
    return any(np.allclose(-moved, update, atol=1e-4) for update in (piled, clipped))


def _norm_before_clipping(part: str, stats: dict[str, Any], max_grad_norm: float) -> None:
    """Fail unless ``stats["grad_norm"]`` is the hand-worked norm of the whole gradient."""
    if not math.isclose(float(stats["grad_norm"]), _A2C_GRAD_NORM, abs_tol=1e-4):
        fail(
            part,
            f"with max_grad_norm={max_grad_norm:g}, grad_norm should be the total norm of the "
            "gradient before clipping.",
            round(_A2C_GRAD_NORM, 5),
            float(stats["grad_norm"]),
            "the dashboard compares grad_norm with the clip threshold: report the norm the "
            "gradient had before it was scaled down.",
        )


def check_a2c(
    A2C: type, Policy: type | None = None, make_model: Callable[[int], nn.Module] | None = None
) -> None:
    """``A2C(...).step(merged_trajectory)``: the three losses, detached advantages, clipping."""
    part = "A2C"
    before = [1.0, 2.0, 0.5, 0.0]
    algo, model, trajectory = _a2c_setup(A2C, max_grad_norm=10.0)
    stats = call_student(part, algo.step, trajectory)
    if not isinstance(stats, dict):
        fail(part, "step() must return a dict of floats.", "dict", type(stats))
    for key in ("loss", "policy_loss", "value_loss", "entropy", "grad_norm"):
        if key not in stats:
            fail(
                part,
                f"step() result misses `{key}`.",
                ["loss", "policy_loss", "value_loss", "entropy", "grad_norm"],
                sorted(stats),
                "return at least these five keys, each a Python float.",
            )
        if isinstance(stats[key], torch.Tensor):
            fail(
                part,
                f"`{key}` is a tensor; return plain floats.",
                hint="return Python numbers (a tensor keeps its graph, and GPU memory, alive in your logs).",
            )
    hints = {
        "policy_loss": "L_pi weights each taken action's log-probability by its advantage (the "
        "targets' lead over the values) and averages over the batch; check its sign: descending "
        "L_pi must make the actions with a positive advantage more likely.",
        "value_loss": "L_V measures how far the values are from the targets, averaged over the "
        "batch: a mean, not a sum, with no extra factor (part 5's formula).",
        "entropy": "H is the entropy of the whole action distribution of each row (every action, "
        "from the logits), averaged over the batch: not of the taken actions alone.",
        "loss": "L combines the three terms with value_loss_coef and entropy_coef; the entropy is "
        "a bonus, so check the sign it enters with (minimising L must raise H).",
    }
    for key, expected in A2C_EXPECTED.items():
        if not math.isclose(float(stats[key]), expected, abs_tol=1e-4):
            fail(
                part,
                f"wrong `{key}` for V=[1, 2, 0.5, 0], targets=[2, 2, 0, 1], logits 0, "
                "value_loss_coef 0.25, entropy_coef 0.01.",
                round(expected, 5),
                round(float(stats[key]), 5),
                hints[key],
            )
    step = (model.value_table.detach() - torch.tensor(before)).numpy()  # SGD lr 1: -gradient
    logits_moved = model.logit_table.detach().numpy().ravel()  # the logits started at 0
    if _piled_up(np.concatenate([step, logits_moved]), 10.0):
        fail(
            part,
            f"old gradients were added to the new ones: the parameters held a stale gradient of "
            f"{_STALE} before step(), and it is still in the update (clipped with the rest).",
            np.array(_A2C_VALUE_GRAD),
            -step,
            "reset the gradients with the optimizer's zero_grad in every step, before the "
            "backward pass: PyTorch adds each backward pass's gradient to what .grad holds, so "
            "without it every step's gradient piles up on all the earlier ones.",
        )
    if not np.allclose(-step, _A2C_VALUE_GRAD, atol=1e-4):
        fail(
            part,
            "wrong gradient on the values.",
            np.array(_A2C_VALUE_GRAD),
            -step,
            "no gradient may flow through the advantages in the policy loss: only the value loss moves V.",
        )
    _norm_before_clipping(part, stats, 10.0)
    report_ok(
        f"A2C losses: policy {stats['policy_loss']:.4f}, value {stats['value_loss']:.4f}, "
        f"entropy {stats['entropy']:.4f}, total {stats['loss']:.4f}; advantages detached"
    )
    algo, model, trajectory = _a2c_setup(A2C, max_grad_norm=0.1)
    clipped = call_student(part, algo.step, trajectory)
    moved = torch.cat(
        [
            (model.value_table.detach() - torch.tensor(before)),
            model.logit_table.detach().reshape(-1),
        ]
    )
    if not math.isclose(float(moved.norm()), 0.1, abs_tol=1e-4):
        fail(
            part,
            "with max_grad_norm=0.1 and SGD(lr=1) the parameters should move by exactly 0.1.",
            0.1,
            round(float(moved.norm()), 5),
            "clip the gradient after backward(), before the optimizer step.",
        )
    _norm_before_clipping(part, clipped, 0.1)
    report_ok("A2C clips the gradient norm (0.3248 -> 0.1) before the optimizer step")
    algo, model, trajectory = _a2c_setup(A2C, max_grad_norm=10.0, **_A2C_WEIGHTED)
    weighted = call_student(part, algo.step, trajectory)
    step = (model.value_table.detach() - torch.tensor(before)).numpy()
    want = [2 * g for g in _A2C_VALUE_GRAD]
    if not (
        math.isclose(float(weighted["loss"]), _A2C_WEIGHTED_LOSS, abs_tol=1e-4)
        and np.allclose(-step, want, atol=1e-4)
    ):
        fail(
            part,
            "with value_loss_coef=0.5 and entropy_coef=0.1 (same batch), the loss and the "
            "gradient on the values should use these coefficients.",
            f"loss {_A2C_WEIGHTED_LOSS:.5f}, gradient on the values {want}",
            f"loss {float(weighted['loss']):.5f}, gradient on the values {(-step).round(5).tolist()}",
            "use the coefficients A2C was built with, not the course's defaults.",
        )
    report_ok("A2C uses the value_loss_coef and entropy_coef it was given")
    if Policy is None or make_model is None:
        return
    torch.manual_seed(0)
    policy = call_student(part, Policy, call_student(part, make_model, 4))
    params = [p.detach().clone() for p in policy.model.parameters()]
    out = call_student(
        part, policy.act, np.random.default_rng(0).integers(0, 256, (6, *OBS_SHAPE), np.uint8)
    )
    out["value_targets"] = torch.linspace(-1.0, 1.0, 6)
    out["observations"] = np.zeros((6, *OBS_SHAPE), np.uint8)
    optimizer = torch.optim.RMSprop(policy.model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    stats = call_student(part, call_student(part, A2C, policy, optimizer).step, out)
    if not all(
        math.isfinite(float(stats[k])) for k in ("loss", "policy_loss", "value_loss", "entropy")
    ):
        fail(part, "non-finite statistics with your Policy and model.", actual=stats)
    if all(
        torch.equal(a, b.detach()) for a, b in zip(params, policy.model.parameters(), strict=True)
    ):
        fail(
            part,
            "one step with your Policy and model left every parameter unchanged.",
            hint="is the optimizer built on policy.model.parameters()? is optimizer.step() called?",
        )
    report_ok("A2C.step with your Policy and make_model: finite losses, parameters updated")
