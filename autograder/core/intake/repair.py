"""Repair a submitted notebook's structure so that nbgrader can record it; never its code.

Students delete, copy, move and edit cells; Colab adds its own metadata. Before a submission is
run or recorded, :func:`repair_submission` makes its nbgrader cells exactly the release's:

* **foreign nbgrader metadata is dropped**: a cell whose ``grade_id`` the release does not have
  (an extra or renamed graded cell), or whose type differs from the release's cell of that id
  (a markdown cell carrying a test cell's id), loses its nbgrader metadata and stays an
  ordinary cell, with a note; nbgrader would otherwise refuse the whole notebook;
* **duplicates are de-duplicated**: of a cell copied twice, the last copy keeps the metadata
  (as nbgrader's DeduplicateIds does, minus the empty ``nbgrader`` dict it leaves, on which
  nbgrader 0.9.6's ``OverwriteCells.add_missing_cells`` fails with ``KeyError``);
* **metadata and locked sources are the release's**: points and flags come from the release,
  and a locked cell the student edited gets its released source back (nbgrader does the same
  when it records; doing it first means the sandbox runs the cells as released);
* **deleted cells are restored** after the release cell that precedes them (nbgrader's own
  ``add_missing_cells`` places a missing graded cell after the previous *graded or solution*
  cell only, and fails when that neighbour is a locked, ungraded cell such as ``check_model``).

Cell ids are made unique. Outputs are left alone (see :mod:`autograder.core.intake.student_outputs`).
"""

from __future__ import annotations

import copy
from typing import Any

import nbformat
from nbformat import NotebookNode

__all__ = ["graded_part", "grade_id", "repair_submission"]


def grade_id(cell: dict[str, Any]) -> str | None:
    """The cell's nbgrader ``grade_id``, or ``None``."""
    meta = cell.get("metadata", {}).get("nbgrader")
    value = meta.get("grade_id") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def graded_part(cell: dict[str, Any]) -> str | None:
    """``"policy"`` for the autograded cell ``test_policy``, else ``None``."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    name = grade_id(cell) or ""
    if cell.get("cell_type") == "code" and meta.get("grade") and name.startswith("test_"):
        return name[len("test_") :]
    return None


def _drop_foreign(nb: NotebookNode, released: dict[str, NotebookNode]) -> list[str]:
    notes = []
    for cell in nb.cells:
        if "nbgrader" not in cell.metadata:
            continue
        name = grade_id(cell)
        original = released.get(name) if name else None
        if original is None:
            if name:
                notes.append(
                    f"cell '{name[:60]}' is not in the release: graded as an ordinary cell"
                )
            del cell.metadata["nbgrader"]
        elif original.cell_type != cell.cell_type:
            notes.append(
                f"a {cell.cell_type} cell carried the id of the {original.cell_type} cell "
                f"'{name}': its id was dropped and the released cell restored"
            )
            del cell.metadata["nbgrader"]
    return notes


def _drop_duplicates(nb: NotebookNode) -> list[str]:
    seen: set[str] = set()
    duplicated = set()
    for cell in reversed(nb.cells):
        name = grade_id(cell)
        if name is None:
            continue
        if name in seen:
            del cell.metadata["nbgrader"]
            duplicated.add(name)
        seen.add(name)
    if not duplicated:
        return []
    return ["duplicated cells (the last copy is graded): " + ", ".join(sorted(duplicated))]


def _as_released(nb: NotebookNode, released: dict[str, NotebookNode]) -> list[str]:
    edited = []
    for cell in nb.cells:
        original = released.get(grade_id(cell) or "")
        if original is None:
            continue
        cell.metadata["nbgrader"] = copy.deepcopy(original.metadata["nbgrader"])
        if original.metadata["nbgrader"].get("locked") and cell.source != original.source:
            edited.append(grade_id(cell))
            cell.source = original.source
    return ["restored edited locked cells: " + ", ".join(edited)] if edited else []


def _restore_missing(nb: NotebookNode, release: NotebookNode) -> list[str]:
    present = {grade_id(cell) for cell in nb.cells} - {None}
    restored = []
    previous: str | None = None  # grade_id of the last release cell with one
    for cell in release.cells:
        name = grade_id(cell)
        if name is None:
            continue
        if name not in present:
            position = 0
            if previous is not None:
                for index, candidate in enumerate(nb.cells):
                    if grade_id(candidate) == previous:
                        position = index + 1
            restored_cell = nbformat.from_dict(copy.deepcopy(dict(cell)))
            restored_cell["id"] = f"restored-{name}"[:64]
            nb.cells.insert(position, restored_cell)
            present.add(name)
            restored.append(name)
        previous = name
    return ["restored deleted cells: " + ", ".join(restored)] if restored else []


def _unique_ids(nb: NotebookNode) -> None:
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not cell_id or cell_id in seen:
            cell["id"] = f"cell-{index}"
        seen.add(cell["id"])


def repair_submission(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Repair ``nb`` in place against the ``release`` (see the module docstring); returns notes."""
    released = {grade_id(cell): cell for cell in release.cells if grade_id(cell)}
    notes = _drop_foreign(nb, released)
    notes += _drop_duplicates(nb)
    notes += _as_released(nb, released)
    notes += _restore_missing(nb, release)
    _unique_ids(nb)
    return notes
