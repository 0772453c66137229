"""``regrade`` on a generated class, with a stand-in for the grader (no sandboxed run).

The class is first written as ``grade-all`` writes it (``write_outputs``: received copies,
submission times, a deadline, one late student, a resubmission); the "fixed" grader then
scores ``a2c`` differently for two students. Only those two rows may change, with their late
data; a dry run writes nothing. The last test (slow) records a moved student with the grader's
own recording into a real nbgrader course, where part 8 must be kept.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from autograder.core.assessor import Assessment
from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import Submission
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.agent_records import AgentRecords
from autograder.nbgrader.class_reports.grades_csv import read_rows, write_rows
from autograder.nbgrader.class_reports.writing import write_outputs
from autograder.nbgrader.regrading import regrade, stored_submissions
from solutions.build_notebooks import RELEASE_NOTEBOOK
from solutions.parts import ASSIGNMENT, PARTS
from tests.submissions.generated_class import notebook_of, student_parts

POINTS = CoursePoints({key: 2.0 for key in PARTS}, {})
DEADLINE = datetime(2026, 3, 1, 22, 59, tzinfo=timezone.utc)


class FixedGrader:
    """Scores every part 2, except ``a2c`` of the students in ``fixed`` (0 after the fix)."""

    def __init__(self, fixed: set[str]) -> None:
        self.points, self.course, self.fixed, self.recorded = POINTS, None, fixed, []

    def assess(
        self, data: bytes, student: str, name: str, threads: int, agent_file=None, memory=None
    ) -> Assessment:
        score = {k: 0.0 if (k == "a2c" and student in self.fixed) else 2.0 for k in PARTS}
        parts = {k: PartScore(v, 2.0, "") for k, v in score.items()}
        return Assessment(GradeResult(student, parts=parts), data.decode())

    def record(self, assessment: Assessment) -> GradeResult:
        self.recorded.append(assessment.result.student)
        return assessment.result


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def first_grading(tmp_path_factory) -> Path:
    """The class as grade-all leaves it (made once; each test gets a copy, ``graded``)."""
    tmp_path = tmp_path_factory.mktemp("first")
    inbox, out = tmp_path / "inbox", tmp_path / "grading-output"
    subs = []
    for number in range(6):
        student = f"s{number}"
        path = inbox / student / "a2c.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(notebook_of(student_parts(number)), path)
        when = DEADLINE.timestamp() + (3600 * 5 if student == "s4" else -3600)  # s4 late
        os.utime(path, (when, when))
        subs.append(Submission(student, path, when))
    results = [
        FixedGrader(set()).assess(s.path.read_bytes(), s.student, "", 1).result for s in subs
    ]
    for result, sub in zip(results, subs, strict=True):
        result.source = str(sub.path)
    write_outputs(out, results, POINTS, subs, deadline=DEADLINE, histogram=False)
    # s1 resubmits: the kept copy that counts is the newer file
    newer = inbox / "again" / "s1.ipynb"
    newer.parent.mkdir()
    nbformat.write(notebook_of(student_parts(99)), newer)
    again = [Submission("s1", newer, DEADLINE.timestamp() - 60)]
    first = FixedGrader(set()).assess(newer.read_bytes(), "s1", "", 1).result
    first.source = str(newer)
    write_outputs(out, [first], POINTS, again, deadline=DEADLINE, histogram=False)
    rows, columns = read_rows(out / "grades.csv")  # s4's file came from an LMS zip
    next(row for row in rows if row["student"] == "s4")["submitted_from"] = "zip member time"
    write_rows(rows, columns, out / "grades.csv")
    return out


@pytest.fixture
def graded(first_grading: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(first_grading, tmp_path / "grading-output", symlinks=True))


def test_the_kept_files_that_count_are_graded_again(graded):
    subs, skipped = stored_submissions(graded)
    rows = {row["student"]: row for row in read_rows(graded / "grades.csv")[0]}
    assert [s.student for s in subs] == [f"s{n}" for n in range(6)] and skipped == []
    s1 = next(s for s in subs if s.student == "s1")
    assert (
        str(s1.path).endswith(rows["s1"]["received"]) and len(list(s1.path.parent.iterdir())) == 2
    )


def test_a_dry_run_says_who_moves_and_writes_nothing(graded):
    before = {p: _digest(p) for p in graded.rglob("*") if p.is_file()}
    grader = FixedGrader({"s2", "s4"})
    done = regrade(grader, graded, dry_run=True)
    assert done.moved == ["s2", "s4"] and done.unchanged == 4 and grader.recorded == []
    assert done.lines[0] == "2 of 6 student(s) changed; the others left as they were"
    assert "  s2: 12 of 10 -> 10 of 10, -2 (a2c 2 -> 0)" in done.lines
    assert done.lines[-1] == "dry run: nothing written"
    assert {p: _digest(p) for p in graded.rglob("*") if p.is_file()} == before


def test_only_the_grades_that_moved_are_recorded_with_their_late_data(graded):
    rows = {row["student"]: row for row in read_rows(graded / "grades.csv")[0]}
    grader = FixedGrader({"s2", "s4"})
    done = regrade(grader, graded)
    assert grader.recorded == ["s2", "s4"]
    after = {row["student"]: row for row in read_rows(graded / "grades.csv")[0]}
    for student in ("s0", "s1", "s3", "s5"):
        assert after[student] == rows[student]  # left as it was, graded_at included
    for student in ("s2", "s4"):
        assert after[student]["a2c"] == "0" and after[student]["total"] == "10"
        for name in ("submitted_at", "submitted_from", "minutes_late"):
            assert after[student][name] == rows[student][name], name
    assert (after["s4"]["minutes_late"], after["s4"]["submitted_from"]) == (
        "300",
        "zip member time",
    )
    assert "replaced s2: 12 of 10 -> 10 of 10" in "\n".join(done.lines)
    assert "grades.csv, what changed:" in done.lines


def test_grade_all_refuses_a_changed_point_value_and_names_the_regrade_to_run(graded, tmp_path):
    """nbgrader records no score above the course's points (and removes that student's graded
    notebook): grade-all stops before grading and says which command brings the course along."""
    from autograder.nbgrader.grader import grade_many

    grader = FixedGrader(set())  # every part worth 2: the course's release says otherwise
    grader.course = SimpleNamespace(release_notebook=RELEASE_NOTEBOOK, root=tmp_path / "my course")
    subs, _ = stored_submissions(graded)
    out = tmp_path / "new-output"
    with pytest.raises(ValueError) as refused:
        grade_many(grader, subs, out, progress=False)
    message = str(refused.value)
    assert "points differ from the course's release (a2c 4 -> 2," in message
    assert f"python -m autograder regrade {out} --course '{tmp_path / 'my course'}'" in message
    assert grader.recorded == [] and not out.exists()


@pytest.mark.slow
def test_grade_all_with_a_changed_point_value_stops_before_grading(tmp_path, capsys):
    """As the instructor types it: a course made with the release, then grade-all --course with a
    source whose a2c is worth 6: exit 2, the regrade command to run, nothing graded or removed."""
    from autograder.cli import main
    from autograder.nbgrader.course import open_course

    course, inbox, out = open_course(tmp_path / "course"), tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    shutil.copyfile(RELEASE_NOTEBOOK, inbox / "ann.ipynb")
    source = _source_worth(tmp_path, a2c=6.0)
    argv = ["grade-all", str(inbox), "--out", str(out), "--course", str(course.root)]
    assert main([*argv, "--source", str(source)]) == 2
    error = capsys.readouterr().err
    assert "points differ from the course's release (a2c 4 -> 6)" in error, error
    assert f"Run `python -m autograder regrade {out} --course {course.root}` first" in error
    assert not (out / "grades.csv").exists() and not (course.course / "submitted").exists()


def _source_worth(tmp_path: Path, **points: float) -> Path:
    """The solution notebook with the given parts' points changed."""
    from solutions.build_notebooks import SOURCE_NOTEBOOK

    nb = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        key = str(meta.get("grade_id", "")).removeprefix("test_")
        if meta.get("grade") and key in points:
            meta["points"] = points[key]
    path = tmp_path / "changed" / "a2c.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_a_moved_student_is_recorded_in_a_real_course_with_part_8_kept(tmp_path: Path):
    """The grader's own recording (nbgrader autograde into the course, which sets part 8 aside
    for a new submission) for a student whose a2c moved: part 8 is put back, the feedback page
    is final, and the row's total follows."""
    from autograder.nbgrader.class_reports.hand_scores import manual_scores
    from autograder.nbgrader.course import open_course
    from autograder.nbgrader.feedback_renderer import render_feedback
    from autograder.nbgrader.final_export import export
    from autograder.nbgrader.grader import Grader
    from tests.test_part8_policy import _formgrader_saves, _grade, _scores

    (tmp_path / "roster.csv").write_text("id,first_name,last_name,email\nbob,Bob,Brown,b@x\n")
    course, out = open_course(tmp_path / "course"), tmp_path / "out"
    _grade(course, out, "bob", _scores(course, 2.0), "It rose.", -3600)
    _formgrader_saves(course, "bob", 2.5)
    export(course.root, out, feedback=False)
    before = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}["bob"]
    with Grader(course=course.root) as grader:

        def assess(data: bytes, student: str, name: str, threads: int, *_: object) -> Assessment:
            top = grader.points.auto
            scores = _scores(course, 2.0, a2c=1.0)
            parts = {key: PartScore(value, top[key], "") for key, value in scores.items()}
            return Assessment(GradeResult(student, parts=parts), data.decode())

        grader.assess = assess
        done = regrade(grader, out, make_feedback=render_feedback)
    after = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}["bob"]
    assert done.moved == ["bob"], done.lines
    assert (before["a2c"], after["a2c"]) == ("4", "1")
    assert (after["discussion"], after["total"]) == ("2.5", "13.5") and before["total"] == "16.5"
    assert manual_scores(course.db_url, ["bob"]) == {"bob": {"discussion": 2.5}}
    page = (out / "feedback" / "bob.html").read_text(encoding="utf-8")
    assert "a2c: 13.5 / 15.0 points (final: every part graded)" in page
    assert any(line.startswith("replaced bob: 16.5 of 15 -> 13.5 of 15") for line in done.lines)


