"""Stand-ins for the visible checks: coded frames, a lookup-table model and a value-only policy.

Nothing here answers a graded part: :class:`TableModel` needs its tables (it is no
``make_model``), and :class:`ValuePolicy` returns the model's logits and values but samples no
action (it is no ``Policy``). The checks drive one part with them, so one wrong part never
hides another.

Coded frames: observations keep the course's shape ``uint8 (N, 4, 84, 84)`` but every pixel of
a frame holds one *code* (0..255), so a model can read which observation it was given and a
check can tell, for example, ``latest_observation`` from ``observations[-1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn

__all__ = ["OBS_SHAPE", "TableModel", "ValuePolicy", "frames", "read_codes"]

OBS_SHAPE = (4, 84, 84)


def frames(codes: Any) -> np.ndarray:
    """``uint8 (*codes.shape, 4, 84, 84)`` frames whose pixels all equal their code."""
    codes = np.asarray(codes, dtype=np.uint8)
    return np.broadcast_to(codes[..., None, None, None], codes.shape + OBS_SHAPE).copy()


def read_codes(obs: Any) -> torch.Tensor:
    """The code of each frame of a ``(N, 4, 84, 84)`` batch, as int64 ``(N,)``."""
    if not isinstance(obs, torch.Tensor):
        raise TypeError(
            f"the model expects a torch tensor, got {type(obs).__name__}: convert the "
            "observations to a tensor on the model's device first"
        )
    return obs[:, 0, 0, 0].float().round().long().clamp(0, 255)


class TableModel(nn.Module):
    """``logits[i], values[i] = logit_table[code_i], value_table[code_i]``, both trainable."""

    def __init__(self, logits: Any, values: Any) -> None:
        super().__init__()
        self.logit_table = nn.Parameter(torch.tensor(np.asarray(logits), dtype=torch.float32))
        self.value_table = nn.Parameter(torch.tensor(np.asarray(values), dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes = read_codes(obs).to(self.value_table.device)
        return self.logit_table[codes], self.value_table[codes]  # (N, A), (N,)


class ValuePolicy:
    """What a transform may ask of a policy: ``.model``, ``parameters()`` and ``act(obs)``
    with the model's ``logits`` and ``values`` (no actions: this is not a ``Policy``)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def parameters(self, recurse: bool = True):  # noqa: D102 - as nn.Module.parameters
        return self.model.parameters(recurse)

    def act(self, inputs: Any) -> dict[str, Any]:
        logits, values = self.model(torch.as_tensor(np.asarray(inputs)))
        return {"logits": logits, "values": values}
