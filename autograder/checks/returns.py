"""Synthetic trajectories for the value-target parts (``compute_value_targets`` and ``gae``).

A :class:`ReturnsCase` is a T-step, N-env trajectory with chosen rewards, resets, discount and
state values: every observation is a constant frame with its own code, and the stub model
(:class:`~autograder.checks.fakes.CodeValueModel`) maps each code to a known value, so
V(latest_observation) differs from V(observations[-1]) and a wrong bootstrap shows.
:func:`read_per_step` accepts both storage forms of the contract (a list of T ``(N,)`` tensors,
or one ``(T, N)`` tensor; numpy too) and :func:`nstep_targets` computes the textbook formula
with variants, to name a student's mistake in the feedback.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .base import CheckFailed, as_array, describe, fmt
from .fakes import CodeValueModel, StubPolicy, frames

__all__ = [
    "ReturnsCase",
    "make_case",
    "nstep_targets",
    "read_per_step",
    "snapshot",
    "changed_keys",
    "has_graph",
]


@dataclass(frozen=True)
class ReturnsCase:
    """Rewards, resets, gamma, and the state values of a synthetic trajectory."""

    rewards: np.ndarray  #: float32 (T, N)
    resets: np.ndarray  #: bool (T, N)
    gamma: float
    obs_codes: np.ndarray  #: uint8 (T, N), the code of observations[t][i]
    latest_codes: np.ndarray  #: uint8 (N,)
    value_table: np.ndarray = field(repr=False)  #: float32 (256,), V of each code
    lambda_: float = 1.0

    @property
    def shape(self) -> tuple[int, int]:
        return self.rewards.shape

    @property
    def bootstrap(self) -> np.ndarray:
        """V(latest_observation), (N,)."""
        return self.value_table[self.latest_codes].astype(np.float64)

    @property
    def values(self) -> np.ndarray:
        """V(observations[t][i]), (T, N)."""
        return self.value_table[self.obs_codes].astype(np.float64)

    def build(self) -> tuple[StubPolicy, dict[str, Any]]:
        """A fresh stub policy and the runner-shaped trajectory (lists of T per-step items)."""
        policy = StubPolicy(CodeValueModel(self.value_table))
        trajectory: dict[str, Any] = {}
        observations = frames(self.obs_codes)  # (T, N, 4, 84, 84)
        for t in range(self.shape[0]):
            for key, value in policy.act(observations[t]).items():
                trajectory.setdefault(key, []).append(value)
        trajectory["observations"] = list(observations)
        trajectory["rewards"] = list(self.rewards.astype(np.float32))
        trajectory["resets"] = list(self.resets.astype(bool))
        trajectory["state"] = {
            "latest_observation": frames(self.latest_codes),
            "env_steps": self.shape[0],
        }
        return policy, trajectory

    def render(self, with_values: bool = False) -> str:
        """The case as the student should read it."""
        T, N = self.shape
        text = (
            f"T={T}, N={N}, gamma={self.gamma:g}"
            + (f", lambda_={self.lambda_:g}" if with_values else "")
            + f"; rewards (T, N) = {fmt(self.rewards)}; resets (T, N) = {fmt(self.resets)}; "
            f"V(latest_observation) (N,) = {fmt(self.bootstrap)}"
        )
        if with_values:
            text += f"; values = V(observations) (T, N) = {fmt(self.values)}"
        return text


def make_case(
    seed: int,
    T: int,
    N: int,
    gamma: float,
    reset_prob: float = 0.0,
    with_values: bool = True,
    last_resets: Any = None,
    lambda_: float = 1.0,
    resets: Any = None,
) -> ReturnsCase:
    """A random case: rewards in [-1, 1] (2 decimals), resets with probability ``reset_prob``.

    ``resets`` (T, N) forces every reset, ``last_resets`` (N,) those of the last step;
    ``with_values=False`` makes every state value 0, so only the rewards and resets matter.
    """
    rng = np.random.default_rng(seed)
    codes = rng.choice(256, size=T * N + N, replace=False).astype(np.uint8)
    table = rng.normal(0.0, 2.0, size=256).round(2) if with_values else np.zeros(256)
    drawn = rng.random((T, N)) < reset_prob
    resets = drawn if resets is None else np.asarray(resets, dtype=bool).reshape(T, N)
    if last_resets is not None:
        resets[-1] = np.asarray(last_resets, dtype=bool)
    return ReturnsCase(
        rewards=rng.uniform(-1, 1, size=(T, N)).round(2).astype(np.float32),
        resets=resets,
        gamma=gamma,
        obs_codes=codes[: T * N].reshape(T, N),
        latest_codes=codes[T * N :],
        value_table=table.astype(np.float32),
        lambda_=lambda_,
    )


def nstep_targets(
    rewards: np.ndarray,
    resets: np.ndarray,
    bootstrap: np.ndarray,
    gamma: float,
    reset_shift: int = 0,
) -> np.ndarray:
    """v_t = r_t + gamma (1 - d_t) v_{t+1}, v_T = bootstrap; ``reset_shift`` reads d_{t+shift}.

    The shifted variants exist to recognise an off-by-one in a student's result.
    """
    T = rewards.shape[0]
    targets = np.zeros(rewards.shape, dtype=np.float64)
    following = np.asarray(bootstrap, dtype=np.float64)
    for t in reversed(range(T)):
        s = t + reset_shift
        done = resets[s] if 0 <= s < T else np.zeros_like(resets[0])
        following = rewards[t] + gamma * (1.0 - done) * following
        targets[t] = following
    return targets


def read_per_step(trajectory: dict[str, Any], key: str, shape: tuple[int, int]) -> np.ndarray:
    """``trajectory[key]`` as float64 ``(T, N)``, from a list of T ``(N,)`` or one ``(T, N)``.

    Raises CheckFailed when it is missing or has the wrong shape (the autograd graph is
    checked apart, by :func:`has_graph`).
    """
    T, N = shape
    if key not in trajectory:
        raise CheckFailed(
            f"after your transform the trajectory has no {key!r} entry: add it in place, "
            f"`trajectory[{key!r}] = ...` (the runner ignores what __call__ returns)"
        )
    value = trajectory[key]
    if isinstance(value, (list, tuple)) and len(value) != T:
        raise CheckFailed(
            f"trajectory[{key!r}] is a list of {len(value)} items; expected T={T} (one per step)"
        )
    array = as_array(value, f"trajectory[{key!r}]")
    if array.shape != (T, N):
        hint = ""
        if array.shape == (T * N,):
            hint = ": keep the (T, N) layout, MergeTimeBatch flattens it later"
        elif array.shape == (N, T):
            hint = ": it looks transposed (env-major); the first axis is time"
        elif array.shape == (T, N, 1) or array.shape == (T, 1, N):
            hint = ": a stray axis of size 1, squeeze it (values of shape (N, 1)?)"
        raise CheckFailed(
            f"trajectory[{key!r}] is {describe(value)}; expected {T} x (N={N},) or one "
            f"(T, N) = ({T}, {N}) tensor{hint}"
        )
    return array


def has_graph(value: Any) -> bool:
    """True when ``value`` (a tensor or a list of them) requires grad."""
    if isinstance(value, (list, tuple)):
        return any(has_graph(item) for item in value)
    return isinstance(value, torch.Tensor) and value.requires_grad


def snapshot(trajectory: dict[str, Any]) -> dict[str, Any]:
    """A detached deep copy of the inputs of a transform, to detect unwanted changes."""

    def freeze(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {k: freeze(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [freeze(v) for v in value]
        return copy.deepcopy(value)

    return {key: freeze(value) for key, value in trajectory.items()}


def changed_keys(before: dict[str, Any], trajectory: dict[str, Any], ignore: set[str]) -> list[str]:
    """The keys of ``before`` whose content differs in ``trajectory`` (``ignore`` skipped)."""
    changed = []
    for key, old in before.items():
        if key in ignore:
            continue
        new = trajectory.get(key)
        if key == "state":
            same = isinstance(new, dict) and set(new) == set(old)
            same = same and all(_same(old[k], new[k]) for k in old)
        else:
            same = _same(old, new)
        if not same:
            changed.append(key)
    return changed


def _same(old: Any, new: Any) -> bool:
    try:
        a, b = as_array(old, "old"), as_array(new, "new")
    except CheckFailed:
        return old == new
    return a.shape == b.shape and bool(np.array_equal(a, b))
