"""What grading leaves for the instructor, without running a notebook (seconds in all).

Naming and collecting submissions, the grades CSV that accumulates by student, the one set of
totals, the files kept as received, the folders a course or a release may (not) go to, and the
text made safe for a terminal, a spreadsheet or a browser. ``tests/test_semester.py`` walks
the same points with real gradings, the way an instructor does.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.core.course.points import NOT_GRADED_YET, CoursePoints, course_points
from autograder.core.intake.collect import collect
from autograder.core.intake.markdown_safety import sanitize_markdown
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.core.reports.safe_text import csv_cell, printable
from autograder.core.reports.table import format_table
from autograder.nbgrader.class_reports.grade_row import GradeRow
from autograder.nbgrader.class_reports.grades_csv import read_rows
from autograder.nbgrader.class_reports.summary import histogram_figure, summary_text
from autograder.nbgrader.class_reports.writing import write_outputs
from autograder.nbgrader.folders import CourseFolderError, check_course_dir, keep_received
from solutions import build_notebooks as bn

ROOT = Path(__file__).resolve().parent.parent
POINTS = CoursePoints({"add": 2.0, "mul": 3.0, "gae": 2.0}, {"discussion": 3.0})


def _write(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _result(student: str, status: str = "graded", source: str = "", **scores: float):
    parts = {key: PartScore(value, POINTS.auto[key], "") for key, value in scores.items()}
    return GradeResult(student, parts=parts, status=status, source=source or f"/in/{student}")


# --- naming and collecting ---------------------------------------------------------------------


def test_a_folder_names_its_student_whatever_the_file_is_called(tmp_path: Path) -> None:
    """Does `mallory/alice.ipynb` beside `alice/a2c.ipynb` stay Mallory's, Alice keeping hers?"""
    inbox = tmp_path / "inbox"
    _write(inbox / "alice" / "a2c.ipynb")
    mallory = _write(inbox / "mallory" / "alice.ipynb")
    os.utime(mallory, (2e9, 2e9))  # newer: under file-name rules it would replace Alice's
    _write(inbox / "bob.ipynb")
    subs, problems = collect([inbox], tmp_path)
    assert {s.student: s.path.relative_to(inbox).as_posix() for s in subs} == {
        "alice": "alice/a2c.ipynb",
        "bob": "bob.ipynb",
        "mallory": "mallory/alice.ipynb",
    }
    assert problems == []


def test_links_are_refused_with_the_reason(tmp_path: Path) -> None:
    """Are a linked notebook, a linked folder and a zip member that is a link all refused?"""
    inbox = tmp_path / "inbox"
    _write(inbox / "carol.ipynb")
    (inbox / "eve.ipynb").symlink_to(ROOT / "solutions" / "a2c.ipynb")
    (inbox / "trent").symlink_to(ROOT / "solutions")
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        link = zipfile.ZipInfo("oscar/a2c.ipynb")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        bundle.writestr(link, str(ROOT / "solutions" / "a2c.ipynb"))
        bundle.writestr("peggy/a2c.ipynb", "{}")
    (tmp_path / "scratch").mkdir()
    subs, problems = collect([inbox, archive], tmp_path / "scratch")
    assert sorted(s.student for s in subs) == ["carol", "peggy"]
    reasons = {p.origin or p.path.name: p.reason for p in problems}
    assert len(reasons) == 3, reasons
    assert all("symbolic link: refused" in reason for reason in reasons.values())
    assert f"{archive}:oscar/a2c.ipynb" in reasons


