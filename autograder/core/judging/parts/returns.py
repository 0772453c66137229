"""Synthetic trajectories for the value-target parts (``compute_value_targets`` and ``gae``).

A case is plain data: T-step, N-env rewards and resets, the discount, and the state values of
coded frames (:func:`autograder.sandboxed.grading_runtime.fixtures.returns_trajectory` turns it into a runner-shaped
trajectory), so V(latest_observation) differs from V(observations[-1]) and a wrong bootstrap
shows. :func:`read_per_step` accepts both storage forms of the contract (a list of T ``(N,)``
tensors, or one ``(T, N)`` tensor; numpy too) and :func:`nstep_targets` computes the textbook
formula with variants, to name a student's mistake in the feedback.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.core.judging.parts.subcheck import CheckFailed, array_of, describe, fmt

__all__ = ["bootstrap", "make_case", "nstep_targets", "read_per_step", "render", "state_values"]


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
) -> dict[str, Any]:
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
    return {
        "rewards": rng.uniform(-1, 1, size=(T, N)).round(2).astype(np.float32),
        "resets": resets,
        "gamma": gamma,
        "lambda_": lambda_,
        "obs_codes": codes[: T * N].reshape(T, N),
        "latest_codes": codes[T * N :],
        "value_table": table.astype(np.float32),
        "action_seed": int(rng.integers(0, 2**31)),
    }


def bootstrap(case: dict[str, Any]) -> np.ndarray:
    """V(latest_observation), (N,)."""
    return case["value_table"][case["latest_codes"]].astype(np.float64)


def state_values(case: dict[str, Any]) -> np.ndarray:
    """V(observations[t][i]), (T, N)."""
    return case["value_table"][case["obs_codes"]].astype(np.float64)


def render(case: dict[str, Any], with_values: bool = False) -> str:
    """The case as the student should read it."""
    T, N = case["rewards"].shape
    text = (
        f"T={T}, N={N}, gamma={case['gamma']:g}"
        + (f", lambda_={case['lambda_']:g}" if with_values else "")
        + f"; rewards (T, N) = {fmt(case['rewards'])}; resets (T, N) = {fmt(case['resets'])}; "
        f"V(latest_observation) (N,) = {fmt(bootstrap(case))}"
    )
    if with_values:
        text += f"; values = V(observations) (T, N) = {fmt(state_values(case))}"
    return text


def nstep_targets(
    rewards: np.ndarray, resets: np.ndarray, boot: np.ndarray, gamma: float, reset_shift: int = 0
) -> np.ndarray:
    """v_t = r_t + gamma (1 - d_t) v_{t+1}, v_T = boot; ``reset_shift`` reads d_{t+shift}.

    The shifted variants exist to recognise an off-by-one in a student's result.
    """
    T = rewards.shape[0]
    targets = np.zeros(rewards.shape, dtype=np.float64)
    following = np.asarray(boot, dtype=np.float64)
    for t in reversed(range(T)):
        s = t + reset_shift
        done = resets[s] if 0 <= s < T else np.zeros_like(resets[0])
        following = rewards[t] + gamma * (1.0 - done) * following
        targets[t] = following
    return targets


def read_per_step(observation: dict[str, Any], key: str, shape: tuple[int, int]) -> np.ndarray:
    """``trajectory[key]`` as float64 ``(T, N)``, from a list of T ``(N,)`` or one ``(T, N)``.

    Raises CheckFailed when it is missing or has the wrong shape.
    """
    T, N = shape
    if key not in observation:
        hint = ""
        if observation["returned"].get("kind") == "dict":
            hint = " (your __call__ returns a dict; the runner ignores what it returns)"
        raise CheckFailed(
            f"after your transform the trajectory has no {key!r} entry: add it in place, "
            f"`trajectory[{key!r}] = ...`{hint}"
        )
    record = observation[key]
    if record.get("kind") in ("list", "tuple") and record.get("len") != T:
        raise CheckFailed(
            f"trajectory[{key!r}] is a {record['kind']} of {record['len']} items; expected T={T} "
            "(one per step)"
        )
    array = array_of(record)
    if array is None:
        raise CheckFailed(
            f"trajectory[{key!r}] should hold numbers (a tensor, an array, or a list of them), "
            f"got {describe(record)}"
        )
    if array.shape != (T, N):
        hint = ""
        if array.shape == (T * N,):
            hint = ": keep the (T, N) layout, MergeTimeBatch flattens it later"
        elif array.shape == (N, T):
            hint = ": it looks transposed (env-major); the first axis is time"
        elif array.shape in ((T, N, 1), (T, 1, N)):
            hint = ": a stray axis of size 1, squeeze it (values of shape (N, 1)?)"
        raise CheckFailed(
            f"trajectory[{key!r}] is {describe(record)}; expected {T} x (N={N},) or one "
            f"(T, N) = ({T}, {N}) tensor{hint}"
        )
    return array
