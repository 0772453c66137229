"""How a submitted file becomes what the sandbox runs and what nbgrader records.

Reading (links, FIFOs, size), parsing (Colab, garbage), repairing the nbgrader structure
(deleted, copied, edited, foreign cells), keeping the student's own outputs safely, and choosing
the cells the sandbox runs. Nothing here runs a notebook: milliseconds each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from autograder.core.grading_job import SETUP_CELLS, job_cells
from autograder.core.intake.repair import grade_id, repair_submission
from autograder.core.intake.student_outputs import MARK, keep_submitted_outputs, plain_text
from autograder.core.intake.submission_file import UnreadableNotebook, parse_notebook, read_bytes
from tests.submissions.tiny import tiny_submission

ROOT = Path(__file__).resolve().parent.parent
NAMES = {"add": "add", "mul": "mul", "sub": "sub", "div": "div"}


def _ids(nb) -> list[str | None]:
    return [grade_id(cell) for cell in nb.cells]


# --- reading the file ----------------------------------------------------------------------------


def test_read_bytes_refuses_links_fifos_folders_and_huge_files(tmp_path: Path) -> None:
    """Is a submitted link, FIFO or folder refused without being opened, and size checked first?"""
    secret = tmp_path / "instructor.ipynb"
    secret.write_text('{"cells": []}')
    (tmp_path / "link.ipynb").symlink_to(secret)
    with pytest.raises(UnreadableNotebook, match="symbolic link"):
        read_bytes(tmp_path / "link.ipynb")
    os.mkfifo(tmp_path / "fifo.ipynb")  # opening it for reading would block for ever
    with pytest.raises(UnreadableNotebook, match="not a regular file"):
        read_bytes(tmp_path / "fifo.ipynb")
    (tmp_path / "folder.ipynb").mkdir()
    with pytest.raises(UnreadableNotebook):
        read_bytes(tmp_path / "folder.ipynb")
    (tmp_path / "big.ipynb").write_bytes(b" " * 2048)
    with pytest.raises(UnreadableNotebook, match="MB"):
        read_bytes(tmp_path / "big.ipynb", limit=1024)
    assert read_bytes(secret) == b'{"cells": []}'


def test_parse_accepts_colab_and_rejects_garbage() -> None:
    """Are Colab's metadata (and its broken widget state) accepted, and non-notebooks named?"""
    nb = tiny_submission()
    nb.metadata["colab"] = {"provenance": [], "name": "Copy of a2c.ipynb"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"broken": 1}}
    nb.cells[1].metadata["executionInfo"] = {"status": "ok", "elapsed": 3}
    read = parse_notebook(json.dumps(nb).encode(), "colab.ipynb")
    assert "widgets" not in read.metadata and read.metadata["colab"]["name"]
    with pytest.raises(UnreadableNotebook, match="bad.ipynb"):
        parse_notebook(b"{ not json", "bad.ipynb")
    with pytest.raises(UnreadableNotebook, match="cells"):
        parse_notebook(b"[1, 2]", "list.ipynb")
    with pytest.raises(UnreadableNotebook):
        parse_notebook(b"[" * 100_000 + b"]" * 100_000, "deep.ipynb")


# --- repairing the structure ---------------------------------------------------------------------


def test_deleted_cells_come_back_in_place_and_copies_are_graded_once() -> None:
    """Are deleted nbgrader cells put back where they were, and duplicates graded once?"""
    release = tiny_submission()
    nb = tiny_submission(drop=["test_add", "sub"], duplicate=["test_mul"])
    notes = repair_submission(nb, release)
    ids = _ids(nb)
    assert [i for i in ids if i] == [i for i in _ids(release) if i]  # same order
    assert ids[ids.index("test_mul") - 1] is None and nb.cells[ids.index("test_mul") - 1].source
    assert any("test_add" in note and "sub" in note for note in notes)
    assert any("duplicated" in note and "test_mul" in note for note in notes)
    assert len({cell["id"] for cell in nb.cells}) == len(nb.cells)


def test_edited_locked_cells_and_changed_points_are_put_back() -> None:
    """Is a locked cell the student rewrote restored, and are points the release's?"""
    release = tiny_submission()
    nb = tiny_submission(replace={"test_div": "4.0", "check_add": "print('all good')"})
    nb.cells[_ids(nb).index("test_div")].metadata["nbgrader"]["points"] = 400
    notes = repair_submission(nb, release)
    assert any("check_add" in note and "test_div" in note for note in notes)
    for cell, original in zip(nb.cells, release.cells, strict=True):
        assert cell.source == original.source or not original.metadata.get("nbgrader", {}).get(
            "locked"
        )
        assert cell.metadata.get("nbgrader") == original.metadata.get("nbgrader")


