"""Checks of the ``policy`` part: ``Policy(model).act(observations) -> dict``.

Contract (design.md sections 4 and 5): ``act`` takes ``uint8 (N, 4, 84, 84)`` observations and
returns ``actions`` (int64 ``(N,)``, sampled from softmax(logits)), ``logits`` ``(N, A)``,
``log_probs`` ``(N,)`` and ``values`` ``(N,)``, the last three torch tensors with their graph.

Shapes, outputs and the graph are checked with the reference network; the sampling is checked
with :class:`~autograder.checks.fakes.ProfileModel`, whose probabilities are known, by a
chi-square goodness-of-fit test. Its threshold, p < 1e-6, makes a false failure of a correct
sampler a one-in-a-million event (and the seeds are fixed, so a grade never changes between
runs), while greedy (argmax) or uniform sampling gives p < 1e-50.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from solutions import reference

from .base import CheckFailed, SubCheck, as_array, describe, fmt, is_close
from .fakes import ProfileModel, frames

__all__ = ["SUBCHECKS", "chi_square_p_value"]

N_ACTIONS = 6
KEYS = ("actions", "logits", "log_probs", "values")
#: Action probabilities of the two profiles of the sampling test (rows alternate).
PROFILE_PROBS = np.array([[0.5, 0.25, 0.15, 0.1], [0.1, 0.15, 0.25, 0.5]])
P_VALUE_THRESHOLD = 1e-6


def chi_square_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """P(chi2 >= observed) for ``counts`` drawn from ``probs`` (Pearson, df = len - 1)."""
    expected = counts.sum() * probs
    statistic = float(((counts - expected) ** 2 / expected).sum())
    df = len(probs) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2.0), torch.tensor(statistic / 2.0)))


def _act(cls: Any, model: torch.nn.Module, observations: np.ndarray) -> dict[str, Any]:
    result = cls(model).act(observations)
    if not isinstance(result, dict):
        raise CheckFailed(
            f"act() should return a dict with keys {list(KEYS)}, got {describe(result)}"
        )
    missing = [key for key in KEYS if key not in result]
    if missing:
        raise CheckFailed(f"act() returned a dict without {missing} (it has {list(result)})")
    return result


def _actions(result: dict[str, Any], N: int, A: int) -> np.ndarray:
    """The actions as int64 numpy, after checking type, shape and range."""
    actions = result["actions"]
    if isinstance(actions, torch.Tensor):  # the runner converts integer tensors: accepted
        actions = actions.detach().cpu().numpy()
    if not isinstance(actions, np.ndarray) or actions.dtype.kind not in "iu":
        raise CheckFailed(
            f"actions should be a numpy int64 array of shape ({N},), got {describe(result['actions'])}"
            ": sample action indices (e.g. torch.distributions.Categorical(logits=logits).sample()"
            ".cpu().numpy())"
        )
    if actions.shape != (N,):
        raise CheckFailed(
            f"actions should have shape (N,) = ({N},), got {actions.shape} "
            "(sampled with shape (N, 1)? squeeze the last axis only, not the batch axis)"
        )
    if actions.min() < 0 or actions.max() >= A:
        raise CheckFailed(f"actions should lie in [0, {A}), got {fmt(actions)}")
    return actions.astype(np.int64)


@functools.lru_cache(maxsize=4)
def _reference_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return reference.make_model(N_ACTIONS)


def _reference_run(cls: Any, N: int, seed: int):
    model = copy.deepcopy(_reference_model(seed))
    observations = np.random.default_rng(seed).integers(0, 256, (N, 4, 84, 84), dtype=np.uint8)
    return model, observations, _act(cls, model, observations)


def _check_types(cls: Any, N: int = 5) -> None:
    _, _, result = _reference_run(cls, N, seed=1)
    _actions(result, N, N_ACTIONS)
    for key, shape in (("logits", (N, N_ACTIONS)), ("log_probs", (N,)), ("values", (N,))):
        value = result[key]
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            raise CheckFailed(
                f"with N={N} observations and A={N_ACTIONS} actions, {key} should be a torch "
                f"tensor of shape {shape}, got {describe(value)}"
            )
        if not value.is_floating_point():
            raise CheckFailed(f"{key} should be a float tensor, got {describe(value)}")


def _check_outputs(cls: Any) -> None:
    model, observations, result = _reference_run(cls, 5, seed=2)
    with torch.no_grad():
        logits, values = model(torch.from_numpy(observations))
    for key, want in (("logits", logits), ("values", values)):
        got = as_array(result[key], key)
        if not is_close(got, want.double().numpy(), rtol=1e-4, atol=1e-5):
            raise CheckFailed(
                f"{key} differ from model(observations): expected {fmt(want)}, got {fmt(got)} "
                "(pass the observations to the model as they are, uint8 in [0, 255]: the model "
                "scales them itself)"
            )


def _check_log_probs(cls: Any) -> None:
    model, _, result = _reference_run(cls, 5, seed=3)
    actions = _actions(result, 5, N_ACTIONS)
    for key in ("logits", "log_probs", "values"):
        if not (isinstance(result[key], torch.Tensor) and result[key].requires_grad):
            raise CheckFailed(
                f"{key} has no autograd graph: do not compute it under torch.no_grad() or "
                ".detach() it; A2C backpropagates through it"
            )
    logits = result["logits"].detach().double()
    log_softmax = F.log_softmax(logits, dim=-1).numpy()
    expected = log_softmax[np.arange(5), actions]
    got = as_array(result["log_probs"], "log_probs")
    if not is_close(got, expected, rtol=1e-4, atol=1e-5):
        hint = ""
        if is_close(got, np.exp(expected), rtol=1e-4, atol=1e-5):
            hint = " You returned probabilities: take the log (F.log_softmax)."
        elif is_close(got, logits.numpy()[np.arange(5), actions], rtol=1e-4, atol=1e-5):
            hint = " You returned raw logits: apply F.log_softmax(logits, dim=-1) first."
        elif got.shape == (5,) and any(
            is_close(got, log_softmax[:, a], rtol=1e-4, atol=1e-5) for a in range(N_ACTIONS)
        ):
            hint = " Pick each row's entry at its own sampled action (gather with the actions)."
        raise CheckFailed(
            f"log_probs should be log_softmax(logits)[i, actions[i]] = {fmt(expected)} for "
            f"actions {fmt(actions)}, got {fmt(got)}.{hint}"
        )
    model.zero_grad()
    result["log_probs"].sum().backward()
    if not any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters()):
        raise CheckFailed("the gradient of log_probs does not reach the model's parameters")


def _sample_counts(cls: Any, rows: np.ndarray, calls: int) -> np.ndarray:
    """counts[profile, action] over ``calls`` calls of act on frames coded by ``rows``."""
    A = PROFILE_PROBS.shape[1]
    logits = np.log(PROFILE_PROBS) + 2.0  # not normalised: softmax must do that
    model = ProfileModel(logits, values=np.array([0.5, -0.5]))
    observations = frames(np.where(rows == 1, 255, 0))
    counts = np.zeros((2, A), dtype=np.int64)
    for _ in range(calls):
        actions = _actions(_act(cls, model, observations), len(rows), A)
        np.add.at(counts, (rows, actions), 1)
    return counts


def _check_sampling(cls: Any) -> None:
    rows = np.arange(32) % 2  # profiles alternate along the batch
    counts = _sample_counts(cls, rows, calls=40)
    for profile in (0, 1):
        p_value = chi_square_p_value(counts[profile], PROFILE_PROBS[profile])
        if p_value < P_VALUE_THRESHOLD:
            n = counts[profile].sum()
            raise CheckFailed(
                f"over {n} draws from logits {fmt(np.log(PROFILE_PROBS[profile]) + 2, 2)} "
                f"(softmax = {fmt(PROFILE_PROBS[profile], 2)}) your action frequencies were "
                f"{fmt(counts[profile] / n, 3)} (chi-square p = {p_value:.1e} < "
                f"{P_VALUE_THRESHOLD:g}). Sample, do not take the argmax: "
                "torch.distributions.Categorical(logits=logits).sample() or "
                "torch.multinomial(F.softmax(logits, dim=-1), 1)"
            )


def _check_independent(cls: Any) -> None:
    rows = np.zeros(256, dtype=np.int64)  # one call, 256 envs with the same logits
    counts = _sample_counts(cls, rows, calls=1)[0]
    p_value = chi_square_p_value(counts, PROFILE_PROBS[0])
    if p_value < P_VALUE_THRESHOLD:
        if np.count_nonzero(counts) == 1:
            hint = "every env got the same action: draw one independent action per env (row)"
        else:
            hint = "sample each row from softmax(logits) of that row"
        raise CheckFailed(
            f"in one call with 256 envs sharing the softmax {fmt(PROFILE_PROBS[0], 2)}, the "
            f"actions came out with frequencies {fmt(counts / 256, 3)} (p = {p_value:.1e}): {hint}"
        )


def _check_batch_of_one(cls: Any) -> None:
    _check_types(cls, N=1)


SUBCHECKS = (
    SubCheck(
        "types",
        "act returns the four keys with the right types and shapes (N=5, A=6)",
        2,
        _check_types,
    ),
    SubCheck(
        "outputs",
        "logits and values are the model's outputs on the observations",
        1,
        _check_outputs,
    ),
    SubCheck(
        "log_probs",
        "log_probs = log_softmax(logits) at the sampled actions, with autograd graph",
        2,
        _check_log_probs,
    ),
    SubCheck(
        "sampling", "actions are sampled from softmax(logits) (chi-square test)", 3, _check_sampling
    ),
    SubCheck("independent", "each env draws its own action in one call", 1, _check_independent),
    SubCheck("batch_of_one", "works for a batch of one observation (N=1)", 1, _check_batch_of_one),
)
