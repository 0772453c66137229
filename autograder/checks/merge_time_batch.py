"""Checks of the ``merge_time_batch`` part: ``MergeTimeBatch()(trajectory)``.

Contract (design.md section 5): in place, every per-step list (and a ``(T, N)``
``value_targets``) becomes one ``(T*N, ...)`` batch, time-major (row ``t*N + i`` = step t,
env i); tensors stay tensors (with their graph), arrays stay arrays; ``state`` untouched.

The trajectory has the runner's keys; every entry encodes where it came from (the number
``code = 100 t + i``, or frame ``t*N + i`` for observations), so a wrong order can be told
row by row. The tensors hang off one leaf tensor, so the graph can be checked exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from solutions import reference

from .base import CheckFailed, SubCheck, as_array, describe
from .fakes import frames

__all__ = ["SUBCHECKS", "make_trajectory"]

PER_STEP_KEYS = (
    "actions",
    "logits",
    "log_probs",
    "values",
    "observations",
    "rewards",
    "resets",
    "value_targets",
)
N_ACTIONS = 3


def make_trajectory(
    T: int, N: int, targets_as_tensor: bool = False
) -> tuple[dict[str, Any], torch.Tensor]:
    """A runner-shaped trajectory whose entries encode (t, i), and the leaf of its graph."""
    leaf = torch.zeros((), requires_grad=True)
    code = 100.0 * np.arange(T)[:, None] + np.arange(N)[None, :]  # (T, N)
    trajectory: dict[str, Any] = {
        "actions": [code[t].astype(np.int64) for t in range(T)],
        "logits": [
            torch.as_tensor(code[t, :, None] * 10 + np.arange(N_ACTIONS), dtype=torch.float32)
            + leaf
            for t in range(T)
        ],
        "log_probs": [-torch.as_tensor(code[t], dtype=torch.float32) + leaf for t in range(T)],
        "values": [torch.as_tensor(code[t] + 0.5, dtype=torch.float32) + leaf for t in range(T)],
        "observations": list(frames(np.arange(T * N).reshape(T, N))),
        "rewards": [(code[t] / 1000).astype(np.float32) for t in range(T)],
        "resets": [(code[t] % 3 == 0) for t in range(T)],
    }
    targets = torch.as_tensor(code + 0.25, dtype=torch.float32)  # (T, N), no graph
    trajectory["value_targets"] = targets if targets_as_tensor else list(targets)
    trajectory["state"] = {"latest_observation": frames(np.full(N, 255)), "env_steps": T}
    return trajectory, leaf


def _merged(cls: Any, T: int, N: int, targets_as_tensor: bool = False):
    trajectory, leaf = make_trajectory(T, N, targets_as_tensor)
    returned = cls()(trajectory)
    if all(isinstance(trajectory[key], list) for key in PER_STEP_KEYS):
        hint = ""
        if isinstance(returned, dict):
            hint = " (your __call__ returns a new dict; the runner ignores it: assign the merged "
            hint += "batches back into `trajectory[key]`)"
        raise CheckFailed(f"the trajectory is unchanged after your transform{hint}")
    return trajectory, leaf


def _expected(T: int, N: int, targets_as_tensor: bool = False) -> dict[str, Any]:
    trajectory, _ = make_trajectory(T, N, targets_as_tensor)
    reference.MergeTimeBatch()(trajectory)
    return trajectory


#: How to read the code 100 t + i back from one merged row of each key.
DECODE = {
    "actions": lambda row: row[0],
    "logits": lambda row: row[0] / 10,
    "log_probs": lambda row: -row[0],
    "values": lambda row: row[0] - 0.5,
    "rewards": lambda row: row[0] * 1000,
    "value_targets": lambda row: row[0] - 0.25,
}


def _check_shapes(
    cls: Any, T: int = 3, N: int = 2, targets_as_tensor: bool = False, keys=PER_STEP_KEYS
) -> None:
    trajectory, _ = _merged(cls, T, N, targets_as_tensor)
    expected = _expected(T, N, targets_as_tensor)
    for key in keys:
        got = trajectory.get(key)
        shape = tuple(getattr(got, "shape", ()))
        if not hasattr(got, "shape") or shape != tuple(expected[key].shape):
            raise CheckFailed(
                f"with T={T}, N={N}: trajectory[{key!r}] should be one batch of shape "
                f"{tuple(expected[key].shape)} (T*N rows), got {describe(got)}"
            )


def _holds(key: str, row: np.ndarray, N: int) -> str:
    """``"step t=2, env i=0"`` for a merged row, when its content can be decoded."""
    if key == "observations":
        index = int(round(float(row.flat[0])))
        return f"step t={index // N}, env i={index % N}"
    if key in DECODE:
        code = int(round(float(DECODE[key](row.reshape(-1)))))
        if code >= 0 and code % 100 < N:
            return f"step t={code // 100}, env i={code % 100}"
    return "other data"


def _check_order(
    cls: Any, T: int = 3, N: int = 2, targets_as_tensor: bool = False, keys=PER_STEP_KEYS
) -> None:
    trajectory, _ = _merged(cls, T, N, targets_as_tensor)
    expected = _expected(T, N, targets_as_tensor)
    for key in keys:
        got = as_array(trajectory[key], f"trajectory[{key!r}]")
        want = as_array(expected[key], key)
        if got.shape != want.shape:
            raise CheckFailed(f"trajectory[{key!r}] has shape {got.shape}, expected {want.shape}")
        rows = np.flatnonzero(~np.all((got == want).reshape(len(want), -1), axis=1))
        if len(rows):
            row = int(rows[0])
            raise CheckFailed(
                f"with T={T}, N={N}, row {row} of trajectory[{key!r}] should be step "
                f"t={row // N}, env i={row % N} (time-major: row = t*N + i) but holds "
                f"{_holds(key, got[row], N)}; stack over time first (np.stack / torch.stack "
                "gives (T, N, ...)), then reshape to (T*N, ...), the same way for every key"
            )


def _check_graph(cls: Any) -> None:
    T, N = 3, 2
    trajectory, leaf = _merged(cls, T, N)
    total = 0
    for key in ("logits", "log_probs", "values"):
        value = trajectory[key]
        if not isinstance(value, torch.Tensor):
            raise CheckFailed(f"trajectory[{key!r}] became {describe(value)}; keep torch tensors")
        if not value.requires_grad:
            raise CheckFailed(
                f"trajectory[{key!r}] lost its autograd graph (requires_grad=False): do not "
                "detach or go through numpy, A2C backpropagates through it"
            )
        total = total + value.sum()
    total.backward()
    expected = T * N * (N_ACTIONS + 2)
    if leaf.grad is None or not np.isclose(float(leaf.grad), expected):
        raise CheckFailed(
            "the merged tensors are not connected to the original graph: the gradient of "
            f"sum(logits) + sum(log_probs) + sum(values) reached the per-step tensors as "
            f"{None if leaf.grad is None else float(leaf.grad)}, expected {expected}"
        )


def _check_arrays(cls: Any) -> None:
    trajectory, _ = _merged(cls, 3, 2)
    dtypes = {"actions": "int64", "observations": "uint8", "rewards": "float32", "resets": "bool"}
    for key, dtype in dtypes.items():
        value = trajectory[key]
        if not isinstance(value, np.ndarray) or str(value.dtype) != dtype:
            raise CheckFailed(
                f"trajectory[{key!r}] should stay a numpy array of dtype {dtype}, got "
                f"{describe(value)}: use np.stack/np.concatenate for numpy lists"
            )


def _check_tensor_targets(cls: Any) -> None:
    _check_shapes(cls, 3, 2, targets_as_tensor=True, keys=("value_targets",))
    _check_order(cls, 3, 2, targets_as_tensor=True, keys=("value_targets",))


def _check_state(cls: Any) -> None:
    trajectory, _ = _merged(cls, 3, 2)
    new = trajectory.get("state")
    ok = isinstance(new, dict) and set(new) == {"latest_observation", "env_steps"}
    ok = ok and new["env_steps"] == 3
    ok = ok and isinstance(new["latest_observation"], np.ndarray)
    ok = ok and new["latest_observation"].shape == (2, 4, 84, 84)
    ok = ok and bool(np.all(new["latest_observation"] == 255))
    if not ok:
        raise CheckFailed(
            "trajectory['state'] changed: it is not a per-step list, leave it as it is "
            "(skip the key 'state' in your loop)"
        )


def _check_edges(cls: Any) -> None:
    for T, N in ((1, 3), (4, 1), (1, 1)):
        _check_shapes(cls, T, N)
        _check_order(cls, T, N)


SUBCHECKS = (
    SubCheck(
        "shapes", "every per-step list becomes one (T*N, ...) batch, in place", 2, _check_shapes
    ),
    SubCheck(
        "time_major",
        "rows are time-major (row t*N + i = step t, env i) in every key",
        3,
        _check_order,
    ),
    SubCheck("graph", "tensors stay torch tensors with their autograd graph", 2, _check_graph),
    SubCheck("arrays", "numpy arrays stay numpy arrays with their dtype", 1, _check_arrays),
    SubCheck(
        "tensor_targets",
        "value_targets given as one (T, N) tensor is merged too",
        1,
        _check_tensor_targets,
    ),
    SubCheck("state", "trajectory['state'] is left untouched", 1, _check_state),
    SubCheck("edges", "works for T = 1 and for N = 1", 1, _check_edges),
)
