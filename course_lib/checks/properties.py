"""What a part's output looks like, and the properties every check of it asks, as plain data.

One code for each property, shared by the visible checks of this package and by the course's
grader (which imports this module; nothing here imports the grader):

* :func:`capture` turns what student code returned into plain data (kind, dtype, shape,
  numbers), :func:`describe` says it in words, :func:`array_of` reads the numbers back;
* :func:`output_pair_problem` (a model's ``(logits, values)``), :func:`actions_problem`,
  :func:`log_probs_problem` and :func:`batch_problem` (one merged batch) return ``None`` when
  the property holds and a student-facing sentence when it does not;
* :func:`snapshot` and :func:`changed_keys` tell which entries of a trajectory a transform
  changed in place (it should only read them);
* :func:`has_graph`, :func:`log_softmax`, :func:`chi_square_p_value` and
  :func:`student_error` are the small helpers the checks share.
"""

from __future__ import annotations

import copy
import linecache
import traceback
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "actions_problem",
    "array_of",
    "batch_problem",
    "capture",
    "changed_keys",
    "chi_square_p_value",
    "describe",
    "has_graph",
    "log_probs_problem",
    "log_softmax",
    "output_pair_problem",
    "snapshot",
    "student_error",
]


# ------------------------------------------------------------------------------ capture
def _tensor_parts(value: Any) -> tuple[np.ndarray | None, dict[str, Any]]:
    info = {
        "dtype": str(value.dtype).replace("torch.", ""),
        "shape": list(value.shape),
        "requires_grad": bool(value.requires_grad),
        "device": str(value.device),
    }
    try:
        data = value.detach().cpu()
        if data.dtype.is_floating_point or data.dtype.is_complex:
            data = data.double() if not data.dtype.is_complex else data.real.double()
        return data.numpy(), info
    except Exception:  # noqa: BLE001 - meta tensors, odd dtypes: no data, the rest stays
        return None, info


def capture(value: Any, data: bool = True, depth: int = 0) -> dict[str, Any]:
    """A plain-data description of ``value`` (with its numbers when ``data``)."""
    import torch

    if depth > 6:
        return {"kind": "other", "type": type(value).__name__}
    if isinstance(value, torch.Tensor):
        array, info = _tensor_parts(value)
        out = {"kind": "tensor", **info}
        if data and array is not None:
            out["data"] = array
        return out
    if isinstance(value, np.ndarray):
        out = {"kind": "ndarray", "dtype": str(value.dtype), "shape": list(value.shape)}
        if data and value.dtype.kind in "biuf":
            out["data"] = value.astype(np.float64) if value.dtype.kind == "f" else value.copy()
        return out
    if isinstance(value, (bool, np.bool_)):
        return {"kind": "bool", "value": bool(value)}
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = float(value)
        if not np.isfinite(number):
            return {
                "kind": "number",
                "type": type(value).__name__,
                "value": None,
                "text": str(number),
            }
        return {"kind": "number", "type": type(value).__name__, "value": number}
    if isinstance(value, (tuple, list)):
        items = [capture(item, data, depth + 1) for item in value[:64]]
        return {"kind": type(value).__name__, "len": len(value), "items": items}
    if isinstance(value, dict):
        keys = [str(key)[:100] for key in list(value)[:64]]
        return {"kind": "dict", "keys": keys}
    if value is None:
        return {"kind": "none"}
    return {"kind": "other", "type": type(value).__name__[:100]}


def describe(record: dict[str, Any]) -> str:
    """``"torch.Tensor float32 (3, 2) with autograd graph"``... for a captured value."""
    kind = record.get("kind")
    shape = tuple(record.get("shape", ()))
    if kind == "tensor":
        grad = " with autograd graph" if record.get("requires_grad") else ""
        device = "" if record.get("device", "cpu") == "cpu" else f" on {record['device']}"
        return f"torch.Tensor {record.get('dtype')} {shape}{grad}{device}"
    if kind == "ndarray":
        return f"numpy.ndarray {record.get('dtype')} {shape}"
    if kind in ("list", "tuple"):
        items = sorted({describe(item) for item in record.get("items", [])})
        inner = items[0] if len(items) == 1 else ("mixed items" if items else "nothing")
        return f"{kind} of {record.get('len')} x {inner}"
    if kind == "dict":
        return f"dict with keys {record.get('keys')}"
    if kind in ("number", "bool"):
        value = record.get("value")
        return f"{record.get('type', kind)} {record.get('text', value)!s}"
    if kind == "none":
        return "None"
    return str(record.get("type", kind))


