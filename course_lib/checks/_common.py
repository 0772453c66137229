"""Shared pieces of the visible checks: the failure type, message helpers, fake inputs.

:class:`CheckFailed` and :func:`require_implemented` are public (re-exported by
:mod:`course_lib.checks`); the rest is private to the check modules: ``_fail`` / ``_ok``
format the messages, ``_obs`` builds uint8 observations that encode one code per env, and
:class:`_TableModel` / :class:`_TablePolicy` are a tiny correct model and policy that look
their outputs up from that code, so that each check exercises one student part at a time.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

OBS_SHAPE = (4, 84, 84)


class CheckFailed(AssertionError):
    """A visible check found a wrong answer; the message says expected vs actual and a hint."""

    # Shown in tracebacks as ``course_lib.checks.CheckFailed``, where students import it from.
    __module__ = "course_lib.checks"


def _fail(
    part: str, problem: str, expected: Any = None, actual: Any = None, hint: str = ""
) -> None:
    lines = [f"[{part}] {problem}"]
    if expected is not None:
        lines.append(f"  expected: {_show(expected)}")
    if actual is not None:
        lines.append(f"  actual:   {_show(actual)}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise CheckFailed("\n".join(lines))


def _show(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return (
            f"tensor {tuple(x.shape)} {x.dtype}: {np.round(x.detach().cpu().numpy(), 4).tolist()}"
        )
    if isinstance(x, np.ndarray):
        return f"array {x.shape} {x.dtype}: {np.round(x, 4).tolist()}"
    return repr(x)


def _ok(message: str) -> None:
    print(f"OK {message}")


def _as_array(x: Any, part: str, name: str) -> np.ndarray:
    """A tensor, an array or a list of either, as one float64 array (no graph)."""
    if isinstance(x, (list, tuple)):
        if not x:
            _fail(part, f"`{name}` is an empty list.")
        return np.stack([_as_array(v, part, name) for v in x])
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    _fail(part, f"`{name}` has an unexpected type.", "a torch tensor (or a list of them)", type(x))
    raise AssertionError("unreachable")


def _has_graph(x: Any) -> bool:
    items = x if isinstance(x, (list, tuple)) else [x]
    return any(isinstance(v, torch.Tensor) and v.requires_grad for v in items)


def _obs(codes: list[int]) -> np.ndarray:
    """A uint8 batch ``(len(codes), 4, 84, 84)`` whose pixels all equal the given codes."""
    return np.stack([np.full(OBS_SHAPE, c, dtype=np.uint8) for c in codes])


# ---------------------------------------------------------------- tiny fake models and policies
class _TableModel(nn.Module):
    """Reads an index from pixel [0, 0, 0] of each observation and looks up logits and a value."""

    def __init__(self, logits: list[list[float]], values: list[float]) -> None:
        super().__init__()
        self.logit_table = nn.Parameter(torch.tensor(logits, dtype=torch.float32))
        self.value_table = nn.Parameter(torch.tensor(values, dtype=torch.float32))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(obs, torch.Tensor):
            raise TypeError(
                f"the model expects a torch tensor, got {type(obs).__name__}: "
                "convert the observations with torch.as_tensor(obs, device=...)"
            )
        index = obs[:, 0, 0, 0].long()  # (N,)
        return self.logit_table[index], self.value_table[index]  # (N, A), (N,)


class _TablePolicy:
    """A correct policy around a :class:`_TableModel`, so that one part is checked at a time."""

    def __init__(self, model: _TableModel) -> None:
        self.model = model

    def act(self, inputs: np.ndarray) -> dict[str, Any]:
        logits, values = self.model(torch.as_tensor(inputs))
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": dist.log_prob(actions),
            "values": values,
        }


def _value_policy() -> _TablePolicy:
    """V(obs) = the pixel code of obs, for codes 0..9 (with an autograd graph)."""
    return _TablePolicy(_TableModel([[0.0, 0.0]] * 10, [float(c) for c in range(10)]))


def require_implemented(check: Callable[..., None], *args: Any) -> None:
    """Fail only while a part is still the ``NotImplementedError`` stub; otherwise stay quiet.

    Graded cells call this so that an untouched notebook scores 0 at once; any other problem
    is left to the autograder's hidden tests (which may give partial credit).
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check(*args)
    except NotImplementedError as err:
        raise NotImplementedError(
            f"{check.__name__}: a part is still the stub; write your solution in the cell above."
        ) from err
    except Exception:  # noqa: BLE001 - graded by the hidden tests instead
        pass
