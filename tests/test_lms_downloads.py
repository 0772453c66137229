"""An LMS's own "download all submissions" zip, matched to the roster (no notebook is run here).

The zips are laid out as the LMSs write them (autograder/core/intake/lms_names.py says where
each rule comes from):

* Canvas: every file at the top, ``<lastfirst>[_LATE]_<user id>_<file id>_<file name>``, the file
  name as uploaded (``Copy of a2c.ipynb``, Canvas's ``-1`` for an upload under a name used
  before), every member dated when the zip was made;
* Moodle 4.1 and later: a folder a student, ``<Full Name>_<participant id>_assignsubmission_file``,
  the file in it as uploaded, dated when uploaded; Moodle 3.1 to 4.0 the same folder with a
  trailing ``_``; with *Download submissions in folders* off, flat files
  ``<Full Name>_<participant id>_assignsubmission_file_<file name>``.

``tests/test_semester.py``-style end-to-end: ``test_lms_downloads_graded_and_exported`` runs
``grade-all`` and ``export`` on such zips as an instructor types them.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import collect, student_id
from autograder.core.intake.lms_names import lms_name
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.lms_files import write_lms_files
from autograder.nbgrader.class_reports.writing import LATE_BY_CANVAS, write_outputs
from autograder.nbgrader.roster import NOT_ON_ROSTER, read_roster
from autograder.nbgrader.submission_times import parse_deadline

POINTS = CoursePoints({"add": 2.0}, {"discussion": 3.0})
DEADLINE = parse_deadline("2026-03-01T23:59+01:00")
#: When the instructor downloads (after the deadline): Canvas dates every member so.
DOWNLOADED = (2026, 3, 3, 9, 15, 0)
ROSTER = (
    "id,first_name,last_name,email,canvas_id,sis_user_id\n"
    "alice,Alice,Lee,alice@uni.example,10231,U1\n"
    "bob,Bob,Brown,bob@uni.example,10232,U2\n"
    "carol,Carol,Chen,carol@uni.example,10233,U3\n"
    "dave,Dave,Diaz,dave@uni.example,10234,U4\n"
    "erin,Erin,Evans,erin@uni.example,10235,U5\n"
    "sam1,Sam,Lee,sam1@uni.example,10236,U6\n"
    "sam2,Sam,Lee,sam2@uni.example,10237,U7\n"
)


def _zip(path: Path, members: dict[str, tuple[int, ...]], body: str = "{}") -> Path:
    """A zip whose members have these names and local times (as an LMS writes them)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, when in members.items():
            archive.writestr(zipfile.ZipInfo(name, when), body if name.endswith(".ipynb") else "x")
    return path


def canvas_zip(path: Path, body: str = "{}") -> Path:
    """Canvas's *Download Submissions*: Alice on time (a Colab download's name), Bob late with a
    second upload of a2c.ipynb (Canvas named it a2c-1.ipynb) beside his first, Carol's feedback
    PDF (not a notebook)."""
    return _zip(
        path,
        {
            "leealice_10231_5551234_Copy of a2c.ipynb": DOWNLOADED,
            "brownbob_LATE_10232_5551240_a2c.ipynb": DOWNLOADED,
            "brownbob_LATE_10232_5551299_a2c-1.ipynb": DOWNLOADED,
            "chencarol_10233_5551250_notes.pdf": DOWNLOADED,
        },
        body,
    )


def moodle_zip(path: Path, body: str = "{}", old: bool = False) -> Path:
    """Moodle's *Download all submissions* (folders): Dave on time, Erin late, an online text,
    and a Sam Lee the roster has twice. ``old``: Moodle 3.1 to 4.0's trailing ``_``."""
    tail = "_" if old else ""
    return _zip(
        path,
        {
            f"Dave Diaz_4321_assignsubmission_file{tail}/a2c.ipynb": (2026, 3, 1, 20, 0, 0),
            f"Erin Evans_4322_assignsubmission_file{tail}/Copy of a2c.ipynb": (2026, 3, 2, 1, 0, 0),
            "Erin Evans_4322_assignsubmission_onlinetext_/onlinetext.html": (2026, 3, 2, 1, 0, 0),
            f"Sam Lee_4323_assignsubmission_file{tail}/a2c.ipynb": (2026, 3, 1, 21, 0, 0),
        },
        body,
    )


