"""Checks of the ``merge_time_batch`` part: ``MergeTimeBatch()(trajectory)``.

Contract (docs/design.md): in place, every per-step list (and a ``(T, N)`` ``value_targets``)
becomes one ``(T*N, ...)`` batch, time-major (row ``t*N + i`` = step t, env i); tensors stay
tensors (with their graph), arrays stay arrays; ``state`` untouched.

The trajectory (:func:`autograder.sandboxed.grading_runtime.fixtures.coded_trajectory`) has the runner's keys;
every entry encodes where it came from (``salt + 100 t + i``, or frame ``salt + t*N + i`` for
observations, with a salt drawn for this grading), so a wrong order can be told row by row, and
every tensor hangs off one leaf tensor, so the graph can be checked exactly. The gate is
``time_major`` (every row compared with the reference's merge); shapes, types, the graph and
the state are gated on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograder.core.judging.parts.subcheck import (
    CheckFailed,
    SubCheck,
    array_of,
    describe,
    reference_observation,
)
from autograder.sandboxed.grading_runtime.probes.merge_time_batch import PER_STEP_KEYS
from course_lib.checks.properties import batch_problem
from solutions import reference

__all__ = ["GATE", "SUBCHECKS", "draw_cases"]

GATE = ("time_major",)

N_ACTIONS = 3
#: How to read the code 100 t + i back from one merged row of each key.
DECODE = {
    "actions": lambda row: row[0],
    "logits": lambda row: row[0] / 10,
    "log_probs": lambda row: -row[0],
    "values": lambda row: row[0] - 0.5,
    "rewards": lambda row: row[0] * 1000,
    "resets": lambda row: -1,
    "value_targets": lambda row: row[0] - 0.25,
}


def draw_cases(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """This grading's cases: sizes and the salt of the codes."""

    def case(T: int, N: int, targets_as_tensor: bool = False) -> dict[str, Any]:
        salt = 1000 * int(rng.integers(1, 200))
        return {"T": T, "N": N, "targets_as_tensor": targets_as_tensor, "salt": salt}

    T, N = (int(x) for x in rng.integers(2, 5, size=2))
    return {
        "main": [case(T, N)],
        "tensor": [case(T, N, targets_as_tensor=True)],
        "edges": [case(1, int(rng.integers(2, 5))), case(int(rng.integers(2, 5)), 1), case(1, 1)],
    }


def _changed(observation: dict[str, Any]) -> None:
    if observation["unchanged"]:
        hint = ""
        if observation["returned"].get("kind") == "dict":
            hint = " (your __call__ returns a new dict; the runner ignores it: assign the merged "
            hint += "batches back into `trajectory[key]`)"
        raise CheckFailed(f"the trajectory is unchanged after your transform{hint}")


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    return reference_observation(reference.MergeTimeBatch, "merge", case)["keys"]


def _shapes(observation: dict[str, Any], case: dict[str, Any], keys=PER_STEP_KEYS) -> None:
    _changed(observation)
    expected = _expected(case)
    for key in keys:
        got, want = observation["keys"][key], expected[key]
        problem = batch_problem(got, key, want["kind"], tuple(want["shape"]))
        if problem and got.get("kind") in ("tensor", "ndarray") and got["shape"] == want["shape"]:
            continue  # right shape, other type: the "graph" and "arrays" checks say so
        if problem:
            raise CheckFailed(f"with T={case['T']}, N={case['N']}: {problem}")


def _rows(record: dict[str, Any], key: str) -> np.ndarray | None:
    if key == "observations":
        return None if record.get("codes") is None else np.asarray(record["codes"])[:, None]
    array = array_of(record)
    return None if array is None else array.reshape(len(array), -1)


def _holds(key: str, row: np.ndarray, case: dict[str, Any]) -> str:
    """``"step t=2, env i=0"`` for a merged row, when its content can be decoded."""
    N, salt = case["N"], case.get("salt", 0)
    if key == "observations":
        index = (int(round(float(row[0]))) - salt) % 256
        return f"step t={index // N}, env i={index % N}"
    code = int(round(float(DECODE[key](row)))) - salt
    if code >= 0 and code % 100 < N:
        return f"step t={code // 100}, env i={code % 100}"
    return "other data"


