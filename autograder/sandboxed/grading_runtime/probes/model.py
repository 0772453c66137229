"""Probes: run one student part on given inputs and report, as plain data, what came back.

A probe never judges. It builds the part's inputs from a *case* (plain data: sizes, seeds,
small arrays drawn by the grader for this grading), calls the student's code once or a few
times and returns an observation: the outputs (:func:`course_lib.checks.properties.capture`),
and facts only the running code can see (which parameters a gradient reached, which inputs
were changed in place, which layers the model's forward pass used).
Exceptions from the student's code propagate to the caller (:mod:`.harness`).

The grader runs the same probes on the reference in its own process, on the same case, and
compares; for the model, the probe loads weights drawn from the case into the student's layers
and the grader computes what the Nature-DQN network gives with those weights.

``PROBES`` maps a probe's name to its function ``probe(candidate, case) -> dict``.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from course_lib.checks.layers import LayerLog, distinct_calls, layer_records
from course_lib.checks.properties import capture, changed_keys, has_graph, snapshot

from . import fixtures

__all__ = ["PROBES", "run_probe", "seed_all"]

Observation = dict[str, Any]


def seed_all(seed: int) -> None:
    """Seed Python, numpy and torch, so a probe sees the same random numbers every time."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# ------------------------------------------------------------------------------ model
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


#: Tensor methods that move a tensor to a device or off it by hand (``.to`` only with a device).
_MOVING = frozenset(
    {
        torch.Tensor.to,
        torch.Tensor.cpu,
        torch.Tensor.cuda,
        torch.Tensor.numpy,
        torch.Tensor.__array__,
        torch.Tensor.type,
        torch.Tensor.pin_memory,
    }
)


class _MovedByHand(TorchFunctionMode):
    """Notes each call of :data:`_MOVING` (``x.to(torch.float32)`` is not one: no device)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MOVING:
            given = [*args[1:], *kwargs.values()]
            dtype_only = func is torch.Tensor.to and all(
                isinstance(value, (bool, torch.dtype, torch.memory_format)) for value in given
            )
            if not dtype_only:
                self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **kwargs)


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in an operation's arguments or results (nested lists, tuples, dicts)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


@functools.cache
def _follow_mode() -> type:
    """The dispatch mode that follows the module's tensors (made on first use: torch keeps
    dispatch modes in a private module, and a torch without it makes the meta device decide)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class FollowsTheModule(TorchDispatchMode):
        """Follows every tensor computed from the input and the module's own tensors, operation
        by operation; notes each operation that mixes them with another tensor (not 0-d)."""

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps a mode's __torch_dispatch__ to keep its compiler out, and the
            # wrapper's first call imports that compiler (seconds); nothing is compiled here.
            return False

        def __init__(self, tensors: list[torch.Tensor]) -> None:
            super().__init__()
            self.follows = {id(t): t for t in tensors}  # kept alive: their ids stay unique
            self.strays: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            given = _tensors([args, kwargs or {}])
            if any(id(t) in self.follows for t in given):
                if any(id(t) not in self.follows and t.dim() > 0 for t in given):
                    self.strays.append(str(func))
                else:
                    self.follows.update((id(t), t) for t in _tensors(out))
            return out

    return FollowsTheModule


def _moves_with_module(model: Any, obs: torch.Tensor) -> bool:
    """``True`` when one forward pass on the CPU proves that ``model.to(device)`` moves every
    tensor the pass uses: each operation takes only the input, the module's parameters and
    buffers, what was computed from those, and 0-d scalars (which a GPU also takes from the
    CPU); nothing is moved by hand; both outputs come from them.

    ``False`` when it cannot tell (a tensor made in ``forward``, even one made on the input's
    device, a call that could move one): then the meta device decides, as a GPU would. The
    meta device's first use imports most of torch's compiler (seconds each grading); this pass
    costs one forward pass of a few frames.
    """
    try:
        twin = copy.deepcopy(model)
        own = [*twin.parameters(), *twin.buffers()]
        with torch.no_grad(), _MovedByHand() as moves, _follow_mode()([obs, *own]) as trace:
            outputs = _tensors(twin(obs))
        followed = bool(outputs) and all(id(t) in trace.follows for t in outputs)
        return followed and not moves.calls and not trace.strays
    except Exception:  # noqa: BLE001 - unsure: the meta device decides
        return False


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
    """Are the tensors that shape the outputs the module's own (parameters, .to, state_dict)?"""
    logits, values = model(obs)
    own = {id(p) for p in model.parameters()}
    outside = [list(t.shape) for t in _graph_leaves([logits, values]) if id(t) not in own]
    observed: Observation = {"outside_parameters": outside[:16]}
    twin = _build(make_model, case["n_actions"], case["init_seed"] + 1)
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        observed["original"] = capture(model(obs))
        observed["reloaded"] = capture(twin(obs))
    if _moves_with_module(model, obs):
        observed["moves_with_module"] = "proved on the CPU"
        return observed
    moved = copy.deepcopy(model).to("meta")
    try:
        with torch.no_grad():
            meta_logits, meta_values = moved(obs.to("meta"))
        observed["meta_devices"] = [str(meta_logits.device), str(meta_values.device)]
    except Exception as error:  # noqa: BLE001 - the effect being probed
        observed["meta_error"] = f"{type(error).__name__}: {str(error)[:200]}"
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