def test_lms_names_are_read_as_the_lms_writes_them() -> None:
    canvas = lms_name("brownbob_LATE_10232_5551299_a2c-1.ipynb")
    assert (canvas.lms, canvas.name, canvas.user, canvas.late, canvas.file) == (
        "Canvas", "brownbob", "10232", True, 5551299
    )
    assert lms_name("leealice_10231_5551234_Copy of a2c.ipynb").late is False
    assert lms_name("LATE_anon_x7Qz2_5551234_a2c.ipynb").user == "anon_x7Qz2"  # anonymous
    for folder in ("Alice Lee_4321_assignsubmission_file", "Alice Lee_4321_assignsubmission_file_",
                   "Alice Lee_4321_assignsubmission_file_a2c.ipynb"):  # fmt: skip
        moodle = lms_name(folder)
        assert (moodle.lms, moodle.name, moodle.user, moodle.fallback) == (
            "Moodle", "Alice Lee", "4321", "Alice_Lee_4321"
        )
    for plain in ("alice.ipynb", "Copy of a2c - bob.ipynb", "carol", "a2c (1).ipynb"):
        assert lms_name(plain) is None
    # without a roster, every file of one student keeps one id (never the file's own number)
    assert student_id(Path("/in/brownbob_LATE_10232_5551240_a2c.ipynb")) == "brownbob_10232"
    assert student_id(Path("/in/brownbob_10232_5559999_a2c-2.ipynb")) == "brownbob_10232"


def test_canvas_and_moodle_downloads_are_matched_to_the_roster(tmp_path: Path) -> None:
    roster = read_roster(_write(tmp_path / "roster.csv", ROSTER))
    inputs = [canvas_zip(tmp_path / "submissions.zip"), moodle_zip(tmp_path / "moodle.zip")]
    (tmp_path / "scratch").mkdir()
    subs, problems = collect(inputs, tmp_path / "scratch", roster)
    by = {sub.student: sub for sub in subs}
    assert sorted(by) == ["alice", "bob", "dave", "erin"]
    assert by["alice"].matched == "Canvas user id 10231, the roster's canvas_id"
    assert by["bob"].path.name == "brownbob_LATE_10232_5551299_a2c-1.ipynb"  # the later upload
    assert (by["alice"].lms_late, by["bob"].lms_late, by["dave"].lms_late) == (False, True, None)
    assert by["dave"].matched.startswith("Moodle full name 'Dave Diaz' (participant 4321)")
    duplicate = [p for p in problems if p.student == "bob"]
    assert len(duplicate) == 1 and "5551240" in str(duplicate[0].path)
    (ambiguous,) = [p for p in problems if "Sam Lee" in p.reason]
    assert "sam1 (Sam Lee), sam2 (Sam Lee)" in ambiguous.reason
    assert "rename the folder to the student's roster id" in ambiguous.reason

    results = [
        GradeResult(sub.student, parts={"add": PartScore(2.0, 2.0, "")}, source=str(sub.path))
        for sub in subs
    ]
    out = tmp_path / "out"
    written = write_outputs(
        out, results, POINTS, subs, problems, histogram=False, deadline=DEADLINE, roster=roster
    )
    rows = {row["student"]: row for row in written.rows}
    assert all(NOT_ON_ROSTER not in rows[s]["notes"] for s in by)
    # Canvas: no time in its download, its own word on lateness; Moodle: the upload's time
    assert (rows["alice"]["submitted_from"], rows["alice"]["minutes_late"]) == ("Canvas: on time", "0")
    assert (rows["bob"]["submitted_from"], rows["bob"]["minutes_late"]) == ("Canvas: late", "")
    assert rows["bob"]["submitted_at"] == "" and LATE_BY_CANVAS in rows["bob"]["notes"]
    assert (rows["dave"]["minutes_late"], rows["erin"]["minutes_late"]) == ("0", "61")
    assert "bob (late by Canvas, minutes unknown), erin (61 min)" in written.summary
    summary = written.summary
    assert "how this run's 4 file(s) were matched to students:" in summary
    assert ("  leealice_10231_5551234_Copy of a2c.ipynb -> alice: Canvas user id 10231, "
            "the roster's canvas_id") in summary  # fmt: skip
    assert ("  Dave Diaz_4321_assignsubmission_file/a2c.ipynb -> dave: Moodle full name "
            "'Dave Diaz' (participant 4321), the roster's first_name, last_name") in summary  # fmt: skip
    assert "Sam Lee" in rows[""]["status"]  # the ambiguous file: a row that says why

    write_lms_files(written.rows, POINTS, roster, out)
    canvas = {r["ID"]: r for r in csv.DictReader((out / "lms" / "canvas.csv").open())}
    moodle = {r["ID number"]: r for r in csv.DictReader((out / "lms" / "moodle.csv").open())}
    assert [canvas[i]["a2c"] for i in ("10231", "10232", "10233")] == ["2", "2", ""]
    assert [moodle[i]["a2c"] for i in ("U4", "U5", "U6", "U7")] == ["2", "2", "", ""]


