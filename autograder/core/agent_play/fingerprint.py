"""Copies of an agent: the weights of two submissions compared, not their hash (trusted code).

A classmate's weights with a bit flipped, noise added, every layer scaled, or trained a few
steps more have another SHA-256 but are the same agent. Two honest runs of the reference from
the same seed are not, though they start from the same weights. So the class board compares
the weights themselves, layer by layer of the course's network (the same layout the grader
plays, :mod:`course_lib.network_layout`):

* :func:`weights_fingerprint` keeps, of each layer's weight, :data:`SAMPLES` entries at places
  drawn from the class's secret key (kept in the instructor's output folder: a student who
  read this code does not know which entries are compared), each divided by the median size
  of the layer's weights (so a scale does not count);
* :func:`layer_distances` compares two fingerprints: for each layer, the median difference of
  the kept entries over their median size (a median: one flipped bit, however large, moves
  none of it);
* :func:`same_agent` names two agents the same when every layer is within
  :data:`SAME_LAYER`, or their trunk (conv1..3 and the hidden layer) within :data:`SAME_TRUNK`
  (a head trained anew on a copied trunk).

Calibration (``benchmarks/agent_copies.py``, docs/benchmarks.md): two honest reference runs from
seed 0 (one and two torch threads) differ by 0.09 to 0.46 per layer after 30k agent steps and by
0.06 to 0.89 after 100k, the policy head most, the hidden layer least (0.03 and 0.06); a copy
trained 10 more updates (400 agent steps) with a fresh optimizer, by at most 0.08, and 100 more
updates by at most 0.21, its hidden layer by 0.007 at most; 10% noise by 0.08 to 0.09 in every
layer; a flipped bit or a scale by 0.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "SAME_LAYER",
    "SAME_TRUNK",
    "SAMPLES",
    "fingerprint_values",
    "layer_distances",
    "named_same",
    "same_agent",
    "value_distances",
    "weights_fingerprint",
]

SAMPLES = 512  #: entries kept of each layer's weight (all of a smaller one)
SAME_LAYER = 0.3  #: every layer within this: the same agent
SAME_TRUNK = 0.03  #: conv1..3 and the hidden layer within this: the same agent
_TRUNK = 4
_VERSION = 1


def _places(key: bytes, layer: int, size: int) -> np.ndarray:
    """The entries of layer ``layer`` (``size`` of them) the class's ``key`` picks."""
    seed = int.from_bytes(hashlib.sha256(key + bytes([layer])).digest()[:8], "little")
    count = min(SAMPLES, size)
    return np.sort(np.random.default_rng(seed).choice(size, count, replace=False))


def weights_fingerprint(
    layers: Sequence[tuple[np.ndarray, np.ndarray]], key: bytes
) -> dict[str, Any]:
    """The fingerprint (plain data) of the course's network ``layers`` (``(weight, bias)`` of
    conv1..3, the hidden layer, the policy and the value heads), with the class's ``key``."""
    layers_kept = []
    for index, (weight, _) in enumerate(layers):
        flat = np.asarray(weight, dtype=np.float64).ravel()
        size = float(np.median(np.abs(flat))) or 1.0
        kept = np.clip(flat[_places(key, index, flat.size)] / size, -65504, 65504)
        values = kept.astype(np.float16)  # a huge weight (a flipped bit) stays finite
        layers_kept.append(base64.b64encode(values.tobytes()).decode("ascii"))
    return {"version": _VERSION, "layers": layers_kept}


def fingerprint_values(fingerprint: Any) -> list[np.ndarray] | None:
    """The kept entries of each layer of a fingerprint (untrusted plain data), or None when it
    is not one of this kind."""
    try:
        if fingerprint.get("version") != _VERSION:
            return None
        layers = [np.frombuffer(base64.b64decode(text), dtype=np.float16) for text in
                  fingerprint["layers"]]  # fmt: skip
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    return [layer.astype(np.float64) for layer in layers] if len(layers) == 6 else None


def layer_distances(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[float] | None:
    """Per layer, how far two fingerprints (made with the same key) are apart; None when
    either is not a fingerprint of this kind."""
    first, second = fingerprint_values(a), fingerprint_values(b)
    if first is None or second is None:
        return None
    return value_distances(first, second)


def value_distances(first: list[np.ndarray], second: list[np.ndarray]) -> list[float] | None:
    """:func:`layer_distances` of two fingerprints' :func:`fingerprint_values`."""
    distances = []
    for x, y in zip(first, second, strict=True):
        if x.shape != y.shape:
            return None
        finite = np.isfinite(x) & np.isfinite(y)
        x, y = x[finite], y[finite]
        size = (np.median(np.abs(x)) + np.median(np.abs(y))) / 2 if x.size else 0.0
        distances.append(float(np.median(np.abs(x - y)) / size) if size > 0 else 1.0)
    return distances


def same_agent(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two fingerprints are of the same agent (see the module docstring)."""
    return named_same(layer_distances(a, b))


def named_same(distances: list[float] | None) -> bool:
    """Whether per-layer distances (:func:`layer_distances`) name two agents the same."""
    if distances is None:
        return False
    return max(distances) <= SAME_LAYER or max(distances[:_TRUNK]) <= SAME_TRUNK
