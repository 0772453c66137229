"""Make a submitted notebook safe to hand to ``nbgrader autograde``.

Changes only the notebook's structure, never the student's code:

* **reads leniently**: a Colab download (``metadata.colab``, ``accelerator``, cell ``id``s,
  ``executionInfo``, ``outputId``) is valid nbformat and is kept as it is; only
  ``metadata.widgets``, whose saved widget state is often invalid and makes nbconvert fail, is
  dropped; outputs are cleared (nbgrader clears them too) and the format is normalised;
* **de-duplicates nbgrader cells**: of a cell copied twice, the last copy keeps its metadata
  (as nbgrader's DeduplicateIds would do, see :func:`_drop_duplicate_ids`);
* **restores deleted nbgrader cells**: a cell of the release (graded test, locked, or solution
  stub) whose ``grade_id`` is missing from the submission is put back after the cell that
  precedes it in the release. nbgrader's own ``OverwriteCells.add_missing_cells`` (0.9.6) places
  a missing graded cell after the previous *graded or solution* cell only, and fails with a
  ``KeyError`` when that neighbour is a locked, ungraded cell (our ``check_<part>`` cells), which
  would stop the grading of the whole notebook. A restored locked cell is then overwritten by
  nbgrader with its source from the gradebook (hidden tests included), as any locked cell is.

Raises :class:`UnreadableNotebook` for a file that is not a notebook at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

__all__ = ["UnreadableNotebook", "prepare_submission", "read_submission"]


class UnreadableNotebook(ValueError):
    """A submitted file is not a Jupyter notebook (bad JSON, or not nbformat 4)."""


def _grade_id(cell: dict[str, Any]) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def read_submission(path: Path) -> NotebookNode:
    """Read a submitted ``.ipynb`` leniently (see the module docstring).

    Raises:
        UnreadableNotebook: the file is not JSON, or not a notebook (the message says which).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_bytes().decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnreadableNotebook(
            f"{path.name}: not a readable notebook ({type(error).__name__}: {error}); ask the "
            "student to download it again (Colab: File > Download > Download .ipynb)."
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise UnreadableNotebook(
            f"{path.name}: JSON without a list of `cells`, so not a Jupyter notebook."
        )
    raw.get("metadata", {}).pop("widgets", None)
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds for bad files
        raise UnreadableNotebook(
            f"{path.name}: not a valid notebook ({type(error).__name__}: {error})."
        ) from None
    return nb


def _restore_missing_cells(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Put back the release's nbgrader cells missing from ``nb``; returns their grade ids."""
    present = {_grade_id(cell) for cell in nb.cells} - {None}
    restored = []
    previous: str | None = None  # grade_id of the last release cell with one
    for cell in release.cells:
        grade_id = _grade_id(cell)
        if grade_id is None:
            continue
        if grade_id not in present:
            position = 0
            if previous is not None:
                for index, candidate in enumerate(nb.cells):
                    if _grade_id(candidate) == previous:
                        position = index + 1  # after the LAST copy (nbgrader keeps that one)
            copy = nbformat.from_dict(json.loads(json.dumps(cell)))
            copy["id"] = f"restored-{grade_id}"[:64]
            nb.cells.insert(position, copy)
            present.add(grade_id)
            restored.append(grade_id)
        previous = grade_id
    return restored


def _drop_duplicate_ids(nb: NotebookNode) -> list[str]:
    """Strip the nbgrader metadata of all but the LAST cell of each grade id; returns the ids.

    nbgrader's DeduplicateIds does the same but leaves an empty ``nbgrader`` dict, on which
    ``OverwriteCells.add_missing_cells`` (0.9.6) fails with ``KeyError: 'grade_id'``. Metadata
    without a grade id (a student's own edit) is removed too.
    """
    seen: set[str] = set()
    duplicated = []
    for cell in reversed(nb.cells):
        if "nbgrader" not in cell.metadata:
            continue
        grade_id = _grade_id(cell)
        if grade_id is None or grade_id in seen:
            del cell.metadata["nbgrader"]
            if grade_id is not None:
                duplicated.append(grade_id)
        else:
            seen.add(grade_id)
    return sorted(set(duplicated))


def prepare_submission(nb: NotebookNode, release: NotebookNode) -> tuple[NotebookNode, list[str]]:
    """The submission ready for nbgrader, and notes for the instructor on what was repaired."""
    notes = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    duplicated = _drop_duplicate_ids(nb)
    if duplicated:
        notes.append("duplicated cells (the last copy is graded): " + ", ".join(duplicated))
    restored = _restore_missing_cells(nb, release)
    if restored:
        notes.append("restored deleted cells: " + ", ".join(restored))
    # Cell ids must be unique: a duplicated cell (copy/paste in Jupyter) may repeat one.
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if cell_id is not None and cell_id in seen:
            cell["id"] = f"{cell_id[:50]}-dup{index}"
        if cell_id is not None:
            seen.add(cell["id"])
    return nb, notes


def restore_locked_cells(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Put back the released source of every locked cell the student edited; returns their ids.

    nbgrader does the same when it records the notebook (``OverwriteCells``); doing it before the
    notebook runs means the sandbox runs the cells as released.
    """
    released = {
        _grade_id(cell): cell
        for cell in release.cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("locked")
    }
    edited = []
    for cell in nb.cells:
        original = released.get(_grade_id(cell))
        if original is None:
            continue
        if cell.source != original.source or cell.cell_type != original.cell_type:
            edited.append(_grade_id(cell))
        cell.source, cell.cell_type = original.source, original.cell_type
        cell.metadata["nbgrader"] = json.loads(json.dumps(original.metadata["nbgrader"]))
    return edited


def graded_part(cell: dict[str, Any]) -> str | None:
    """``"policy"`` for the autograded cell ``test_policy``, else ``None``."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    grade_id = meta.get("grade_id") or ""
    if cell.get("cell_type") == "code" and meta.get("grade") and grade_id.startswith("test_"):
        return grade_id[len("test_") :]
    return None


#: Metadata key of the cells the grader adds to run the probes (removed from every result).
PROBE_CELL = "a2c_grader_probe"


def with_probe_cells(nb: NotebookNode, names: dict[str, str]) -> NotebookNode:
    """A copy of ``nb`` with a probe cell after each autograded cell of a part in ``names``.

    The probe cell hands the student's name for the part (``names[part]``), as defined at that
    point of the notebook, to :func:`course_lib.checks.harness.record_part` (which finds the
    plan and the records folder through environment variables).
    """
    run = nbformat.from_dict(json.loads(json.dumps(nb)))
    cells = []
    for index, cell in enumerate(run.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
        part = graded_part(cell)
        if part in names:
            source = (
                "from course_lib.checks.harness import record_part as _a2c_grader_record\n"
                f"_a2c_grader_record({part!r}, globals().get({names[part]!r}))"
            )
            probe = nbformat.v4.new_code_cell(source, metadata={PROBE_CELL: part})
            probe["id"] = f"a2c-probe-{index}"
            cells.append(probe)
    run.cells = cells
    return run


#: Output types kept from the sandbox's run: text and raster images. HTML, JavaScript, SVG and
#: widget state are dropped: feedback HTML and formgrader show outputs to the instructor and the
#: student in a browser, where a script would run with their rights.
SAFE_MIME = ("text/plain", "image/png", "image/jpeg")


def _safe_output(output: dict[str, Any]) -> dict[str, Any] | None:
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        return nbformat.v4.new_output("stream", name=str(output.get("name", "stdout")), text=text)
    if kind == "error":
        return nbformat.v4.new_output(
            "error",
            ename=str(output.get("ename", "")),
            evalue=str(output.get("evalue", ""))[:2000],
            traceback=[str(line) for line in output.get("traceback", [])][:200],
        )
    if kind in ("display_data", "execute_result"):
        data = {k: v for k, v in dict(output.get("data", {})).items() if k in SAFE_MIME}
        if not data:
            return None
        return nbformat.v4.new_output("display_data", data=data)
    return None


def merge_outputs(nb: NotebookNode, executed: NotebookNode | None) -> list[str]:
    """Copy the outputs of the sandbox's run into ``nb`` (whose sources are the grader's own).

    ``executed`` is untrusted: only its outputs are used, filtered to :data:`SAFE_MIME`, cell by
    cell in order (probe cells skipped); sources, metadata and the outputs of autograded cells
    are never taken from it. Returns notes for the instructor.
    """
    if executed is None:
        return ["the sandbox returned no executed notebook: outputs are missing"]
    ran = [
        cell
        for cell in executed.get("cells", [])
        if isinstance(cell, dict) and PROBE_CELL not in cell.get("metadata", {})
    ]
    notes = []
    if len(ran) != len(nb.cells):
        notes.append("the executed notebook does not match the submission: outputs dropped")
        ran = []
    for cell, done in zip(nb.cells, ran, strict=False):
        if cell.cell_type != "code" or graded_part(cell) is not None:
            continue
        outputs = done.get("outputs", []) if isinstance(done.get("outputs"), list) else []
        cell.outputs = [o for o in map(_safe_output, outputs) if o is not None][:200]
    return notes
