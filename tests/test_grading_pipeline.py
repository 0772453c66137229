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

from autograder.cli import main
from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import collect, student_id
from autograder.core.judging.record_decoding import RecordError, loads
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader import config as nbgrader_config
from autograder.nbgrader.grader import grade_many
from autograder.nbgrader.preprocessors.hide_graded_tracebacks import HideGradedTracebacks
from autograder.nbgrader.preprocessors.trusted_scores import TrustedScores
from autograder.sandboxed.grading_runtime.record import dumps, read_request
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
    names += c.GenerateFeedback.preprocessors + c.GenerateAssignment.preprocessors
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


def test_the_bonus_cell_shows_its_feedback_and_no_zero_result(tmp_path: Path) -> None:
    """The bonus part's cell (worth 0 in the gradebook) keeps only its feedback, so that the page
    shows no `Out[ ]: 0.0` under the bonus's `2 / 2 points`; its points go to extra credit."""
    meta = {"grade": True, "solution": False, "locked": True, "grade_id": "test_gae", "points": 0}
    cell = nbformat.v4.new_code_cell("grade_part('gae')", metadata={"nbgrader": meta})
    nb = nbformat.v4.new_notebook(cells=[cell])
    record = tmp_path / "scores.json"
    record.write_text(json.dumps({"test_gae": {"score": 2.0, "feedback": "all checks pass"}}))
    resources: dict = {}
    out, _ = TrustedScores(record=str(record)).preprocess(nb, resources)
    assert [o["output_type"] for o in out.cells[0].outputs] == ["stream"]
    assert resources["a2c_extra_credit"] == {"test_gae": 2.0}
    from nbgrader.utils import determine_grade

    assert determine_grade(out.cells[0]) == (0.0, 0.0)  # 0 of 0 in the gradebook


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
    from autograder.core.course.points import CoursePoints
    from autograder.core.reports.table import format_table
    from autograder.nbgrader.class_reports.summary import summary_text
    from autograder.nbgrader.class_reports.writing import write_outputs

    results = [
        _result("bob", add=2.0, mul=1.5),
        _result("alice", add=0.0, mul=3.0),
        GradeResult("carl", status="unreadable: x.ipynb: not a notebook"),
        _result("dora", "tampered: the sandbox returned malformed results", add=2.0, mul=3.0),
    ]
    results[0].sandboxed = False
    points = CoursePoints({"add": 2.0, "mul": 3.0})
    written = write_outputs(tmp_path, results, points)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [row["student"] for row in rows] == ["alice", "bob", "carl", "dora"]
    assert rows[1]["total"] == "3.5" and rows[1]["mul"] == "1.5" and rows[1]["sandboxed"] == "NO"
    assert rows[2]["status"].startswith("unreadable") and rows[2]["total"] == rows[2]["add"] == ""
    dora = rows[3]
    assert (
        dora["status"].startswith("tampered") and dora["total"] == dora["add"] == dora["mul"] == ""
    )
    assert "provisional total 5 (not a grade)" in dora["notes"]
    summary = summary_text(written.rows, points).splitlines()
    assert summary[0] == "2 graded submission(s) of 4 row(s)"  # dora's scores are not counted
    add = next(line for line in summary if line.startswith("add")).split()
    assert add[1:7] == ["2", "1.00", "0.00", "1.00", "2.00", "50%"]
    assert (tmp_path / "scores.png").stat().st_size > 1000
    table = format_table(results[3], feedback=False)
    assert "5.00*" in table and "NOT A GRADE (tampered)" in table
    assert "NOT SANDBOXED" in format_table(results[0], feedback=False)


# --- records and the class -----------------------------------------------------------------------


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


def test_the_sandbox_reads_the_graders_requests_with_their_arrays() -> None:
    """Does ``read_request`` (the sandbox's reader of the grader's own requests) give back what
    ``dumps`` wrote: plain data as it was, arrays with their dtype, shape, values, writable?"""
    value = {
        "seq": 3,
        "op": "probe",
        "steps": [
            {"key": "a", "case": {"frames": np.arange(24, dtype=np.uint8).reshape(2, 3, 4)}},
            {"key": "b", "case": {"x": np.linspace(0, 1, 5, dtype=np.float32), "n": None}},
        ],
        "scale": 1.5,
        "flags": [True, False],
        "empty": np.zeros((0, 2), dtype=np.int64),
        "mask": np.array([[True], [False]]),
        "name": "merge",
    }
    back = read_request(dumps(value))
    for got, want in [
        (back["steps"][0]["case"]["frames"], value["steps"][0]["case"]["frames"]),
        (back["steps"][1]["case"]["x"], value["steps"][1]["case"]["x"]),
        (back["empty"], value["empty"]),
        (back["mask"], value["mask"]),
    ]:
        assert isinstance(got, np.ndarray) and got.flags.writeable
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
    assert back["steps"][1]["case"]["n"] is None
    rest = {k: v for k, v in back.items() if k not in ("steps", "empty", "mask")}
    assert rest == {"seq": 3, "op": "probe", "scale": 1.5, "flags": [True, False], "name": "merge"}