# ------------------------------------------------------------------------------ policy
def policy_act(Policy: type, case: dict[str, Any]) -> Observation:
    """``Policy(model).act(obs)`` on a fixture network; what came back, key by key."""
    model = fixtures.make_fixture_model(case["model"], case["n_actions"], case["init_seed"])
    observations = fixtures.random_frames(case["n"], case["obs_seed"])
    out = Policy(model).act(observations)
    observed: Observation = {"returned": capture(out, data=False), "keys": {}}
    if isinstance(out, dict):
        for key in ("actions", "logits", "log_probs", "values"):
            if key in out:
                observed["keys"][key] = capture(out[key])
        parameters = list(model.parameters())
        for key in ("logits", "log_probs", "values"):
            observed[f"{key}_reach_model"] = _reaches(out.get(key), parameters)
    return observed


def _reaches(output: Any, parameters: list[torch.Tensor]) -> bool:
    """Does a gradient of ``output`` reach one of ``parameters`` (the graph is kept)?"""
    if not isinstance(output, torch.Tensor) or not output.requires_grad:
        return False
    grads = torch.autograd.grad(
        output.float().sum(), parameters, retain_graph=True, allow_unused=True
    )
    return any(grad is not None and bool(grad.abs().sum() > 0) for grad in grads)


def _action_indices(actions: Any, n: int, n_actions: int) -> np.ndarray | None:
    if isinstance(actions, torch.Tensor):
        actions = actions.detach().cpu().numpy()
    if not isinstance(actions, np.ndarray) or actions.dtype.kind not in "iu":
        return None
    if actions.shape != (n,) or actions.min() < 0 or actions.max() >= n_actions:
        return None
    return actions.astype(np.int64)


def policy_samples(Policy: type, case: dict[str, Any]) -> Observation:
    """Action counts per profile over ``calls`` calls of ``act`` on profile-coded frames."""
    logits = np.asarray(case["logits"], dtype=np.float64)  # (2, A)
    rows = np.asarray(case["rows"], dtype=np.int64)  # (n,), profile of each env
    model = fixtures.ProfileModel(logits, values=np.array([0.5, -0.5]))
    observations = fixtures.frames(np.where(rows == 1, 255, 0))
    counts = np.zeros(logits.shape, dtype=np.int64)
    policy = Policy(model)
    for _ in range(int(case["calls"])):
        actions = policy.act(observations)
        actions = actions.get("actions") if isinstance(actions, dict) else actions
        indices = _action_indices(actions, len(rows), logits.shape[1])
        if indices is None:
            return {"counts": None, "bad_actions": capture(actions)}
        np.add.at(counts, (rows, indices), 1)
    return {"counts": counts}


# ------------------------------------------------------------------------------ trajectories
def _returns_probe(call: Callable[..., Any], case: dict[str, Any], keys: tuple[str, ...]):
    policy, trajectory = fixtures.returns_trajectory(case)
    before = snapshot(trajectory)
    returned = call(policy, trajectory)
    observed: Observation = {
        "returned": capture(returned, data=False),
        "changed": changed_keys(before, trajectory),
    }
    for key in keys:
        if key in trajectory:
            observed[key] = capture(trajectory[key])
            observed[f"{key}_has_graph"] = has_graph(trajectory[key])
    return observed


def value_targets(ComputeValueTargets: type, case: dict[str, Any]) -> Observation:
    """``ComputeValueTargets(policy, gamma)(trajectory)`` on a coded trajectory."""

    def call(policy: Any, trajectory: dict[str, Any]) -> Any:
        return ComputeValueTargets(policy, case["gamma"])(trajectory)

    return _returns_probe(call, case, ("value_targets",))


def gae(ComputeGAE: type, case: dict[str, Any]) -> Observation:
    """``ComputeGAE(policy, gamma, lambda_)(trajectory)`` on a coded trajectory."""

    def call(policy: Any, trajectory: dict[str, Any]) -> Any:
        return ComputeGAE(policy, case["gamma"], case["lambda_"])(trajectory)

    return _returns_probe(call, case, ("advantages", "value_targets"))


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