def test_a_zipped_folder_is_read_from_inside_and_duplicates_keep_their_student(tmp_path):
    """`zip -r batch.zip submissions/`: named by file, not all 'submissions'; a duplicate says whose."""
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(zipfile.ZipInfo("submissions/alice.ipynb", (2024, 1, 1, 0, 0, 0)), "{}")
        bundle.writestr(zipfile.ZipInfo("submissions/bob.ipynb", (2024, 1, 1, 0, 0, 0)), "{}")
        bundle.writestr(zipfile.ZipInfo("submissions/dan/a2c.ipynb", (2024, 1, 1, 0, 0, 0)), "{}")
        bundle.writestr(
            zipfile.ZipInfo("submissions/dan/a2c (1).ipynb", (2024, 1, 2, 0, 0, 0)), "{}"
        )
    subs, problems = collect([archive], tmp_path)
    assert [s.student for s in subs] == ["alice", "bob", "dan"]
    assert subs[2].origin.endswith("batch.zip:submissions/dan/a2c (1).ipynb")
    (duplicate,) = problems
    assert duplicate.student == "dan" and duplicate.origin.endswith("dan/a2c.ipynb")


# --- the grades CSV ------------------------------------------------------------------------------


def test_a_second_run_merges_by_student_and_says_what_changed(tmp_path: Path) -> None:
    """Re-graded students replaced, others kept, hand-added columns kept, changes listed."""
    out = tmp_path / "out"
    first = [_result("alice", add=2, mul=3, gae=2), _result("bob", add=0, mul=0, gae=0)]
    write_outputs(out, first, POINTS, histogram=False)
    rows, columns = read_rows(out / "grades.csv")
    rows[0]["remark"] = "talked to her"  # a column the instructor added
    with (out / "grades.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, [*columns, "remark"])
        writer.writeheader()
        writer.writerows(rows)
    late = [_result("bob", add=2, mul=1.5, gae=0), _result("carol", add=2, mul=3, gae=0)]
    written = write_outputs(out, late, POINTS, histogram=False)
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert sorted(rows) == ["alice", "bob", "carol"]
    assert rows["alice"]["total"] == "7" and rows["alice"]["remark"] == "talked to her"
    assert rows["bob"]["total"] == "3.5" and rows["carol"]["total"] == "5"
    assert written.changes == [
        "replaced bob: 0 of 8 (part 8 not graded yet) -> 3.5 of 8 (part 8 not graded yet)",
        "added    carol: 5 of 8 (part 8 not graded yet)",
        "kept     1 earlier row(s) as they were",
    ]
    assert (out / "changes.txt").read_text().splitlines() == written.changes
    assert (out / "history.txt").read_text().count("--- ") == 2


def test_a_foreign_csv_is_never_merged_into(tmp_path: Path) -> None:
    """Is a grades.csv the grader did not write refused, before any grading, with a reason?"""
    _write(tmp_path / "out" / "grades.csv", "name,grade\nx,1\n")
    with pytest.raises(ValueError, match="not a grades CSV"):
        read_rows(tmp_path / "out" / "grades.csv")
    _write(tmp_path / "a.ipynb")
    assert main(["grade-all", str(tmp_path / "a.ipynb"), "--out", str(tmp_path / "out")]) == 2


def test_one_set_of_totals_and_part_8_not_graded_yet(tmp_path: Path) -> None:
    """Full marks 15 from the notebook; the bonus above it; part 8 'not graded yet', never 0."""
    points = course_points(nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4))
    assert points.full_marks == 15 and points.manual == {"discussion": 3.0}
    assert points.explain() == (
        "full marks 15 = 12 autograded + 3 graded by hand (discussion, part 8); "
        "bonus (gae 2) counts on top, up to 2 more"
    )
    written = write_outputs(tmp_path, [_result("alice", add=2, mul=3, gae=2)], POINTS)
    (row,) = written.rows
    assert (row["total"], row["max_total"], row["discussion"]) == ("7", "8", NOT_GRADED_YET)
    assert "part 8 (discussion) not graded yet" in row["notes"]
    summary = summary_text(written.rows, POINTS).splitlines()
    header = summary[1].split()
    assert len(header) == len(set(header)), header  # no two columns named alike
    assert any(line.startswith("discussion") and NOT_GRADED_YET in line for line in summary)
    assert summary[-2].startswith("full marks 8 = 5 autograded + 3 graded by hand")