def test_without_a_roster_each_student_keeps_the_lms_ids_and_older_layouts_read(tmp_path):
    subs, problems = collect(
        [canvas_zip(tmp_path / "c.zip"), moodle_zip(tmp_path / "m.zip", old=True)], tmp_path
    )
    assert sorted(sub.student for sub in subs) == [
        "Dave_Diaz_4321", "Erin_Evans_4322", "Sam_Lee_4323", "brownbob_10232", "leealice_10231"
    ]  # fmt: skip
    assert {sub.matched for sub in subs if sub.student == "leealice_10231"} == {
        "Canvas user id 10231 (on no roster)"
    }
    assert [p.student for p in problems] == ["brownbob_10232"]  # the earlier upload
    flat = _zip(
        tmp_path / "flat.zip",
        {"Dave Diaz_4321_assignsubmission_file_a2c.ipynb": (2026, 3, 1, 20, 0, 0),
         "Erin Evans_4322_assignsubmission_file_Copy of a2c.ipynb": (2026, 3, 1, 20, 0, 0)},
    )  # fmt: skip
    roster = read_roster(_write(tmp_path / "roster.csv", ROSTER))
    subs, _ = collect([flat], tmp_path, roster)
    assert sorted(sub.student for sub in subs) == ["dave", "erin"]
    # one student's Moodle folder alone (the zip's only folder): still matched
    one = _zip(tmp_path / "one.zip", {"Dave Diaz_4321_assignsubmission_file/a2c.ipynb": DOWNLOADED})
    assert [sub.student for sub in collect([one], tmp_path, roster)[0]] == ["dave"]


def test_a_canvas_name_made_to_pass_for_anothers_gets_nobodys_grade(tmp_path: Path) -> None:
    """Mallory (Canvas user 10238) sets her sortable name so that it ends in Alice's user number:
    Canvas writes ``x_10231_10238_<file>_a2c.ipynb``, which reads as Alice's file too. It is
    graded as nobody's and the row names both; Alice's own file stays hers."""
    roster = read_roster(
        _write(tmp_path / "roster.csv", ROSTER + "mallory,Mal,Lory,m@uni.example,10238,U8\n")
    )
    archive = _zip(
        tmp_path / "submissions.zip",
        {"x_10231_10238_5551300_a2c.ipynb": DOWNLOADED,
         "leealice_10231_5551234_a2c.ipynb": DOWNLOADED},
    )  # fmt: skip
    subs, problems = collect([archive], tmp_path, roster)
    assert [sub.student for sub in subs] == ["alice"]
    assert subs[0].path.name == "leealice_10231_5551234_a2c.ipynb"
    (forged,) = problems
    assert "alice (canvas_id 10231), mallory (canvas_id 10238)" in forged.reason
    assert not forged.student  # a row of its own, never Alice's


