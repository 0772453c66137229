"""Visible check of the network: :func:`check_model` (Part 1's layers, on uint8 and float input)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ._common import OBS_SHAPE, CheckFailed, call_student, fail, report_ok
from .layers import (
    NATURE_TEXT,
    LayerLog,
    describe_layers,
    distinct_calls,
    layer_records,
    nature_dqn_order,
    nature_dqn_parameters,
)
from .properties import capture, output_pair_problem, student_error


def _require_module_parameters(
    part: str, model: Any, used: list[tuple[str, dict[str, Any]]], A: int
) -> None:
    """Fail unless every tensor of the layers the forward pass used is a trainable parameter of
    ``model``, and the parameters are exactly those of Part 1's network."""
    own = {id(p) for p in model.parameters()}
    outside = [
        tuple(tensor.shape)
        for _, bound in used
        for tensor in (bound["weight"], bound.get("bias"))
        if isinstance(tensor, torch.Tensor) and id(tensor) not in own
    ]
    if outside:
        fail(
            part,
            f"{len(outside)} weight tensor(s) the forward pass uses are not among the module's "
            f"parameters (shapes {outside[:4]}): the optimizer would never train them.",
            hint="a layer belongs to the module when it is one of its attributes (or sits in an "
            "nn.Sequential or nn.ModuleList), not in a plain Python list or dict.",
        )
    count = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if count != nature_dqn_parameters(A):
        fail(
            part,
            f"the model has {count:,} trainable parameters; Part 1's network with "
            f"n_actions={A} has {nature_dqn_parameters(A):,}.",
            hint="no layer beyond the table's, and none frozen.",
        )


def _value_head(used: list[tuple[str, dict[str, Any]]]) -> list[torch.Tensor]:
    """The weight and bias of the value head (the linear layer 512 -> 1)."""
    for kind, bound in used:
        if kind == "linear" and tuple(bound["weight"].shape) == (1, 512):
            return [t for t in (bound["weight"], bound.get("bias")) if isinstance(t, torch.Tensor)]
    return []


