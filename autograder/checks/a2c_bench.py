"""The test bench of the ``a2c`` checks: networks, merged trajectories, and one-step runs.

:func:`merged_trajectory` builds what ``MergeTimeBatch`` would hand to ``A2C.step``
(B = T*N rows computed by a network, fixed value targets); :func:`run_steps` builds an A2C
(the student's or the reference's) around the *reference* Policy and steps it;
:func:`update` and :func:`same_update` compare what one step did to the parameters.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions import reference

from .base import CheckFailed, describe
from .fakes import GradingPolicy, TwoHeadModel

__all__ = [
    "NO_CLIP",
    "N_ACTIONS",
    "STAT_KEYS",
    "N",
    "T",
    "initial_model",
    "make_optimizer",
    "merged_trajectory",
    "number",
    "reference_outcome",
    "require_update",
    "run_steps",
    "side_by_side",
    "student_step",
    "same_update",
    "update",
]

N_ACTIONS = 4
T, N = 4, 3
STAT_KEYS = ("loss", "policy_loss", "value_loss", "entropy", "grad_norm")
NO_CLIP = 1e6  # a max_grad_norm that never clips


@functools.lru_cache(maxsize=4)
def initial_model(kind: str, seed: int) -> nn.Module:
    """``"nature"``: the reference network; ``"two_heads"``: the small disjoint-heads stub.

    Cached: callers must deep-copy it before training.
    """
    torch.manual_seed(seed)
    return reference.make_model(N_ACTIONS) if kind == "nature" else TwoHeadModel(N_ACTIONS)


def merged_trajectory(model: nn.Module, seed: int) -> dict[str, Any]:
    """A trajectory after MergeTimeBatch: B = T*N rows computed by ``model``, fixed targets."""
    rng = np.random.default_rng(seed)
    B = T * N
    observations = rng.integers(0, 256, (B, 4, 84, 84), dtype=np.uint8)
    actions = rng.integers(0, N_ACTIONS, B).astype(np.int64)
    logits, values = model(torch.from_numpy(observations))  # (B, A), (B,)
    log_probs = F.log_softmax(logits, dim=-1).gather(1, torch.from_numpy(actions)[:, None])
    return {
        "actions": actions,
        "logits": logits,
        "log_probs": log_probs.squeeze(1),
        "values": values,
        "observations": observations,
        "rewards": rng.uniform(-1, 1, B).astype(np.float32),
        "resets": rng.random(B) < 0.2,
        "value_targets": torch.as_tensor(rng.normal(0.0, 1.0, B), dtype=torch.float32),
        "state": {"latest_observation": observations[-N:].copy(), "env_steps": T},
    }


def make_optimizer(kind: str, model: nn.Module) -> torch.optim.Optimizer:
    """``"sgd"`` (lr 0.1, so an update is -0.1 * gradient) or the course's RMSprop."""
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.1)
    return torch.optim.RMSprop(model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)


def run_steps(
    cls: Any,
    model: nn.Module,
    optimizer: str = "sgd",
    seeds: tuple[int, ...] = (0,),
    **coefs: float,
) -> list[dict[str, Any]]:
    """Build ``cls`` on ``model`` and call step once per seed (a new trajectory each time)."""
    agent = cls(GradingPolicy(model), make_optimizer(optimizer, model), **coefs)
    stats = []
    for seed in seeds:
        result = agent.step(merged_trajectory(model, seed))
        if not isinstance(result, dict):
            raise CheckFailed(f"step() should return a dict of floats, got {describe(result)}")
        stats.append(result)
    return stats


@functools.lru_cache(maxsize=16)
def reference_outcome(
    kind: str, optimizer: str, coefs: tuple[tuple[str, float], ...]
) -> tuple[dict[str, float], nn.Module]:
    """The reference's stats and network after one step (cached: it never changes)."""
    ref = copy.deepcopy(initial_model(kind, 0))
    return run_steps(reference.A2C, ref, optimizer, **dict(coefs))[0], ref


def side_by_side(cls: Any, kind: str = "two_heads", optimizer: str = "sgd", **coefs: float):
    """(student stats, reference stats, student model, reference model, initial model)."""
    initial = initial_model(kind, 0)
    student = copy.deepcopy(initial)
    got = run_steps(cls, student, optimizer, **coefs)[0]
    want, ref = reference_outcome(kind, optimizer, tuple(sorted(coefs.items())))
    return got, want, student, ref, initial


def number(stats: dict[str, Any], key: str) -> float:
    """``stats[key]`` as a float, or CheckFailed saying what is missing or wrong."""
    if key not in stats:
        raise CheckFailed(f"step() returned no {key!r} (its keys: {sorted(stats)})")
    try:
        return float(stats[key])
    except Exception as error:  # noqa: BLE001 - anything that is not a number
        raise CheckFailed(
            f"stats[{key!r}] is not a number: {describe(stats[key])} ({error})"
        ) from None


def update(model: nn.Module, initial: nn.Module) -> torch.Tensor:
    """All parameter changes of one step, flattened (float64)."""
    deltas = [
        (p - p0).detach().double().flatten()
        for p, p0 in zip(model.parameters(), initial.parameters(), strict=True)
    ]
    return torch.cat(deltas)


def same_update(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Fail unless update ``got`` equals ``want`` up to float32 rounding."""
    if float(got.norm()) == 0.0 and float(want.norm()) > 0.0:
        raise CheckFailed(
            f"{what}: the parameters did not change; call loss.backward() and then "
            "optimizer.step() (and zero_grad before backward, not between backward and step)"
        )
    diff, norm = float((got - want).norm()), float(want.norm())
    if not diff <= 1e-3 * norm + 1e-7:
        relative = diff / max(norm, 1e-12)
        size = f"{relative:.1%} of" if relative < 10 else f"{relative:.3g} times"
        raise CheckFailed(
            f"{what}: your parameter update differs from the expected one by {size} its size "
            f"(your update's norm {float(got.norm()):.3g}, expected {norm:.3g})"
        )


def require_update(delta: torch.Tensor) -> None:
    """Fail when one step left the parameters as they were (nothing to compare then)."""
    if float(delta.norm()) == 0.0:
        raise CheckFailed(
            "one SGD step did not change the parameters; call loss.backward() and then "
            "optimizer.step() (and zero_grad before backward, not between backward and step)"
        )


def student_step(cls: Any, kind: str = "two_heads", optimizer: str = "sgd", **coefs: float):
    """(student's update, student's stats) of one step from the initial network."""
    initial = initial_model(kind, 0)
    model = copy.deepcopy(initial)
    stats = run_steps(cls, model, optimizer, **coefs)[0]
    return update(model, initial), stats
