"""Argument checks shared by the library: one message format, so every bad value reads alike.

Each check returns the value in its plain Python type or raises ``ValueError`` with the
argument's name, what it must be, the value given and, when the caller passes one, the fix::

    >>> check_int("nsteps", 0, fix="try nsteps=5")
    Traceback (most recent call last):
    ...
    ValueError: `nsteps` must be an int >= 1, got 0: try nsteps=5.

``bool`` is refused although it is an ``int`` in Python: ``nenvs=True`` is a mistake, not 1.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = ["check_int", "check_number"]


def _fail(name: str, expected: str, value: Any, fix: str) -> ValueError:
    return ValueError(f"`{name}` must be {expected}, got {value!r}" + (f": {fix}." if fix else "."))


def check_int(
    name: str,
    value: Any,
    minimum: int = 1,
    *,
    maximum: int | None = None,
    allow_none: bool = False,
    fix: str = "",
) -> int | None:
    """``value`` as an ``int`` if it is an integer (Python or numpy, not bool) in
    ``[minimum, maximum]``; ``None`` if it is ``None`` and ``allow_none``."""
    if value is None and allow_none:
        return None
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    if not is_int or value < minimum or (maximum is not None and value > maximum):
        expected = (
            f"an int >= {minimum}" if maximum is None else f"an int in [{minimum}, {maximum}]"
        )
        raise _fail(name, f"None or {expected}" if allow_none else expected, value, fix)
    return int(value)


def check_number(
    name: str, value: Any, *, positive: bool = True, allow_none: bool = False, fix: str = ""
) -> float | None:
    """``value`` as a ``float`` if it is a real number (not bool), ``> 0`` when ``positive``."""
    if value is None and allow_none:
        return None
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if not is_real or not (value > 0 or not positive) or value != value:  # NaN fails too
        expected = "a positive number" if positive else "a number"
        raise _fail(name, f"None or {expected}" if allow_none else expected, value, fix)
    return float(value)
