"""The grading pipeline's pieces: configuration, collection, preparation, records, reports, CLI.

No notebook runs here (seconds in all); ``tests/test_grading_sandbox.py`` grades real notebooks
in the sandbox.
"""

from __future__ import annotations

import csv
import json
import os
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from traitlets.utils.importstring import import_item

from autograder import nbgrader_config
from autograder.cli import main
from autograder.collect import collect, student_id
from autograder.hidden import make_plan
from autograder.nbgrader_steps import HideGradedTracebacks, TrustedScores
from autograder.pipeline import grade_many, read_records
from autograder.prepare import (
    PROBE_CELL,
    UnreadableNotebook,
    merge_outputs,
    prepare_submission,
    read_submission,
    restore_locked_cells,
    with_probe_cells,
)
from autograder.report import format_table, save_histogram, summary_table, write_grades_csv
from autograder.results import GradeResult, PartScore
from autograder.runtime.record import RecordError, dumps, loads
from tests.submissions.tiny import POINTS, tiny_submission

ROOT = Path(__file__).resolve().parent.parent


def _grade_ids(nb: nbformat.NotebookNode) -> list[str | None]:
    return [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells]


# --- configuration -----------------------------------------------------------------------------


def test_config_never_executes_and_keeps_the_sandbox_outputs() -> None:
    """Does nbgrader, configured for the course, record without running or clearing anything?"""
    c = nbgrader_config.c
    steps = [name.rsplit(".", 1)[1] for name in c.Autograde.autograde_preprocessors]
    assert "Execute" not in steps and steps[0] == "TrustedScores"
    assert steps.index("TrustedScores") < steps.index("SaveAutoGrades")
    sanitize = [name.rsplit(".", 1)[1] for name in c.Autograde.sanitize_preprocessors]
    assert "ClearOutput" not in sanitize and "OverwriteCells" in sanitize
    assert c.OverwriteCells.add_missing_cells is True


def test_release_build_and_grading_share_the_stub_settings() -> None:
    """The release build (solutions.build_notebooks) and the grading config set the course id
    and the solution stubs each in their own file (solutions may not import autograder): do
    they agree, so that graded cells and the release's stubs are what nbgrader expects?"""
    from traitlets.config import Config

    from solutions import build_notebooks

    build = Config()
    exec(build_notebooks._NBGRADER_CONFIG, {"get_config": lambda: build})
    grading = nbgrader_config.c
    assert build.CourseDirectory.course_id == grading.CourseDirectory.course_id
    assert build.CourseDirectory.course_id == build_notebooks.ASSIGNMENT
    assert build.ClearSolutions.code_stub == grading.ClearSolutions.code_stub
    assert build.ClearSolutions.text_stub == grading.ClearSolutions.text_stub


def test_config_preprocessors_import_and_are_enabled() -> None:
    """Does every preprocessor named in the config import, and is ours on under the config?"""
    c = nbgrader_config.c
    names = [*c.Autograde.sanitize_preprocessors, *c.Autograde.autograde_preprocessors]
    names += c.GenerateFeedback.preprocessors
    for name in names:
        cls = import_item(name)
        if not name.startswith("nbconvert."):
            assert cls(config=c).enabled, name
    assert "ClearHiddenTests" in " ".join(c.GenerateFeedback.preprocessors)


def test_trusted_scores_replace_what_graded_cells_show(tmp_path: Path) -> None:
    """Are a graded cell's forged outputs replaced by the record, and is no record refused?"""
    nb = tiny_submission()
    graded = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_add"
    )
    graded.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2.0"})]
    with pytest.raises(RuntimeError, match="python -m autograder"):
        TrustedScores().preprocess(nb, {})
    record = tmp_path / "scores.json"
    record.write_text(json.dumps({"test_add": {"score": 0.5, "feedback": "half"}}))
    out, _ = TrustedScores(record=str(record)).preprocess(nb, {})
    cell = next(
        c for c in out.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_add"
    )
    assert [o["output_type"] for o in cell.outputs] == ["stream", "execute_result"]
    assert cell.outputs[0]["text"] == "half\n" and cell.outputs[1]["data"]["text/plain"] == "0.5"
    other = next(
        c for c in out.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_mul"
    )
    assert other.outputs[1]["data"]["text/plain"] == "0.0"  # no record: no points


