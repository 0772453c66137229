"""Which tensor of a saved network is which layer of the course's network, found by its shape.

The grader plays a saved agent in its own copy of the course's network (Part 1's table: the
Nature-DQN trunk and two heads), never in the student's code. The weights come as the tensors
of the network's ``state_dict``, under whatever names the student gave the layers, so each
floating tensor is matched to a layer by its shape:

=========  ==========================  ===============
layer      weight                      bias (optional)
=========  ==========================  ===============
conv1      ``(32, 4, 8, 8)``           ``(32,)``
conv2      ``(64, 32, 4, 4)``          ``(64,)``
conv3      ``(64, 64, 3, 3)``          ``(64,)``
fc         ``(512, 3136)`` (or its     ``(512,)``
           transpose)
policy     ``(A, 512)``                ``(A,)``
value      ``(1, 512)``                ``(1,)``
=========  ==========================  ===============

or the two heads as one linear layer of ``A + 1`` outputs, ``(A + 1, 512)``. A bias is paired
with its weight by name (``conv2.weight`` and ``conv2.bias``), else by the order of the
``state_dict``; a layer without one has none. Where that leaves a choice (the two heads as one
layer: is the value its first or its last row? two ``(64,)`` biases named otherwise), every way
is a candidate, first the one names and order give: the grader keeps the one the student's own
``make_model`` computes (:mod:`autograder.core.agent_play`). A tensor no layer takes, or a layer
no tensor fits, is a :class:`LayoutError` that says exactly what the network needs, which
:func:`course_lib.saved_agent.save_agent` tells the student when the agent is saved.

Why here, beside the saved agent and not in the grader: the notebook's save cell checks the
network with the same rule the grader reads it with.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .checks.layers import NATURE_TEXT, NATURE_TRUNK

__all__ = ["LAYERS", "LayoutError", "NetworkLayout", "Piece", "network_layouts"]

#: The course's network, layer by layer, in the order of its forward pass.
LAYERS = ("conv1", "conv2", "conv3", "fc", "policy", "value")
_TRUNK = dict(zip(LAYERS[:4], (shape for _, shape, _ in NATURE_TRUNK), strict=True))
_WORDS = {
    "conv1": "conv 4->32 8x8",
    "conv2": "conv 32->64 4x4",
    "conv3": "conv 64->64 3x3",
    "fc": "linear 3136->512",
    "policy": "the policy head 512->n_actions",
    "value": "the value head 512->1",
}
#: More ways than this to read one network are not tried (a network far from the course's).
MAX_LAYOUTS = 8


class LayoutError(ValueError):
    """A network whose tensors are not the course's network's (the message says what is)."""


@dataclass(frozen=True)
class Piece:
    """Where one layer's weight and bias are in the ``state_dict``.

    Attributes:
        weight: the weight tensor's name.
        bias: the bias tensor's name, or None (a layer without one).
        rows: ``(start, stop)``: the layer is these rows of a combined head's weight and bias.
        transposed: the weight is stored ``(in, out)`` (a hand-made linear layer).
    """

    weight: str
    bias: str | None = None
    rows: tuple[int, int] | None = None
    transposed: bool = False

    def take(self, tensors: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """This layer's ``(weight, bias)`` as float32 (a zero bias where there is none)."""
        weight = np.asarray(tensors[self.weight], dtype=np.float32)
        if self.transposed:
            weight = weight.T
        out = weight.shape[0]
        bias = (
            np.asarray(tensors[self.bias], dtype=np.float32)
            if self.bias is not None
            else np.zeros(out, dtype=np.float32)
        )
        if self.rows is not None:
            start, stop = self.rows
            weight, bias = weight[start:stop], bias[start:stop]
        return np.ascontiguousarray(weight), np.ascontiguousarray(bias)


