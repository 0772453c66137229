"""The model probe's device check: a CPU trace proves ``model.to(device)`` moves everything, or
the meta device decides.

``_moves_with_module`` may only say *yes* for a model whose forward pass also runs on the meta
device (a GPU's stand-in); when it says *no*, the probe runs the meta device as before, so a
wrong *no* costs time, never a grade. Tiny models, CPU only.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from autograder.sandboxed.grading_runtime import probes
from autograder.sandboxed.grading_runtime.probes import _moves_with_module
from solutions.reference import make_model


class _Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.logits = nn.Linear(8, 3)
        self.value = nn.Linear(8, 1)

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.logits(x), self.value(x).squeeze(-1)


class PlainList(nn.Module):  # layers in a Python list: .to() never moves them
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(8, 3), nn.Linear(8, 1)]

    def forward(self, x):
        x = x.float()
        return self.layers[0](x), self.layers[1](x)


class PlainConstant(_Heads):  # a tensor attribute, not a buffer
    def __init__(self) -> None:
        super().__init__()
        self.mean = torch.ones(8)

    def forward(self, x):
        return self.heads(x.float() - self.mean)


class ScalarConstant(_Heads):  # a 0-d tensor: a GPU takes it from the CPU
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.tensor(255.0)

    def forward(self, x):
        return self.heads(x.float() / self.scale)


class MadeInForward(_Heads):
    def forward(self, x):
        return self.heads(x.float() + torch.zeros(8))


class MadeOnTheInputsDevice(_Heads):  # right, but only the meta device can tell
    def forward(self, x):
        return self.heads(x.float() + torch.zeros(8, device=x.device))


class MovedToCpu(_Heads):
    def forward(self, x):
        return self.heads(x.float().to("cpu"))


class CpuCall(_Heads):
    def forward(self, x):
        return self.heads(x.cpu().float())


class ThroughNumpy(_Heads):
    def forward(self, x):
        return self.heads(torch.from_numpy(np.asarray(x.float())))


class DtypeOnly(_Heads):
    def forward(self, x):
        return self.heads(x.to(torch.float32) / 255)


class Buffer(_Heads):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.ones(8))

    def forward(self, x):
        return self.heads(x.float() - self.mean)


class Normalised(_Heads):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.heads(self.norm(x.float()))


class ConstantOutput(_Heads):  # outputs that do not come from the module
    def forward(self, x):
        return torch.zeros(len(x), 3), torch.zeros(len(x))


class TrunkInAList(nn.Module):
    """The reference's layers with the convolutional trunk in a plain list."""

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        reference = make_model(n_actions)
        self.trunk = [reference.trunk]  # not registered: .to() leaves it on the CPU
        self.policy_head, self.value_head = reference.policy_head, reference.value_head

    def forward(self, obs):
        features = self.trunk[0](obs.float() / 255.0)
        return self.policy_head(features), self.value_head(features).squeeze(-1)


def _runs_on_meta(model: nn.Module, obs: torch.Tensor) -> bool:
    try:
        with torch.no_grad():
            copy.deepcopy(model).to("meta")(obs.to("meta"))
    except Exception:  # noqa: BLE001
        return False
    return True


MODELS = [
    PlainList, PlainConstant, ScalarConstant, MadeInForward, MadeOnTheInputsDevice, MovedToCpu,
    CpuCall, ThroughNumpy, DtypeOnly, Buffer, Normalised, ConstantOutput,
]  # fmt: skip


@pytest.mark.parametrize("model_class", MODELS, ids=lambda cls: cls.__name__)
def test_the_trace_says_yes_only_where_the_meta_device_runs(model_class):
    model = model_class()
    obs = torch.randint(0, 255, (4, 8), dtype=torch.uint8)
    proved = _moves_with_module(model, obs)
    on_meta = _runs_on_meta(model, obs)
    assert not proved or on_meta
    # where it matters, the trace decides itself (the models a GPU takes as they are)
    expected = model_class in (ScalarConstant, DtypeOnly, Buffer, Normalised)
    assert proved is expected
    assert on_meta is (model_class not in (PlainList, PlainConstant, MadeInForward, MovedToCpu,
                                           CpuCall, ThroughNumpy))  # fmt: skip


def test_a_nature_dqn_is_proved_without_the_meta_device_and_a_broken_one_is_not():
    obs = torch.randint(0, 255, (3, 4, 84, 84), dtype=torch.uint8)
    case = {"n_actions": 5, "init_seed": 1, "n": 3, "obs_seed": 2, "weight_seed": 3}
    observed = probes._registered(make_model, make_model(5), obs, case)
    assert observed["moves_with_module"] == "proved on the CPU"
    assert "meta_error" not in observed and "meta_devices" not in observed

    observed = probes._registered(TrunkInAList, TrunkInAList(5), obs, case)
    assert "moves_with_module" not in observed
    assert "meta_error" in observed
