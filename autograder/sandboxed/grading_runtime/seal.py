"""A seal on the grading runtime: notice when the student's code replaced part of it.

The student's cells run in the same Python process as the probes, so a cell can rebind a
module's names (``probes.PROBES["model_net"] = forged``, ``harness.run_probe = ...``), swap a
function's code (``f.__code__ = g.__code__``), its defaults or closure, or a class's methods.
:meth:`Seal.capture`, called before any student cell runs, remembers for each given module
every name with the object it is bound to, and for each function and class it defines the
function's code object, defaults and closure cells, the class's attributes, and for each dict
(the probe table) its items.
:meth:`Seal.broken` compares them again and names what changed.

This is a tripwire, not a wall: code that rewrites the process's memory, or the seal itself,
can hide a change. Points do not depend on it: the gates accept only what a working part
computes on the grading's secret cases. It turns a patched runtime into a ``tampered`` result.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

__all__ = ["Seal"]

#: Names a module may gain or rebind by itself (the warnings machinery, caches).
_VOLATILE = frozenset({"__warningregistry__", "__builtins__", "__cached__", "__loader__"})
_MAX_ITEMS = 10_000


def _function_state(function: types.FunctionType) -> tuple[Any, ...]:
    cells = tuple(cell.cell_contents for cell in function.__closure__ or () if _filled(cell))
    return (
        function.__code__,
        function.__defaults__,
        function.__kwdefaults__ and tuple(function.__kwdefaults__.items()),
        cells,
    )


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises ValueError
    except ValueError:
        return False
    return True


def _state(value: Any, owner: str) -> tuple[Any, ...]:
    """What must stay the same object for ``value``, a name of module ``owner``, to be unchanged
    (the insides of functions and classes defined elsewhere are not the runtime's: identity)."""
    if getattr(value, "__module__", owner) != owner:
        return (value,)
    if isinstance(value, types.FunctionType):
        return (value, *_function_state(value))
    if isinstance(value, type):
        members = []
        for name, member in list(vars(value).items())[:_MAX_ITEMS]:
            inner = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            state = _function_state(inner) if isinstance(inner, types.FunctionType) else ()
            members.append((name, member, *state))
        return (value, tuple(members))
    if isinstance(value, dict):
        return (value, tuple(list(value.items())[:_MAX_ITEMS]))
    return (value,)


def _same(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    """Element by element identity (nested tuples of the states compared the same way)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        if type(a) is tuple and type(b) is tuple:
            if not _same(a, b):
                return False
        elif a is not b:
            return False
    return True


class Seal:
    """The state of some modules' names, taken once; :meth:`broken` says what changed since."""

    def __init__(self, modules: Iterable[types.ModuleType]) -> None:
        self._modules = tuple(modules)
        self._taken = tuple(self._snapshot(module) for module in self._modules)

    @classmethod
    def capture(cls, modules: Iterable[types.ModuleType]) -> Seal:
        """Seal ``modules`` as they are now (before any student code runs)."""
        return cls(modules)

    @staticmethod
    def _snapshot(module: types.ModuleType) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        names = sorted(name for name in vars(module) if name not in _VOLATILE)
        return tuple(
            (name, _state(vars(module)[name], module.__name__)) for name in names[:_MAX_ITEMS]
        )

    def broken(self) -> list[str]:
        """``module.name`` of every sealed name that was removed, rebound or changed inside."""
        changed = []
        for module, taken in zip(self._modules, self._taken, strict=True):
            now = vars(module)
            for name, state in taken:
                if name not in now or not _same(state, _state(now[name], module.__name__)):
                    changed.append(f"{module.__name__}.{name}")
        return changed
