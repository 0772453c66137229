"""Checks of the ``policy`` part: ``Policy(model).act(observations) -> dict``.

Contract (docs/design.md): ``act`` takes ``uint8 (N, 4, 84, 84)`` observations and returns
``actions`` (integers ``(N,)``, sampled from softmax(logits): a numpy int array, or an integer
torch tensor, which the runner converts), ``logits`` ``(N, A)``, ``log_probs`` ``(N,)`` and
``values`` ``(N,)``, the last three torch tensors with their graph.

Shapes, outputs and the graph are checked on a small fixture network; logits are compared up to
a constant per row (softmax ignores it, so ``log_softmax(logits)`` is as good as the logits).
Sampling is checked with :class:`~course_lib.checks.fixtures.ProfileModel`, whose
probabilities are known, by a chi-square goodness-of-fit test. Its threshold, p < 1e-6, makes a
false failure of a correct sampler a one-in-a-million event (and the seeds are fixed, so a grade
never changes between runs), while greedy (argmax) or uniform sampling gives p < 1e-50.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from course_lib.checks import fixtures

from .base import CheckFailed, SubCheck, array_of, describe, fmt, is_close, log_softmax

__all__ = ["SUBCHECKS", "chi_square_p_value"]

N_ACTIONS = 6
KEYS = ("actions", "logits", "log_probs", "values")
#: Action probabilities of the two profiles of the sampling test (rows alternate).
PROFILE_PROBS = np.array([[0.5, 0.25, 0.15, 0.1], [0.1, 0.15, 0.25, 0.5]])
PROFILE_LOGITS = np.log(PROFILE_PROBS) + 2.0  # not normalised: softmax must do that
P_VALUE_THRESHOLD = 1e-6


def chi_square_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """P(chi2 >= observed) for ``counts`` drawn from ``probs`` (Pearson, df = len - 1)."""
    expected = counts.sum() * probs
    statistic = float(((counts - expected) ** 2 / expected).sum())
    df = len(probs) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2.0), torch.tensor(statistic / 2.0)))


def _case(n: int, seed: int) -> dict[str, Any]:
    return {
        "model": "two_heads",
        "n_actions": N_ACTIONS,
        "init_seed": seed,
        "n": n,
        "obs_seed": seed,
    }


@functools.lru_cache(maxsize=8)
def _expected(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """logits (n, A) and values (n,) of the fixture network on the case's frames."""
    model = fixtures.make_fixture_model("two_heads", N_ACTIONS, seed)
    with torch.no_grad():
        logits, values = model(torch.from_numpy(fixtures.random_frames(n, seed)))
    return logits.double().numpy(), values.double().numpy()