def check_model(make_model: Callable[[int], nn.Module]) -> None:
    """``make_model(n_actions)(obs) -> (logits (N, A), values (N,))`` for uint8 or float obs:
    Part 1's layers, the input scaled to [0, 1], a batch of one, every layer trained and saved,
    a value head that can go negative, an almost uniform first policy."""
    part = "make_model"
    torch.manual_seed(0)
    model = call_student(part, make_model, 6)
    if not isinstance(model, nn.Module):
        fail(part, "make_model must return an nn.Module.", "nn.Module", type(model))
    obs = torch.as_tensor(np.random.default_rng(0).integers(0, 256, (2, *OBS_SHAPE), np.uint8))
    try:
        with LayerLog() as log:
            out = model(obs)
    except NotImplementedError as error:
        raise NotImplementedError(f"[{part}] {student_error(error)}") from error
    except RuntimeError as err:
        fail(
            part,
            f"the model fails on uint8 input (N, 4, 84, 84): {err}",
            hint="Conv2d refuses uint8 tensors: the network turns its input into floats in "
            "[0, 1] itself (Part 1's table, first row).",
        )
    except Exception as error:  # noqa: BLE001 - any bug in the student's code
        raise CheckFailed(f"[{part}] {student_error(error)}") from error
    problem = output_pair_problem(capture(out), 2, 6)
    if problem:
        fail(
            part,
            problem,
            hint="forward returns two things per observation: one logit per action, and one "
            "value, a number without an axis of its own; check each head's output size and the "
            "shapes forward returns.",
        )
    layers = layer_records(log.calls)
    if nature_dqn_order(layers, 6) is None:
        fail(
            part,
            f"the forward pass should use {NATURE_TEXT}.",
            "Part 1's table",
            describe_layers(layers),
            "compare each layer with the table: sizes, kernel, stride, no padding, and the "
            "two heads on the same 512 features.",
        )
    first = log.calls[0][1]["input"].detach().double()
    if not torch.allclose(first, obs.double() / 255, atol=1e-5):
        fail(
            part,
            "the first convolution should receive obs / 255 (values in [0, 1]); it received "
            f"values from {float(first.min()):.4g} to {float(first.max()):.4g}.",
            hint="Part 1's table starts with the scaling: pixel values of order 1 keep the first "
            "activations and gradients sane.",
        )
    logits, values = out
    as_float = obs.float()
    kept = as_float.clone()
    float_logits, float_values = call_student(part, model, as_float)
    if not torch.equal(as_float, kept):
        fail(
            part,
            "model(obs) changed its float input in place.",
            hint="an in-place operation on the input (`/=`, `.div_()`) also changes the "
            "caller's tensor when it is already float; compute a new tensor instead.",
        )
    if not (
        torch.allclose(logits, float_logits, atol=1e-5)
        and torch.allclose(values, float_values, atol=1e-5)
    ):
        fail(
            part,
            "uint8 and float32 copies of the same observations give different outputs "
            "(values: uint8 input first, float input second).",
            values,
            float_values,
            "scale every input dtype the same way, once; do not rescale floats twice.",
        )
    if not (torch.isfinite(logits).all() and torch.isfinite(values).all()):
        fail(part, "outputs contain NaN or inf.", actual=logits)
    problem = output_pair_problem(capture(call_student(part, model, obs[:1])), 1, 6)
    if problem:
        fail(part, f"with a batch of one: {problem}", hint="N = 1 is a batch like any other.")
    (logits.sum() + values.sum()).backward()
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    dead = [n for n, p in params if p.grad is None]
    if dead:
        fail(
            part,
            f"these parameters get no gradient: {dead}",
            hint="are they used in forward? A detached tensor, or a detour through numpy, cuts "
            "the graph.",
        )
    used = distinct_calls(log.calls)
    _require_module_parameters(part, model, used, 6)
    torch.manual_seed(1)
    twin = call_student(part, make_model, 6)
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        same = all(
            torch.allclose(a, b, atol=1e-6)
            for a, b in zip(model(obs), call_student(part, twin, obs), strict=True)
        )
    if not same:
        fail(
            part,
            "a second make_model(6) loaded with the first one's state_dict() gives other "
            "outputs: part of the network is missing from state_dict(), so a checkpoint loses it.",
            hint="keep every tensor the network needs as a parameter or a buffer of the module.",
        )
    with torch.no_grad():
        head = _value_head(used)
        for tensor in head:
            tensor.neg_()
        mirrored = call_student(part, model, obs)[1]
        for tensor in head:
            tensor.neg_()
    if not torch.allclose(mirrored, -values.detach(), atol=1e-5):
        fail(
            part,
            "with the value layer's weight and bias negated, the values should change sign.",
            -values.detach(),
            mirrored,
            "something after the value layer keeps the values from going negative; returns "
            "can be negative (lost lives, Pong), so the value head is a plain linear layer.",
        )
    top = float(torch.softmax(logits.detach(), dim=-1).max(dim=-1).values.mean())
    if top > 0.99:
        fail(
            part,
            f"the untrained policy is already almost deterministic (mean largest action "
            f"probability {top:.3f} on random frames): it would not explore.",
            hint="Part 1's initialisation keeps the first logits small, so the first policy is "
            "almost uniform.",
        )
    four = call_student(part, call_student(part, make_model, 4), obs)[0]
    if tuple(four.shape) != (2, 4):
        fail(
            part,
            "make_model(4) does not give 4 logits per observation.",
            (2, 4),
            tuple(four.shape),
            "use n_actions, not a constant.",
        )
    n_params = sum(p.numel() for _, p in params)
    report_ok(
        f"make_model: Part 1's layers, input scaled to [0, 1], logits (2, 6), values (2,) and "
        f"(1,) for one frame, uint8 and float inputs agree, gradients reach all {len(params)} "
        f"tensors ({n_params:,} parameters), a linear value head, a first policy near uniform"
    )
