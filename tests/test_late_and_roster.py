"""Submission times, the deadline, minutes late and the roster, without running a notebook.

``tests/test_part8_policy.py`` checks that the same times and names reach a real course's
gradebook (formgrader, ``nbgrader export``).
"""

from __future__ import annotations

import csv
import os
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import Submission, collect
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.writing import write_outputs
from autograder.nbgrader.roster import NOT_ON_ROSTER, read_roster
from autograder.nbgrader.submission_times import (
    minutes_late,
    parse_deadline,
    submission_time,
)

POINTS = CoursePoints({"add": 2.0}, {"discussion": 3.0})
DEADLINE = parse_deadline("2026-03-01T23:59+01:00")


def _notebook(path: Path, when: datetime) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def test_the_exchange_timestamp_wins_then_the_zip_member_then_the_file(tmp_path: Path) -> None:
    on_time = DEADLINE - timedelta(hours=1)
    exchange = _notebook(tmp_path / "submitted/erin/a2c/a2c.ipynb", DEADLINE + timedelta(days=3))
    (exchange.parent / "timestamp.txt").write_text("2026-03-01 23:30:00.000000 UTC")
    found = submission_time(exchange, exchange=exchange.parent)
    assert found.source == "nbgrader exchange" and found.iso() == "2026-03-01T23:30:00+00:00"
    assert minutes_late(found.when, DEADLINE) == 31  # 22:58:00 UTC was the deadline

    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as handle:  # a zip keeps local time, no time zone
        handle.writestr(zipfile.ZipInfo("bob/a2c.ipynb", (2026, 3, 2, 0, 30, 0)), "{}")
    unpacked = _notebook(tmp_path / "scratch/bob/a2c.ipynb", on_time)  # extraction's time
    found = submission_time(unpacked, f"{archive}:bob/a2c.ipynb", DEADLINE)
    assert found.source == "zip member time" and minutes_late(found.when, DEADLINE) == 31

    plain = _notebook(tmp_path / "carol.ipynb", on_time)
    found = submission_time(plain, "", DEADLINE)
    assert found.source == "file time" and minutes_late(found.when, DEADLINE) == 0
    assert minutes_late(DEADLINE + timedelta(seconds=1), DEADLINE) == 1
    assert minutes_late(DEADLINE + timedelta(days=9), None) == 0


def test_a_deadline_needs_its_time_zone() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        parse_deadline("2026-03-01T23:59")
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_deadline("next friday")
    assert parse_deadline("2026-03-01T22:59Z") == DEADLINE


def test_the_roster_is_checked_and_names_every_problem(tmp_path: Path) -> None:
    good = tmp_path / "roster.csv"
    good.write_text("ID,First_Name,last_name,email\nbob,Bob,Builder,bob@uni.edu\nann,Ann,,\n")
    roster = read_roster(good)
    assert roster["bob"].email == "bob@uni.edu" and roster["ann"].first_name == "Ann"
    (tmp_path / "no_id.csv").write_text("name,email\nbob,bob@uni.edu\n")
    with pytest.raises(ValueError, match="no `id` column"):
        read_roster(tmp_path / "no_id.csv")
    (tmp_path / "twice.csv").write_text("id\nbob\nbob\n")
    with pytest.raises(ValueError, match="row 3: id 'bob' repeated"):
        read_roster(tmp_path / "twice.csv")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_roster(tmp_path / "missing.csv")


def test_grades_csv_and_summary_show_minutes_late_and_flag_strangers(tmp_path: Path) -> None:
    """Carol 31 minutes late, Bob on time, Zed not on the roster but graded all the same."""
    inbox, rows = tmp_path / "in", {}
    late = DEADLINE + timedelta(minutes=30, seconds=5)
    files = {
        "bob": _notebook(inbox / "bob.ipynb", DEADLINE - timedelta(hours=2)),
        "carol": _notebook(inbox / "carol.ipynb", late),
        "zed": _notebook(inbox / "zed.ipynb", DEADLINE),
    }
    subs = [Submission(name, path, path.stat().st_mtime) for name, path in files.items()]
    results = [
        GradeResult(name, parts={"add": PartScore(2.0, 2.0, "")}, source=str(path))
        for name, path in files.items()
    ]
    roster = read_roster(_write_roster(tmp_path))
    written = write_outputs(
        tmp_path / "out", results, POINTS, subs, histogram=False, deadline=DEADLINE, roster=roster
    )
    with (tmp_path / "out" / "grades.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert [rows[name]["minutes_late"] for name in ("bob", "carol", "zed")] == ["0", "31", "0"]
    assert rows["carol"]["submitted_at"] == late.astimezone(timezone.utc).isoformat()
    assert NOT_ON_ROSTER in rows["zed"]["notes"] and rows["zed"]["total"] == "2"
    assert NOT_ON_ROSTER not in rows["bob"]["notes"]
    assert "late: 1 submission(s) after the deadline: carol (31 min)" in written.summary


def test_a_timestamp_the_student_wrote_never_counts(tmp_path: Path) -> None:
    """A year late, with a ``timestamp.txt`` of the student's own beside the notebook: in a
    per-student upload, and in the student's sub-folder of an nbgrader exchange tree (with a
    newer copy of the notebook there, which is graded). Only the exchange's own file counts,
    and the row says where each time came from."""
    year_late = DEADLINE + timedelta(days=365)
    planted = "2026-03-01 12:00:00.000000 UTC"  # on time, says the student
    upload = tmp_path / "uploads"
    _notebook(upload / "mallory" / "a2c.ipynb", year_late)
    (upload / "mallory" / "timestamp.txt").write_text(planted)
    exchange = tmp_path / "course" / "submitted" / "trudy" / "a2c"
    _notebook(exchange / "a2c.ipynb", year_late - timedelta(days=1))
    (exchange / "timestamp.txt").write_text("2027-03-01 23:00:00.000000 UTC")  # the exchange's
    _notebook(exchange / "mine" / "a2c.ipynb", year_late)  # newer: the one graded
    (exchange / "mine" / "timestamp.txt").write_text(planted)
    subs, _ = collect([upload, tmp_path / "course"], tmp_path)
    assert {sub.student: sub.exchange for sub in subs} == {"mallory": None, "trudy": exchange}
    results = [
        GradeResult(sub.student, parts={"add": PartScore(2.0, 2.0, "")}, source=str(sub.path))
        for sub in subs
    ]
    write_outputs(tmp_path / "out", results, POINTS, subs, histogram=False, deadline=DEADLINE)
    with (tmp_path / "out" / "grades.csv").open() as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    mallory, trudy = rows["mallory"], rows["trudy"]
    assert mallory["submitted_from"] == "file time" and int(mallory["minutes_late"]) > 500_000
    assert mallory["submitted_at"] == year_late.astimezone(timezone.utc).isoformat()
    assert trudy["submitted_from"] == "nbgrader exchange", trudy
    assert trudy["submitted_at"] == "2027-03-01T23:00:00+00:00"
    assert int(trudy["minutes_late"]) > 500_000


def _write_roster(folder: Path) -> Path:
    path = folder / "roster.csv"
    path.write_text("id,first_name,last_name,email\nbob,Bob,B,b@x\ncarol,Carol,C,c@x\n")
    return path
