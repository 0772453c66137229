"""The grading pipeline: configuration, collection, preparation, reports and the CLI.

Unit tests need no nbgrader run. The integration tests grade a tiny nbgrader notebook
(``tests/submissions/tiny.py``, no torch) through the real ``nbgrader autograde`` and
``generate_feedback``: one ``grade --json`` and one ``grade-all``.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from traitlets.utils.importstring import import_item

from autograder import nbgrader_config
from autograder.cli import main
from autograder.collect import collect, student_id
from autograder.feedback import HideGradedTracebacks, cell_feedback
from autograder.pipeline import grade_many
from autograder.prepare import UnreadableNotebook, prepare_submission, read_submission
from autograder.report import save_histogram, summary_table, write_grades_csv
from autograder.results import GradeResult, PartScore
from tests.submissions.tiny import POINTS, tiny_source, tiny_submission

ROOT = Path(__file__).resolve().parent.parent


def _grade_ids(nb: nbformat.NotebookNode) -> list[str | None]:
    return [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells]


# --- configuration -----------------------------------------------------------------------------


def test_config_drops_stderr_and_restores_cells() -> None:
    """Does the course config enable the settings nbgrader 0.9.6 leaves off by default?"""
    c = nbgrader_config.c
    assert c.IgnorePattern.enabled is True
    pattern = re.compile(c.IgnorePattern.pattern)
    for text in ["UserWarning: deprecated\n", "  warnings.warn(\n", "x"]:
        assert pattern.search(text)
    assert c.OverwriteCells.add_missing_cells is True
    assert c.Execute.timeout >= 60 and c.Execute.interrupt_on_timeout is True
    assert c.Execute.raise_on_iopub_timeout is False


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


def test_config_preprocessor_lists_import_and_keep_nbgrader_defaults() -> None:
    """Do the preprocessor lists name importable classes, nbgrader's own ones in its order?"""
    from nbgrader.converters.autograde import Autograde

    c = nbgrader_config.c
    classes = [import_item(name) for name in c.Autograde.autograde_preprocessors]
    ours = {"SaveGradebook", "RestoreGradebook"}
    assert [cls.__name__ for cls in classes if cls.__name__ not in ours] == [
        cls.__name__ for cls in Autograde.class_traits()["autograde_preprocessors"].default()
    ]
    names = [cls.__name__ for cls in classes]
    assert names.index("SaveGradebook") < names.index("Execute") < names.index("RestoreGradebook")
    assert names.index("RestoreGradebook") < names.index("SaveAutoGrades")
    feedback = [import_item(name).__name__ for name in c.GenerateFeedback.preprocessors]
    assert "ClearHiddenTests" in feedback and "HideGradedTracebacks" in feedback
    # nbconvert's preprocessors are off unless enabled (ClearMetadata stays off, as in nbgrader's
    # defaults; HTMLExporter enables the CSS one); ours and nbgrader's must be on with the config.
    for name in c.Autograde.autograde_preprocessors + c.GenerateFeedback.preprocessors:
        if not name.startswith("nbconvert."):
            assert import_item(name)(config=c).enabled, name


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
    assert cell_feedback(graded) == "ok\nNameError: name 'div' is not defined"


def _result(student: str, **scores: float) -> GradeResult:
    parts = {key: PartScore(value, POINTS[key], "") for key, value in scores.items()}
    return GradeResult(student, parts=parts)


def test_reports_csv_summary_and_histogram(tmp_path: Path) -> None:
    """Does the CSV hold one row per student and the summary the per-part statistics?"""
    results = [
        _result("bob", add=2.0, mul=1.5),
        _result("alice", add=0.0, mul=3.0),
        GradeResult("carl", status="unreadable: x.ipynb: not a notebook"),
    ]
    rows = list(csv.DictReader(write_grades_csv(results, tmp_path / "g.csv").open()))
    assert [row["student"] for row in rows] == ["alice", "bob", "carl"]
    assert rows[1]["total"] == "3.5" and rows[1]["mul"] == "1.5" and rows[2]["add"] == ""
    assert rows[2]["status"].startswith("unreadable")
    summary = summary_table(results).splitlines()
    add = next(line for line in summary if line.startswith("add")).split()
    assert add[1:7] == ["2", "1.00", "0.00", "1.00", "2.00", "50%"]
    assert save_histogram(results, tmp_path / "s.png").stat().st_size > 1000


def test_grade_many_regrades_failures_alone(tmp_path: Path) -> None:
    """Is a grading that failed in parallel graded again, alone, with a note?"""

    class FlakyGrader:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def grade(self, path: Path, student: str, feedback_dir: Path | None, threads: int):
            self.calls.append(student)
            first = self.calls.count(student) == 1
            status = "error: disturbed" if student == "bob" and first else "graded"
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


# --- the real nbgrader, on the tiny notebook ---------------------------------------------------


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    nbformat.write(tiny_source(), folder / "source.ipynb")
    return folder


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_grade_json_through_nbgrader(tiny_dir: Path) -> None:
    """Does `grade --json` print exactly one object with the per-part scores and feedback?"""
    wrong = tiny_submission(answers={"mul": "def mul(a, b):\n    return a + b"})
    nbformat.write(wrong, tiny_dir / "dana.ipynb")
    done = _cli("grade", "dana.ipynb", "--json", "--source", "source.ipynb", cwd=tiny_dir)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == {"total", "max_total", "parts"}
    assert list(report["parts"]) == ["add", "mul", "sub", "div"]
    assert report["parts"]["mul"] == {
        "score": 0.0,
        "max": 3.0,
        "feedback": "testing mul\nmul: FAIL",
    }
    assert report["parts"]["add"]["score"] == 2.0 and report["parts"]["add"]["max"] == 2.0
    assert report["total"] == 7.0 and report["max_total"] == 10.0


def test_grade_all_folder_and_zip(tiny_dir: Path) -> None:
    """Does grade-all grade every student once, in parallel, with CSV, feedback and summary?"""
    inbox = tiny_dir / "inbox"
    (inbox / "carol").mkdir(parents=True)
    nbformat.write(tiny_submission(), inbox / "alice.ipynb")
    nbformat.write(tiny_submission(), inbox / "carol" / "Copy of a2c.ipynb")
    (inbox / "garbage.ipynb").write_text("this is not json")
    archive = tiny_dir / "more.zip"
    half = tiny_submission(answers={"add": "def add(a, b):\n    raise ValueError('todo')"})
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("submitted/erin/a2c/a2c.ipynb", nbformat.writes(half))
    out = tiny_dir / "out"
    done = _cli(
        "grade-all", "inbox", "more.zip", "--out", "out", "--jobs", "2",
        "--source", "source.ipynb", cwd=tiny_dir,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # garbage.ipynb could not be graded
    assert "garbage" in done.stderr and "not a readable notebook" in done.stderr
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert set(rows) == {"alice", "carol", "erin", "garbage"}
    assert rows["alice"]["total"] == rows["carol"]["total"] == "10"
    assert rows["erin"]["add"] == "0" and rows["erin"]["total"] == "8"
    assert rows["garbage"]["status"].startswith("unreadable")
    for student in ("alice", "carol", "erin"):
        html = (out / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        assert "testing mul" in html
        assert "HIDDEN TESTS" not in html and "_ok =" not in html
    assert "mul: PASS" in (out / "feedback" / "alice.html").read_text(encoding="utf-8")
    summary = (out / "summary.txt").read_text()
    assert "3 graded submission(s) of 4" in summary and summary in done.stdout
    assert (out / "scores.png").is_file()
