"""A tiny nbgrader course notebook, to test the grading pipeline in seconds (no torch, no ROM).

Layout, as in the course notebook: per part a solution cell (``grade_id`` = part key), a locked
check cell (``check_<key>``, not graded) and a graded test cell (``test_<key>``) whose hidden
test ends with a float (the points earned); and one manually graded markdown answer.

========  ======  =======================================
part      points  hidden test
========  ======  =======================================
``add``   2       ``add(2, 3) == 5`` and ``add(-1, 1) == 0``
``mul``   3       ``mul(2, 3) == 6``
``sub``   1       ``sub(5, 3) == 2``
``div``   4       ``div(6, 3) == 2``
========  ======  =======================================
"""

from __future__ import annotations

from collections.abc import Iterable

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

__all__ = [
    "MISBEHAVING_SCORES",
    "PARTS",
    "POINTS",
    "misbehaving_submission",
    "tiny_source",
    "tiny_submission",
]

POINTS = {"add": 2, "mul": 3, "sub": 1, "div": 4}
PARTS = tuple(POINTS)
CORRECT = {
    "add": "def add(a, b):\n    return a + b",
    "mul": "def mul(a, b):\n    return a * b",
    "sub": "def sub(a, b):\n    return a - b",
    "div": "def div(a, b):\n    return a / b",
}
_HIDDEN = {
    "add": "add(2, 3) == 5 and add(-1, 1) == 0",
    "mul": "mul(2, 3) == 6",
    "sub": "sub(5, 3) == 2",
    "div": "div(6, 3) == 2",
}


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: int = 0) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
    }
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def _test_source(key: str, hidden: bool) -> str:
    visible = f"# Autograded: `{key}`, {POINTS[key]} points.\nprint('testing {key}')"
    if not hidden:
        return visible
    return (
        f"{visible}\n### BEGIN HIDDEN TESTS\n"
        f"_ok = {_HIDDEN[key]}\n"
        f"print('{key}: ' + ('PASS' if _ok else 'FAIL'))\n"
        f"float({POINTS[key]} if _ok else 0)\n"
        "### END HIDDEN TESTS"
    )


def _build(answers: dict[str, str], hidden: bool) -> NotebookNode:
    cells = [
        new_markdown_cell("# Tiny course notebook"),
        new_code_cell(
            "import sys", metadata=_meta("setup", grade=False, solution=False, locked=True)
        ),
    ]
    for key in PARTS:
        code = answers.get(key, CORRECT[key])
        if hidden:
            code = f"### BEGIN SOLUTION\n{code}\n### END SOLUTION"
        cells += [
            new_markdown_cell(f"## Part `{key}`"),
            new_code_cell(code, metadata=_meta(key, grade=False, solution=True, locked=False)),
            new_code_cell(
                f"print('{key} defined:', '{key}' in globals())",
                metadata=_meta(f"check_{key}", grade=False, solution=False, locked=True),
            ),
            new_code_cell(
                _test_source(key, hidden),
                metadata=_meta(
                    f"test_{key}", grade=True, solution=False, locked=True, points=POINTS[key]
                ),
            ),
        ]
    cells.append(
        new_markdown_cell(
            "Explain in one sentence.",
            metadata=_meta("discussion", grade=True, solution=True, locked=False, points=1),
        )
    )
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    return nb


def tiny_source() -> NotebookNode:
    """The nbgrader source notebook: reference answers in solution regions, hidden tests."""
    return _build({}, hidden=True)


def tiny_submission(
    answers: dict[str, str] | None = None,
    drop: Iterable[str] = (),
    duplicate: Iterable[str] = (),
    replace: dict[str, str] | None = None,
) -> NotebookNode:
    """A student's notebook: the release with ``answers`` (part key -> code) filled in.

    Args:
        answers: code of the solution cells; parts left out get the correct answer.
        drop: grade ids of cells the student deleted.
        duplicate: grade ids of cells the student copied (the copy right after the original).
        replace: grade id -> new source, for cells the student edited (locked ones included).
    """
    nb = _build(answers or {}, hidden=False)
    drop, duplicate, replace = set(drop), set(duplicate), replace or {}
    cells = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in drop:
            continue
        if grade_id in replace:
            cell.source = replace[grade_id]
        cells.append(cell)
        if grade_id in duplicate:
            twin = nbformat.from_dict(dict(cell))
            twin["id"] = cell["id"] + "-copy"
            cells.append(twin)
    nb.cells = cells
    return nb


# --- a misbehaving tiny submission: each part fails (or not) in its own way ----------------------
_ENDLESS_ADD = "def add(a, b):\n    while True:\n        pass"
_NOISY_MUL = """def mul(a, b):
    return a * b
import sys, threading, time
for _ in range(2000):
    print("UserWarning: a flood of stderr", file=sys.stderr)
def _noise():
    while True:
        sys.stderr.write("DeprecationWarning: noise\\n" * 20)
        sys.stderr.flush()
        time.sleep(0.05)
threading.Thread(target=_noise, daemon=True).start()
"""
_SABOTAGING_SUB = """def sub(a, b):
    return a - b
import os, pathlib
# cwd = <workspace>/course/autograded/<student>/a2c: this submission's own workspace
for db in pathlib.Path.cwd().parents[3].rglob("gradebook.db"):
    db.write_bytes(b"not a database any more")
for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    target = pathlib.Path(entry, "autograder", "hidden.py")
    if target.is_file():
        target.write_text("def grade_part(*args, **kwargs):\\n    return 99.0\\n")
"""

#: What :func:`misbehaving_submission` should score, part by part.
MISBEHAVING_SCORES = {"add": 0.0, "mul": 3.0, "sub": 1.0, "div": 0.0}


def misbehaving_submission() -> NotebookNode:
    """``add`` loops forever (cell timeout), ``mul`` floods stderr from a thread and its test
    cell is duplicated, ``sub`` overwrites the gradebook and the autograder's ``hidden.py`` and
    its test cell is deleted, ``div`` is a syntax error and its locked test cell was edited to
    claim full marks. Scores: :data:`MISBEHAVING_SCORES`."""
    return tiny_submission(
        answers={
            "add": _ENDLESS_ADD,
            "mul": _NOISY_MUL,
            "sub": _SABOTAGING_SUB,
            "div": "def div(a, b) return a / b",
        },
        drop=["test_sub"],
        duplicate=["test_mul"],
        replace={"test_div": "4.0"},
    )