def _order(observation: dict[str, Any], case: dict[str, Any], keys=PER_STEP_KEYS) -> None:
    _shapes(observation, case, keys)
    expected, N = _expected(case), case["N"]
    for key in keys:
        got, want = _rows(observation["keys"][key], key), _rows(expected[key], key)
        if got is None:
            raise CheckFailed(
                f"trajectory[{key!r}] holds no numbers: {describe(observation['keys'][key])}"
            )
        if got.shape != want.shape:
            raise CheckFailed(f"trajectory[{key!r}] has {got.shape[0]} rows, expected T*N")
        rows = np.flatnonzero(~np.all(got == want, axis=1))
        if len(rows):
            row = int(rows[0])
            raise CheckFailed(
                f"with T={case['T']}, N={N}, row {row} of trajectory[{key!r}] should be step "
                f"t={row // N}, env i={row % N} (time-major: row = t*N + i) but holds "
                f"{_holds(key, got[row], case)}; every key must use the same order, time first"
            )


def _edges(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _order(observation, case)


def _graph(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _changed(observation)
    for key in ("logits", "log_probs", "values"):
        record = observation["keys"][key]
        if record.get("kind") != "tensor":
            raise CheckFailed(f"trajectory[{key!r}] became {describe(record)}; keep torch tensors")
        if not record["requires_grad"]:
            raise CheckFailed(
                f"trajectory[{key!r}] lost its autograd graph (requires_grad=False): do not "
                "detach or go through numpy, A2C backpropagates through it"
            )
    expected = case["T"] * case["N"] * (N_ACTIONS + 2)
    got = observation.get("leaf_grad")
    if got is None or not np.isclose(got, expected):
        raise CheckFailed(
            "the merged tensors are not connected to the original graph: the gradient of "
            "sum(logits) + sum(log_probs) + sum(values) reached the per-step tensors as "
            f"{got}, expected {expected}"
        )


def _arrays(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _changed(observation)
    dtypes = {"actions": "int64", "observations": "uint8", "rewards": "float32", "resets": "bool"}
    for key, dtype in dtypes.items():
        record = observation["keys"][key]
        if record.get("kind") != "ndarray" or record.get("dtype") != dtype:
            raise CheckFailed(
                f"trajectory[{key!r}] should stay a numpy array of dtype {dtype}, got "
                f"{describe(record)}: numpy lists become numpy arrays"
            )


def _tensor_targets(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _order(observation, case, keys=("value_targets",))


def _state(observation: dict[str, Any], case: dict[str, Any]) -> None:
    _changed(observation)
    state = observation.get("state") or {}
    codes = state.get("latest_codes")
    ok = state.get("keys") == ["env_steps", "latest_observation"]
    ok = ok and state.get("env_steps") == case["T"]
    ok = (
        ok
        and codes is not None
        and len(codes) == case["N"]
        and bool(np.all(np.asarray(codes) == 255))
    )
    if not ok:
        raise CheckFailed(
            "trajectory['state'] changed: it is not a per-step list, leave it as it is "
            f"(skip the key 'state'); it became {state or 'missing'}"
        )


SUBCHECKS = (
    SubCheck(
        "shapes",
        "every per-step list becomes one (T*N, ...) batch, in place",
        2,
        "merge",
        "main",
        _shapes,
        gated=True,
    ),
    SubCheck(
        "time_major",
        "rows are time-major (row t*N + i = step t, env i) in every key",
        3,
        "merge",
        "main",
        _order,
    ),
    SubCheck(
        "graph",
        "tensors stay torch tensors with their autograd graph",
        2,
        "merge",
        "main",
        _graph,
        gated=True,
    ),
    SubCheck(
        "arrays",
        "numpy arrays stay numpy arrays with their dtype",
        1,
        "merge",
        "main",
        _arrays,
        gated=True,
    ),
    SubCheck(
        "tensor_targets",
        "value_targets given as one (T, N) tensor is merged too",
        1,
        "merge",
        "tensor",
        _tensor_targets,
    ),
    SubCheck(
        "state", "trajectory['state'] is left untouched", 1, "merge", "main", _state, gated=True
    ),
    SubCheck("edges", "works for T = 1 and for N = 1", 1, "merge", "edges", _edges),
)
