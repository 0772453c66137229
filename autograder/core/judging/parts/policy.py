"""Checks of the ``policy`` part: ``Policy(model).act(observations) -> dict``.

Contract (docs/design.md): ``act`` takes ``uint8 (N, 4, 84, 84)`` observations and returns
``actions`` (integers ``(N,)``, sampled from softmax(logits): a numpy int array, or an integer
torch tensor, which the runner converts), ``logits`` ``(N, A)``, ``log_probs`` ``(N,)`` and
``values`` ``(N,)``, the last three torch tensors with their graph.

Outputs are checked on a small fixture network whose outputs the grader computes itself, on
frames drawn for this grading; logits are compared up to a constant per row (softmax ignores
it, so ``log_softmax(logits)`` is as good as the logits). The gate is ``outputs``, ``log_probs``
and ``sampling`` together: the fixture network the sandbox holds gives the outputs, but not
log-probabilities of drawn actions nor draws from the softmax; the properties (types, the graph
of logits and values, independent draws) earn only behind it. Sampling is
checked with :class:`~autograder.sandboxed.grading_runtime.fixtures.ProfileModel`, whose probabilities are drawn
for this grading, by a chi-square goodness-of-fit test. Its threshold, p < 1e-6, makes a false
failure of a correct sampler a one-in-a-million event, while greedy (argmax) or uniform sampling
gives p < 1e-30.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from autograder.core.judging.parts.subcheck import (
    CheckFailed,
    SubCheck,
    array_of,
    describe,
    fmt,
    is_close,
    log_softmax,
    where_wrong,
)
from autograder.sandboxed.grading_runtime import fixtures
from course_lib.checks.properties import (
    actions_problem,
    chi_square_p_value,
    log_probs_problem,
)

__all__ = ["GATE", "SUBCHECKS", "chi_square_p_value", "draw_cases"]

#: What only act's whole computation on the given model produces: the model's outputs, the
#: log-probabilities of the actions it drew, and draws that follow the secret profiles' softmax.
#: The fixture network alone explains the outputs, never the other two.
GATE = ("outputs", "log_probs", "sampling")
KEYS = ("actions", "logits", "log_probs", "values")
#: The shape of the sampling test's profiles: a permutation of these, slightly perturbed.
PROFILE = np.array([0.5, 0.25, 0.15, 0.1])
P_VALUE_THRESHOLD = 1e-6


@functools.lru_cache(maxsize=16)
def _expected(
    n_actions: int, n: int, init_seed: int, obs_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """logits (n, A) and values (n,) of the fixture network on the case's frames."""
    model = fixtures.make_fixture_model("two_heads", n_actions, init_seed)
    with torch.no_grad():
        logits, values = model(torch.from_numpy(fixtures.random_frames(n, obs_seed)))
    return logits.double().numpy(), values.double().numpy()


