"""The late penalty through a whole semester, and names without a roster, in a real course.

The grader's scores go to nbgrader as the pipeline hands them (``tests/test_part8_policy.py``'s
helpers), so the gradebook, formgrader's API, both exports and the feedback are the real ones.
Dave hands in 26 hours late under the rule ``10%/day`` (10% of full marks, 15, per started day:
2 days, 3 points); Erin is on no roster. One module fixture walks the semester once:

1. grade-all: Dave has 10 autograded points (bonus included), 7 after the penalty, part 8 waits;
2. a grader gives part 8 2.5 in formgrader; ``export``: 12.5 raw, 9.5;
3. ``export`` again changes nothing (the penalty is never applied twice);
4. Dave resubmits 50 hours late (3 started days, 4.5 points): 14 raw, 9.5, part 8 waits;
5. the grader types the same 2.5; ``nbgrader generate_feedback a2c`` and ``export``: 16.5, 12,
   and the same 12 in the LMS files export writes (Frank, on the roster, never handed in).
"""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.core.course.points import course_points
from autograder.core.intake.collect import Submission
from autograder.nbgrader.class_reports.writing import write_reports
from autograder.nbgrader.course import ASSIGNMENT, generate_feedback, open_course, run_nbgrader
from autograder.nbgrader.final_export import export
from autograder.nbgrader.late_penalty import LatePenalty, course_late_penalty, parse_late_penalty
from tests.test_part8_policy import _formgrader_saves, _grade, _nbgrader, _scores, _snapshot

pytestmark = pytest.mark.slow

HOURS = 3600.0


def test_a_rule_reads_percent_of_full_marks_per_started_unit_with_a_cap() -> None:
    rule = parse_late_penalty("10%/day")
    assert rule == LatePenalty(10.0, "day") and rule.rule() == "10%/day"
    assert [rule.points(m, 15.0) for m in (0, 1, 1440, 1441, 20000)] == [0, 1.5, 1.5, 3.0, 15.0]
    capped = parse_late_penalty(" 2% / hour , max=30% ")
    assert capped.rule() == "2%/hour,max=30%" and capped.points(61, 15.0) == 0.6
    assert capped.points(60 * 100, 15.0) == 4.5  # 200% asked, 30% at most
    assert parse_late_penalty("none") is None
    for bad in ("10", "10%/fortnight", "150%/day", "10%/day,max=120%", "-5%/day"):
        with pytest.raises(ValueError, match="--late-penalty"):
            parse_late_penalty(bad)


def test_the_course_keeps_its_rule_until_none(tmp_path: Path) -> None:
    assert course_late_penalty(None, tmp_path) is None  # the default: no penalty
    assert course_late_penalty("5%/hour", tmp_path) == LatePenalty(5.0, "hour")
    assert course_late_penalty(None, tmp_path) == LatePenalty(5.0, "hour")
    assert course_late_penalty("none", tmp_path) is None
    assert course_late_penalty(None, tmp_path) is None


