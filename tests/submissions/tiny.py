"""A tiny nbgrader-shaped notebook, to test the pipeline's notebook handling in milliseconds.

Layout, as in the course notebook: per part a solution cell (``grade_id`` = part key), a locked
check cell (``check_<key>``, not graded) and a locked graded test cell (``test_<key>``, with
``POINTS[key]`` points); and one manually graded markdown answer. Nothing here is run: the
tests that run notebooks use the course notebook itself (``tests/submissions/course.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

__all__ = ["PARTS", "POINTS", "tiny_submission"]

POINTS = {"add": 2, "mul": 3, "sub": 1, "div": 4}
PARTS = tuple(POINTS)
CORRECT = {
    "add": "def add(a, b):\n    return a + b",
    "mul": "def mul(a, b):\n    return a * b",
    "sub": "def sub(a, b):\n    return a - b",
    "div": "def div(a, b):\n    return a / b",
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


def _test_source(key: str) -> str:
    return f"# Autograded: `{key}`, {POINTS[key]} points.\nprint('testing {key}')"


def _build(answers: dict[str, str]) -> NotebookNode:
    cells = [
        new_markdown_cell("# Tiny course notebook"),
        new_code_cell(
            "import sys", metadata=_meta("setup", grade=False, solution=False, locked=True)
        ),
    ]
    for key in PARTS:
        code = answers.get(key, CORRECT[key])
        cells += [
            new_markdown_cell(f"## Part `{key}`"),
            new_code_cell(code, metadata=_meta(key, grade=False, solution=True, locked=False)),
            new_code_cell(
                f"print('{key} defined:', '{key}' in globals())",
                metadata=_meta(f"check_{key}", grade=False, solution=False, locked=True),
            ),
            new_code_cell(
                _test_source(key),
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
    nb = _build(answers or {})
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