@pytest.mark.slow
def test_a_changed_point_value_is_brought_into_the_course_then_regraded(tmp_path: Path):
    """a2c worth 6 instead of 4 in the source: regrade runs nbgrader's generate_assignment in
    the course, whose gradebook then holds 6 as a2c's maximum, records bob's 6 (nbgrader
    refused it before), keeps his part 8 score, comment and late data, and amy, whose grade
    did not move, keeps her gradebook entry; grade-all then grades with the course as it is."""
    from nbgrader.api import Gradebook

    from autograder.nbgrader.course import open_course
    from autograder.nbgrader.course_point_changes import point_changes
    from autograder.nbgrader.final_export import export
    from autograder.nbgrader.grader import Grader
    from autograder.nbgrader.late_penalty import course_late_penalty
    from tests.test_part8_policy import _formgrader_saves, _grade, _scores

    (tmp_path / "roster.csv").write_text(
        "id,first_name,last_name,email\nbob,Bob,Brown,b@x\namy,Amy,Adams,a@x\n"
    )
    course, out = open_course(tmp_path / "course"), tmp_path / "out"
    course_late_penalty("10%/day", course.root)  # kept in the course: a share of full marks
    _grade(course, out, "bob", _scores(course, 2.0), "It rose.", 3600)
    _grade(course, out, "amy", _scores(course, 2.0, a2c=0.0), "It fell.", -3600)
    _formgrader_saves(course, "bob", 2.5)
    with Gradebook(course.db_url) as gradebook:
        gradebook.find_comment("discussion", "a2c", ASSIGNMENT, "bob").manual_comment = "Clear."
        gradebook.db.commit()
    export(course.root, out, feedback=False)
    before = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}
    with Grader(_source_worth(tmp_path, a2c=6.0), course=course.root) as grader:
        assert point_changes(grader.points, grader.course) == ["a2c 4 -> 6"]

        def assess(data: bytes, student: str, name: str, threads: int, *_: object) -> Assessment:
            top = grader.points.auto
            scores = _scores(course, 2.0, a2c=0.0 if student == "amy" else 6.0)
            parts = {key: PartScore(value, top[key], "") for key, value in scores.items()}
            return Assessment(GradeResult(student, parts=parts), data.decode())

        grader.assess = assess
        release = course.release_notebook.read_bytes()
        looked = regrade(grader, out, dry_run=True)
        assert looked.lines[0] == "the course's points would follow the source notebook: a2c 4 -> 6"
        real = grader.points  # part 8 worth 2 now: bob's 2.5 would stand above it
        grader.points = replace(real, manual={"discussion": 2.0})
        with pytest.raises(ValueError, match=r"scores already given: bob \(discussion: 2.5 > 2\)"):
            regrade(grader, out)
        grader.points = real
        assert course.release_notebook.read_bytes() == release
        paged = []

        def make_feedback(course, student):  # stands in for nbgrader's page: who gets one
            paged.append(student)
            (page := tmp_path / f"{student}-page.html").write_text(f"page of {student}")
            return page

        done = regrade(grader, out, make_feedback=make_feedback)
        assert point_changes(grader.points, grader.course) == []
    # new full marks change every page: amy's too, though her grade did not move
    assert sorted(paged) == ["amy", "bob"]
    assert (out / "feedback" / "amy.html").read_text() == "page of amy"
    assert done.lines[:2] == [
        "the course's points follow the source notebook: a2c 4 -> 6",
        "full marks 15 -> 17 in every row",
    ]
    assert done.moved == ["bob"], done.lines
    after = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}
    assert (before["bob"]["a2c"], after["bob"]["a2c"]) == ("4", "6")
    assert after["bob"]["discussion"] == "2.5" and after["bob"]["status"] == "graded"
    for name in ("submitted_at", "minutes_late"):
        assert after["bob"][name] == before["bob"][name], name
    # 10% of full marks a started day: 1.5 of 15 before, 1.7 of 17 after, for bob only
    assert (before["bob"]["late_penalty"], after["bob"]["late_penalty"]) == ("1.5", "1.7")
    assert after["amy"]["late_penalty"] == "0"
    assert before["bob"]["max_total"] == "15" and {r["max_total"] for r in after.values()} == {"17"}
    assert after["amy"]["total"] == before["amy"]["total"]
    with Gradebook(course.db_url) as gradebook:
        assert gradebook.find_grade_cell("test_a2c", "a2c", ASSIGNMENT).max_score == 6.0
        grade = gradebook.find_grade("test_a2c", "a2c", ASSIGNMENT, "bob")
        assert (grade.score, grade.max_score) == (6.0, 6.0)
        part8 = gradebook.find_grade("discussion", "a2c", ASSIGNMENT, "bob")
        comment = gradebook.find_comment("discussion", "a2c", ASSIGNMENT, "bob")
        assert part8.manual_score == 2.5 and comment.manual_comment.startswith("Clear.\n")
        assert "late penalty 1.7 point(s)" in comment.manual_comment  # the new share, once
        assert comment.manual_comment.count("late penalty") == 1
        assert gradebook.find_grade("test_a2c", "a2c", ASSIGNMENT, "amy").score == 0.0
        late = gradebook.find_submission_notebook("a2c", ASSIGNMENT, "bob")
        assert late.late_submission_penalty == pytest.approx(1.7)
    assert course.autograded_notebook("bob").is_file()
    # a2c worth 8 and no grade moves: every row's penalty still follows the new full marks
    (tmp_path / "again").mkdir()
    with Grader(_source_worth(tmp_path / "again", a2c=8.0), course=course.root) as grader:
        grader.assess = assess
        again = regrade(grader, out)
    assert again.moved == [] and "full marks 17 -> 19 in every row" in again.lines
    rows = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}
    assert (rows["bob"]["late_penalty"], rows["amy"]["late_penalty"]) == ("1.9", "0")
    with Gradebook(course.db_url) as gradebook:
        late = gradebook.find_submission_notebook("a2c", ASSIGNMENT, "bob")
        assert late.late_submission_penalty == pytest.approx(1.9)