def merge(MergeTimeBatch: type, case: dict[str, Any]) -> Observation:
    """``MergeTimeBatch()(trajectory)`` on a trajectory whose entries encode (t, i)."""
    T, N = int(case["T"]), int(case["N"])
    trajectory, leaf = fixtures.coded_trajectory(
        T, N, bool(case["targets_as_tensor"]), salt=int(case.get("salt", 0))
    )
    state = trajectory["state"]
    returned = MergeTimeBatch()(trajectory)
    observed: Observation = {
        "returned": capture(returned, data=False),
        "unchanged": all(isinstance(trajectory.get(k), list) for k in PER_STEP_KEYS),
        "keys": {},
    }
    for key in PER_STEP_KEYS:
        value = trajectory.get(key)
        if key == "observations" and isinstance(value, (np.ndarray, torch.Tensor)):
            record = capture(value, data=False)
            if value.ndim == 4:  # one code per frame: its first pixel
                record["codes"] = np.asarray(value[:, 0, 0, 0], dtype=np.float64)[: 64 * 64]
            observed["keys"][key] = record
        else:
            observed["keys"][key] = capture(value)
    new_state = trajectory.get("state")
    observed["state_same_object"] = new_state is state
    if isinstance(new_state, dict):
        latest = new_state.get("latest_observation")
        observed["state"] = {
            "keys": sorted(map(str, new_state)),
            "env_steps": new_state.get("env_steps") if "env_steps" in new_state else None,
            "latest": capture(latest, data=False),
            "latest_codes": (
                np.asarray(latest[:, 0, 0, 0], dtype=np.float64)
                if isinstance(latest, np.ndarray) and latest.ndim == 4
                else None
            ),
        }
    tensors = [trajectory.get(k) for k in ("logits", "log_probs", "values")]
    if all(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        sum(t.sum() for t in tensors).backward()
        observed["leaf_grad"] = None if leaf.grad is None else float(leaf.grad)
    return observed


# ------------------------------------------------------------------------------ a2c
def _flat_parameters(model: nn.Module) -> np.ndarray:
    return torch.cat([p.detach().double().flatten() for p in model.parameters()]).numpy()


def _optimizer(kind: str, model: nn.Module) -> torch.optim.Optimizer:
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.1)
    return torch.optim.RMSprop(model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)


def a2c_run(A2C: type, case: dict[str, Any]) -> Observation:
    """Build ``A2C(policy, optimizer, **coefs)`` on a fixture network and ``step`` it.

    ``steps`` lists the seeds of the merged batches, one step each; with ``fresh_second``, a
    new A2C on a copy of the network after the first step also makes the second step.
    """
    if "runs" in case:  # several runs compared with each other by one check
        return {"runs": [a2c_run(A2C, run) for run in case["runs"]]}
    n_actions, rows = int(case["n_actions"]), int(case["rows"])
    model = fixtures.make_fixture_model(case["model"], n_actions, int(case["init_seed"]))
    agent = A2C(fixtures.ValuePolicy(model), _optimizer(case["optimizer"], model), **case["coefs"])
    observed: Observation = {"stats": [], "params": []}
    for index, seed in enumerate(case["steps"]):
        if index == 1 and case.get("fresh_second"):
            fresh = copy.deepcopy(model)
            for param in fresh.parameters():
                param.grad = None
            twin = A2C(
                fixtures.ValuePolicy(fresh), _optimizer(case["optimizer"], fresh), **case["coefs"]
            )
            twin.step(fixtures.merged_batch(fresh, seed, rows, n_actions))
            observed["fresh_params"] = _flat_parameters(fresh)
        stats = agent.step(fixtures.merged_batch(model, seed, rows, n_actions))
        entry = {"returned": capture(stats, data=False), "values": {}}
        if isinstance(stats, dict):
            entry["values"] = {str(key): capture(value) for key, value in stats.items()}
        observed["stats"].append(entry)
        observed["params"].append(_flat_parameters(model))
    return observed


PROBES: dict[str, Callable[[Any, dict[str, Any]], Observation]] = {
    "model_net": model_net,
    "model_outputs": model_outputs,
    "model_negative_values": model_negative_values,
    "policy_act": policy_act,
    "policy_samples": policy_samples,
    "value_targets": value_targets,
    "gae": gae,
    "merge": merge,
    "a2c_run": a2c_run,
}


def run_probe(name: str, candidate: Any, case: dict[str, Any]) -> Observation:
    """Run the probe ``name`` (a key of :data:`PROBES`) on ``candidate``."""
    if name not in PROBES:
        raise ValueError(f"unknown probe {name!r}: expected one of {sorted(PROBES)}")
    return PROBES[name](candidate, case)
