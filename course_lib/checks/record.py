"""What came back from student code, as plain data: capture, describe, encode, decode.

A probe (:mod:`course_lib.checks.probes`) runs a student part on given inputs and returns what
it observed as *plain data*: dicts, lists, strings, numbers and numpy arrays. The grader reads
that data in another process, so this module also turns it into text (:func:`dumps`) and back
(:func:`loads`) without pickle: decoding runs no code, accepts only numeric dtypes and checks
every size, so a forged or damaged record can only be rejected, never executed.
"""

from __future__ import annotations

import base64
import json
import linecache
import traceback
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "RecordError",
    "array_of",
    "capture",
    "describe",
    "dumps",
    "loads",
    "student_error",
]

#: dtypes a record may hold; anything else is refused when decoding.
ALLOWED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]
)
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 12


class RecordError(ValueError):
    """A record that is not valid plain data (wrong type, dtype, size or nesting)."""


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
        return {"kind": "number", "type": type(value).__name__, "value": float(value)}
    if isinstance(value, (tuple, list)):
        items = [capture(item, data, depth + 1) for item in value[:64]]
        return {"kind": type(value).__name__, "len": len(value), "items": items}
    if isinstance(value, dict):
        keys = [str(key) for key in value]
        return {"kind": "dict", "keys": keys}
    if value is None:
        return {"kind": "none"}
    return {"kind": "other", "type": type(value).__name__}


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
        return f"{record.get('type', kind)} {record.get('value')!r}"
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
        return np.asarray(float(record["value"]))
    if kind in ("list", "tuple") and record.get("items"):
        parts = [array_of(item) for item in record["items"]]
        if any(part is None for part in parts) or len(parts) != record.get("len"):
            return None
        if len({part.shape for part in parts}) != 1:
            return None
        return np.stack(parts)
    return None


# ------------------------------------------------------------------------------ errors
def _student_frames(error: BaseException) -> list[traceback.FrameSummary]:
    library = (str(Path(__file__).resolve().parent.parent), "site-packages", "dist-packages")
    frames = []
    for frame in traceback.extract_tb(error.__traceback__):
        name = frame.filename
        if any(part in name for part in library) or name.startswith("<frozen"):
            continue
        if "/lib/python3" in name:  # the standard library
            continue
        frames.append(frame)
    return frames


def student_error(error: BaseException) -> str:
    """One line on an exception from student code, with the student's line when known."""
    location = ""
    frames = _student_frames(error)
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


# ------------------------------------------------------------------------------ encoding
def _encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise RecordError("record nested too deeply")
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        if str(array.dtype) not in ALLOWED_DTYPES:
            array = array.astype(np.float64)
        return {
            "__ndarray__": str(array.dtype),
            "shape": list(array.shape),
            "b64": base64.b64encode(array.tobytes()).decode("ascii"),
        }
    if isinstance(value, dict):
        return {str(key): _encode(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(item, depth + 1) for item in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)[:200]


def dumps(value: Any) -> str:
    """``value`` (plain data with numpy arrays) as JSON text."""
    return json.dumps(_encode(value), allow_nan=True)


def _decode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise RecordError("record nested too deeply")
    if isinstance(value, dict):
        if "__ndarray__" in value:
            dtype, shape, text = value.get("__ndarray__"), value.get("shape"), value.get("b64")
            if dtype not in ALLOWED_DTYPES or not isinstance(text, str):
                raise RecordError(f"array of dtype {dtype!r} is not allowed")
            if not isinstance(shape, list) or not all(
                isinstance(n, int) and 0 <= n < 2**31 for n in shape
            ):
                raise RecordError("array with a malformed shape")
            raw = base64.b64decode(text.encode("ascii"), validate=True)
            count = int(np.prod(shape)) if shape else 1
            if count * np.dtype(dtype).itemsize != len(raw):
                raise RecordError("array whose data does not match its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return {str(key): _decode(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, depth + 1) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise RecordError(f"unexpected value of type {type(value).__name__}")


def loads(text: str | bytes) -> Any:
    """Decode :func:`dumps` output; raises :class:`RecordError` for anything else."""
    if len(text) > MAX_RECORD_BYTES:
        raise RecordError(f"record larger than {MAX_RECORD_BYTES} bytes")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise RecordError(f"not JSON: {error}") from None
    return _decode(raw)