def test_grade_many_grades_a_failure_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A grading that failed or timed out is not graded a second time: a hostile notebook's
    cost is one grading's. (And ``progress=False`` shows no progress bar.)"""

    class FailingGrader:
        course = None
        points = CoursePoints({"add": 2.0})

        def __init__(self) -> None:
            self.calls: list[str] = []

        def grade(
            self, path: Path, student: str, feedback_dir: Path | None, threads: int, log, memory
        ):
            self.calls.append(student)
            log.write(GradeResult(student, source=str(path)))
            status = {"bob": "timeout: too long", "carol": "error: ended early"}.get(student)
            return GradeResult(
                student, {"add": PartScore(2.0, 2.0, "")}, status or "graded", source=str(path)
            )

    from autograder.core.intake.collect import Submission

    names = ("alice", "bob", "carol")
    subs = [Submission(name, tmp_path / f"{name}.ipynb", 0.0) for name in names]
    grader = FailingGrader()
    results = grade_many(grader, subs, tmp_path / "out", jobs=2, progress=False, feedback=False)
    assert sorted(grader.calls) == sorted(names)
    assert [r.status for r in results] == ["graded", "timeout: too long", "error: ended early"]
    assert "grading:" not in capsys.readouterr().err  # tqdm's bar, "grading: 100%|..."


def test_cli_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Do bad arguments give exit status 2 and a message naming the argument?"""
    path = tmp_path / "a.ipynb"
    path.write_text("{}")
    assert main(["grade", str(path), "--timeout", "0"]) == 2
    assert "timeout must be" in capsys.readouterr().err
    assert main(["grade", str(tmp_path / "missing.ipynb")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_each_student_is_logged_as_recorded(tmp_path: Path) -> None:
    """Does every recorded grade reach progress.jsonl at once (a grader that dies keeps them),
    before the class's grades.csv is written?"""
    from autograder.core.assessor import Assessment
    from autograder.nbgrader.grader import Grader
    from autograder.nbgrader.progress_log import ProgressLog

    grader = Grader.__new__(Grader)  # only the recording's log is exercised here
    log = ProgressLog(tmp_path / "progress.jsonl")
    for name in ("alice", "bob"):
        result = GradeResult(name, {"add": PartScore(2.0, 2.0, "ok")}, source=f"{name}.ipynb")
        assert grader.record(Assessment(result), log=log) is result  # no notebook: no record
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert [(line["student"], line["total"], line["status"]) for line in lines] == [
        ("alice", 2.0, "graded"),
        ("bob", 2.0, "graded"),
    ]


@pytest.mark.slow
def test_new_gradebooks_carry_the_schema_revision_alembic_reports(tmp_path: Path) -> None:
    """The template's gradebook is stamped, without an ``alembic`` process, with the revision
    that nbgrader's own way (``alembic heads`` as a program) reports."""
    import sqlite3
    import subprocess
    import sys

    from nbgrader.dbutil import _temp_alembic_ini

    from autograder.nbgrader.course import build_template

    template = build_template(tmp_path / "template")
    database = template.db_url.removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        stamped = db.execute("SELECT version_num FROM alembic_version").fetchall()
    with _temp_alembic_ini("sqlite:///" + str(tmp_path / "unused.db")) as ini:
        alembic = [sys.executable, "-m", "alembic", "-c", ini, "heads"]
        heads = subprocess.check_output(alembic, text=True)
    assert stamped == [(heads.split()[0],)], (stamped, heads)


def test_a_notebook_run_in_solutions_is_no_change_to_the_grader() -> None:
    """A self-learner runs solutions/a2c.ipynb in its folder (plot, video and saved agent appear
    there) while a grader runs: the grader's digest of its own files stays the same. (A changed module is
    caught: the persistence tests of test_grading_sandbox.py.)"""
    from autograder.core.package_digest import package_files

    before = package_files()
    folder = Path(__file__).resolve().parent.parent / "solutions"
    names = ("a2c_training.png", "a2c_agent.mp4", "a2c_agent.gif", "a2c_agent.json")
    written = [folder / name for name in names]
    try:
        for path in written:
            path.write_bytes(b"output")
        assert package_files() == before
    finally:
        for path in written:
            path.unlink(missing_ok=True)