def test_the_command_line_refuses_a_penalty_without_a_course_or_a_bad_rule(tmp_path, capsys):
    for extra, message in (
        (["--late-penalty", "10%/day"], "--late-penalty needs --course"),
        (["--late-penalty", "ten", "--course", str(tmp_path / "c")], "is not a rule"),
    ):
        assert main(["grade-all", str(tmp_path), "--out", str(tmp_path / "o"), *extra]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "c").exists() and not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def late(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("late")
    (tmp / "roster.csv").write_text(
        "id,first_name,last_name,email,section,canvas_id,sis_user_id\n"
        "dave,Dave,Diaz,d@uni.example,Lab 2,10234,U1004\n"
        "frank,Frank,Fox,f@uni.example,Lab 1,10236,U1006\n"  # never hands in
    )
    course, out = open_course(tmp / "course"), tmp / "out"
    rule = course_late_penalty("10%/day", course.root)
    steps: dict = {}
    dave = _grade(course, out, "dave", _scores(course, 2.0, a2c=0.0), "It", 26 * HOURS, rule)
    steps["first"] = _snapshot(course, out, tmp, "dave")
    run_nbgrader(course, "generate_feedback", {"assignment_id": ASSIGNMENT})
    steps["first"]["feedback"] = course.feedback_html("dave").read_text()
    _grade(course, out, "erin", _scores(course, 2.0), "Flat.", -HOURS, rule)  # on time
    # grade-all's reports (Dave's file again): his page made again from the course, Erin named
    points = course_points(nbformat.read(course.release_notebook, as_version=4))
    received = Path(dave.source)
    subs = [Submission("dave", received, received.stat().st_mtime)]
    write_reports(
        course,
        points,
        out,
        [dave],
        subs,
        [],
        histogram=False,
        feedback_dir=out / "feedback",
        make_feedback=generate_feedback,
    )
    steps["first"]["grade_all_page"] = (out / "feedback" / "dave.html").read_text()
    steps["erin"] = _snapshot(course, out, tmp, "erin")
    _formgrader_saves(course, "dave", 2.5)
    steps["export"] = export(course.root, out)
    steps["graded"] = _snapshot(course, out, tmp, "dave")
    steps["graded"]["feedback"] = (out / "feedback" / "dave.html").read_text()
    steps["export_again"] = export(course.root, out)
    steps["again"] = _snapshot(course, out, tmp, "dave")
    rule = course_late_penalty(None, course.root)  # later runs: the course's rule
    _grade(course, out, "dave", _scores(course, 2.0), "It rose, then fell.", 50 * HOURS, rule)
    steps["resubmitted"] = _snapshot(course, out, tmp, "dave")
    steps["history"] = (out / "history.txt").read_text()
    run_nbgrader(course, "generate_feedback", {"assignment_id": ASSIGNMENT})
    steps["resubmitted"]["feedback"] = course.feedback_html("dave").read_text()
    _formgrader_saves(course, "dave", 2.5)
    steps["export2"] = export(course.root, out)
    steps["final"] = _snapshot(course, out, tmp, "dave")
    steps["final"]["feedback"] = (out / "feedback" / "dave.html").read_text()
    steps["lms"] = {
        name: list(csv.reader((out / "lms" / f"{name}.csv").open(encoding="utf-8")))
        for name in ("canvas", "moodle", "grades_long")
    }
    command = ["export", "--course", str(course.root), "--out", str(out), "--no-feedback"]
    assert main([*command, "--missing-as-zero", "--lms-column", "A2C (48213)"]) == 0
    steps["lms_asked"] = list(csv.reader((out / "lms" / "canvas.csv").open(encoding="utf-8")))
    _nbgrader(course, "export")
    with (course.root / "grades.csv").open() as handle:
        steps["nbgrader_export"] = {row["student_id"]: row for row in csv.DictReader(handle)}
    return steps


def _numbers(step: dict) -> tuple:
    row, lms = step["row"], step["lms"]
    return (
        (row["raw_total"], row["late_penalty"], row["total"]),
        (lms["raw_score"], lms["late_submission_penalty"], lms["score"]),
    )


def test_first_grading_takes_the_penalty_off_everywhere(late):
    step = late["first"]
    row, view = step["row"], step["formgrader"]
    assert row["minutes_late"] == "1560" and row["discussion"] == "not graded yet"
    assert _numbers(step) == (("10", "3", "7"), ("10", "3", "7"))
    assert (
        "added    dave: 7 of 15 (late penalty 3 from 10) (part 8 not graded yet)"
        in (step["changes"])
    )
    assert "dave (1560 min, late penalty 3)" in step["summary"]
    assert "totals are after the late penalty" in step["summary"]
    assert view["score"] == 10 and view["max_score"] == 15  # formgrader: the raw score...
    assert view["comment"].startswith("Late submission: 1560 minute(s) after the deadline; ")
    assert "late penalty 3 point(s) (10% of full marks per started day late)" in view["comment"]
    for page in (step["feedback"], step["grade_all_page"]):
        assert "a2c: 7.0 / 15.0 points so far; part 8: not graded yet" in page
        assert "10.0 points before the late penalty, 3.0 taken off for lateness" in page


def test_part_8_graded_and_exported_keeps_one_penalty(late):
    assert _numbers(late["graded"]) == (("12.5", "3", "9.5"), ("12.5", "3", "9.5"))
    assert "a2c: 9.5 / 15.0 points (final: every part graded)" in late["graded"]["feedback"]
    assert "Late submission penalty: -3.0" in late["graded"]["feedback"]
    assert _numbers(late["again"]) == _numbers(late["graded"])  # export twice: no second one
    assert late["export_again"] == late["export"]
    assert late["graded"]["formgrader"]["comment"].count("Late submission:") == 1


def test_a_resubmission_is_penalised_by_its_own_time_once(late):
    step = late["resubmitted"]
    assert step["row"]["minutes_late"] == "3000" and step["row"]["discussion"] == "not graded yet"
    assert _numbers(step) == (("14", "4.5", "9.5"), ("14", "4.5", "9.5"))
    line = "replaced dave: 9.5 of 15 (late penalty 3 from 12.5) -> 9.5 of 15 (late penalty 4.5"
    assert line in step["changes"] and line in late["history"]
    comment = step["formgrader"]["comment"]
    assert comment.startswith("Part 8 of an earlier submission (discussion): 2.5 of 3")
    assert comment.count("Late submission:") == 1 and "3000 minute(s)" in comment
    assert "a2c: 9.5 / 15.0 points so far; part 8: not graded yet" in step["feedback"]


def test_the_final_numbers_agree_in_every_report(late):
    step = late["final"]
    assert _numbers(step) == (("16.5", "4.5", "12"), ("16.5", "4.5", "12"))
    assert step["row"]["discussion"] == "2.5" and step["formgrader"]["score"] == 16.5
    assert "a2c: 12.0 / 15.0 points (final: every part graded)" in step["feedback"]
    assert "16.5 points before the late penalty, 4.5 taken off for lateness" in step["feedback"]
    nbgrader = late["nbgrader_export"]["dave"]  # `nbgrader export` in the course folder
    assert (nbgrader["raw_score"], nbgrader["late_submission_penalty"], nbgrader["score"]) == (
        "16.5", "4.5", "12",
    )  # fmt: skip
    assert (nbgrader["first_name"], nbgrader["last_name"]) == ("Dave", "Diaz")


def test_no_penalty_on_time_and_a_student_without_a_roster_entry_is_named_by_id(late):
    step = late["erin"]
    assert _numbers(step) == (("14", "0", "14"), ("14", "0", "14"))
    assert "not on the roster" in step["row"]["notes"]
    view = step["formgrader"]  # formgrader lists "erin, ", never "None, None"
    assert (view["last_name"], view["first_name"]) == ("erin", "")
    assert "Late submission" not in view["comment"]
    assert (step["lms"]["last_name"], step["lms"]["first_name"]) == ("", "")
    assert late["nbgrader_export"]["erin"]["last_name"] == ""


def test_the_lms_files_carry_the_final_total_and_leave_a_missing_student_empty(late):
    """export's Canvas, Moodle and long-format files: Dave's 12 (after the penalty), Frank (on
    the roster, no submission) an empty cell, Erin (not on the roster) by id only."""
    canvas = {line[0]: line for line in late["lms"]["canvas"]}
    assert canvas["Student"][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas["    Points Possible"][5] == "15"
    assert canvas["Diaz, Dave"] == ["Diaz, Dave", "10234", "U1004", "dave", "Lab 2", "12"]
    assert canvas["Fox, Frank"][5] == "" and canvas["erin"][3:] == ["erin", "", "14"]
    moodle = {line[1]: line for line in late["lms"]["moodle"]}
    assert moodle["d@uni.example"] == ["U1004", "d@uni.example", "Dave", "Diaz", "12"]
    assert moodle["f@uni.example"][4] == ""
    total = [line for line in late["lms"]["grades_long"] if line[:2] == ["dave", "total"]]
    assert total == [["dave", "total", "12", "15", "3000", "4.5", "graded"]]
    assert "no submission, an empty cell" in late["export2"] and "frank" in late["export2"]
    asked = {line[0]: line for line in late["lms_asked"]}  # export --missing-as-zero
    assert asked["Student"][5] == "A2C (48213)" and asked["Fox, Frank"][5] == "0"
    assert asked["Diaz, Dave"][5] == "12"
