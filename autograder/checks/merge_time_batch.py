"""Checks of the ``merge_time_batch`` part: ``MergeTimeBatch()(trajectory)``.

Contract (docs/design.md): in place, every per-step list (and a ``(T, N)`` ``value_targets``)
becomes one ``(T*N, ...)`` batch, time-major (row ``t*N + i`` = step t, env i); tensors stay
tensors (with their graph), arrays stay arrays; ``state`` untouched.

The trajectory (:func:`course_lib.checks.fixtures.coded_trajectory`) has the runner's keys;
every entry encodes where it came from (``100 t + i``, or frame ``t*N + i`` for observations),
so a wrong order can be told row by row, and every tensor hangs off one leaf tensor, so the
graph can be checked exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_lib.checks.probes import PER_STEP_KEYS
from solutions import reference

from .base import CheckFailed, SubCheck, array_of, describe, reference_observation

__all__ = ["SUBCHECKS"]

N_ACTIONS = 3
#: How to read the code 100 t + i back from one merged row of each key.
DECODE = {
    "actions": lambda row: row[0],
    "logits": lambda row: row[0] / 10,
    "log_probs": lambda row: -row[0],
    "values": lambda row: row[0] - 0.5,
    "rewards": lambda row: row[0] * 1000,
    "value_targets": lambda row: row[0] - 0.25,
}


def _case(T: int, N: int, targets_as_tensor: bool = False) -> dict[str, Any]:
    return {"T": T, "N": N, "targets_as_tensor": targets_as_tensor}


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
        if got.get("kind") not in ("tensor", "ndarray") or got["shape"] != want["shape"]:
            raise CheckFailed(
                f"with T={case['T']}, N={case['N']}: trajectory[{key!r}] should be one batch of "
                f"shape {tuple(want['shape'])} (T*N rows), got {describe(got)}"
            )


def _rows(record: dict[str, Any], key: str) -> np.ndarray | None:
    if key == "observations":
        return None if record.get("codes") is None else np.asarray(record["codes"])[:, None]
    array = array_of(record)
    return None if array is None else array.reshape(len(array), -1)


def _holds(key: str, row: np.ndarray, N: int) -> str:
    """``"step t=2, env i=0"`` for a merged row, when its content can be decoded."""
    if key == "observations":
        index = int(round(float(row[0])))
        return f"step t={index // N}, env i={index % N}"
    code = int(round(float(DECODE[key](row))))
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
        rows = np.flatnonzero(~np.all(got == want, axis=1))
        if len(rows):
            row = int(rows[0])
            raise CheckFailed(
                f"with T={case['T']}, N={N}, row {row} of trajectory[{key!r}] should be step "
                f"t={row // N}, env i={row % N} (time-major: row = t*N + i) but holds "
                f"{_holds(key, got[row], N)}; every key must use the same order, time first"
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
    ok = ok and codes is not None and len(codes) == case["N"] and bool(np.all(codes == 255))
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
        (_case(3, 2),),
        _shapes,
    ),
    SubCheck(
        "time_major",
        "rows are time-major (row t*N + i = step t, env i) in every key",
        3,
        "merge",
        (_case(3, 2),),
        _order,
    ),
    SubCheck(
        "graph",
        "tensors stay torch tensors with their autograd graph",
        2,
        "merge",
        (_case(3, 2),),
        _graph,
    ),
    SubCheck(
        "arrays",
        "numpy arrays stay numpy arrays with their dtype",
        1,
        "merge",
        (_case(3, 2),),
        _arrays,
    ),
    SubCheck(
        "tensor_targets",
        "value_targets given as one (T, N) tensor is merged too",
        1,
        "merge",
        (_case(3, 2, targets_as_tensor=True),),
        _tensor_targets,
    ),
    SubCheck("state", "trajectory['state'] is left untouched", 1, "merge", (_case(3, 2),), _state),
    SubCheck(
        "edges",
        "works for T = 1 and for N = 1",
        1,
        "merge",
        (_case(1, 3), _case(4, 1), _case(1, 1)),
        _edges,
    ),
)
