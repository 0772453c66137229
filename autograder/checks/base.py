"""What every part's checks share: the :class:`SubCheck` record and comparison helpers.

A part's module (``autograder/checks/<part>.py``) exposes ``SUBCHECKS``, a tuple of
:class:`SubCheck`. Each sub-check is a function of the student's candidate (a class, or the
``make_model`` function) that returns on success and raises
:class:`~autograder.sandbox.CheckFailed` with a student-facing message on a wrong result.
The message shows the smallest input that fails, the expected and the actual values, and,
when a common mistake explains the difference, a hint.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..sandbox import CheckFailed

__all__ = [
    "CheckFailed",
    "SubCheck",
    "as_array",
    "describe",
    "fmt",
    "is_close",
    "seed_all",
]


@dataclass(frozen=True)
class SubCheck:
    """One line of feedback and its share of the part's points."""

    key: str  #: short stable name, for reports and tests ("resets")
    title: str  #: what is checked, in the student's terms ("targets stop at episode ends")
    weight: int  #: share of the part's points: weight / sum of the part's weights
    run: Callable[[Any], None]  #: run(candidate) returns, or raises CheckFailed
    seconds: float = 10.0  #: time limit of this sub-check (student code included)


def seed_all(seed: int) -> None:
    """Seed Python, numpy and torch, so each sub-check sees the same random numbers."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def describe(value: Any) -> str:
    """``"torch.Tensor float32 (3, 2)"``, ``"list of 4 numpy.ndarray"``... for messages."""
    if isinstance(value, torch.Tensor):
        grad = " with autograd graph" if value.requires_grad else ""
        return f"torch.Tensor {str(value.dtype).replace('torch.', '')} {tuple(value.shape)}{grad}"
    if isinstance(value, np.ndarray):
        return f"numpy.ndarray {value.dtype} {value.shape}"
    if isinstance(value, (list, tuple)):
        kinds = sorted({describe(item) for item in value[:50]})
        inner = kinds[0] if len(kinds) == 1 else "mixed items"
        return f"{type(value).__name__} of {len(value)} x {inner}"
    return type(value).__name__


def as_array(value: Any, what: str) -> np.ndarray:
    """``value`` (tensor, array, number, or list of those) as a float64 numpy array.

    Raises CheckFailed, naming ``what``, when it cannot be read as numbers.
    """
    try:
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().double().numpy()
        if isinstance(value, (list, tuple)):
            return np.stack([as_array(item, what) for item in value])
        array = np.asarray(value)
        if array.dtype == object or array.dtype.kind not in "biuf":
            raise TypeError(array.dtype)
        return array.astype(np.float64)
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - report any unreadable value the same way
        raise CheckFailed(
            f"{what} should hold numbers (a tensor, an array, or a list of them), got "
            f"{describe(value)} ({type(error).__name__}: {error})"
        ) from None


def fmt(value: Any, precision: int = 4) -> str:
    """A compact rendering of numbers for feedback (at most ~40 elements)."""
    array = np.asarray(value)
    if array.dtype.kind == "f":
        array = np.round(array, precision)
    return np.array2string(
        array, precision=precision, separator=", ", threshold=40, edgeitems=3, max_line_width=200
    ).replace("\n", "")


def is_close(got: np.ndarray, expected: np.ndarray, rtol: float = 1e-4, atol: float = 1e-4) -> bool:
    """Same shape and allclose; NaN anywhere fails."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return False
    return bool(np.allclose(got, expected, rtol=rtol, atol=atol))


def first_failure(
    cases: Sequence[Any], check_case: Callable[[Any], str | None]
) -> tuple[Any, str] | None:
    """The first case (cases are ordered smallest first) whose check returns a message."""
    for case in cases:
        message = check_case(case)
        if message:
            return case, message
    return None
