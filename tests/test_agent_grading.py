"""The verified agent score inside grading: the course's settings, the assessment that plays the
saved agent after the parts are judged, and the agent's file handed in beside the notebook."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import nbformat
import pytest

from autograder.core.agent_play.settings import AgentSettings, agent_settings
from autograder.core.assessor import Assessor
from autograder.core.intake.submission_file import agent_file_beside
from autograder.core.reports.grade_result import GradeResult
from course_lib.evaluation import GRADER_PROTOCOL
from course_lib.saved_agent import AGENT_FILE
from tests.test_agent_play import _bundle, _with_agent

ROOT = Path(__file__).resolve().parents[1]
SHORT = dataclasses.replace(GRADER_PROTOCOL, games=2, max_agent_steps=40, games_at_once=2)


def _release(agent=None):
    nb = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    if agent is not None:
        nb.metadata["a2c"] = {"agent": agent}
    return nb


def test_the_settings_default_to_replay_without_points_and_refuse_what_is_wrong():
    assert agent_settings(_release()) == AgentSettings(replay=True, target_score=None, points=0.0)
    scored = agent_settings(_release({"target_score": 400, "points": 2}))
    assert scored.scored and scored.points_for(100.0) == 0.5 and scored.points_for(900.0) == 2.0
    assert scored.points_for(-5.0) == 0.0
    assert agent_settings(_release({"replay": False})).replay is False
    for wrong, named in (
        ({"points": 2}, "target_score"),
        ({"target_score": "high"}, "target_score"),
        ({"points": -1, "target_score": 10}, "points"),
        ({"replay": "yes"}, "replay"),
        ({"replay": True, "bonus": 1}, "unknown"),
    ):
        with pytest.raises(ValueError, match=named):
            agent_settings(_release(wrong))
    with pytest.raises(ValueError, match="points"):  # the instructor hears at start, once
        Assessor(_release({"points": 2}), Path("/nonexistent/never-made"))


def test_the_agent_file_is_read_only_from_a_students_own_folder(tmp_path):
    own = tmp_path / "alice"
    own.mkdir()
    (own / "a2c.ipynb").write_text("{}")
    (own / AGENT_FILE).write_text('{"x": 1}')
    assert agent_file_beside(own / "a2c.ipynb") == b'{"x": 1}'
    (own / "bob.ipynb").write_text("{}")  # a shared folder: whose file would it be?
    assert agent_file_beside(own / "a2c.ipynb") is None
    (own / "bob.ipynb").unlink()
    (own / AGENT_FILE).unlink()
    (own / AGENT_FILE).symlink_to(tmp_path / "elsewhere.json")
    assert agent_file_beside(own / "a2c.ipynb") is None


@pytest.fixture(scope="module")
def assessor(tmp_path_factory):
    made = Assessor(_release(), tmp_path_factory.mktemp("agent_grading"))
    made.agent_protocol = SHORT
    return made


@pytest.mark.rom
@pytest.mark.slow
def test_grading_plays_the_agent_handed_in_beside_the_notebook(assessor):
    """One grading of the solution notebook, its agent in the file beside it (not in the
    output): the parts are judged, the agent's games are the grader's, the replay strip is a
    PNG, and the result travels as plain data (Dask) with the agent."""
    bundle = _bundle()
    nb = _with_agent(bundle)
    for cell in nb.cells:
        cell.pop("outputs", None) if cell.cell_type != "code" else cell.update(outputs=[])
    assessment = assessor.assess(
        nbformat.writes(nb).encode(), "alice", agent_file=json.dumps(bundle).encode()
    )
    result = assessment.result
    assert result.graded, (result.status, result.notes)
    agent = result.agent
    assert agent["verified"]["games"] == 2 and agent["verified"]["capped"] == 2, agent["note"]
    assert agent["claimed"]["score"] == 150.0 and len(agent["digest"]) == 64
    assert base64.b64decode(agent["replay_png"]).startswith(b"\x89PNG")
    assert "points" not in agent  # no points unless the course sets them
    assert result.timings["agent"] > 0
    again = GradeResult.from_plain(json.loads(json.dumps(result.to_plain())))
    assert again.agent == agent
    assert "replay_png" not in result.as_dict()["agent"]  # grade --json stays readable
    assert "application/vnd.a2c-course.agent" not in assessment.notebook  # not kept for nbgrader


@pytest.mark.rom
@pytest.mark.slow
def test_a_notebook_without_an_agent_is_that_students_note(assessor):
    nb = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    result = assessor.assess(nbformat.writes(nb).encode(), "bob", agent_file=b"{not json").result
    assert result.agent is not None and result.agent["verified"] is None, (result.status, result.notes)
    assert any(note.startswith("agent:") and AGENT_FILE in note for note in result.notes)


def _agent(score, digest="d1", evaluation_score=None, note=""):
    verified = {"score": score, "std": 10.0, "stderr": 4.0, "games": 8, "steps": 8000,
                "capped": 8, "scores": [score] * 8, "protocol": GRADER_PROTOCOL.to_dict()}  # fmt: skip
    return {"verified": verified, "claimed": {"score": 600.0, "games": 100, "steps": 10**6},
            "notebook_evaluation": None, "note": note, "digest": digest, "seconds": 12.0,
            "flagged": bool(note)}  # fmt: skip


def _graded(student, agent):
    from autograder.core.reports.grade_result import PartScore

    return GradeResult(student, parts={"model": PartScore(2.0, 2.0, "ok")}, agent=agent)


def test_grades_csv_and_the_leaderboards_show_the_verified_scores():
    """The agent columns of a row; the instructor's board ranks by verified score with ids,
    flags and the same weights in two submissions; the students' board has no ids."""
    from autograder.core.course.points import CoursePoints
    from autograder.nbgrader.class_reports.agent_board import leaderboard_lines
    from autograder.nbgrader.class_reports.grades_csv import csv_columns, result_row

    points = CoursePoints({"model": 2.0})
    results = [
        _graded("alice", _agent(310.0, "same")),
        _graded("bob", _agent(455.5, "same", note="the notebook's own evaluation (900.0) ...")),
        _graded("carol", {**_agent(0.0), "verified": None, "note": "no saved agent", "digest": ""}),
        _graded("dave", None),  # replay off for him (an older grading)
    ]
    rows = [result_row(result, points, "now") for result in results]
    assert rows[1]["agent_score"] == "455.5" and rows[1]["claimed_score"] == "600.0"
    assert rows[1]["agent_games"] == "8" and rows[1]["agent_capped"] == "8"
    assert rows[1]["agent_flag"] == "claim above verified"
    assert rows[2]["agent_flag"] == "no verified score" and "agent_score" not in rows[3]
    columns = csv_columns(points, rows, [])
    assert columns.index("agent_score") < columns.index("notes")
    board = "\n".join(leaderboard_lines(rows))
    assert board.index("bob") < board.index("alice") and "carol" not in board.split("same")[0]
    assert "claim above verified" in board
    assert "same agent weights handed in by: alice, bob" in board
    anonymous = "\n".join(leaderboard_lines(rows, anonymous=True))
    assert "455.5" in anonymous and not any(s in anonymous for s in ("alice", "bob", "same"))
    assert leaderboard_lines(rows[3:]) == []  # no agent played: no board
    assert "agent_score" not in csv_columns(points, rows[3:], [])


