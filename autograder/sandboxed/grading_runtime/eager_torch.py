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
does), so nothing that needs the real module ever gets the stand-in's answer:

* any other name, and ``__path__`` (importing a submodule such as ``torch._dynamo.config``),
  loads the real package first, through its own ``__init__`` as a plain import would; a
  submodule that the real package loaded meanwhile is then handed over as it is, never loaded a
  second time (:class:`_AlreadyLoaded`);
* other ``__dunder__`` names are answered as by a module that lacks them: tools that walk
  ``sys.modules`` asking each module for its ``__file__`` (``inspect.getmodule``, which torch
  calls while it imports) must not load the real package in the middle of another import.

Functions marked through the stand-in before the real module loads stay unmarked: code that
compiles an optimizer's step after building it may see a graph break less. Two kinds of
process install it, neither of which compiles anything: the sandbox's executor (one student's
process) and a grading process, once it holds an assessor (the reference's ``A2C`` builds
optimizers on each grading's cases: :class:`autograder.core.assessor.Assessor`). The notebooks
students and instructors run keep torch as it is.

Nothing changes in what the optimizers compute (``tests/test_eager_torch.py`` checks the
parameters after a few steps are the same bit for bit, and that torch.compile still works).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
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
        if name.startswith("__") and name.endswith("__") and name != "__path__":
            raise AttributeError(name)
        return getattr(_real_module(), name)


class _AlreadyLoaded(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Hands over a ``torch._dynamo`` submodule that is loaded already, as it is.

    Python asks a package for ``__path__`` after it has checked that the submodule is not
    loaded yet; when that question loads the real package (whose ``__init__`` loads many of its
    submodules), the import goes on to find and load the submodule again. This finder, first on
    ``sys.meta_path``, answers that search with the module already there.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        found = sys.modules.get(fullname)
        if target is not None or found is None or not fullname.startswith(NAME + "."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> Any:
        module = sys.modules[spec.name]
        self._specs[spec.name] = module.__spec__  # the import sets __spec__ to ours: put back
        return module

    def exec_module(self, module: Any) -> None:
        spec = self._specs.pop(module.__name__, None)
        if spec is not None and module.__dict__.get("__spec__") is not spec:
            types.ModuleType.__setattr__(module, "__spec__", spec)  # past a module's own rules

    _specs: dict[str, Any] = {}


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
            if not any(isinstance(finder, _AlreadyLoaded) for finder in sys.meta_path):
                sys.meta_path.insert(0, _AlreadyLoaded())
            found = _DynamoStandIn(NAME, "Stand-in for torch._dynamo in eager code (grading).")
            sys.modules[NAME] = found
            torch._dynamo = found
        return isinstance(found, _DynamoStandIn)
