"""Probes of the ``model`` part: ``make_model(n_actions)``, the Nature-DQN network.

:func:`model_net` reports, for one model, the layers its forward pass used
(:class:`course_lib.checks.layers.LayerLog`, as the visible check asks), its outputs, which
parameters the gradients reach and whether every tensor that shapes the outputs is the module's
own (in ``parameters()`` and ``state_dict()``); then, with the case's drawn weights loaded into
those layers, its outputs on uint8, float and one-frame inputs. The grader computes what the
Nature-DQN network gives with the same weights (:mod:`autograder.core.judging.parts.model`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from course_lib.checks.layers import LayerLog, distinct_calls, layer_records
from course_lib.checks.properties import capture

from .. import fixtures
from ..record import Observation
from ..seeding import seed_all

__all__ = ["model_negative_values", "model_net", "model_outputs"]


def _load_drawn(model: Any, calls: list[tuple[str, dict[str, Any]]], case: dict[str, Any]) -> str:
    """Copy the case's drawn Nature-DQN weights into the tensors the forward pass used (a
    tensor the forward pass makes anew each time keeps nothing, and its outputs show it).

    The trunk's layers in the order they were used, the heads by shape (``(A, 512)`` logits,
    ``(1, 512)`` value). Returns ``""``, or why the weights could not be loaded.
    """
    A = int(case["n_actions"])
    used = distinct_calls(calls)
    shapes = [tuple(bound["weight"].shape) for _, bound in used]
    trunk = [shape for shape, _ in fixtures.NATURE_TRUNK]
    if len(used) != 6 or shapes[:4] != trunk or sorted(shapes[4:]) != sorted([(A, 512), (1, 512)]):
        return "the forward pass does not use the Nature-DQN layers"
    heads = sorted(used[4:], key=lambda call: tuple(call[1]["weight"].shape) != (A, 512))
    drawn = fixtures.nature_weights(int(case["weight_seed"]), A)
    with torch.no_grad():
        for (_, bound), (weight, bias) in zip([*used[:4], *heads], drawn, strict=True):
            tensors = [(bound["weight"], weight)]
            if isinstance(bound.get("bias"), torch.Tensor):
                tensors.append((bound["bias"], bias))
            for tensor, value in tensors:
                tensor.copy_(torch.from_numpy(value).reshape(tensor.shape))
    return ""


def _drawn_outputs(model: Any, calls: list[tuple[str, dict[str, Any]]], obs, case) -> Observation:
    """Outputs with the case's drawn weights loaded: uint8, float, one frame, and uint8 again
    with the value head's weight and bias negated (so some values are negative)."""
    problem = _load_drawn(model, calls, case)
    if problem:
        return {"error": problem}
    as_float = obs.float()
    kept = as_float.clone()
    observed: Observation = {}
    with torch.no_grad():
        observed["output"] = capture(model(obs))
        observed["float_output"] = capture(model(as_float))
        observed["one_output"] = capture(model(obs[:1]))
        observed["float_input_unchanged"] = bool(torch.equal(as_float, kept))
        value_head = max(
            distinct_calls(calls)[4:], key=lambda call: call[1]["weight"].shape[0] == 1
        )
        for tensor in (value_head[1]["weight"], value_head[1].get("bias")):
            if isinstance(tensor, torch.Tensor):
                tensor.neg_()
        observed["mirror_output"] = capture(model(obs))
    return observed


def _build(make_model: Callable[[int], Any], n_actions: int, init_seed: int) -> Any:
    seed_all(init_seed)
    return make_model(n_actions)


def _obs(case: dict[str, Any], key: str = "obs_seed", n: str = "n") -> torch.Tensor:
    return torch.from_numpy(fixtures.random_frames(int(case[n]), int(case[key])))


def model_net(make_model: Callable[[int], Any], case: dict[str, Any]) -> Observation:
    """One model, every fact the model part needs: the layers its forward pass used, its first
    outputs, gradients, registration; then, with the case's drawn weights loaded into those
    layers (:func:`.fixtures.nature_weights`), its outputs on uint8, float and one-frame inputs.
    """
    model = _build(make_model, case["n_actions"], case["init_seed"])
    obs = _obs(case)
    observed: Observation = {
        "is_module": isinstance(model, nn.Module),
        "type": capture(model, data=False),
    }
    with LayerLog() as log:
        output = model(obs)
    observed["output"] = capture(output)
    observed["layers"] = layer_records(log.calls)
    parameters = list(model.parameters()) if isinstance(model, nn.Module) else []
    observed["trainable"] = int(sum(p.numel() for p in parameters if p.requires_grad))
    observed.update(_gradients(model, obs))
    observed.update(_registered(make_model, model, obs, case))
    observed["drawn"] = _drawn_outputs(model, log.calls, obs, case)
    return observed


def model_outputs(make_model: Callable[[int], Any], case: dict[str, Any]) -> Observation:
    """Forward on ``n`` random uint8 frames."""
    model = _build(make_model, case["n_actions"], case["init_seed"])
    return {"output": capture(model(_obs(case)))}


def _gradients(model: Any, obs: torch.Tensor) -> Observation:
    """Which parameters the gradient of each output reaches."""
    reached = {}
    for index, name in enumerate(("logits", "values")):
        model.zero_grad()
        output = model(obs)[index]
        reached[f"{name}_requires_grad"] = bool(output.requires_grad)
        if output.requires_grad:
            (output**2).sum().backward()
        reached[name] = [
            n for n, p in model.named_parameters() if p.grad is not None and bool(p.grad.any())
        ]
    return reached


def _graph_leaves(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The leaf tensors that an autograd graph accumulates gradients into."""
    leaves, seen, todo = [], set(), [out.grad_fn for out in outputs if out.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        todo.extend(next_node for next_node, _ in node.next_functions)
    return leaves


def _registered(
    make_model: Callable[[int], Any], model: Any, obs: torch.Tensor, case: dict[str, Any]
) -> Observation:
    """Are the tensors that shape the outputs the module's own (``parameters()``,
    ``state_dict()``)? The shapes of any graph leaf outside its parameters, and the outputs of
    a second model loaded with this one's ``state_dict()``."""
    logits, values = model(obs)
    own = {id(p) for p in model.parameters()}
    outside = [list(t.shape) for t in _graph_leaves([logits, values]) if id(t) not in own]
    observed: Observation = {"outside_parameters": outside[:16]}
    twin = _build(make_model, case["n_actions"], case["init_seed"] + 1)
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        observed["original"] = capture(model(obs))
        observed["reloaded"] = capture(twin(obs))
    return observed


def model_negative_values(make_model: Callable[[int], Any], case: dict[str, Any]) -> Observation:
    """Regress the values of a few frames on a negative target with Adam; report the values."""
    model = _build(make_model, case["n_actions"], case["init_seed"])
    obs = _obs(case)
    optimizer = torch.optim.Adam(model.parameters(), lr=case["lr"])
    target = float(case["target"])
    history = []
    for _ in range(int(case["steps"])):
        values = model(obs)[1]
        history.append(float(values.detach().max()))
        if history[-1] < target / 2:
            break
        optimizer.zero_grad()
        ((values - target) ** 2).mean().backward()
        optimizer.step()
    return {"max_value": history}
