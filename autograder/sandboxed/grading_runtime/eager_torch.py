"""Build torch optimizers without loading ``torch.compile``'s machinery first (2 to 3 s a process).

torch (2.x) marks a few optimizer methods "not for compiling": ``Optimizer.add_param_group`` and
``zero_grad`` through ``torch._disable_dynamo``, ``step`` through ``torch._dynamo.graph_break()``.
Both import :mod:`torch._dynamo` the first time they run, so the first ``torch.optim.Adam(...)``
of a process costs 2 to 3 s of CPU on this course's machines, more than the rest of a grading's
probes together. It happens once in every sandbox (the student's ``A2C``) and once in every
grader process (the reference's side).

In eager code (no ``torch.compile`` running) both marks do nothing: ``disable(fn)`` only keeps a
compiler from tracing ``fn``, and ``graph_break()`` is an empty function. :func:`install` puts a
stand-in for :mod:`torch._dynamo` in ``sys.modules`` that answers exactly those two names that
way and loads the real module the moment anything else of it is asked for (``torch.compile``
does), so nothing that needs the real module ever gets the stand-in's answer. Functions marked
through the stand-in before the real module loads stay unmarked: code that compiles an
optimizer's step after building it may see a graph break less; grading never compiles.

Nothing changes in what the optimizers compute (``tests/test_eager_torch.py`` checks the
parameters after a few steps are the same bit for bit, and that the real module still loads).
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import Any

__all__ = ["install"]

NAME = "torch._dynamo"
_LOCK = threading.RLock()  # the real import may come back through the stand-in


class _DynamoStandIn(types.ModuleType):
    """``torch._dynamo`` until something other than ``disable`` or ``graph_break`` is needed."""

    def disable(self, fn: Any = None, recursive: bool = True, **_: Any) -> Any:
        """Eager code: ``fn`` itself (or a decorator that returns the function it is given)."""
        if fn is None:
            return lambda function: function
        return fn

    def graph_break(self, *_: Any, **__: Any) -> None:
        """Eager code: nothing (the real one is an empty function outside a compiler)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_real_module(), name)


def _real_module() -> types.ModuleType:
    """Replace the stand-in with the real :mod:`torch._dynamo` and return it."""
    with _LOCK:
        found = sys.modules.get(NAME)
        if found is not None and not isinstance(found, _DynamoStandIn):
            return found
        sys.modules.pop(NAME, None)
        torch = sys.modules["torch"]
        if isinstance(torch.__dict__.get("_dynamo"), _DynamoStandIn):
            del torch._dynamo
        return importlib.import_module(NAME)


def install() -> bool:
    """Put the stand-in in place unless :mod:`torch._dynamo` is loaded already; True if it is in place.

    Imports torch (the stand-in belongs under it). Safe to call any number of times.
    """
    import torch

    with _LOCK:
        found = sys.modules.get(NAME)
        if found is None:
            found = _DynamoStandIn(NAME, "Stand-in for torch._dynamo in eager code (grading).")
            sys.modules[NAME] = found
            torch._dynamo = found
        return isinstance(found, _DynamoStandIn)