@dataclass(frozen=True)
class NetworkLayout:
    """One way to read a ``state_dict`` as the course's network: a :class:`Piece` per layer
    of :data:`LAYERS`."""

    pieces: tuple[Piece, ...]

    def layers(self, tensors: Mapping[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(weight, bias), ...]`` float32 for conv1, conv2, conv3, fc, policy, value."""
        return [piece.take(tensors) for piece in self.pieces]

    def describe(self) -> str:
        """Which tensor is which layer, in one line."""
        parts = []
        for layer, piece in zip(LAYERS, self.pieces, strict=True):
            where = piece.weight + (".T" if piece.transposed else "")
            if piece.rows is not None:
                where += f"[{piece.rows[0]}:{piece.rows[1]}]"
            parts.append(f"{layer}={where}" + (f"+{piece.bias}" if piece.bias else ""))
        return ", ".join(parts)


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + (",)" if len(shape) == 1 else ")")


def _refuse(problem: str, tensors: Mapping[str, np.ndarray]) -> LayoutError:
    listed = ", ".join(f"{name} {_shape_text(array.shape)}" for name, array in tensors.items())
    return LayoutError(
        f"the grader plays these weights in the course's network ({NATURE_TEXT}) and finds each "
        f"layer by the shape of its weights; {problem}. The network's tensors: "
        f"{listed[:1500]}. Keep make_model to the course's network (any layer names; biases or "
        "not; the two heads apart, or as one linear layer of n_actions + 1 outputs)"
    )


def _weights(
    tensors: Mapping[str, np.ndarray], n_actions: int
) -> tuple[dict[str, tuple[str, bool]], str | None]:
    """``{layer: (weight name, transposed)}`` for the trunk and separate heads, and the name of a
    combined head's weight (or None); :class:`LayoutError` when a layer has no weight or two."""
    wanted = {**_TRUNK, "policy": (n_actions, 512), "value": (1, 512)}
    found: dict[str, tuple[str, bool]] = {}
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for name, array in tensors.items():
        by_shape.setdefault(tuple(array.shape), []).append(name)
    missing = []
    for layer, shape in wanted.items():
        names = by_shape.get(tuple(shape), [])
        transposed = False
        if not names and layer == "fc":
            names, transposed = by_shape.get(tuple(reversed(shape)), []), True
        if len(names) > 1:
            raise _refuse(f"{len(names)} tensors have the shape {_shape_text(shape)} of "
                          f"{_WORDS[layer]}: {', '.join(names)}", tensors)  # fmt: skip
        if names:
            found[layer] = (names[0], transposed)
        else:
            missing.append(layer)
    combined = by_shape.get((n_actions + 1, 512), [])
    if missing == ["policy", "value"] and len(combined) == 1:
        return found, combined[0]  # the two heads as one layer
    if missing:
        need = ", ".join(f"{_WORDS[layer]} {_shape_text(wanted[layer])}" for layer in missing)
        raise _refuse(f"no tensor has the shape of {need}", tensors)
    return found, None


def _bias_choices(
    tensors: Mapping[str, np.ndarray], layers: dict[str, tuple[str, int]]
) -> list[dict[str, str | None]]:
    """The ways to give each layer (``{layer: (weight name, outputs)}``) a bias of its size:
    the one names and order give first, then the others; :class:`LayoutError` when a
    one-dimensional tensor fits no layer."""
    names = list(tensors)
    biases = [name for name in names if tensors[name].ndim == 1]
    chosen: dict[str, str | None] = {}
    for layer, (weight, _) in layers.items():  # conv2.weight -> conv2.bias
        stem, sep, last = weight.rpartition(".")
        twin = f"{stem}{sep}{last.replace('weight', 'bias')}" if "weight" in last else None
        fits = twin in biases and tensors[twin].shape[0] == layers[layer][1]
        if fits and twin not in chosen.values():
            chosen[layer] = twin
    left = [name for name in biases if name not in chosen.values()]
    open_layers = sorted(
        (layer for layer in layers if layer not in chosen),
        key=lambda layer: names.index(layers[layer][0]),
    )
    choices: list[dict[str, str | None]] = [dict(chosen)]
    for size in sorted({layers[layer][1] for layer in open_layers}):
        slots = [layer for layer in open_layers if layers[layer][1] == size]
        fits = [name for name in left if tensors[name].shape[0] == size]
        if len(fits) > len(slots):
            extra = ", ".join(f"{name} {_shape_text(tensors[name].shape)}" for name in fits)
            raise _refuse(f"more biases of size {size} than layers with {size} outputs: {extra}",
                          tensors)  # fmt: skip
        # every way to place them; permutations come in order, the order-keeping way first
        ways = [
            {**dict.fromkeys(slots), **dict(zip(places, fits, strict=True))}
            for places in itertools.permutations(slots, len(fits))
        ]
        choices = [{**choice, **way} for choice in choices for way in ways][:MAX_LAYOUTS]
        left = [name for name in left if name not in fits]
    if left:
        extra = ", ".join(f"{name} {_shape_text(tensors[name].shape)}" for name in left)
        raise _refuse(f"no layer has the size of {extra}", tensors)
    return choices


def network_layouts(tensors: Mapping[str, Any], n_actions: int) -> list[NetworkLayout]:
    """Every way (at most :data:`MAX_LAYOUTS`, the likeliest first) to read ``tensors`` (a
    ``state_dict``'s, as arrays, in its order) as the course's network with ``n_actions``
    actions; :class:`LayoutError` saying what the network needs when there is none. Integer
    tensors (counters a module may keep) are not weights and are left out."""
    if not isinstance(n_actions, int) or n_actions < 2:
        raise LayoutError(f"a policy needs at least 2 actions, got n_actions={n_actions!r}")
    floats = {
        name: np.asarray(value) for name, value in tensors.items()
        if np.asarray(value).dtype.kind == "f"
    }  # fmt: skip
    weights, combined = _weights({k: v for k, v in floats.items() if v.ndim > 1}, n_actions)
    taken = {name for name, _ in weights.values()} | ({combined} if combined else set())
    left = [name for name, array in floats.items() if array.ndim > 1 and name not in taken]
    if left:
        extra = ", ".join(f"{name} {_shape_text(floats[name].shape)}" for name in left)
        raise _refuse(f"no layer has the shape of {extra}", floats)
    sizes = {  # each layer's weight, and its number of outputs (the size of its bias)
        layer: (name, floats[name].shape[1] if transposed else floats[name].shape[0])
        for layer, (name, transposed) in weights.items()
    }
    if combined is not None:
        sizes["head"] = (combined, n_actions + 1)
    layouts = []
    for biases in _bias_choices(floats, sizes):
        trunk = [Piece(weights[layer][0], biases.get(layer), None, weights[layer][1])
                 for layer in LAYERS[:4]]  # fmt: skip
        if combined is None:
            heads = [[Piece(weights[layer][0], biases.get(layer)) for layer in ("policy", "value")]]
        else:  # the value as the last row (the usual way), else as the first
            bias = biases.get("head")
            heads = [
                [Piece(combined, bias, (0, n_actions)), Piece(combined, bias, (n_actions, n_actions + 1))],
                [Piece(combined, bias, (1, n_actions + 1)), Piece(combined, bias, (0, 1))],
            ]  # fmt: skip
        layouts += [NetworkLayout(tuple(trunk + head)) for head in heads]
    return layouts[:MAX_LAYOUTS]
