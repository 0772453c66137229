"""One grade per student through part 8 and a resubmission, without running a notebook.

The grader's scores are handed to nbgrader as the pipeline hands them (``course.autograde``
with a record), so the course, its gradebook and every report are the real ones; only the
sandboxed run is left out (``tests/test_semester.py`` walks the same course with real
gradings). One module fixture walks Bob's semester once; each test reads one step of it:

1. Bob is graded (autograded 8 of 12, bonus 1.5; part 8, 3 points, waits): 9.5 of 15;
2. a grader gives part 8 2.5 in formgrader; ``python -m autograder export``; 12 of 15;
3. Bob resubmits (autograded 6, no bonus); the course's policy (``autograder.nbgrader.part8_regrading``): part 8 waits for
   a grader again, the earlier 2.5 shown beside it; every report says 6 of 15, not graded yet;
4. the grader types the same 2.5 (one action); ``nbgrader generate_feedback a2c`` (the guide's
   command) and both exports say 8.5 of 15, final.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core.course.points import course_points
from autograder.core.intake.collect import Submission
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.writing import write_outputs
from autograder.nbgrader.course import ASSIGNMENT, autograde, open_course
from autograder.nbgrader.export_plugin import CourseExport
from autograder.nbgrader.final_export import export
from autograder.nbgrader.gradebook_check import check_gradebook
from autograder.nbgrader.roster import course_roster
from autograder.nbgrader.submission_times import course_deadline, parse_deadline

pytestmark = pytest.mark.slow

DEADLINE = parse_deadline("2026-03-01T23:59+01:00")


def _scores(course, bonus: float, **zeroed: float) -> dict[str, float]:
    points = course_points(nbformat.read(course.release_notebook, as_version=4))
    scores = {key: (zeroed.get(key, top)) for key, top in points.auto.items()}
    scores["gae"] = bonus
    return scores


def _grade(
    course,
    out: Path,
    student: str,
    scores: dict[str, float],
    answer: str,
    late_seconds: float = 90,
    late_penalty=None,
) -> GradeResult:
    """What ``grade-all --course`` does with the grader's scores for ``student``, handed in
    ``late_seconds`` after the deadline (``late_penalty``: the course's rule)."""
    nb = nbformat.read(course.release_notebook, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "discussion":
            cell.source = answer
    points = course_points(nb)
    record = out.parent / f"record-{student}.json"
    record.write_text(
        json.dumps({f"test_{k}": {"score": v, "feedback": "ok"} for k, v in scores.items()})
    )
    received = out.parent / f"{student}.ipynb"
    nbformat.write(nb, received)
    when = DEADLINE.timestamp() + late_seconds
    os.utime(received, (when, when))
    result = GradeResult(
        student,
        parts={k: PartScore(v, points.auto[k], "ok") for k, v in scores.items()},
        source=str(received),
    )
    autograde(course, student, nbformat.writes(nb), record)
    assert check_gradebook(course.db_url, student, result) == []
    roster = course_roster(
        out.parent / "roster.csv", course.root, course.db_url
    )  # as grade-all --roster does
    write_outputs(
        out,
        [result],
        points,
        [Submission(student, received, received.stat().st_mtime)],
        course_root=course.root,
        db_url=course.db_url,
        histogram=False,
        deadline=course_deadline(course.db_url, ASSIGNMENT, DEADLINE),
        roster=roster,
        late_penalty=late_penalty,
    )
    return result


def _formgrader_saves(course, student: str, score: float | None) -> None:
    """What formgrader's grade API does when a score field is changed (apihandlers.py)."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gradebook:
        grade = gradebook.find_grade("discussion", "a2c", ASSIGNMENT, student)
        grade.manual_score = score
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gradebook.db.commit()


def _formgrader_view(course, student: str) -> dict:
    """The submission as formgrader's pages get it (NbGraderAPI), and the part 8 cell."""
    from nbgrader.api import Gradebook
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder.nbgrader.course import _config

    config = _config(course)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    view = api.get_submission(ASSIGNMENT, student)
    with Gradebook(course.db_url) as gradebook:
        grade = gradebook.find_grade("discussion", "a2c", ASSIGNMENT, student)
        comment = gradebook.find_comment("discussion", "a2c", ASSIGNMENT, student)
        view["field"] = grade.manual_score
        view["comment"] = comment.manual_comment or ""
    return view


def _lms(course, tmp: Path, student: str = "bob") -> dict[str, str]:
    from nbgrader.api import Gradebook

    dest = tmp / "lms.csv"
    with Gradebook(course.db_url) as gradebook:
        CourseExport(to=str(dest)).export(gradebook)
    return {row["student_id"]: row for row in csv.DictReader(dest.open())}[student]


def _nbgrader(course, *args: str) -> str:
    """``nbgrader ARGS`` run in the course folder, as the guide runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course.root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def _snapshot(course, out: Path, tmp: Path, student: str = "bob") -> dict:
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    return {
        "row": rows[student],
        "changes": (out / "changes.txt").read_text(),
        "summary": (out / "summary.txt").read_text(),
        "lms": _lms(course, tmp, student),
        "formgrader": _formgrader_view(course, student),
    }


@pytest.fixture(scope="module")
def semester(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("part8")
    (tmp / "roster.csv").write_text(
        "id,first_name,last_name,email\nbob,Bob,Builder,bob@uni.example\n"
    )
    course, out = open_course(tmp / "course"), tmp / "out"
    steps = {}
    _grade(course, out, "bob", _scores(course, 1.5, a2c=0.0), "The curve rose.")
    steps["first"] = _snapshot(course, out, tmp)
    _formgrader_saves(course, "bob", 2.5)
    steps["export"] = export(course.root, out)
    steps["graded"] = _snapshot(course, out, tmp)
    steps["graded"]["feedback"] = (out / "feedback" / "bob.html").read_text()
    _grade(
        course, out, "bob", _scores(course, 0.0, a2c=0.0, policy=0.0), "The curve rose, then fell."
    )
    steps["resubmitted"] = _snapshot(course, out, tmp)
    steps["history"] = (out / "history.txt").read_text()
    steps["command"] = _nbgrader(course, "generate_feedback", ASSIGNMENT)  # the guide's
    steps["resubmitted"]["feedback"] = course.feedback_html("bob").read_text()
    _formgrader_saves(course, "bob", 2.5)  # the same score, typed into an empty field
    steps["command2"] = _nbgrader(course, "generate_feedback", ASSIGNMENT)
    steps["confirmed_page"] = course.feedback_html("bob").read_text()
    steps["confirmed"] = _snapshot(course, out, tmp)  # before export: the gradebook's view
    steps["export2"] = export(course.root, out)
    steps["exported"] = _snapshot(course, out, tmp)
    steps["exported"]["feedback"] = (out / "feedback" / "bob.html").read_text()
    return steps


def test_first_grading_waits_for_part_8(semester):
    first = semester["first"]
    row, lms, view = first["row"], first["lms"], first["formgrader"]
    assert (row["total"], row["max_total"], row["discussion"]) == ("9.5", "15", "not graded yet")
    assert "added    bob: 9.5 of 15 (part 8 not graded yet)" in first["changes"]
    assert (lms["score"], lms["max_score"], lms["part_8"]) == ("9.5", "15", "not graded yet")
    assert view["needs_manual_grade"] and view["score"] == 9.5
    assert view["max_score"] == 15  # the bonus is nbgrader's extra credit, not in full marks
    assert (row["minutes_late"], row["submitted_at"]) == ("2", "2026-03-01T23:00:30+00:00")
    assert view["timestamp"].startswith("2026-03-01T23:00:30")  # formgrader: beside the due date
    assert (lms["first_name"], lms["last_name"], lms["email"]) == (
        "Bob", "Builder", "bob@uni.example",
    )  # fmt: skip
    assert (
        lms["duedate"].startswith("2026-03-01 22:59:00")
        and "late: 1 submission" in first["summary"]
    )


def test_part_8_graded_then_exported_agrees_everywhere(semester):
    graded = semester["graded"]
    row, lms, view = graded["row"], graded["lms"], graded["formgrader"]
    assert (row["total"], row["discussion"]) == ("12", "2.5")
    assert (lms["score"], lms["part_8"], lms["complete"]) == ("12", "2.5", "yes")
    assert not view["needs_manual_grade"] and view["score"] == 12
    assert "a2c: 12.0 / 15.0 points (final: every part graded)" in graded["feedback"]
    assert "gae</a> (bonus): 1.5 / 2.0" in graded["feedback"]
    assert "/ 17" not in graded["feedback"] and "/ 0.0" not in graded["feedback"]
    assert "part 8 graded for 1 of 1" in semester["export"]


def test_a_resubmission_waits_for_part_8_everywhere_with_the_earlier_score(semester):
    """CSV, change line, history, summary, nbgrader export, feedback, formgrader: 8, pending."""
    step = semester["resubmitted"]
    row, lms, view = step["row"], step["lms"], step["formgrader"]
    assert (row["total"], row["max_total"], row["discussion"]) == ("6", "15", "not graded yet")
    assert "part 8 (discussion) not graded yet" in row["notes"]
    assert "part 8 of an earlier submission (discussion): 2.5 of 3" in row["notes"]
    line = "replaced bob: 12 of 15 -> 6 of 15 (part 8 not graded yet): part 8 of an earlier "
    line += "submission (discussion): 2.5 of 3 set aside"
    assert line in step["changes"] and line in semester["history"]
    assert "discussion                    3  not graded yet (0 of 1)" in step["summary"]
    assert (lms["score"], lms["part_8"], lms["complete"]) == (
        "6", "not graded yet", "no: part 8 not graded yet",
    )  # fmt: skip
    assert "a2c: 6.0 / 15.0 points so far; part 8: not graded yet" in step["feedback"]
    assert "Part 8 of an earlier submission" not in step["feedback"]  # words for graders
    assert view["needs_manual_grade"] and view["score"] == 6 and view["field"] is None
    assert view["comment"].startswith("Part 8 of an earlier submission (discussion): 2.5 of 3")


def test_typing_the_same_score_is_one_action_and_every_report_follows(semester):
    """The guide's `nbgrader generate_feedback a2c` remakes the page; both exports agree."""
    assert "a2c: 8.5 / 15.0 points (final: every part graded)" in semester["confirmed_page"]
    assert "Skipping existing" not in semester["command2"]
    view = semester["confirmed"]["formgrader"]
    assert not view["needs_manual_grade"] and view["score"] == 8.5
    assert semester["confirmed"]["lms"]["score"] == "8.5"
    done = semester["exported"]
    assert (done["row"]["total"], done["row"]["discussion"]) == ("8.5", "2.5")
    assert (done["lms"]["part_8"], done["lms"]["complete"]) == ("2.5", "yes")
    assert "a2c: 8.5 / 15.0 points (final: every part graded)" in done["feedback"]
    assert "part 8 graded for 1 of 1" in semester["export2"]


def test_nbgraders_own_buttons_keep_one_total(tmp_path):
    """Formgrader's *Generate* (``nbgrader generate_assignment a2c --force`` in the course
    folder) keeps every maximum at 15, the bonus as extra credit; a course whose gradebook an
    older configuration's generate left at 17 is put right by ``export``; ``nbgrader export``
    leaves a roster student without a submission empty, as the kit's LMS files do."""
    from nbgrader.api import Gradebook

    (tmp_path / "roster.csv").write_text(
        "id,first_name,last_name,email\nbob,Bob,Builder,bob@uni.example\n"
        "erin,Erin,Evans,erin@uni.example\n"
    )
    course, out = open_course(tmp_path / "course"), tmp_path / "out"
    _grade(course, out, "bob", _scores(course, 2.0), "The curve rose.")
    _formgrader_saves(course, "bob", 3.0)

    def maxima() -> tuple[float, float, float]:
        view = _formgrader_view(course, "bob")
        with Gradebook(course.db_url) as gradebook:
            notebook = gradebook.find_submission_notebook("a2c", ASSIGNMENT, "bob")
            return view["max_score"], notebook.max_code_score, view["score"]

    assert maxima() == (15.0, 12.0, 17.0)
    _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")  # formgrader's Generate
    assert maxima() == (15.0, 12.0, 17.0)
    nbgrader_csv = tmp_path / "nbgrader.csv"
    _nbgrader(course, "export", "--to", str(nbgrader_csv))
    rows = {row["student_id"]: row for row in csv.DictReader(nbgrader_csv.open())}
    bob, erin = rows["bob"], rows["erin"]
    assert (bob["score"], bob["max_score"], bob["part_8"]) == ("17", "15", "3")
    assert (erin["raw_score"], erin["score"], erin["part_8"], erin["max_score"]) == ("", "", "", "15")
    assert erin["complete"] == "no: not submitted"
    # an older course: the bonus counted in full marks again, until the kit's export
    with Gradebook(course.db_url) as gradebook:
        gradebook.find_grade_cell("test_gae", "a2c", ASSIGNMENT).max_score = 2.0
        gradebook.db.commit()
    assert maxima()[0] == 17.0
    done = export(course.root, out, feedback=False)
    assert maxima() == (15.0, 12.0, 17.0) and "part 8 graded for 1 of 1" in done
    long_rows = list(csv.DictReader((out / "lms" / "grades_long.csv").open()))
    assert [(r["points"], r["status"]) for r in long_rows if r["student"] == "erin"] == [
        ("", "no submission")
    ]