def test_the_platforms_report_the_agent_and_its_leaderboard():
    from autograder.core.agent_play.feedback import agent_line, show_in_notebook
    from autograder.platforms.gradescope.run_autograder import gradescope_results
    from autograder.platforms.prairielearn.run_grader import prairielearn_results

    agent = {**_agent(455.5), "replay_png": base64.b64encode(b"\x89PNG...").decode()}
    line = agent_line(agent)
    assert line.startswith("Verified agent score: 455.5 (std 10.0) over the grader's own 8 games")
    assert "8 game(s) capped at 1,000 steps" in line and "claims 600.0" in line
    result = _graded("s", agent)
    gradescope = gradescope_results(result, 30.0)
    assert gradescope["leaderboard"][0] == {"name": "Verified score", "value": 455.5}
    assert gradescope["tests"][-1]["output"] == line and "score" not in gradescope["tests"][-1]
    assert gradescope["score"] == 2.0  # no points for the agent unless the course sets them
    prairielearn = prairielearn_results(result)
    assert prairielearn["tests"][-1]["points"] == 0.0 and prairielearn["images"][0]["url"].startswith(
        "data:image/png;base64,"
    )
    assert line in prairielearn["output"]
    nb = _with_agent(_bundle())
    show_in_notebook(nb, agent)
    shown = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "save_agent"]
    assert shown[0].outputs[0]["data"]["text/plain"] == "[grader] " + line
    assert "image/png" in shown[0].outputs[1]["data"]
    assert "leaderboard" not in gradescope_results(_graded("t", None), 1.0)


