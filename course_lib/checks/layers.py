"""Which convolution and linear layers a forward pass used, and whether they are Part 1's network.

Part 1 asks for one network, whatever way it is written (``nn.Sequential``, attributes, the
functional API): the Nature-DQN trunk and two linear heads. A forward pass shows which layers it
used whatever the code looks like, so the visible check of ``make_model`` and the course's
grader ask the same question with the same code:

* :class:`LayerLog` records every ``F.conv2d`` and ``F.linear`` call of a forward pass, with
  its input, weight, bias and settings;
* :func:`distinct_calls` keeps one call per layer (by weight tensor), in the order of use;
  :func:`layer_records` describes each as plain data (kind, shapes, stride, padding...);
* :func:`nature_dqn_parameters` counts the network's trainable parameters, and
  :func:`nature_dqn_order` puts the records in the network's order (trunk, policy head, value
  head), or returns ``None`` when they are not that network; :data:`NATURE_TEXT` says, in the
  words of Part 1's table, what the network is.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = [
    "MAX_LAYERS",
    "NATURE_TEXT",
    "NATURE_TRUNK",
    "LayerLog",
    "describe_layers",
    "distinct_calls",
    "layer_records",
    "nature_dqn_order",
    "nature_dqn_parameters",
]

#: At most this many layers are described.
MAX_LAYERS = 16
#: kind, weight shape and stride of the trunk's layers (the heads follow: (A, 512), (1, 512)).
NATURE_TRUNK = (
    ("conv2d", (32, 4, 8, 8), [4, 4]),
    ("conv2d", (64, 32, 4, 4), [2, 2]),
    ("conv2d", (64, 64, 3, 3), [1, 1]),
    ("linear", (512, 3136), None),
)
NATURE_TEXT = (
    "the Nature-DQN network: x = obs / 255, conv 4->32 8x8 stride 4, conv 32->64 4x4 stride 2, "
    "conv 64->64 3x3 stride 1 (ReLU after each), linear 3136->512 (ReLU), then two linear "
    "heads 512->n_actions (logits) and 512->1 (values, one number per observation: (N,))"
)

Call = tuple[str, dict[str, Any]]


def nature_dqn_parameters(n_actions: int) -> int:
    """Trainable parameters of the Nature-DQN network with ``n_actions`` actions."""
    trunk = sum(math.prod(shape) + shape[0] for _, shape, _ in NATURE_TRUNK)
    return trunk + 513 * n_actions + 513


class LayerLog(TorchFunctionMode):
    """Records every ``conv2d`` and ``linear`` call of a forward pass, with its arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.conv2d or func is F.linear:
            names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
            bound = dict(zip(names, args, strict=False)) | kwargs
            self.calls.append(("conv2d" if func is F.conv2d else "linear", bound))
        return func(*args, **kwargs)


def _pair(value: Any) -> Any:
    if isinstance(value, str):
        return value[:20]
    if isinstance(value, int):
        return [value, value]
    return [int(v) for v in value]


def distinct_calls(calls: list[Call]) -> list[Call]:
    """The calls of distinct layers (by weight tensor), in the order the forward pass used them."""
    found, seen = [], set()
    for kind, bound in calls:
        weight = bound.get("weight")
        if isinstance(weight, torch.Tensor) and id(weight) not in seen:
            seen.add(id(weight))
            found.append((kind, bound))
    return found


def layer_records(calls: list[Call]) -> list[dict[str, Any]]:
    """Each distinct layer: its kind, weight and bias shapes, and the convolutions' settings."""
    layers = []
    for kind, bound in distinct_calls(calls)[:MAX_LAYERS]:
        weight, bias = bound["weight"], bound.get("bias")
        layer = {"kind": kind, "shape": list(weight.shape), "bias_shape": None}
        if isinstance(bias, torch.Tensor):
            layer["bias_shape"] = list(bias.shape)
        if kind == "conv2d":
            layer["stride"] = _pair(bound.get("stride", 1))
            layer["padding"] = _pair(bound.get("padding", 0))
            layer["dilation"] = _pair(bound.get("dilation", 1))
            layer["groups"] = int(bound.get("groups", 1))
        layers.append(layer)
    return layers


def _layer_text(layer: dict[str, Any]) -> str:
    shape = tuple(layer.get("shape", ()))
    if layer.get("kind") == "conv2d" and len(shape) == 4:
        stride = layer.get("stride")
        return f"conv {shape[1]}->{shape[0]} {shape[2]}x{shape[3]} stride {stride}"
    if layer.get("kind") == "linear" and len(shape) == 2:
        return f"linear {shape[1]}->{shape[0]}"
    return f"{layer.get('kind')} {shape}"


def describe_layers(layers: list[dict[str, Any]]) -> str:
    """``"conv 4->32 8x8 stride [4, 4]; ...; linear 512->1"``: the layers in words."""
    return "; ".join(_layer_text(layer) for layer in layers[:8]) or "no conv2d or linear layer"


def nature_dqn_order(layers: list[dict[str, Any]], n_actions: int) -> list[dict[str, Any]] | None:
    """``layers`` (as :func:`layer_records` gives them) in the network's order, conv1..3, the
    hidden layer, the policy head, the value head; ``None`` when they are not Part 1's network
    (other sizes, strides, padding, a layer more or less, a bias of the wrong shape)."""
    if len(layers) != 6:
        return None
    for layer, (kind, shape, stride) in zip(layers[:4], NATURE_TRUNK, strict=True):
        if layer.get("kind") != kind or tuple(layer.get("shape", ())) != shape:
            return None
        if kind == "conv2d" and (
            layer.get("stride") != stride
            or layer.get("padding") not in ([0, 0], "valid")
            or layer.get("dilation") != [1, 1]
            or layer.get("groups") != 1
        ):
            return None
    heads = {tuple(layer.get("shape", ())): layer for layer in layers[4:]}
    if any(layer.get("kind") != "linear" for layer in layers[4:]) or set(heads) != {
        (n_actions, 512),
        (1, 512),
    }:
        return None
    ordered = [*layers[:4], heads[(n_actions, 512)], heads[(1, 512)]]
    for layer in ordered:
        bias_shape = layer.get("bias_shape")
        if bias_shape is not None and list(bias_shape) != [layer["shape"][0]]:
            return None
    return ordered