def test_rows_that_never_ran_and_duplicates(tmp_path: Path) -> None:
    """An unreadable file is not 'sandboxed yes'; a duplicate is noted in its student's row."""
    from autograder.core.intake.collect import Problem, Submission

    older = _write(tmp_path / "in" / "dan" / "a2c.ipynb", '{"older": 1}')
    newer = _write(tmp_path / "in" / "dan" / "a2c (1).ipynb", '{"newer": 1}')
    subs = [Submission("dan", newer, 1.0)]
    duplicate = Problem(older, "duplicate for student 'dan': graded the newer", "dan")
    results = [GradeResult("dan", status="unreadable: not JSON", source=str(newer))]
    written = write_outputs(tmp_path / "out", results, POINTS, subs, [duplicate])
    (row,) = written.rows
    assert row["sandboxed"] == "not run" and row["total"] == "" and row["discussion"] == ""
    assert f"also received {older}: duplicate for student 'dan', not graded" in row["notes"]
    kept = sorted((tmp_path / "out" / "received" / "dan").iterdir())
    assert sorted(path.read_bytes() for path in kept) == sorted(
        [older.read_bytes(), newer.read_bytes()]
    )


def test_a_file_that_never_ran_is_called_so_and_is_never_late(tmp_path: Path, capsys) -> None:
    """A corrupted download is 'not run' in the table and the JSON (never 'NOT SANDBOXED' nor a
    sandbox it never entered), and grade-all lists it as not graded, never as late by its file
    date."""
    inbox = tmp_path / "inbox"
    _write(inbox / "carol.ipynb", '{"cells": [')  # a download cut short
    _write(inbox / "dave.ipynb", "<html>Sign in to continue</html>")  # an LMS's login page
    assert main(["grade", str(inbox / "carol.ipynb")]) == 1
    table = capsys.readouterr().out
    assert "not run: nothing of this file ran" in table and "NOT SANDBOXED" not in table
    assert main(["grade", str(inbox / "carol.ipynb"), "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["status"].startswith("unreadable") and printed["isolation"] == "not run"
    out = tmp_path / "out"
    args = ["grade-all", str(inbox), "--out", str(out), "--no-histogram"]
    assert main([*args, "--deadline", "2000-01-01T00:00+00:00"]) == 1
    summary = capsys.readouterr().out
    assert "late:" not in summary
    assert "not graded: 2 row(s), grades.csv says why: carol (unreadable), dave (unreadable)" in summary
    rows = {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert {(r["sandboxed"], r["minutes_late"], r["submitted_from"]) for r in rows.values()} == {
        ("not run", "", "file time")
    }


@pytest.mark.parametrize(
    ("argv", "usage", "guess"),
    [
        (["grade-all", "inbox", "--outt", "out"], "python -m autograder grade-all", "--out"),
        (["export", "--course", "c", "--missing-as-zeros"], "python -m autograder export",
         "--missing-as-zero"),
        (["similarity", "out", "--page", "3", "--relase", "x"], "python -m autograder similarity",
         "--release"),
    ],
)  # fmt: skip
def test_a_misspelled_option_gets_its_commands_usage(argv, usage, guess, capsys) -> None:
    """An option the command lacks prints that command's usage and the nearest option it has,
    as an instructor needs to fix the line (never the top-level usage)."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {usage} ") and f"(did you mean {guess}?)" in err


def test_histogram_counts_students_in_whole_numbers() -> None:
    """Are the y axes whole numbers of students, and both axes labelled?"""
    scores = {"add": 2.0, "mul": 1.0, "gae": 0.0}
    rows = [GradeRow(student=s, status="graded", scores=dict(scores)) for s in "abc"]
    figure = histogram_figure(rows, POINTS)
    for axis in [a for a in figure.axes if a.get_visible()]:
        assert axis.get_xlabel() == "points" and axis.get_ylabel() == "students"
        ticks = axis.get_yticks()
        assert all(float(t).is_integer() for t in ticks), ticks


# --- text made safe ------------------------------------------------------------------------------


def test_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    """Are =, +, -, @, tab and CR cells quoted (once, even after a merge), numbers left alone?"""
    assert [csv_cell(v) for v in ("=1+1", "+1", "-x", "@SUM(A1)", "\tx", "\rx")] == [
        "'=1+1",
        "'+1",
        "'-x",
        "'@SUM(A1)",
        "'\tx",
        "x",  # a carriage return is never kept: it could hide what follows it
    ]
    assert csv_cell("-1.5") == "-1.5" and csv_cell("14") == "14" and csv_cell("'=x") == "'=x"
    result = _result("alice", add=2, mul=3, gae=2, source='=HYPERLINK("http://x")')
    result.notes.append("@evil")
    write_outputs(tmp_path, [result], POINTS, histogram=False)
    write_outputs(tmp_path, [_result("bob", add=1, mul=1, gae=0)], POINTS, histogram=False)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows["alice"]["file"] == '\'=HYPERLINK("http://x")'
    assert rows["alice"]["notes"].endswith("; @evil")  # inside a cell, not at its start


def test_control_characters_go_before_the_formula_test(tmp_path: Path) -> None:
    """Is a cell whose formula hides behind a character a spreadsheet does not show (a control
    character, a zero-width or bidirectional mark, spaces, a full-width sign) quoted, in the
    cell function and in grades.csv, and read back as written?"""
    hidden = [
        "\x01=HYPERLINK(\"http://x\")", "\x00\x1b+1", "\u200b@SUM(A1)", "\u202e-x",
        "\ufeff=1", "  =1+1", "\n=1", "\uff1dHYPERLINK(1)", "\x7f\x85=1",
    ]  # fmt: skip
    for value in hidden:
        cell = csv_cell(value)
        assert cell.startswith("'") and csv_cell(cell) == cell, (value, cell)
        assert not any(ch in cell for ch in "\x00\x01\x1b\u200b\u202e\ufeff\x7f\x85"), cell
    assert csv_cell("\x01-1.5") == "-1.5" and csv_cell("\x01bob") == "bob"
    result = _result("alice", add=2, mul=3, gae=2, source=hidden[0])
    result.notes.append(hidden[1])
    write_outputs(tmp_path, [result], POINTS, histogram=False)
    write_outputs(tmp_path, [_result("bob", add=1, mul=1, gae=0)], POINTS, histogram=False)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows["alice"]["file"] == '\'=HYPERLINK("http://x")', rows["alice"]
    text = (tmp_path / "grades.csv").read_text(encoding="utf-8")
    assert not any(ch in text for ch in "\x00\x01\x1b"), text


def test_terminal_output_carries_no_escape_sequences() -> None:
    """Does `grade`'s table print a student's escapes and control characters as nothing?"""
    fake = "\x1b[2K\r\x1b[1Astatus: graded\x1b]0;owned\x07\x00\u202e"
    assert printable(fake) == "status: graded"
    result = _result("alice", add=2, mul=3, gae=2)
    result.notes.append(fake)
    result.parts["add"] = PartScore(2, 2, "fine\x1b[31m red\x1b[0m")
    table = format_table(result)
    assert "\x1b" not in table and "\r" not in table and "\x00" not in table
    assert "note: status: graded" in table and "fine red" in table


def test_grade_and_grade_all_give_one_total_and_name_every_unfinished_part(tmp_path) -> None:
    """`grade`'s table says 4 of 8 as grade-all's CSV does, and both name every part that
    did not finish (a syntax error's cell and an endless loop's part alike)."""
    result = _result("carol", add=2, mul=3, gae=2)
    result.manual = dict(POINTS.manual)
    result.notes.append("cell 4 (model): SyntaxError: invalid syntax")
    result.parts["mul"] = PartScore(0, 3, "Part 'mul': 0 / 3\n  FAIL [3.00 pt] x -- did not finish")
    table = format_table(result, feedback=False)
    assert "total so far    4.00       8" in table  # 2 + 0 + 2 (bonus) of 2 + 3 + 3 (part 8)
    assert "discussion          -      3  not graded yet (part 8, by hand)" in table
    assert "note: part mul did not finish: a check ran past its time limit" in table
    out = tmp_path / "out"
    write_outputs(out, [result], POINTS, histogram=False)
    row = read_rows(out / "grades.csv")[0][0]
    assert (row["total"], row["max_total"]) == ("4", "8")
    assert "SyntaxError" in row["notes"] and "part mul did not finish" in row["notes"]
    assert (
        result.as_dict()["max_total"] == 8
        and "part mul did not finish" in result.as_dict()["notes"]
    )


def test_grade_names_the_file_every_student_submits(tmp_path: Path) -> None:
    """`grade` names a file as grade-all does; the name every student submits, a2c.ipynb, after
    its folder (`Copy of a2c.ipynb` too), and a file nothing names `submission`: one file graded
    on its own is recorded nowhere, so it needs no --student."""
    from autograder.commands.grade import NEUTRAL_STUDENT, grade_student

    assert grade_student(_write(tmp_path / "carol.ipynb")) == "carol"
    assert grade_student(_write(tmp_path / "dave" / "a2c.ipynb")) == "dave"
    assert grade_student(_write(tmp_path / "Erin Park" / "Copy of a2c.ipynb")) == "Erin_Park"
    assert grade_student(Path("/a2c.ipynb")) == NEUTRAL_STUDENT == "submission"


def test_markdown_loses_scripts_handlers_and_script_links() -> None:
    """Are <script>, <img onerror> and javascript: links removed, plain markdown untouched?"""
    hostile = (
        "Curve: rose.\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
        "[a](javascript:alert(3)) [b](jav&#x61;script:alert(4)) <javascript:alert(5)>"
    )
    clean = sanitize_markdown(hostile)
    assert clean is not None
    for bad in ("<script", "onerror", 'href="javascript', "href='javascript"):
        assert bad not in clean.lower(), clean
    assert "Curve: rose." in clean
    for safe in (
        "YOUR ANSWER HERE",
        "The score **rose** to $600$ after [10M](https://x.org) steps.",
    ):
        assert sanitize_markdown(safe) is None


# --- files kept and folders refused --------------------------------------------------------------


def test_received_files_are_kept_byte_for_byte_and_never_overwritten(tmp_path: Path) -> None:
    """Same bytes kept once, new bytes kept beside them, a link never read."""
    source = tmp_path / "alice.ipynb"
    source.write_bytes(b'{"cells": []}\r\n\xef\xbb\xbf')
    first = keep_received(tmp_path / "kept", "alice", source, "20260101T000000Z")
    again = keep_received(tmp_path / "kept", "alice", source, "20260102T000000Z")
    assert first == again and first.read_bytes() == source.read_bytes()
    assert (
        first.name
        == f"20260101T000000Z-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}.ipynb"
    )
    source.write_bytes(b"{}")
    second = keep_received(tmp_path / "kept", "alice", source, "20260103T000000Z")
    assert second != first and first.read_bytes().startswith(b'{"cells"')
    (tmp_path / "link.ipynb").symlink_to(source)
    assert keep_received(tmp_path / "kept", "alice", tmp_path / "link.ipynb", "x") is None
    with pytest.raises(ValueError, match="plain id"):
        keep_received(tmp_path / "kept", "../bob", source, "x")


def _git_tree(folder: Path, student: bool) -> Path:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    if student:
        (folder / "course_lib").mkdir()
        (folder / "notebooks").mkdir()
    return folder


def test_a_course_inside_a_git_work_tree_is_refused(tmp_path: Path, capsys) -> None:
    """Student clone: always refused; another work tree: only with --allow-git; nothing written."""
    clone = _git_tree(tmp_path / "a2c-course", student=True)
    other = _git_tree(tmp_path / "private", student=False)
    with pytest.raises(CourseFolderError, match="student distribution"):
        check_course_dir(clone / "grading", allow_git=True)
    with pytest.raises(CourseFolderError, match="--allow-git"):
        check_course_dir(other / "grading")
    assert check_course_dir(other / "grading", allow_git=True) == (other / "grading").resolve()
    assert check_course_dir(tmp_path / "a2c-grading") == (tmp_path / "a2c-grading").resolve()
    notebook = _write(tmp_path / "alice.ipynb")
    status = main(
        ["grade-all", str(notebook), "--course", str(clone), "--out", str(tmp_path / "o")]
    )
    assert status == 2 and "student distribution" in capsys.readouterr().err
    assert not (clone / "source").exists() and not (clone / "gradebook.db").exists()
    assert not (tmp_path / "o").exists()


def _build_student_dir(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "solutions.build_notebooks", "--student-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_the_release_never_goes_into_a_course_or_a_folder_with_answers(tmp_path: Path) -> None:
    """Is --student-dir refused for an nbgrader course or a file with solution markers, before
    anything is written, and does the placeholder address print what to set?"""
    course = tmp_path / "a2c-grading"
    _write(course / "gradebook.db", "")
    _write(course / "source" / "a2c" / "a2c.ipynb")
    leaky = tmp_path / "a2c-student"
    _write(leaky / "notes" / "old.py", "### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    before = {p: p.stat().st_mtime_ns for p in (bn.SOURCE_NOTEBOOK, bn.RELEASE_NOTEBOOK)}
    done = _build_student_dir(course)
    assert done.returncode == 2 and "nbgrader course" in done.stderr, done.stderr
    done = _build_student_dir(leaky)
    assert done.returncode == 2 and "notes/old.py ('### BEGIN SOLUTION')" in done.stderr
    assert sorted(p.name for p in leaky.iterdir()) == ["notes"]
    assert {p: p.stat().st_mtime_ns for p in before} == before
    if bn.STUDENT_REPO_URL == bn.PLACEHOLDER_REPO_URL:
        assert "STUDENT_REPO_URL is still the placeholder" in done.stderr
        assert "Set STUDENT_REPO_URL in solutions/build_notebooks.py" in done.stderr
    assert bn.placeholder_warning("https://github.com/my-org/a2c-fall") == ""


def test_change_lines_name_every_row_a_run_changed_and_why() -> None:
    """A row the course changed (part 8 read, a penalty) is `updated` with why, never counted as
    kept; a resubmission whose total reads the same still says its part 8 was set aside."""
    from autograder.nbgrader.class_reports.change_lines import change_lines

    def row(student: str, total: str, discussion: str, notes: str = "", penalty: str = "0"):
        return GradeRow.from_cells(
            {"student": student, "status": "graded", "total": total, "raw_total": total,
             "max_total": "15", "discussion": discussion, "late_penalty": penalty,
             "notes": notes},
            CoursePoints({}, {"discussion": 3.0}),
        )  # fmt: skip

    waiting = "not graded yet"
    earlier = "part 8 of an earlier submission (discussion): 2.5 of 3"
    old = [row("alice", "14", waiting), row("erin", "14", waiting), row("mallory", "0", "0")]
    new = [row("alice", "17", "3"), row("erin", "14", waiting, earlier), row("mallory", "0", "0")]
    lines, updated = change_lines(old, new, {"erin"}, ["discussion"])
    assert lines == [
        "replaced erin: 14 of 15 (part 8 not graded yet) (total unchanged): "
        f"{earlier} set aside: part 8 of this submission waits for a grader",
        "updated  alice: 14 of 15 (part 8 not graded yet) -> 17 of 15: part 8 (discussion) "
        "read from the gradebook",
        "kept     1 earlier row(s) as they were",
    ]
    assert updated == ["alice"]
    late = [row("alice", "15.5", "3", penalty="1.5"), *new[1:]]
    lines, _ = change_lines(new, late, set(), ["discussion"])
    assert (
        lines[0]
        == "updated  alice: 17 of 15 -> 15.5 of 15 (late penalty 1.5 from 15.5): late penalty 1.5 (was 0)"
    )