def _source_with_agent_points(tmp_path: Path) -> Path:
    """The solution notebook whose course gives the verified agent 2 points (target 400)."""
    from solutions.build_notebooks import SOURCE_NOTEBOOK

    nb = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    nb.metadata["a2c"] = {"agent": {"target_score": 400, "points": 2}}
    path = tmp_path / "source" / "a2c.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


def agent_class(folder: Path) -> list[Submission]:
    """alice hands in her agent as a2c_agent.json beside the notebook (its output cleared),
    bob in the save cell's output, both the reference's weights (seeded: the same agent)."""
    import json

    from course_lib.saved_agent import AGENT_FILE
    from tests.test_agent_play import _bundle, _with_agent

    subs = []
    for student, beside in (("alice", True), ("bob", False)):
        own = folder / student
        own.mkdir(parents=True)
        nb = _with_agent(_bundle())
        if beside:
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs = []
            (own / AGENT_FILE).write_text(json.dumps(_bundle()))
        nbformat.write(nb, own / "a2c.ipynb")
        subs.append(Submission(student, own / "a2c.ipynb", 0.0))
    return subs


@pytest.mark.rom
@pytest.mark.slow
def test_regrade_keeps_the_agent_file_and_the_verified_score_of_unchanged_weights(tmp_path):
    """A course that gives the agent points: grade-all keeps alice's a2c_agent.json beside her
    received notebook; a hidden test took a point of her a2c, and the fixed grader gives it
    back. regrade grades her agent from the kept file and keeps the verified score already
    recorded for the same weights (no new draw: the same scores, seeds and points), records
    her move, and leaves bob, whose grade did not move, as he was."""
    from autograder.core.intake.submission_file import KEPT_AGENT_SUFFIX
    from autograder.nbgrader.grader import Grader, grade_many
    from tests.test_agent_play import SHORT

    subs = agent_class(tmp_path / "inbox")
    out = tmp_path / "out"
    source = _source_with_agent_points(tmp_path)
    with Grader(source) as grader:
        grader.assessor.agent_protocol = SHORT
        real = grader.assess

        def buggy(data, student, name, threads, agent_file=None, memory=None):
            assessment = real(data, student, name, threads, agent_file, memory)
            if student == "alice":  # the bug the fix removes: a point off her a2c
                part = assessment.result.parts["a2c"]
                assessment.result.parts["a2c"] = replace(part, score=part.score - 1.0)
            return assessment

        grader.assess = buggy
        first = grade_many(grader, subs, out, jobs=2, progress=False, histogram=False)
    assert [r.status for r in first] == ["graded", "graded"], [r.notes for r in first]
    before = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}
    # a verified score for both (an untrained agent in 2 games of 60 steps may score 0 points)
    assert all(row["agent_score"] != "" and row["agent_points"] for row in before.values())
    kept = {sub.student: sub.path for sub in stored_submissions(out)[0]}
    assert kept["alice"].with_name(kept["alice"].stem + KEPT_AGENT_SUFFIX).is_file()
    assert not kept["bob"].with_name(kept["bob"].stem + KEPT_AGENT_SUFFIX).exists()
    recorded = AgentRecords(out).previous("alice")
    bob_row = (out / "grades.csv").read_text().splitlines()
    with Grader(source) as grader:
        grader.assessor.agent_protocol = SHORT
        fresh = grader.assess(kept["alice"].read_bytes(), "alice", "a2c.ipynb", 1,
                              kept["alice"].with_name(kept["alice"].stem + KEPT_AGENT_SUFFIX)
                              .read_bytes())  # fmt: skip
        done = regrade(grader, out)
    assert done.moved == ["alice"], done.lines
    after = {row["student"]: row for row in read_rows(out / "grades.csv")[0]}
    assert float(after["alice"]["a2c"]) == float(before["alice"]["a2c"]) + 1.0
    for key in ("agent_score", "agent_std", "agent_points", "agent_digest"):
        assert after["alice"][key] == before["alice"][key] != "", key
    again = AgentRecords(out).previous("alice")
    assert again["verified"] == recorded["verified"] and again["seeds"] == recorded["seeds"]
    assert again.get("kept") is True and "no saved agent" not in after["alice"]["notes"]
    assert fresh.result.agent["seeds"] != recorded["seeds"]  # without the record: a new draw
    assert [line for line in bob_row if line.startswith("bob,")] == [
        line for line in (out / "grades.csv").read_text().splitlines() if line.startswith("bob,")
    ]