def test_foreign_graded_cells_are_dropped_with_a_note_not_fatal() -> None:
    """An extra graded cell, a renamed one, a markdown cell carrying a test's id: is the notebook
    still recordable, with the released cells in place and a note for each?"""
    release = tiny_submission()
    nb = tiny_submission()
    extra = nbformat.v4.new_code_cell("print('bonus?')")
    extra.metadata["nbgrader"] = {**nb.cells[_ids(nb).index("test_add")].metadata["nbgrader"]}
    extra.metadata["nbgrader"]["grade_id"] = "test_extra"
    nb.cells.append(extra)
    renamed = nb.cells[_ids(nb).index("test_sub")]
    renamed.metadata["nbgrader"]["grade_id"] = "test_sub_v2"
    fake = nbformat.v4.new_markdown_cell("I am test_mul now")
    fake.metadata["nbgrader"] = {"grade_id": "test_mul", "grade": True, "points": 3}
    nb.cells.insert(0, fake)
    notes = repair_submission(nb, release)
    assert [i for i in _ids(nb) if i] == [i for i in _ids(release) if i]
    assert "nbgrader" not in extra.metadata and "nbgrader" not in fake.metadata
    text = " ".join(notes)
    assert "test_extra" in text and "test_sub_v2" in text and "markdown cell" in text
    nbformat.validate(nb)
    nbformat.writes(nb)  # nbgrader writes it: it must be a valid notebook


# --- the student's own outputs -------------------------------------------------------------------


def test_submitted_outputs_are_kept_filtered_and_marked() -> None:
    """Do training outputs survive, marked as the student's, without HTML, scripts or escapes?"""
    nb = tiny_submission()
    image = "iVBORw0KGgo="
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                nbformat.v4.new_output(
                    "stream", name="stdout", text="\x1b[31mstatus: graded\x1b[0m\n"
                ),
                nbformat.v4.new_output(
                    "display_data",
                    data={"text/html": "<script>alert(1)</script>", "image/png": image},
                ),
                nbformat.v4.new_output("display_data", data={"image/png": '"><script>x</script>'}),
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": "14.0"}, execution_count=3
                ),
            ]
    keep_submitted_outputs(nb)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if grade_id(cell).startswith("test_"):
            assert cell.outputs == []  # the grader's verdict goes there
            continue
        assert cell.outputs[0]["text"] == MARK
        assert cell.outputs[1]["text"] == "status: graded\n"
        assert [sorted(o.get("data", {})) for o in cell.outputs[2:]] == [
            ["image/png"],
            ["text/plain"],
        ]
        assert cell.outputs[2]["data"]["image/png"] == image
    assert "script" not in nbformat.writes(nb)


def test_plain_text_strips_terminal_control_sequences() -> None:
    assert plain_text("a\x1b[2J\x1b]0;title\x07b\rc\x00d\n\te") == "abcd\n\te"


# --- the cells the sandbox runs ------------------------------------------------------------------


def test_job_runs_setup_and_definitions_then_probes_each_part_at_its_test_cell() -> None:
    """On the real release: set-up cells, each solution cell, a probe at each test cell; no
    visible check, demonstration, training or evaluation cell."""
    release = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    names = {"model": "make_model", "policy": "Policy", "a2c": "A2C"}
    cells = job_cells(release, names)
    ran = [grade_id(release.cells[c["index"]]) for c in cells if c["source"] is not None]
    probed = [
        (grade_id(release.cells[c["index"]]), c["part"], c["name"]) for c in cells if c["part"]
    ]
    assert ran[: len(SETUP_CELLS)] == list(SETUP_CELLS)
    assert {"model", "policy", "a2c"} <= set(ran)
    assert not any(name.startswith(("check_", "test_")) for name in ran)
    assert "train" not in ran and "evaluate" not in ran and "env_peek" not in ran
    assert probed == [("test_model", "model", "make_model"), ("test_policy", "policy", "Policy"),
                      ("test_a2c", "a2c", "A2C")]  # fmt: skip
    positions = [c["index"] for c in cells]
    assert positions == sorted(positions)


def test_job_runs_the_students_own_cells_before_the_last_part_only() -> None:
    nb = tiny_submission()
    nb.cells.insert(2, nbformat.v4.new_code_cell("def helper():\n    return 1"))
    nb.cells.append(nbformat.v4.new_code_cell("train_for_hours()"))
    sources = [c["source"] for c in job_cells(nb, NAMES) if c["source"] is not None]
    assert "def helper():\n    return 1" in sources and "train_for_hours()" not in sources
