"""The strict decoder of records: untrusted JSON text from the sandbox to plain data, or refused.

The process that ran the student's code is hostile, so the grader reads its records as
untrusted bytes. :func:`loads` runs no code (no pickle) and refuses, with :class:`RecordError`,
anything outside a bounded schema before a judge sees it:

* JSON only, at most :data:`MAX_RECORD_BYTES`, at most :data:`MAX_CONTAINERS` lists and dicts,
  :data:`MAX_ITEMS` items, :data:`~autograder.sandboxed.grading_runtime.record.MAX_DEPTH`
  levels, strings of at most :data:`~autograder.sandboxed.grading_runtime.record.MAX_STRING`
  characters;
* numbers: integers within +-2**53, floats finite (no ``NaN``, ``Infinity``, ``1e999``);
* arrays ``{"__ndarray__": dtype, "shape": [...], "b64": ...}``: numeric dtypes only, at most
  :data:`MAX_ARRAY_ELEMENTS` elements, data that matches the shape (arrays may hold NaN: a
  student's model can output it, and the judges say so).

This is trusted code, on the grader's side only (outside :mod:`autograder.sandboxed`, what the
sandbox is shown): the sandbox never decodes a record. The format's shared definition (the
dtypes, depth, string length and integer range) stays with the encoder,
:mod:`autograder.sandboxed.grading_runtime.record`, whose
:func:`~autograder.sandboxed.grading_runtime.record.dumps` writes only what :func:`loads`
accepts. What the grader accepts as a probe's record (its envelope) is checked on top of this
in :mod:`autograder.core.judging.channel`.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

from autograder.sandboxed.grading_runtime.record import (
    ALLOWED_DTYPES,
    MAX_DEPTH,
    MAX_INT,
    MAX_STRING,
)

__all__ = ["RecordError", "check_json_size", "loads"]

MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_CONTAINERS = 20_000
MAX_ITEMS = 200_000
MAX_ARRAY_ELEMENTS = 4_000_000
MAX_NDIM = 8


class RecordError(ValueError):
    """A record that is not valid plain data (wrong type, dtype, size, number or nesting)."""


def _refuse_constant(name: str) -> Any:
    raise RecordError(f"non-finite number {name} in a record")


def _parse_int(text: str) -> int:
    if len(text) > 17 or abs(int(text)) > MAX_INT:
        raise RecordError("integer out of range in a record")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 64:
        raise RecordError("number too long in a record")
    value = float(text)
    if not math.isfinite(value):
        raise RecordError("non-finite number in a record")
    return value


def _array(value: dict[str, Any]) -> np.ndarray:
    dtype, shape, text = value.get("__ndarray__"), value.get("shape"), value.get("b64")
    if set(value) != {"__ndarray__", "shape", "b64"}:
        raise RecordError("array with unexpected fields")
    if dtype not in ALLOWED_DTYPES or not isinstance(text, str):
        raise RecordError(f"array of dtype {dtype!r} is not allowed")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_NDIM
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape)
    ):
        raise RecordError("array with a malformed shape")
    count = math.prod(shape)
    if count > MAX_ARRAY_ELEMENTS:
        raise RecordError(f"array of {count} elements (at most {MAX_ARRAY_ELEMENTS})")
    if len(text) != 4 * math.ceil(count * np.dtype(dtype).itemsize / 3):
        raise RecordError("array whose data does not match its shape")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise RecordError("array data that is not base64") from None
    if count * np.dtype(dtype).itemsize != len(raw):
        raise RecordError("array whose data does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _decode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise RecordError("record nested too deeply")
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return _array(value)
        out = {}
        for key, item in value.items():
            if len(key) > MAX_STRING:
                raise RecordError("key too long in a record")
            out[key] = _decode(item, depth + 1)
        return out
    if isinstance(value, list):
        return [_decode(item, depth + 1) for item in value]
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise RecordError("string too long in a record")
        return value
    if value is None or isinstance(value, (int, float, bool)):
        return value
    raise RecordError(f"unexpected value of type {type(value).__name__}")


def check_json_size(text: str | bytes, containers: int = MAX_CONTAINERS, items: int = MAX_ITEMS) -> None:
    """Refuse, with :class:`RecordError`, JSON text from which ``json.loads`` could build more
    than ``containers`` lists and dicts or ``items`` items, before it builds anything: every
    list or dict costs memory. Brackets and commas inside strings count too, which only makes
    the bound stricter; a count is linear, and far cheaper than parsing."""
    brackets = "[{" if isinstance(text, str) else (b"[", b"{")
    comma = "," if isinstance(text, str) else b","
    if text.count(brackets[0]) + text.count(brackets[1]) > containers:
        raise RecordError(f"JSON with more than {containers} lists and dicts")
    if text.count(comma) > items:
        raise RecordError(f"JSON with more than {items} items")


def loads(text: str | bytes) -> Any:
    """Decode :func:`~autograder.sandboxed.grading_runtime.record.dumps` output; raises
    :class:`RecordError` for anything else."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise RecordError(f"a record is text, got {type(text).__name__}")
    if len(text) > MAX_RECORD_BYTES:
        raise RecordError(f"record larger than {MAX_RECORD_BYTES} bytes")
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise RecordError("record is not UTF-8 text") from None
    check_json_size(text)
    try:
        raw = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_refuse_constant,
        )
    except RecordError:
        raise
    except (ValueError, RecursionError) as error:
        raise RecordError(f"not JSON: {str(error)[:200]}") from None
    return _decode(raw)