def array_of(record: dict[str, Any]) -> np.ndarray | None:
    """The numbers of a captured tensor, array, number or list of those; ``None`` if absent."""
    kind = record.get("kind")
    if kind in ("tensor", "ndarray"):
        data = record.get("data")
        return None if data is None else np.asarray(data, dtype=np.float64)
    if kind in ("number", "bool"):
        value = record.get("value")
        return None if value is None else np.asarray(float(value))
    if kind in ("list", "tuple") and record.get("items"):
        parts = [array_of(item) for item in record["items"]]
        if any(part is None for part in parts) or len(parts) != record.get("len"):
            return None
        if len({part.shape for part in parts}) != 1:
            return None
        return np.stack(parts)
    return None


# ------------------------------------------------------------------------------ properties
def has_graph(value: Any) -> bool:
    """True when ``value`` (a tensor, or a list or tuple of them) requires grad."""
    import torch

    if isinstance(value, (tuple, list)):
        return any(has_graph(item) for item in value)
    return isinstance(value, torch.Tensor) and value.requires_grad


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log softmax over the last axis, in float64, stable for large logits."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def chi_square_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """P(chi2 >= observed) for ``counts`` drawn from ``probs`` (Pearson, df = len - 1)."""
    import torch

    counts, probs = np.asarray(counts, dtype=np.float64), np.asarray(probs, dtype=np.float64)
    expected = counts.sum() * probs
    statistic = float(((counts - expected) ** 2 / expected).sum())
    df = len(probs) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2.0), torch.tensor(statistic / 2.0)))


def output_pair_problem(output: dict[str, Any], n: int, n_actions: int) -> str | None:
    """Is a captured ``model(obs)`` a pair of float tensors ``logits (n, A)``, ``values (n,)``?"""
    if output.get("kind") not in ("tuple", "list") or output.get("len") != 2:
        return f"model(obs) should return a pair (logits, values), got {describe(output)}"
    for name, item, shape in zip(
        ("logits", "values"), output["items"], ((n, n_actions), (n,)), strict=True
    ):
        got = tuple(item.get("shape", ()))
        if item.get("kind") != "tensor" or got != shape:
            hint = ""
            if name == "values" and item.get("kind") == "tensor":
                if got == (n, 1):
                    hint = ": the value head's output axis of size 1 must go (keep the batch "
                    hint += "axis), else targets - values broadcasts to (N, N)"
                elif got == ():
                    hint = ": removing every axis of size 1 also removed the batch axis when "
                    hint += "N = 1; remove the value head's output axis only"
            return (
                f"on uint8 obs (N={n}, 4, 84, 84) with n_actions={n_actions}, {name} should "
                f"have shape {shape}, got {describe(item)}{hint}"
            )
        if not str(item.get("dtype", "")).startswith(("float", "bfloat")):
            return f"{name} should be a float tensor, got {describe(item)}"
        data = array_of(item)
        if data is None or not np.all(np.isfinite(data)):
            return f"{name} hold inf or nan"
    return None


def actions_problem(record: dict[str, Any], n: int, n_actions: int) -> str | None:
    """Are captured actions integers of shape ``(n,)`` in ``[0, n_actions)``?"""
    if record.get("kind") not in ("ndarray", "tensor") or str(record.get("dtype", ""))[:3] not in (
        "int",
        "uin",
    ):
        return (
            f"actions should be integers of shape ({n},): a numpy int64 array (or an integer "
            f"torch tensor), got {describe(record)}: draw one action index per env from "
            "softmax(logits), not the probabilities themselves"
        )
    if tuple(record.get("shape", ())) != (n,):
        return (
            f"actions should have shape (N,) = ({n},), got {tuple(record.get('shape', ()))} "
            "(sampled with shape (N, 1)? squeeze the last axis only, not the batch axis)"
        )
    actions = array_of(record)
    if actions is None or actions.min() < 0 or actions.max() >= n_actions:
        return f"actions should lie in [0, {n_actions})"
    return None


def log_probs_problem(
    log_probs: np.ndarray, logits: np.ndarray, actions: np.ndarray, atol: float = 1e-5
) -> str | None:
    """Are ``log_probs`` = log_softmax(``logits``)[i, actions[i]]? (numbers, not the values)"""
    log_pi = log_softmax(logits)
    rows = np.arange(len(actions))
    actions = np.asarray(actions, dtype=np.int64)
    expected = log_pi[rows, actions]
    got = np.asarray(log_probs, dtype=np.float64)
    if got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4, atol=atol):
        return None
    hint = ""
    if got.shape != expected.shape:
        hint = f" (shape {got.shape}, expected {expected.shape})"
    elif np.allclose(got, np.exp(expected), rtol=1e-4, atol=atol):
        hint = " You returned probabilities: log_probs are their logarithms."
    elif np.allclose(got, np.asarray(logits)[rows, actions], rtol=1e-4, atol=atol):
        hint = (
            " You returned raw logits: they become log-probabilities once normalised over the "
            "actions of each row (the log of the softmax)."
        )
    elif any(np.allclose(got, log_pi[:, a], rtol=1e-4, atol=atol) for a in range(log_pi.shape[1])):
        hint = " Pick each row's entry at its own sampled action, not one action for all rows."
    return f"log_probs are not log_softmax(logits)[i, actions[i]].{hint}"


def batch_problem(
    record: dict[str, Any], key: str, kind: str, shape: tuple[int, ...]
) -> str | None:
    """Is a captured merged ``trajectory[key]`` one ``kind`` ("tensor"/"ndarray") of ``shape``?"""
    if record.get("kind") != kind or tuple(record.get("shape", ())) != tuple(shape):
        what = "torch tensor" if kind == "tensor" else "numpy array"
        return (
            f"trajectory[{key!r}] should be one {what} of shape {tuple(shape)} (T*N rows), got "
            f"{describe(record)}: tensors stay tensors, numpy lists become numpy arrays"
        )
    return None


# ------------------------------------------------------------------------------ inputs kept
def snapshot(trajectory: dict[str, Any]) -> dict[str, Any]:
    """A copy of every entry of ``trajectory`` (tensors detached and cloned), to compare later."""
    import torch

    def freeze(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {k: freeze(v) for k, v in value.items()}
        if isinstance(value, (tuple, list)):
            return [freeze(v) for v in value]
        return copy.deepcopy(value)

    return {key: freeze(value) for key, value in trajectory.items()}


def _same(old: Any, new: Any) -> bool:
    import torch

    if isinstance(old, dict):
        return (
            isinstance(new, dict)
            and set(old) == set(new)
            and all(_same(old[k], new[k]) for k in old)
        )
    if isinstance(old, list):
        return (
            isinstance(new, (list, tuple))
            and len(old) == len(new)
            and all(_same(a, b) for a, b in zip(old, new, strict=True))
        )
    if isinstance(old, torch.Tensor):
        return (
            isinstance(new, torch.Tensor)
            and old.shape == new.shape
            and bool(torch.equal(old, new.detach()))
        )
    if isinstance(old, np.ndarray):
        return (
            isinstance(new, np.ndarray)
            and old.shape == new.shape
            and bool(np.array_equal(old, new))
        )
    return old == new


def changed_keys(before: dict[str, Any], trajectory: dict[str, Any]) -> list[str]:
    """The keys of :func:`snapshot` ``before`` whose entry ``trajectory`` no longer holds as it was."""
    return [key for key in before if not _same(before[key], trajectory.get(key))]


# ------------------------------------------------------------------------------ errors
def _student_frames(error: BaseException, library: tuple[str, ...]) -> list[traceback.FrameSummary]:
    library = (str(Path(__file__).resolve().parent.parent), *library)
    library = (*library, "site-packages", "dist-packages")
    frames = []
    for frame in traceback.extract_tb(error.__traceback__):
        name = frame.filename
        if any(part in name for part in library) or name.startswith("<frozen"):
            continue
        if "/lib/python3" in name:  # the standard library
            continue
        frames.append(frame)
    return frames


def student_error(error: BaseException, library: tuple[str, ...] = ()) -> str:
    """One line on an exception from student code, with the student's line when known.

    Frames in ``course_lib``, in the folders ``library`` and in installed packages are skipped.
    """
    location = ""
    frames = _student_frames(error, library)
    if frames:
        frame = frames[-1]
        line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
        location = f" (in `{frame.name}`, line {frame.lineno}"
        location += f": `{line[:80]}`)" if line else ")"
    if isinstance(error, NotImplementedError):
        return (
            f"not implemented yet: your code raised NotImplementedError{location}; replace the "
            "`raise NotImplementedError()` stub"
        )
    text = str(error).strip().splitlines()
    first = text[0][:300] if text else ""
    return f"your code raised {type(error).__name__}: {first}{location}"
