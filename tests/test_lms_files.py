"""The LMS files of ``export`` (Canvas, Moodle, the long format) on a generated class.

The class is made the way grade-all and export make ``grades.csv``'s rows (``result_row``, the
late penalty, part 8 typed in formgrader), with a roster that has students who never handed in,
a student graded but not on the roster, a submission that could not be graded and a name that
a spreadsheet would run as a formula. ``tests/test_late_penalty.py`` checks the same files made
by ``export`` in a real course.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from autograder.core.course.points import CoursePoints
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.grades_csv import apply_late_penalty, result_row
from autograder.nbgrader.class_reports.lms_files import (
    CANVAS_HEAD,
    CANVAS_POINTS_POSSIBLE,
    LONG_HEAD,
    MOODLE_HEAD,
    write_lms_files,
)
from autograder.nbgrader.late_penalty import parse_late_penalty
from autograder.nbgrader.roster import RosterStudent

POINTS = CoursePoints(
    {"model": 1.0, "policy": 2.0, "compute_value_targets": 3.0, "merge_time_batch": 2.0,
     "a2c": 4.0, "gae": 2.0},
    {"discussion": 3.0},
)  # fmt: skip
RULE = parse_late_penalty("10%/day")


def _class(size: int = 40, seed: int = 0):
    """``(rows, roster)``: ``size`` graded students s00..., every fifth late, every third with
    part 8 still waiting; the roster adds five who never handed in and misses one who did."""
    draw = random.Random(seed)
    rows, roster = [], {}
    for number in range(size):
        student = f"s{number:02d}"
        parts = {
            key: PartScore(draw.choice([0.0, top / 2, top]), top, "")
            for key, top in POINTS.auto.items()
        }
        row = result_row(GradeResult(student, parts=parts), POINTS, "2026-03-02")
        row.minutes_late = 1500 * (number % 5 == 0)
        if number % 3:
            row.hand["discussion"] = draw.choice([1.0, 2.5, 3.0])
        row.count(POINTS)
        rows.append(row)
        roster[student] = RosterStudent(
            student, f"First{number}", f"Last{number}", f"{student}@uni.example",
            section=f"Section {number % 2 + 1}", canvas_id=str(9000 + number),
            sis_user_id=f"U{number:05d}", sis_login_id=f"login{number}",
        )  # fmt: skip
    rows.append(
        result_row(GradeResult("broken", status="error: the notebook is not JSON"), POINTS, "")
    )
    roster["broken"] = RosterStudent("broken", "Bro", "Ken", "broken@uni.example")
    for number in range(5):
        absent = f"absent{number}"
        roster[absent] = RosterStudent(absent, "Ab", f"Sent{number}", f"{absent}@uni.example")
    roster["s00"] = RosterStudent("s00", '=HYPERLINK("http://x")', "-2+3", "s00@uni.example")
    # a formula behind a control character, which a spreadsheet does not show
    roster["s01"] = RosterStudent(
        "s01", '\x01=HYPERLINK("http://y")', "\x02\u200b@SUM(A1)", "\x03=s01@uni.example",
        section="\x1b+1", canvas_id="9001", sis_user_id="\x01-U00001", sis_login_id="login1",
    )  # fmt: skip
    del roster[f"s{size - 1:02d}"]  # graded, but not on the roster
    apply_late_penalty(rows, RULE, POINTS)
    return rows, roster


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    rows, roster = _class()
    out = tmp_path_factory.mktemp("lms")
    lines = write_lms_files(rows, POINTS, roster, out, column="A2C (4711)")
    files = {
        name: _read(out / "lms" / f"{name}.csv") for name in ("canvas", "moodle", "grades_long")
    }
    return {"rows": {row["student"]: row for row in rows}, "lines": lines, **files}


def test_canvas_file_has_canvas_columns_points_possible_and_the_course_totals(made):
    canvas = made["canvas"]
    assert canvas[0] == [*CANVAS_HEAD, "A2C (4711)"]
    assert canvas[1] == [CANVAS_POINTS_POSSIBLE, "", "", "", "", "15"]  # full marks, no bonus
    by_login = {line[3]: line for line in canvas[2:]}
    late = by_login["login5"]  # 1500 minutes late: 2 started days, 3 points off
    assert late[:5] == ["Last5, First5", "9005", "U00005", "login5", "Section 2"]
    assert late[5] == made["rows"]["s05"]["total"]
    raw = float(made["rows"]["s05"]["raw_total"])
    assert float(late[5]) == max(0.0, raw - 3.0)
    for number in range(1, 39):
        line = by_login[f"login{number}"]
        assert line[5] == made["rows"][f"s{number:02d}"]["total"] != ""
    assert len(canvas) == 2 + 40 + 1 + 5


def test_no_submission_is_an_empty_cell_not_zero_and_zero_only_when_asked(made, tmp_path):
    canvas = {line[3]: line for line in made["canvas"][2:]}
    moodle = {line[1]: line for line in made["moodle"][1:]}
    for number in range(5):
        assert canvas[f"absent{number}"][5] == ""
        assert moodle[f"absent{number}@uni.example"][4] == ""
    assert canvas["broken"][5] == "" and moodle["broken@uni.example"][4] == ""
    assert any(
        "no submission, an empty cell" in line and "absent0" in line for line in made["lines"]
    )
    assert any("not graded" in line and "broken" in line for line in made["lines"])

    rows, roster = _class()
    write_lms_files(rows, POINTS, roster, tmp_path, missing_as_zero=True)
    zeroed = {line[3]: line for line in _read(tmp_path / "lms" / "canvas.csv")[2:]}
    assert [zeroed[f"absent{n}"][5] for n in range(5)] == ["0"] * 5
    assert zeroed["broken"][5] == ""  # not graded: a look, never a 0


def test_moodle_file_is_keyed_by_id_number_and_email(made):
    moodle = made["moodle"]
    assert moodle[0] == [*MOODLE_HEAD, "A2C (4711)"]
    line = next(line for line in moodle if line[0] == "U00007")
    assert line == ["U00007", "s07@uni.example", "First7", "Last7", made["rows"]["s07"]["total"]]


def test_long_format_has_every_item_and_the_late_penalty_on_the_total(made):
    long = made["grades_long"]
    assert long[0] == LONG_HEAD
    dave = [line for line in long if line[0] == "s05"]
    assert [line[1] for line in dave] == [*POINTS.auto, "discussion", "total"]
    row = made["rows"]["s05"]
    total = dave[-1]
    assert total == ["s05", "total", row["total"], "15", "1500", "3", total[6]]
    assert dave[0][2:4] == [row["model"], "1"] and dave[5][6] == "bonus"
    waiting = [line for line in long if line[0] == "s03"]  # part 8 not typed yet
    assert waiting[-2][1:3] == ["discussion", ""] and waiting[-2][6] == "not graded yet"
    assert "part 8 not graded yet" in waiting[-1][6]
    assert [line for line in long if line[0] == "absent1"] == [
        ["absent1", "total", "", "15", "", "", "no submission"]
    ]


def test_a_student_off_the_roster_keeps_a_row_and_names_are_never_formulas(made):
    canvas = {line[3]: line for line in made["canvas"][2:]}
    assert canvas["s39"][:5] == ["s39", "", "", "s39", ""]
    assert any("not on the roster" in line and "s39" in line for line in made["lines"])
    moodle = next(line for line in made["moodle"] if line[1] == "s00@uni.example")
    assert moodle[2] == '\'=HYPERLINK("http://x")' and moodle[3] == "'-2+3"
    assert canvas["s00"][0] == '\'-2+3, =HYPERLINK("http://x")'


def test_a_formula_behind_a_control_character_is_quoted_in_every_lms_file(made):
    """The roster's s01 has a formula behind a control character in every field: each cell of
    every file is quoted, and no control character is left."""
    canvas = next(line for line in made["canvas"][2:] if line[3] == "login1")
    assert canvas[0] == '\'@SUM(A1), =HYPERLINK("http://y")' and canvas[4] == "'+1"
    assert canvas[2] == "'-U00001"
    moodle = next(line for line in made["moodle"] if line[1].endswith("s01@uni.example"))
    assert moodle[:4] == ["'-U00001", "'=s01@uni.example", '\'=HYPERLINK("http://y")', "'@SUM(A1)"]
    for name in ("canvas", "moodle", "grades_long"):
        for line in made[name]:
            assert not any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for cell in line for ch in cell)


def test_a_bad_column_name_is_refused(tmp_path):
    rows, roster = _class(3)
    with pytest.raises(ValueError, match="--lms-column"):
        write_lms_files(rows, POINTS, roster, tmp_path, column="a\nb")