@pytest.mark.parametrize(
    "status", ["tampered: the sandbox returned malformed results", "error: x", "timeout: y",
               "unsandboxed: z"],
)  # fmt: skip
def test_gradescope_shows_a_verified_score_on_its_leaderboard_only_for_a_graded_result(status):
    """A result that is not a grade (a tampered run, an error, a timeout, no sandbox) scores 0
    and puts nothing on Gradescope's leaderboard, whatever its agent played; its test still
    says what the grader found."""
    from autograder.platforms.gradescope.run_autograder import gradescope_results

    result = _graded("s", _agent(455.5))
    result.status = status
    results = gradescope_results(result, 30.0)
    assert "leaderboard" not in results and results["score"] == 0.0
    assert results["tests"][-1]["output"].startswith("Verified agent score: 455.5")
    result.status = "graded"
    assert gradescope_results(result, 30.0)["leaderboard"][0]["value"] == 455.5


@pytest.mark.rom
@pytest.mark.slow
def test_grade_all_with_two_jobs_reports_the_agents_in_every_channel(tmp_path):
    """``grade-all --jobs 2`` on two students' folders holding the same weights (alice's in her
    notebook's output, bob's in the file beside his): grades.csv's agent columns, the
    instructor's summary (leaderboard, the duplicate), the students' leaderboard without ids,
    the feedback page (the grader's line and replay strip in the save cell, the line not
    repeated in part 8's comment) and formgrader's comment on part 8."""
    import csv

    from nbgrader.api import Gradebook

    from autograder.core.intake.collect import Submission
    from autograder.nbgrader.grader import Grader, grade_many

    bundle = _bundle()
    for student, in_output in (("alice", True), ("bob", False)):
        folder = tmp_path / "in" / student
        folder.mkdir(parents=True)
        nb = _with_agent(bundle)
        if not in_output:
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
            (folder / AGENT_FILE).write_text(json.dumps(bundle))
        nbformat.write(nb, folder / "a2c.ipynb")
    subs = [Submission(s, tmp_path / "in" / s / "a2c.ipynb", 0.0) for s in ("alice", "bob")]
    out = tmp_path / "out"
    with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=60, keep=True) as grader:
        grader.assessor.agent_protocol = SHORT
        results = grade_many(grader, subs, out, jobs=2, progress=False, histogram=False)
        with Gradebook(grader.gradebook.db_url) as gradebook:
            comments = {
                s: gradebook.find_comment("discussion", "a2c", "a2c", s).manual_comment
                for s in ("alice", "bob")
            }
    assert [r.status for r in results] == ["graded", "graded"], [r.notes for r in results]
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [row["agent_games"] for row in rows] == ["2", "2"]
    assert rows[0]["agent_digest"] == rows[1]["agent_digest"] != ""
    summary = (out / "summary.txt").read_text()
    assert "leaderboard" in summary and "same agent weights handed in by: alice, bob" in summary
    board = (out / "leaderboard.txt").read_text()
    assert "leaderboard" in board and "alice" not in board and "bob" not in board
    for student in ("alice", "bob"):
        assert comments[student].startswith("Verified agent score:"), comments
        page = (out / "feedback" / f"{student}.html").read_text()
        assert page.count("Verified agent score:") == 1  # the save cell's, not the comment's
        assert "data:image/png;base64," in page