def test_two_moodle_participants_of_one_roster_name_get_nobodys_grade(tmp_path: Path) -> None:
    """A second participant whose Moodle name is Dave's (a profile renamed, or a namesake the
    roster lacks): neither file is taken for Dave's, and each row names both participants."""
    roster = read_roster(_write(tmp_path / "roster.csv", ROSTER))
    archive = _zip(
        tmp_path / "moodle.zip",
        {"Dave Diaz_4321_assignsubmission_file/a2c.ipynb": (2026, 3, 1, 20, 0, 0),
         "Dave Diaz_4399_assignsubmission_file/a2c.ipynb": (2026, 3, 1, 21, 0, 0)},
    )  # fmt: skip
    subs, problems = collect([archive], tmp_path, roster)
    assert subs == [] and len(problems) == 2
    assert all("(Moodle 4321, Moodle 4399) are all matched to 'dave'" in p.reason for p in problems)


def test_a_roster_with_one_canvas_id_twice_is_refused(tmp_path: Path) -> None:
    twice = ROSTER + "zed,Zed,Z,z@uni.example,10231,U9\n"
    with pytest.raises(ValueError, match="canvas_id '10231' repeated"):
        read_roster(_write(tmp_path / "roster.csv", twice))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.rom
@pytest.mark.timeout(1500)
def test_lms_downloads_graded_and_exported(tmp_path: Path) -> None:
    """As an instructor types it: grade-all on the two zips the LMSs gave, with the roster and a
    course, then export: every file is its roster student's, the summary says how each was
    matched, and the Canvas and Moodle files hold those students' totals."""
    from autograder.core.isolation.bubblewrap import bwrap_works
    from tests.submissions.course import course_submission

    assert bwrap_works(), "grading runs in the sandbox (apt-get install -y bubblewrap)"
    body = nbformat.writes(course_submission())
    canvas = _zip(
        tmp_path / "a2c-submissions.zip",
        {"leealice_10231_5551234_Copy of a2c.ipynb": DOWNLOADED,
         "brownbob_LATE_10232_5551299_a2c-1.ipynb": DOWNLOADED},
        body,
    )  # fmt: skip
    moodle = _zip(
        tmp_path / "CS101-A2C-42.zip",
        {"Dave Diaz_4321_assignsubmission_file/a2c.ipynb": (2026, 3, 1, 20, 0, 0)},
        body,
    )
    roster = _write(tmp_path / "roster.csv", ROSTER)
    out, course = tmp_path / "grading-output", tmp_path / "private-a2c-grading"
    env = {**os.environ, "A2C_GRADER_TIME_SCALE": "3"}  # a loaded 2-core machine

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
            cwd=Path(__file__).resolve().parents[1], env=env, timeout=1200,
        )  # fmt: skip

    graded = run("grade-all", str(canvas), str(moodle), "--out", str(out), "--course",
                 str(course), "--roster", str(roster), "--deadline", "2026-03-01T23:59+01:00",
                 "--no-histogram", "--jobs", "2")  # fmt: skip
    assert graded.returncode == 0, graded.stderr[-3000:]
    assert "not on the roster" not in graded.stdout + graded.stderr
    assert ("Copy of a2c.ipynb -> alice: Canvas user id 10231, the roster's canvas_id"
            in graded.stdout)  # fmt: skip
    assert "a2c.ipynb -> dave: Moodle full name 'Dave Diaz'" in graded.stdout
    assert "late: 1 submission(s) after the deadline: bob (late by Canvas, minutes unknown)" in (
        graded.stdout
    )
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert sorted(rows) == ["alice", "bob", "dave"]
    assert all(row["status"] == "graded" for row in rows.values())
    exported = run("export", "--course", str(course), "--out", str(out), "--no-feedback")
    assert exported.returncode == 0, exported.stderr[-3000:]
    canvas_rows = {r["ID"]: r for r in csv.DictReader((out / "lms" / "canvas.csv").open())}
    moodle_rows = {r["ID number"]: r for r in csv.DictReader((out / "lms" / "moodle.csv").open())}
    totals = [rows[s]["total"] for s in ("alice", "bob", "dave")]
    assert all(totals) and [canvas_rows[i]["a2c"] for i in ("10231", "10232", "10234")] == totals
    assert [moodle_rows[i]["a2c"] for i in ("U1", "U2", "U4")] == totals
    assert canvas_rows["10233"]["a2c"] == ""  # Carol handed in no notebook