# --- collecting submissions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("alice.ipynb", "alice"),
        ("Copy of a2c - bob.ipynb", "bob"),
        ("carol/Copy of a2c.ipynb", "carol"),
        ("dave/a2c (1).ipynb", "dave"),
        ("submitted/erin/a2c/a2c.ipynb", "erin"),
        ("Frank Li (2).ipynb", "Frank_Li"),
        ("a2c.ipynb", ""),
    ],
)
def test_student_id_from_names(tmp_path: Path, relative: str, expected: str) -> None:
    """Are Colab and browser download names mapped to the student?"""
    assert student_id(tmp_path / relative, tmp_path) == expected


def test_collect_folders_zips_and_duplicates(tmp_path: Path) -> None:
    """Does collect find every layout, keep the newer duplicate and report the rest?"""
    folder = tmp_path / "in"
    for name in ["alice.ipynb", "carol/Copy of a2c.ipynb", "carol/a2c (1).ipynb", "a2c.ipynb"]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    os.utime(folder / "carol/Copy of a2c.ipynb", (1e9, 1e9))  # older than "a2c (1)"
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints/alice-checkpoint.ipynb").write_text("{}")
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("submitted/erin/a2c/a2c.ipynb", "{}")
        bundle.writestr("__MACOSX/submitted/erin/a2c/._a2c.ipynb", "x")
    (tmp_path / "broken.zip").write_text("not a zip")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subs, problems = collect(
        [folder, archive, tmp_path / "broken.zip", tmp_path / "missing.ipynb"], scratch
    )
    assert {s.student: s.path.name for s in subs} == {
        "alice": "alice.ipynb",
        "carol": "a2c (1).ipynb",
        "erin": "a2c.ipynb",
    }
    origins = {s.student: s.origin for s in subs}  # the names the instructor knows
    assert origins["erin"] == f"{archive}:submitted/erin/a2c/a2c.ipynb"
    assert origins["alice"] == str(folder / "alice.ipynb")
    reasons = {p.path.name: p.reason for p in problems}
    assert "duplicate" in reasons["Copy of a2c.ipynb"]
    assert "no student name" in reasons["a2c.ipynb"]
    assert "zip" in reasons["broken.zip"] and "not found" in reasons["missing.ipynb"]


# --- preparing a submission --------------------------------------------------------------------


def test_read_submission_accepts_colab_and_rejects_garbage(tmp_path: Path) -> None:
    """Are Colab's metadata (and its broken widget state) accepted, and non-notebooks named?"""
    nb = tiny_submission()
    nb.metadata["colab"] = {"provenance": [], "name": "Copy of a2c.ipynb"}
    nb.metadata["accelerator"] = "GPU"
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"broken": 1}}
    nb.cells[1].metadata["executionInfo"] = {"status": "ok", "elapsed": 3}
    path = tmp_path / "colab.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    read = read_submission(path)
    assert "widgets" not in read.metadata and read.metadata["colab"]["name"]
    (tmp_path / "bad.ipynb").write_text("{ not json")
    with pytest.raises(UnreadableNotebook, match="bad.ipynb"):
        read_submission(tmp_path / "bad.ipynb")
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    with pytest.raises(UnreadableNotebook, match="cells"):
        read_submission(tmp_path / "list.ipynb")


def test_prepare_restores_deleted_cells_in_place_and_dedups() -> None:
    """Are deleted nbgrader cells put back where they were, and duplicates graded once?"""
    release = tiny_submission()
    nb = tiny_submission(drop=["test_add", "sub"], duplicate=["test_mul"])
    fixed, notes = prepare_submission(nb, release)
    ids = _grade_ids(fixed)
    assert [i for i in ids if i] == [i for i in _grade_ids(release) if i]  # same order
    # the first copy of test_mul lost its metadata; the last one (the graded one) kept it
    assert ids[ids.index("test_mul") - 1] is None and fixed.cells[ids.index("test_mul") - 1].source
    assert any("test_add" in note and "sub" in note for note in notes)
    assert any("duplicated" in note and "test_mul" in note for note in notes)
    assert len({cell["id"] for cell in fixed.cells}) == len(fixed.cells)


# --- feedback and reports ----------------------------------------------------------------------


