"""The verified agent's points, where a course gives some (``a2c.agent.points`` and
``target_score``), counted in every total: full marks, ``grades.csv``, the feedback page, the
kit's export and LMS files, Gradescope's and PrairieLearn's scores. Off by default: then no total
moves (the other tests of the reports check that, unchanged).

The course test hands the grader's scores to a real nbgrader course as the pipeline does
(``tests/test_part8_policy.py``'s helpers: no notebook is run), with the course's settings in
its source notebook's metadata.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from autograder.core.agent_play.settings import AgentSettings, agent_outcome
from autograder.core.agent_play.verification import AgentReport
from autograder.core.course.points import CoursePoints, course_points
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.grades_csv import result_row
from autograder.nbgrader.preprocessors.trusted_scores import AGENT_POINTS_KEY
from tests.test_agent_grading import _agent

ROOT = Path(__file__).resolve().parents[1]
SCORED = AgentSettings(replay=True, target_score=400.0, points=2.0)


def _source(tmp: Path, agent: dict) -> Path:
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    nb.metadata["a2c"] = {"agent": agent}
    path = tmp / "a2c.ipynb"
    nbformat.write(nb, path)
    return path


def _scored(score: float | None) -> dict:
    """The outcome a grading keeps of an agent that scored ``score`` (None: no verified score)."""
    agent = _agent(score if score is not None else 0.0)
    report = AgentReport(verified=agent["verified"] if score is not None else None, digest="d")
    return agent_outcome(report, SCORED)


def test_full_marks_and_every_total_count_the_agents_points_only_where_the_course_gives_them():
    source = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    plain = course_points(source)
    assert plain.agent == 0.0  # the default: nothing moves
    source.metadata["a2c"] = {"agent": {"target_score": 400, "points": 2}}
    scored = course_points(source)
    assert scored.agent == 2.0 and scored.full_marks == plain.full_marks + 2.0
    assert "+ 2 for the verified agent score" in scored.explain()
    source.metadata["a2c"]["agent"]["replay"] = False  # not played: no points to count
    assert course_points(source).agent == 0.0

    assert _scored(300.0)["points"] == 1.5 and _scored(None)["points"] == 0.0  # none: 0 of 2
    points = CoursePoints({"model": 2.0}, {"discussion": 3.0}, agent=2.0)
    result = GradeResult("alice", parts={"model": PartScore(2.0, 2.0, "ok")}, agent=_scored(300.0))
    result.manual = {"discussion": 3.0}
    assert (result.total, result.max_total) == (3.5, 7.0)
    row = result_row(result, points, "now")
    assert (row["agent_points"], row["raw_total"], row["total"], row["max_total"]) == (
        "1.5", "3.5", "3.5", "7",
    )  # fmt: skip
    row.hand["discussion"] = 2.0  # part 8 graded later: the agent's points stay in
    row.count(points)
    assert row["total"] == "5.5"
    off = result_row(result, CoursePoints({"model": 2.0}, {"discussion": 3.0}), "now")
    assert off["total"] == "2" and off["max_total"] == "5"  # a course without agent points


def test_gradescope_and_prairielearn_score_the_agents_points():
    from autograder.platforms.gradescope.run_autograder import gradescope_results
    from autograder.platforms.prairielearn.run_grader import prairielearn_results

    result = GradeResult("s", parts={"model": PartScore(2.0, 2.0, "ok")}, agent=_scored(300.0))
    gradescope = gradescope_results(result, 1.0)
    assert gradescope["score"] == 3.5
    assert (gradescope["tests"][-1]["score"], gradescope["tests"][-1]["max_score"]) == (1.5, 2.0)
    assert "full marks 4, the verified agent's 2 included" in gradescope["output"]
    prairielearn = prairielearn_results(result)
    assert prairielearn["score"] == pytest.approx(3.5 / 4.0)
    assert (prairielearn["tests"][-1]["points"], prairielearn["tests"][-1]["max_points"]) == (1.5, 2.0)
    nothing = GradeResult("t", parts={"model": PartScore(2.0, 2.0, "ok")}, agent=_scored(None))
    assert gradescope_results(nothing, 1.0)["score"] == 2.0
    assert prairielearn_results(nothing)["score"] == pytest.approx(0.5)


def test_the_feedback_reads_the_graders_record_never_the_notebooks_own_metadata(tmp_path):
    from autograder.nbgrader.preprocessors.trusted_scores import TrustedScores

    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    nb.metadata[AGENT_POINTS_KEY] = 99.0  # forged by the student
    record = tmp_path / "record.json"
    record.write_text(json.dumps({}))
    TrustedScores(record=str(record)).preprocess(nb, {})
    assert AGENT_POINTS_KEY not in nb.metadata
    record.write_text(json.dumps({AGENT_POINTS_KEY: 1.5}))
    TrustedScores(record=str(record)).preprocess(nb, {})
    assert nb.metadata[AGENT_POINTS_KEY] == 1.5


@pytest.mark.slow
def test_a_course_with_agent_points_counts_them_in_every_channel(tmp_path):
    """Alice's agent earns 1.5 of 2 points (300 of a 400 target): grades.csv, the feedback page,
    part 8's comment in formgrader, then part 8 graded and ``export``: grades.csv, the feedback,
    the LMS files and ``nbgrader export`` all say the same total, over full marks with the
    agent's 2 points."""
    from nbgrader.api import Gradebook

    from autograder.core.intake.collect import Submission
    from autograder.nbgrader.agent_comment import record_agent_comment
    from autograder.nbgrader.class_reports.writing import write_outputs
    from autograder.nbgrader.course import ASSIGNMENT, NOTEBOOK, autograde, open_course
    from autograder.nbgrader.final_export import export
    from tests.test_part8_policy import _formgrader_saves, _nbgrader, _scores

    course = open_course(tmp_path / "course", _source(tmp_path, {"target_score": 400, "points": 2}))
    release = nbformat.read(course.release_notebook, as_version=4)
    points = course_points(release)
    assert points.agent == 2.0, "the settings travel with the release"
    scores = _scores(course, 0.0)
    result = GradeResult(
        "alice",
        parts={key: PartScore(value, points.auto[key], "ok") for key, value in scores.items()},
        agent=_scored(300.0),
    )
    record = tmp_path / "record.json"  # what Grader.record hands nbgrader
    entries = {f"test_{key}": {"score": value, "feedback": "ok"} for key, value in scores.items()}
    record.write_text(json.dumps({**entries, AGENT_POINTS_KEY: result.agent_points}))
    received = tmp_path / "alice.ipynb"
    nbformat.write(release, received)
    autograde(course, "alice", nbformat.writes(release), record)
    record_agent_comment(course.db_url, ASSIGNMENT, NOTEBOOK, result, "discussion")
    out = tmp_path / "out"
    write_outputs(
        out, [result], points, [Submission("alice", received, received.stat().st_mtime)],
        course_root=course.root, db_url=course.db_url, histogram=False,
    )  # fmt: skip
    auto = sum(scores.values())
    full = points.full_marks

    def row() -> dict:
        return next(csv.DictReader((out / "grades.csv").open()))

    first = row()
    assert first["agent_points"] == "1.5" and float(first["max_total"]) == full
    assert float(first["total"]) == pytest.approx(auto + 1.5)
    with Gradebook(course.db_url) as gradebook:
        comment = gradebook.find_comment("discussion", "a2c", ASSIGNMENT, "alice").manual_comment
    assert "1.5 of 2 point(s)" in comment and "not in formgrader's total" in comment

    _formgrader_saves(course, "alice", 2.5)
    export(course.root, out)
    final = row()
    assert float(final["total"]) == pytest.approx(auto + 1.5 + 2.5)
    page = (out / "feedback" / "alice.html").read_text()
    assert f"{auto + 4.0:.1f} / {full:.1f} points (final" in page
    assert "agent (verified agent score): 1.5 / 2.0" in page
    canvas = list(csv.reader((out / "lms" / "canvas.csv").open(encoding="utf-8")))
    assert canvas[1][-1] == f"{full:g}" and float(canvas[2][-1]) == pytest.approx(auto + 4.0)
    long = list(csv.reader((out / "lms" / "grades_long.csv").open(encoding="utf-8")))
    assert ["alice", "agent_points", "1.5", "2"] == long[-2][:4]
    _nbgrader(course, "export")  # `nbgrader export` in the course folder, as the guide runs it
    with (course.root / "grades.csv").open() as handle:
        exported = next(row for row in csv.DictReader(handle) if row["student_id"] == "alice")
    assert float(exported["max_score"]) == full
    assert float(exported["score"]) == pytest.approx(auto + 4.0) == float(final["total"])
