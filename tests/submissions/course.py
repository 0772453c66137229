"""Submissions of the real course notebook: the reference answers, and a misbehaving variant.

:func:`course_submission` starts from the solution notebook (``solutions/a2c.ipynb``), removes
the hidden tests (as in the student release; nbgrader puts them back when grading) and lets a
test replace or extend the code of the solution cells.

:func:`corpus_source` turns an answer of the corpus (``tests/buggy_parts.py``) into the code of a
solution cell, with every helper class it needs (``tests/test_corpus_nbgrader.py``).

:data:`MISBEHAVING` is one submission in which every part misbehaves in its own way, so that one
nbgrader run checks that each misbehaviour costs points in its own part only:

=========================  ===========================================================  ======
part                       what the student's cell does                                 score
=========================  ===========================================================  ======
``model``                  correct; floods stderr and starts a thread that keeps        full
                           writing to stderr while the later (graded) cells run
``policy``                 ``act`` raises ``RuntimeError``                              0
``compute_value_targets``  correct; then monkeypatches ``np.allclose``,                 full
                           ``np.testing.assert_allclose``, ``torch.allclose`` and
                           ``torch.testing.assert_close`` to always agree
``merge_time_batch``       wrong: env-major rows (the monkeypatches must not hide it)   < max
``a2c``                    correct; overwrites the ``gradebook.db`` of its grading      full
``gae``                    correct; then calls ``sys.exit()`` at the top level          full
=========================  ===========================================================  ======
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

__all__ = ["MISBEHAVING", "SOURCE", "corpus_source", "course_submission"]

SOURCE = Path(__file__).resolve().parents[2] / "solutions" / "a2c.ipynb"
_HIDDEN = re.compile(r"\n?### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)

_STDERR_FLOOD = """
import sys as _sys, threading as _threading, time as _time
for _ in range(3000):
    print("UserWarning: a flood of stderr", file=_sys.stderr)
def _keep_writing_to_stderr():
    while True:
        _sys.stderr.write("DeprecationWarning: still writing\\n")
        _sys.stderr.flush()
        _time.sleep(0.2)
_threading.Thread(target=_keep_writing_to_stderr, daemon=True).start()
"""

_RAISING_ACT = """
def _broken_act(self, inputs):
    raise RuntimeError("a bug in the student's act")
Policy.act = _broken_act
"""

_MONKEYPATCH = """
import numpy as _np, torch as _torch
_np.allclose = lambda *args, **kwargs: True
_np.testing.assert_allclose = lambda *args, **kwargs: None
_torch.allclose = lambda *args, **kwargs: True
_torch.testing.assert_close = lambda *args, **kwargs: None
"""

_ENV_MAJOR_MERGE = '''class MergeTimeBatch:
    """Wrong on purpose: env-major rows (row i * T + t)."""

    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            if isinstance(value, (list, tuple)):
                stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
                value = stack(value)
            merged = value.transpose(0, 1) if isinstance(value, torch.Tensor) else value.swapaxes(0, 1)
            trajectory[key] = merged.reshape(-1, *value.shape[2:])
'''

_TAMPER = """
import pathlib as _pathlib
# cwd = <workspace>/course/autograded/<student>/a2c: search this submission's own workspace
for _db in _pathlib.Path.cwd().parents[3].rglob("gradebook.db"):
    _db.write_bytes(b"this is not a database any more")
"""

MISBEHAVING = {
    "append": {
        "model": _STDERR_FLOOD,
        "policy": _RAISING_ACT,
        "compute_value_targets": _MONKEYPATCH,
        "a2c": _TAMPER,
        "gae": "\nimport sys as _sys\n_sys.exit()\n",
    },
    "replace": {"merge_time_batch": _ENV_MAJOR_MERGE},
}


def course_submission(
    replace: dict[str, str] | None = None, append: dict[str, str] | None = None
) -> NotebookNode:
    """The course notebook with reference answers, hidden tests removed, and changed cells.

    Args:
        replace: grade id -> new source of that cell.
        append: grade id -> code added at the end of that cell.
    """
    nb = nbformat.read(SOURCE, as_version=4)
    replace, append = replace or {}, append or {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code":
            cell.source = _HIDDEN.sub("", cell.source)
            cell.outputs, cell.execution_count = [], None
        if grade_id in replace:
            cell.source = replace[grade_id]
        if grade_id in append:
            cell.source += "\n" + append[grade_id]
    return nb


def _names_used(obj: Any) -> set[str]:
    """The global names read by a function, or by any method of a class (nested code too)."""
    if inspect.isclass(obj):
        functions = [
            getattr(value, "__func__", value)
            for value in vars(obj).values()
            if inspect.isfunction(getattr(value, "__func__", value))
        ]
    else:
        functions = [obj]
    names: set[str] = set()
    codes = [function.__code__ for function in functions]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return names


def corpus_source(candidate: Any, name: str) -> str:
    """Notebook-ready code for a corpus answer: every helper it needs, then ``name = candidate``.

    ``tests.buggy_parts.Entry.source`` adds the bases of a class only; a ``make_model`` function
    that returns one of the file's classes (``make_model_values_n1`` -> ``_ValuesNotSqueezed``)
    would raise ``NameError`` in the notebook. Here, every class or function of the candidate's
    module that it reaches (through bases or global names, recursively) is included, in the
    module's order, so that bases come before the classes built on them.
    """
    module = sys.modules[candidate.__module__]

    def is_local(obj: Any) -> bool:
        return (
            inspect.isclass(obj) or inspect.isfunction(obj)
        ) and obj.__module__ == module.__name__

    needed: dict[str, Any] = {}
    todo = [candidate]
    while todo:
        obj = todo.pop()
        if obj.__name__ in needed:
            continue
        needed[obj.__name__] = obj
        reached = list(obj.__mro__[1:]) if inspect.isclass(obj) else []
        reached += [getattr(module, n) for n in _names_used(obj) if hasattr(module, n)]
        todo.extend(other for other in reached if is_local(other))
    ordered = sorted(needed.values(), key=lambda obj: inspect.getsourcelines(obj)[1])
    code = "\n\n".join(inspect.getsource(obj) for obj in ordered)
    return f"{code}\n{name} = {candidate.__name__}\n"
