"""Submissions of the real course notebook: the reference answers, and a misbehaving variant.

:func:`course_submission` starts from the solution notebook (``solutions/a2c.ipynb``), removes
the hidden tests (as in the student release; nbgrader puts them back when grading) and lets a
test replace or extend the code of the solution cells.

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

import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

__all__ = ["MISBEHAVING", "SOURCE", "course_submission"]

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