def _keys(observation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    returned = observation["returned"]
    if returned.get("kind") != "dict":
        raise CheckFailed(
            f"act() should return a dict with keys {list(KEYS)}, got {describe(returned)}"
        )
    missing = [key for key in KEYS if key not in observation["keys"]]
    if missing:
        raise CheckFailed(f"act() returned a dict without {missing} (its keys: {returned['keys']})")
    return observation["keys"]


def _types(observation: dict[str, Any], case: dict[str, Any]) -> None:
    n, A = case["n"], case["n_actions"]
    keys = _keys(observation)
    problem = actions_problem(keys["actions"], n, A)
    if problem:
        raise CheckFailed(problem)
    for key, shape in (("logits", (n, A)), ("log_probs", (n,)), ("values", (n,))):
        record = keys[key]
        if record.get("kind") != "tensor" or tuple(record["shape"]) != shape:
            raise CheckFailed(
                f"with N={n} observations and A={A} actions, {key} should be a torch "
                f"tensor of shape {shape}, got {describe(record)}"
            )
        if not str(record["dtype"]).startswith("float"):
            raise CheckFailed(f"{key} should be a float tensor, got {describe(record)}")


def _outputs(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _types(observation, case)
    want_logits, want_values = _expected(
        case["n_actions"], case["n"], case["init_seed"], case["obs_seed"]
    )
    keys = observation["keys"]
    got_logits, got_values = array_of(keys["logits"]), array_of(keys["values"])
    hint = (
        " (pass the observations to the model as they are, uint8 in [0, 255]: the model "
        "scales them itself)"
    )
    # Logits are defined up to a constant per row: compare the distributions they define.
    if not is_close(log_softmax(got_logits), log_softmax(want_logits), rtol=1e-4, atol=1e-5):
        raise CheckFailed(
            f"logits differ from model(observations) (up to a constant per row) on N={case['n']} "
            f"frames: {where_wrong(log_softmax(got_logits), log_softmax(want_logits), 1e-4, 1e-5)}{hint}"
        )
    if not is_close(got_values, want_values, rtol=1e-4, atol=1e-5):
        raise CheckFailed(
            f"values differ from model(observations) on N={case['n']} frames: "
            f"{where_wrong(got_values, want_values, 1e-4, 1e-5)}{hint}"
        )


def _log_probs(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _types(observation, case)
    keys = observation["keys"]
    want_logits, _ = _expected(case["n_actions"], case["n"], case["init_seed"], case["obs_seed"])
    actions = array_of(keys["actions"]).astype(np.int64)
    got = array_of(keys["log_probs"])
    # Against the grader's own logits, so a policy with wrong logits cannot pass by consistency.
    problem = log_probs_problem(got, want_logits, actions)
    if problem:
        own = log_probs_problem(got, array_of(keys["logits"]), actions)
        raise CheckFailed(problem if own else f"{problem} (they fit your logits, not the model's)")
    reached = observation.get("log_probs_reach_model") is True
    if not keys["log_probs"].get("requires_grad") or not reached:
        raise CheckFailed(
            "log_probs carry no autograd graph to the model's parameters (computed with "
            "gradients switched off, or detached?): A2C backpropagates through them"
        )


def _graph(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _types(observation, case)
    for key, why in (
        ("values", "the critic learns from them (value loss): return them as the model made them"),
        ("logits", "the entropy bonus is computed from them: return them as the model made them"),
    ):
        if observation.get(f"{key}_reach_model") is not True:
            raise CheckFailed(
                f"{key} carry no autograd graph to the model's parameters (detached or computed "
                f"with gradients switched off?): {why}"
            )


def _counts(observation: dict[str, Any], case: dict[str, Any]) -> np.ndarray:
    n, A = len(case["rows"]), np.asarray(case["logits"]).shape[1]
    if observation["counts"] is None:
        problem = actions_problem(observation["bad_actions"], n, A)
        raise CheckFailed(
            problem or f"act() returned unusable actions: {describe(observation['bad_actions'])}"
        )
    counts = np.asarray(observation["counts"])
    if counts.shape != (2, A) or counts.min() < 0 or counts.sum() != n * case["calls"]:
        raise CheckFailed("the action counts do not add up to the number of draws")
    return counts


def _probs(case: dict[str, Any]) -> np.ndarray:
    logits = np.asarray(case["logits"], dtype=np.float64)
    return np.exp(log_softmax(logits))


def _sampling(observation: dict[str, Any], case: dict[str, Any]) -> None:
    counts, probs = _counts(observation, case), _probs(case)
    for profile in (0, 1):
        p_value = chi_square_p_value(counts[profile], probs[profile])
        if p_value < P_VALUE_THRESHOLD:
            n = counts[profile].sum()
            raise CheckFailed(
                f"over {n} draws from logits {fmt(case['logits'][profile], 2)} "
                f"(softmax = {fmt(probs[profile], 2)}) your action frequencies were "
                f"{fmt(counts[profile] / n, 3)} (chi-square p = {p_value:.1e} < "
                f"{P_VALUE_THRESHOLD:g}). Sample from softmax(logits), do not take the argmax"
            )


def _independent(observation: dict[str, Any], case: dict[str, Any]) -> None:
    counts, probs = _counts(observation, case)[0], _probs(case)[0]
    p_value = chi_square_p_value(counts, probs)
    if p_value < P_VALUE_THRESHOLD:
        if np.count_nonzero(counts) == 1:
            hint = "every env got the same action: draw one independent action per env (row)"
        else:
            hint = "sample each row from softmax(logits) of that row"
        raise CheckFailed(
            f"in one call with {counts.sum()} envs sharing the softmax {fmt(probs, 2)}, "
            f"the actions came out with frequencies {fmt(counts / counts.sum(), 3)} "
            f"(p = {p_value:.1e}): {hint}"
        )


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: network seeds, frames, batch sizes and sampling profiles."""

    def act_case(n: int) -> dict[str, Any]:
        seeds = rng.integers(0, 2**31, 2)
        return {
            "model": "two_heads",
            "n_actions": int(rng.integers(3, 9)),
            "n": n,
            "init_seed": int(seeds[0]),
            "obs_seed": int(seeds[1]),
        }

    profiles = []
    for _ in range(2):
        probs = PROFILE * rng.uniform(0.9, 1.1, size=4)
        profiles.append(rng.permutation(probs / probs.sum()))
    if np.argmax(profiles[0]) == np.argmax(profiles[1]):
        profiles[1] = profiles[1][::-1].copy()
    logits = np.log(np.array(profiles)) + rng.uniform(-2.0, 2.0, size=(2, 1))
    mixed = rng.permutation(np.arange(32) % 2)
    return {
        "act": [act_case(int(rng.integers(3, 8)))],
        "one": [act_case(1)],
        "samples": [{"logits": logits, "rows": mixed, "calls": 40}],
        "independent": [{"logits": logits, "rows": np.zeros(256, dtype=np.int64), "calls": 1}],
    }


SUBCHECKS = (
    SubCheck(
        "types",
        "act returns the four keys with the right types and shapes",
        2,
        "policy_act",
        "act",
        _types,
        gated=True,
    ),
    SubCheck(
        "outputs",
        "logits and values are the model's outputs on the observations",
        1,
        "policy_act",
        "act",
        _outputs,
    ),
    SubCheck(
        "log_probs",
        "log_probs = log_softmax(logits) at the sampled actions, with autograd graph",
        2,
        "policy_act",
        "act",
        _log_probs,
    ),
    SubCheck(
        "graph",
        "logits and values keep their autograd graph to the model (A2C trains through them)",
        1,
        "policy_act",
        "act",
        _graph,
        gated=True,
    ),
    SubCheck(
        "sampling",
        "actions are sampled from softmax(logits) (chi-square test)",
        3,
        "policy_samples",
        "samples",
        _sampling,
        gated=True,
    ),
    SubCheck(
        "independent",
        "each env draws its own action in one call",
        1,
        "policy_samples",
        "independent",
        _independent,
        gated=True,
    ),
    SubCheck(
        "batch_of_one",
        "works for a batch of one observation (N=1)",
        1,
        "policy_act",
        "one",
        _outputs,
    ),
)
