"""Records: what a probe observed, as plain data, written as JSON text for the grader.

A probe (:mod:`.probes`) returns *plain data*: dicts, lists, strings, numbers and numpy
arrays. :func:`dumps` writes it as JSON text, arrays as ``{"__ndarray__": dtype, "shape":
[...], "b64": ...}``, keeping to the format's shared definition below (:data:`ALLOWED_DTYPES`,
:data:`MAX_DEPTH`, :data:`MAX_STRING`, :data:`MAX_INT`): non-finite floats become ``null``,
huge integers floats, other dtypes float64, long strings are cut.

The sandbox side only writes records. The grader reads them as untrusted bytes with its own
strict decoder (:mod:`autograder.core.judging.record_decoding`, trusted code outside this package),
then checks each record's envelope (:mod:`autograder.core.judging.channel`).

:func:`read_request` reads the executor's requests, which the grader wrote with :func:`dumps`
(the plan's cases hold arrays): trusted input, so it only turns encoded arrays back into numpy
arrays, and checks nothing.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

from course_lib.checks.properties import array_of, capture, describe

__all__ = [
    "Observation",
    "array_of",
    "capture",
    "describe",
    "dumps",
    "read_request",
]

# The format's shared definition: the encoder writes within it, the grader's decoder
# (autograder.core.judging.record_decoding) refuses anything outside it.
#: dtypes a record may hold; :func:`dumps` writes any other as float64.
#: What a probe reports of one step: plain data (numbers, strings, lists, dicts, arrays).
Observation = dict[str, Any]

ALLOWED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]
)
MAX_DEPTH = 12  #: levels of lists and dicts
MAX_STRING = 20_000  #: characters in a string or a key
MAX_INT = 2**53  #: integers beyond +-MAX_INT are written as floats


# ------------------------------------------------------------------------------ encoding
def _encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("record nested too deeply")
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
        return {str(key)[:MAX_STRING]: _encode(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(item, depth + 1) for item in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if abs(value) <= MAX_INT else float(value) if abs(value) < 1e300 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value[:MAX_STRING]
    return repr(value)[:200]


def dumps(value: Any) -> str:
    """``value`` (plain data with numpy arrays) as JSON text within the record format (the
    grader's strict decoder accepts it); ``ValueError`` if it is nested deeper than
    :data:`MAX_DEPTH`."""
    return json.dumps(_encode(value), allow_nan=False)


# ------------------------------------------------------------------------------ requests
def _request_array(value: dict[str, Any]) -> Any:
    if "__ndarray__" not in value:
        return value
    raw = base64.b64decode(value["b64"])
    return np.frombuffer(raw, dtype=value["__ndarray__"]).reshape(value["shape"]).copy()


def read_request(text: str | bytes) -> Any:
    """One of the grader's requests (written with :func:`dumps`), with its arrays as numpy
    arrays.

    A reader of the grader's own, trusted requests, and NOT a validator: it checks no limit and
    must never read what the student's code or the sandbox wrote (the grader decodes those with
    :mod:`autograder.core.judging.record_decoding`).
    """
    return json.loads(text, object_hook=_request_array)