def _keys(obs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    returned = obs["returned"]
    if returned.get("kind") != "dict":
        raise CheckFailed(
            f"act() should return a dict with keys {list(KEYS)}, got {describe(returned)}"
        )
    missing = [key for key in KEYS if key not in obs["keys"]]
    if missing:
        raise CheckFailed(f"act() returned a dict without {missing} (its keys: {returned['keys']})")
    return obs["keys"]


def actions_of(record: dict[str, Any], n: int, n_actions: int) -> np.ndarray:
    """The actions as int64 numpy, after checking type, shape and range."""
    if record.get("kind") not in ("ndarray", "tensor") or record.get("dtype", "")[:3] not in (
        "int",
        "uin",
    ):
        raise CheckFailed(
            f"actions should be integers of shape ({n},): a numpy int64 array (or an integer "
            f"torch tensor), got {describe(record)}: sample action indices, e.g. "
            "torch.distributions.Categorical(logits=logits).sample()"
        )
    if tuple(record["shape"]) != (n,):
        raise CheckFailed(
            f"actions should have shape (N,) = ({n},), got {tuple(record['shape'])} "
            "(sampled with shape (N, 1)? squeeze the last axis only, not the batch axis)"
        )
    actions = array_of(record)
    if actions is None or actions.min() < 0 or actions.max() >= n_actions:
        raise CheckFailed(f"actions should lie in [0, {n_actions}), got {fmt(actions)}")
    return actions.astype(np.int64)


def _types(obs: dict[str, Any], case: dict[str, Any]) -> None:
    n = case["n"]
    keys = _keys(obs)
    actions_of(keys["actions"], n, N_ACTIONS)
    for key, shape in (("logits", (n, N_ACTIONS)), ("log_probs", (n,)), ("values", (n,))):
        record = keys[key]
        if record.get("kind") != "tensor" or tuple(record["shape"]) != shape:
            raise CheckFailed(
                f"with N={n} observations and A={N_ACTIONS} actions, {key} should be a torch "
                f"tensor of shape {shape}, got {describe(record)}"
            )
        if not record["dtype"].startswith("float"):
            raise CheckFailed(f"{key} should be a float tensor, got {describe(record)}")


def _outputs(obs: dict[str, Any], case: dict[str, Any]) -> None:
    _types(obs, case)
    want_logits, want_values = _expected(case["n"], case["init_seed"])
    got_logits, got_values = array_of(obs["keys"]["logits"]), array_of(obs["keys"]["values"])
    hint = (
        " (pass the observations to the model as they are, uint8 in [0, 255]: the model "
        "scales them itself)"
    )
    # Logits are defined up to a constant per row: compare the distributions they define.
    if not is_close(log_softmax(got_logits), log_softmax(want_logits), rtol=1e-4, atol=1e-5):
        raise CheckFailed(
            f"logits differ from model(observations) (up to a constant per row): expected "
            f"{fmt(want_logits)}, got {fmt(got_logits)}{hint}"
        )
    if not is_close(got_values, want_values, rtol=1e-4, atol=1e-5):
        raise CheckFailed(
            f"values differ from model(observations): expected {fmt(want_values)}, got "
            f"{fmt(got_values)}{hint}"
        )


def _log_probs(obs: dict[str, Any], case: dict[str, Any]) -> None:
    _types(obs, case)
    n, keys = case["n"], obs["keys"]
    for key in ("logits", "log_probs", "values"):
        if not keys[key]["requires_grad"]:
            raise CheckFailed(
                f"{key} has no autograd graph: do not compute it under torch.no_grad() or "
                ".detach() it; A2C backpropagates through it"
            )
    actions = actions_of(keys["actions"], n, N_ACTIONS)
    log_pi = log_softmax(array_of(keys["logits"]))
    rows = np.arange(n)
    expected = log_pi[rows, actions]
    got = array_of(keys["log_probs"])
    if not is_close(got, expected, rtol=1e-4, atol=1e-5):
        hint = ""
        if is_close(got, np.exp(expected), rtol=1e-4, atol=1e-5):
            hint = " You returned probabilities: take the log (F.log_softmax)."
        elif is_close(got, array_of(keys["logits"])[rows, actions], rtol=1e-4, atol=1e-5):
            hint = " You returned raw logits: apply F.log_softmax(logits, dim=-1) first."
        elif any(is_close(got, log_pi[:, a], rtol=1e-4, atol=1e-5) for a in range(N_ACTIONS)):
            hint = " Pick each row's entry at its own sampled action (gather with the actions)."
        raise CheckFailed(
            f"log_probs should be log_softmax(logits)[i, actions[i]] = {fmt(expected)} for "
            f"actions {fmt(actions)}, got {fmt(got)}.{hint}"
        )
    if not obs.get("log_probs_reach_model"):
        raise CheckFailed("the gradient of log_probs does not reach the model's parameters")


def _counts(obs: dict[str, Any], n: int) -> np.ndarray:
    if obs["counts"] is None:
        actions_of(obs["bad_actions"], n, PROFILE_PROBS.shape[1])
        raise CheckFailed(f"act() returned unusable actions: {describe(obs['bad_actions'])}")
    return np.asarray(obs["counts"])


def _sampling(obs: dict[str, Any], case: dict[str, Any]) -> None:
    counts = _counts(obs, len(case["rows"]))
    for profile in (0, 1):
        p_value = chi_square_p_value(counts[profile], PROFILE_PROBS[profile])
        if p_value < P_VALUE_THRESHOLD:
            n = counts[profile].sum()
            raise CheckFailed(
                f"over {n} draws from logits {fmt(PROFILE_LOGITS[profile], 2)} "
                f"(softmax = {fmt(PROFILE_PROBS[profile], 2)}) your action frequencies were "
                f"{fmt(counts[profile] / n, 3)} (chi-square p = {p_value:.1e} < "
                f"{P_VALUE_THRESHOLD:g}). Sample from softmax(logits), do not take the argmax"
            )


def _independent(obs: dict[str, Any], case: dict[str, Any]) -> None:
    counts = _counts(obs, len(case["rows"]))[0]
    p_value = chi_square_p_value(counts, PROFILE_PROBS[0])
    if p_value < P_VALUE_THRESHOLD:
        if np.count_nonzero(counts) == 1:
            hint = "every env got the same action: draw one independent action per env (row)"
        else:
            hint = "sample each row from softmax(logits) of that row"
        raise CheckFailed(
            f"in one call with {counts.sum()} envs sharing the softmax {fmt(PROFILE_PROBS[0], 2)}, "
            f"the actions came out with frequencies {fmt(counts / counts.sum(), 3)} "
            f"(p = {p_value:.1e}): {hint}"
        )


def _samples_case(rows: np.ndarray, calls: int) -> dict[str, Any]:
    return {"logits": PROFILE_LOGITS, "rows": rows, "calls": calls}


SUBCHECKS = (
    SubCheck(
        "types",
        "act returns the four keys with the right types and shapes (N=5, A=6)",
        2,
        "policy_act",
        (_case(5, 1),),
        _types,
    ),
    SubCheck(
        "outputs",
        "logits and values are the model's outputs on the observations",
        1,
        "policy_act",
        (_case(5, 2),),
        _outputs,
    ),
    SubCheck(
        "log_probs",
        "log_probs = log_softmax(logits) at the sampled actions, with autograd graph",
        2,
        "policy_act",
        (_case(5, 3),),
        _log_probs,
    ),
    SubCheck(
        "sampling",
        "actions are sampled from softmax(logits) (chi-square test)",
        3,
        "policy_samples",
        (_samples_case(np.arange(32) % 2, 40),),
        _sampling,
    ),
    SubCheck(
        "independent",
        "each env draws its own action in one call",
        1,
        "policy_samples",
        (_samples_case(np.zeros(256, dtype=np.int64), 1),),
        _independent,
    ),
    SubCheck(
        "batch_of_one",
        "works for a batch of one observation (N=1)",
        1,
        "policy_act",
        (_case(1, 4),),
        _types,
    ),
)