def test_feedback_hides_the_traceback_of_graded_cells() -> None:
    """Is a graded cell's traceback (which quotes hidden lines) cut to its last line?"""
    error = {
        "output_type": "error",
        "ename": "NameError",
        "evalue": "name 'div' is not defined",
        "traceback": ["\x1b[0;31mNameError\x1b[0m", "----> 3 hidden_secret = div(6, 3)"],
    }
    graded = nbformat.from_dict(
        {
            "cell_type": "code",
            "id": "graded",
            "metadata": {"nbgrader": {"grade": True, "grade_id": "test_div", "points": 1}},
            "source": "",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok\n"}, error],
            "execution_count": 1,
        }
    )
    plain = nbformat.from_dict({**graded, "id": "plain", "metadata": {}, "outputs": [dict(error)]})
    nb = nbformat.v4.new_notebook(cells=[graded, plain])
    nb, _ = HideGradedTracebacks().preprocess(nb, {})
    assert nb.cells[0].outputs[1]["traceback"] == ["NameError: name 'div' is not defined"]
    assert len(nb.cells[1].outputs[0]["traceback"]) == 2  # the student's own cells keep theirs


def _result(student: str, status: str = "graded", **scores: float) -> GradeResult:
    parts = {key: PartScore(value, POINTS[key], "") for key, value in scores.items()}
    return GradeResult(student, parts=parts, status=status)


def test_reports_csv_summary_and_histogram(tmp_path: Path) -> None:
    """Does the CSV hold one row per student, status first, and no bare number unless graded?"""
    results = [
        _result("bob", add=2.0, mul=1.5),
        _result("alice", add=0.0, mul=3.0),
        GradeResult("carl", status="unreadable: x.ipynb: not a notebook"),
        _result("dora", "tampered: the sandbox returned malformed results", add=2.0, mul=3.0),
    ]
    results[0].sandboxed = False
    rows = list(csv.DictReader(write_grades_csv(results, tmp_path / "g.csv").open()))
    assert [row["student"] for row in rows] == ["alice", "bob", "carl", "dora"]
    assert rows[1]["total"] == "3.5" and rows[1]["mul"] == "1.5" and rows[1]["sandboxed"] == "NO"
    assert rows[2]["status"].startswith("unreadable") and rows[2]["total"] == rows[2]["add"] == ""
    dora = rows[3]
    assert (
        dora["status"].startswith("tampered") and dora["total"] == dora["add"] == dora["mul"] == ""
    )
    assert "provisional total 5 (not a grade)" in dora["notes"]
    summary = summary_table(results).splitlines()
    assert summary[0] == "2 graded submission(s) of 4"  # dora's scores are not counted
    add = next(line for line in summary if line.startswith("add")).split()
    assert add[1:7] == ["2", "1.00", "0.00", "1.00", "2.00", "50%"]
    assert save_histogram(results, tmp_path / "s.png").stat().st_size > 1000
    table = format_table(results[3], feedback=False)
    assert "5.00*" in table and "NOT A GRADE (tampered)" in table
    assert "NOT SANDBOXED" in format_table(results[0], feedback=False)


# --- records, probe cells and outputs ----------------------------------------------------------


def test_records_round_trip_and_refuse_anything_but_plain_data() -> None:
    """Do records keep arrays exactly, and is every non-plain or inconsistent payload refused?"""
    record = {
        "ok": True,
        "observation": {"x": np.arange(6, dtype=np.int64).reshape(2, 3), "f": 0.5},
    }
    back = loads(dumps(record))
    assert np.array_equal(back["observation"]["x"], record["observation"]["x"])
    assert back["observation"]["x"].dtype == np.int64 and back["observation"]["f"] == 0.5
    bad = [
        '{"__ndarray__": "object", "shape": [1], "b64": "AA=="}',  # object dtype
        '{"__ndarray__": "float64", "shape": [4], "b64": "AA=="}',  # size mismatch
        '{"__ndarray__": "float64", "shape": "big", "b64": ""}',
        "\x80\x04K\x01.",  # a pickle
        "[" * 100 + "]" * 100,  # nested too deeply
    ]
    for text in bad:
        with pytest.raises(RecordError):
            loads(text)


def test_read_records_keeps_planned_records_and_flags_malformed_ones(tmp_path: Path) -> None:
    """Are only the plan's record files read, and are malformed ones reported, not used?"""
    plan = make_plan()
    first = plan["parts"]["policy"][0]["key"]
    second = plan["parts"]["policy"][1]["key"]
    good = {"ok": False, "timed_out": False, "error": "your code raised ValueError: x"}
    (tmp_path / f"policy.{first}.json").write_text(dumps(good))
    (tmp_path / f"policy.{second}.json").write_text('{"ok": "yes"}')
    (tmp_path / "policy.invented.json").write_text(dumps({"ok": True, "observation": {}}))
    records, malformed = read_records(tmp_path, plan)
    assert records["policy"] == {first: good}
    assert len(malformed) == 1 and second in malformed[0]


