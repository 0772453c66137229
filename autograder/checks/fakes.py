"""Small stand-ins the checks drive the student's code with: models whose outputs are known.

Observations keep the course's shape ``uint8 (N, 4, 84, 84)`` but are constant frames: every
pixel of a frame holds its *code* (0..255), so a stub model can read which observation it was
given, and a check can tell which one the student's code passed (``latest_observation`` or
``observations[-1]``). Every stub has parameters, so its outputs carry an autograd graph, like
the real network's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions import reference

__all__ = [
    "CodeValueModel",
    "GradingPolicy",
    "ProfileModel",
    "StubPolicy",
    "TwoHeadModel",
    "frames",
    "read_codes",
]

FRAME_SHAPE = (4, 84, 84)


def frames(codes: Any) -> np.ndarray:
    """``uint8 (*codes.shape, 4, 84, 84)`` frames whose pixels all equal their code."""
    codes = np.asarray(codes, dtype=np.uint8)
    return np.broadcast_to(codes[..., None, None, None], codes.shape + FRAME_SHAPE).copy()


def read_codes(obs: torch.Tensor) -> torch.Tensor:
    """The code of each frame of a ``(N, 4, 84, 84)`` batch, as int64 ``(N,)``."""
    obs = torch.as_tensor(obs)
    return obs[:, 0, 0, 0].float().round().long().clamp(0, 255)


class CodeValueModel(nn.Module):
    """``values[i] = table[code of frame i]`` (times a weight of 1, for the graph); flat logits."""

    def __init__(self, value_table: np.ndarray, n_actions: int = 3) -> None:
        super().__init__()
        self.register_buffer("table", torch.as_tensor(value_table, dtype=torch.float32))
        self.weight = nn.Parameter(torch.ones(()))
        self.logit_bias = nn.Parameter(torch.zeros(n_actions))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes = read_codes(obs).to(self.table.device)
        values = self.weight * self.table[codes]  # (N,)
        logits = self.logit_bias.expand(len(codes), -1) * self.weight  # (N, A)
        return logits, values


class StubPolicy:
    """A policy with ``.model`` and ``.act`` over a stub model; always plays action 0."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def act(self, inputs: Any) -> dict[str, Any]:
        logits, values = self.model(torch.as_tensor(np.asarray(inputs)))
        actions = torch.zeros(len(values), dtype=torch.int64)
        log_probs = F.log_softmax(logits, dim=-1).gather(1, actions[:, None]).squeeze(1)
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }


class ProfileModel(nn.Module):
    """Two fixed rows of logits: frames with code 0 get ``logits[0]``, code 255 ``logits[1]``.

    The threshold sits at 0.5, so the profile survives a (wrong) division by 255 in the policy.
    """

    def __init__(self, logits: np.ndarray, values: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("table", torch.as_tensor(logits, dtype=torch.float32))  # (2, A)
        self.register_buffer("value_table", torch.as_tensor(values, dtype=torch.float32))
        self.logit_bias = nn.Parameter(torch.zeros(self.table.shape[1]))
        self.value_bias = nn.Parameter(torch.zeros(()))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        profile = (torch.as_tensor(obs)[:, 0, 0, 0].float() > 0.5).long().to(self.table.device)
        return self.table[profile] + self.logit_bias, self.value_table[profile] + self.value_bias


class TwoHeadModel(nn.Module):
    """A tiny actor-critic with *disjoint* heads: no parameter is shared by logits and values.

    With it, the value head's gradient comes from the value loss alone, which makes a missing
    ``.detach()`` on the advantages visible.
    """

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        self.policy_head = nn.Linear(4 * 7 * 7, n_actions)
        self.value_head = nn.Linear(4 * 7 * 7, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.as_tensor(obs)[:, :, ::12, ::12].float().flatten(1) / 255.0  # (N, 196)
        return self.policy_head(features), self.value_head(features).squeeze(-1)


class GradingPolicy(reference.Policy):
    """The reference Policy, plus ``parameters()`` for code that treats a policy as a module."""

    def parameters(self, recurse: bool = True):  # noqa: D102 - same as nn.Module.parameters
        return self.model.parameters(recurse)

    def named_parameters(self, *args: Any, **kwargs: Any):  # noqa: D102
        return self.model.named_parameters(*args, **kwargs)
