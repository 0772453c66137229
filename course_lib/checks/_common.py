"""Shared pieces of the visible checks: the failure type, message helpers, calling student code.

:class:`CheckFailed` and :func:`require_implemented` are public (re-exported by
:mod:`course_lib.checks`; the course's grader raises the same class); the rest is private to the
check modules: ``fail`` / ``report_ok`` format the messages, ``call_student`` runs student code and ties an
exception to the part and the student's line, ``coded_obs`` builds coded frames. The models and
policies the checks drive one part with are in :mod:`course_lib.checks.fixtures`, the
properties they ask in :mod:`course_lib.checks.properties` (shared with the course's grader).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .fixtures import OBS_SHAPE as OBS_SHAPE  # re-exported to the check modules
from .fixtures import TableModel, ValuePolicy, frames
from .properties import array_of, capture, describe, student_error


class CheckFailed(AssertionError):
    """A visible check found a wrong answer; the message says expected vs actual and a hint."""

    # Shown in tracebacks as ``course_lib.checks.CheckFailed``, where students import it from.
    __module__ = "course_lib.checks"


def fail(
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


def report_ok(message: str) -> None:
    print(f"OK {message}")


def as_array(x: Any, part: str, name: str) -> np.ndarray:
    """A tensor, an array or a list of either, as one float64 array (no graph)."""
    if isinstance(x, (list, tuple)) and not x:
        fail(part, f"`{name}` is an empty list.")
    array = array_of(capture(x))
    if array is None:
        got = describe(capture(x, data=False))
        fail(part, f"`{name}` has an unexpected type.", "a torch tensor (or a list of them)", got)
    return array


def coded_obs(codes: list[int]) -> np.ndarray:
    """A uint8 batch ``(len(codes), 4, 84, 84)`` whose pixels all equal the given codes."""
    return frames(codes)


def value_policy() -> ValuePolicy:
    """V(obs) = the pixel code of obs, for codes 0..9 (with an autograd graph)."""
    return ValuePolicy(TableModel([[0.0, 0.0]] * 10, [float(c) for c in range(10)]))


def call_student(part: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the student's ``function``; an exception becomes a failure of ``part`` that names
    the student's line (a stub's ``NotImplementedError`` stays one, for the graded cells)."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError as error:
        raise NotImplementedError(f"[{part}] {student_error(error)}") from error
    except CheckFailed:
        raise
    except Exception as error:  # noqa: BLE001 - any bug in the student's code
        raise CheckFailed(f"[{part}] {student_error(error)}") from error


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