def test_probe_cells_follow_graded_cells_and_outputs_merge_safely() -> None:
    """Is a probe cell added after each graded cell, and are only safe outputs merged back?"""
    nb = tiny_submission()
    run = with_probe_cells(nb, {"add": "add", "mul": "mul"})
    ids = [
        c.metadata.get("nbgrader", {}).get("grade_id") or c.metadata.get(PROBE_CELL)
        for c in run.cells
    ]
    assert ids[ids.index("test_add") + 1] == "add" and ids[ids.index("test_mul") + 1] == "mul"
    assert (
        "_a2c_grader_record('add', globals().get('add')"
        in run.cells[ids.index("test_add") + 1].source
    )
    executed = nbformat.from_dict(json.loads(json.dumps(run)))
    for cell in executed.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text="hello\n"),
                nbformat.v4.new_output(
                    "display_data",
                    data={"text/html": "<script>alert(1)</script>", "image/png": "iVBORw0KGgo="},
                ),
                nbformat.v4.new_output("execute_result", data={"text/plain": "14.0"}),
            ]
    assert merge_outputs(nb, executed) == []
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    plain = [c for c in nb.cells if c.cell_type == "code" and c not in graded]
    assert all(cell.outputs == [] for cell in graded if cell.cell_type == "code")
    for cell in plain:
        kinds = [(o["output_type"], sorted(o.get("data", {}))) for o in cell.outputs]
        assert kinds == [
            ("stream", []),
            ("display_data", ["image/png"]),
            ("display_data", ["text/plain"]),
        ]
    executed.cells.pop()
    assert "does not match" in merge_outputs(nb, executed)[0]


def test_edited_locked_cells_are_put_back() -> None:
    """Is a locked cell the student rewrote restored, with a note?"""
    release = tiny_submission()
    nb = tiny_submission(replace={"test_div": "4.0", "check_add": "print('all good')"})
    assert sorted(restore_locked_cells(nb, release)) == ["check_add", "test_div"]
    sources = {
        c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells if "nbgrader" in c.metadata
    }
    released = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in release.cells
        if "nbgrader" in c.metadata
    }
    assert sources == released


def test_grade_many_regrades_failures_alone(tmp_path: Path) -> None:
    """Is a grading that failed in parallel graded again, alone, with a note?"""

    class FlakyGrader:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def grade(self, path: Path, student: str, feedback_dir: Path | None, threads: int):
            self.calls.append(student)
            first = self.calls.count(student) == 1
            status = "timeout: disturbed" if student == "bob" and first else "graded"
            return GradeResult(student, {"add": PartScore(2.0, 2.0, "")}, status, source=str(path))

    from autograder.collect import Submission

    subs = [Submission(name, tmp_path / f"{name}.ipynb", 0.0) for name in ("alice", "bob")]
    grader = FlakyGrader()
    results = grade_many(grader, subs, tmp_path / "out", jobs=2, progress=False, feedback=False)
    assert sorted(grader.calls) == ["alice", "bob", "bob"]
    assert [r.status for r in results] == ["graded", "graded"]
    assert "graded again alone" in results[1].notes[-1]


def test_cli_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Do bad arguments give exit status 2 and a message naming the argument?"""
    path = tmp_path / "a.ipynb"
    path.write_text("{}")
    assert main(["grade", str(path), "--timeout", "0"]) == 2
    assert "timeout must be" in capsys.readouterr().err
    assert main(["grade", str(tmp_path / "missing.ipynb")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_unsandboxed_grading_flags_a_changed_course_lib_and_says_so(tmp_path: Path) -> None:
    """Without the sandbox, is a notebook that changed the grader's course_lib copy flagged?"""
    from types import SimpleNamespace

    from autograder.pipeline import Grader

    with Grader(workdir=tmp_path / "work") as grader:
        (grader.template.lib / "course_lib" / "planted.py").write_text("x = 1\n")
        (tmp_path / "scratch" / "records").mkdir(parents=True)
        result = GradeResult("eve")
        ran = SimpleNamespace(sandboxed=False, timed_out=False, output="", returncode=0)
        grader._judge(result, tmp_path / "scratch", ran)
    assert result.status.startswith("tampered") and "course_lib/planted.py" in result.notes[-1]
    assert any("NOT SANDBOXED" in note for note in result.notes)
    assert result.total == 0.0 and len(result.parts) == 6  # every part judged: no records, 0
