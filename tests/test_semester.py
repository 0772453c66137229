"""A semester walked the way the instructor guide (``autograder/README.md``) walks it.

Four real gradings in all (module fixture): a first batch (Alice's reference answers with a
hostile part 8 answer, Mallory's untouched release saved as ``mallory/alice.ipynb``, Dan's
two files of which the newer is broken, and a link to the solution notebook), nbgrader's own
``autograde`` run by hand in the course folder (plain and ``--force``) and through
formgrader's API, a late batch into the same ``--out`` (Carol), part 8 graded as formgrader
grades it (Alice 2.5, Carol 2), Carol's resubmission 154 minutes after the deadline with
``--deadline`` and ``--late-penalty 10%/day``, then ``python -m autograder export``. Every
command is the guide's; after each one, ``grades.csv``, the change lines and the feedback pages
must say the same thing, and the pages nothing meant for graders.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from autograder.core.isolation.bubblewrap import bwrap_works
from tests.submissions.course import course_submission

pytestmark = [pytest.mark.rom, pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parent.parent
#: The deadline of the resubmission run, and the times of the files (the first ones on time).
DEADLINE = "2026-03-01T23:59+01:00"
ON_TIME = datetime(2026, 3, 1, 20, 0, tzinfo=timezone.utc).timestamp()
LATE_154_MINUTES = datetime(2026, 3, 2, 1, 32, 10, tzinfo=timezone.utc).timestamp()
HOSTILE_ANSWER = (
    "The score rose to 600.\n\n<script>document.title = 'PWNED'</script>\n\n"
    "<img src=x onerror=\"document.title='PWNED'\">\n\n[my curves](javascript:alert('PWNED'))"
)


def _run(*args: str, cwd: Path, module: str = "autograder") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, *(["-m", module] if module else []), *args]
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "A2C_GRADER_TIME_SCALE": "3"},  # a loaded 2-core machine
    )


def _rows(out: Path) -> dict[str, dict[str, str]]:
    return {
        row["student"] or row["file"]: row for row in csv.DictReader((out / "grades.csv").open())
    }


def _digest(folder: Path) -> str:
    hashes = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            hashes.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return hashes.hexdigest()


def _gradebook(course: Path) -> dict[str, dict[str, tuple]]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            student.id: {
                grade.name: (
                    grade.auto_score,
                    grade.manual_score,
                    grade.needs_manual_grade,
                    grade.extra_credit,
                )
                for grade in gradebook.find_submission_notebook("a2c", "a2c", student.id).grades
            }
            for student in gradebook.students
        }


@pytest.fixture(scope="module")
def semester(tmp_path_factory):
    assert bwrap_works(), "grading runs in the sandbox (apt-get install -y bubblewrap)"
    home = tmp_path_factory.mktemp("semester")
    inbox, late = home / "submissions", home / "late"
    alice = course_submission(replace={"discussion": HOSTILE_ANSWER})
    (inbox / "alice").mkdir(parents=True)
    nbformat.write(alice, inbox / "alice" / "a2c.ipynb")
    (inbox / "mallory").mkdir()
    (inbox / "mallory" / "alice.ipynb").write_bytes((ROOT / "notebooks" / "a2c.ipynb").read_bytes())
    for path in (inbox / "alice" / "a2c.ipynb", inbox / "mallory" / "alice.ipynb"):
        os.utime(path, (ON_TIME, ON_TIME))
    (inbox / "dan").mkdir()
    (inbox / "dan" / "a2c.ipynb").write_bytes((ROOT / "notebooks" / "a2c.ipynb").read_bytes())
    os.utime(inbox / "dan" / "a2c.ipynb", (1e9, 1e9))
    (inbox / "dan" / "a2c (1).ipynb").write_text("{ this is not json")
    (inbox / "eve.ipynb").symlink_to(ROOT / "solutions" / "a2c.ipynb")
    late.mkdir()
    nbformat.write(course_submission(), late / "carol.ipynb")
    os.utime(late / "carol.ipynb", (ON_TIME, ON_TIME))
    resubmit = home / "resubmit" / "carol"
    resubmit.mkdir(parents=True)
    nbformat.write(course_submission(), resubmit / "a2c.ipynb")
    os.utime(resubmit / "a2c.ipynb", (LATE_154_MINUTES, LATE_154_MINUTES))

    found: dict = {"home": home, "inbox": inbox, "late_dir": late}
    grading = ["grade-all", "submissions", "--out", "grading-output"]
    found["first"] = _run(*grading, "--course", "a2c-grading", "--jobs", "2", cwd=home)
    out, course = home / "grading-output", home / "a2c-grading"
    assert (out / "grades.csv").is_file(), found["first"].stderr[-3000:]
    found["rows1"] = _rows(out)
    found["feedback1"] = (out / "feedback" / "alice.html").read_text(encoding="utf-8")

    before = (_digest(course / "autograded"), _gradebook(course))
    found["by_hand"] = _run("autograde", "a2c", cwd=course, module="nbgrader")
    found["by_hand_force"] = _run("autograde", "a2c", "--force", cwd=course, module="nbgrader")
    button = _run(
        "-c",
        "import json; from nbgrader.apps.api import NbGraderAPI;"
        "from nbgrader.coursedir import CourseDirectory; from nbgrader.apps import NbGrader;"
        "app = NbGrader(); app.load_config_file();"  # as formgrader loads the course config
        "api = NbGraderAPI(coursedir=CourseDirectory(config=app.config), config=app.config);"
        "print(json.dumps(api.autograde('a2c', 'alice')))",
        cwd=course,
        module="",
    )
    found["button"] = button
    found["after_buttons"] = (_digest(course / "autograded"), _gradebook(course))
    found["before_buttons"] = before

    found["late"] = _run(*grading[:1], "late", *grading[2:], "--course", "a2c-grading", cwd=home)
    found["rows2"] = _rows(out)
    found["history2"] = (out / "history.txt").read_text()

    from nbgrader.api import Gradebook  # part 8, as formgrader's grade handler stores it

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, score in (("alice", 2.5), ("carol", 2.0)):
            grade = gradebook.find_grade("discussion", "a2c", "a2c", student)
            grade.manual_score, grade.needs_manual_grade = score, False
        gradebook.db.commit()

    found["resubmission"] = _run(
        *grading[:1],
        "resubmit",
        *grading[2:],
        "--course",
        "a2c-grading",
        "--deadline",
        DEADLINE,
        "--late-penalty",
        "10%/day",
        cwd=home,
    )
    found["rows_resubmission"] = _rows(out)
    found["pages_resubmission"] = {
        student: (out / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        for student in ("alice", "carol")
    }
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook("a2c", "a2c", "carol")
        found["carol_comment"] = next(
            c.manual_comment or "" for c in submission.comments if c.name == "discussion"
        )
    found["exchange"] = _run(  # what JupyterLab's nbgrader panels ask in the course folder
        "-c",
        "import os; from nbgrader.apps import NbGrader; from nbgrader.auth import Authenticator;"
        "from nbgrader.coursedir import CourseDirectory; from nbgrader.exchange import ExchangeFactory;"
        "app = NbGrader(); app.config_file_paths.append(os.getcwd()); app.load_config_file();"
        "config = app.config;"
        "lister = ExchangeFactory(config=config).List(coursedir=CourseDirectory(config=config),"
        " authenticator=Authenticator(config=config), config=config);"
        "print('assignments:', lister.start())",
        cwd=course,
        module="",
    )
    found["export"] = _run("export", "--course", "a2c-grading", "--out", "grading-output", cwd=home)
    found["rows3"] = _rows(out)
    found["nbgrader_export"] = _run("export", "--to", "lms.csv", cwd=course, module="nbgrader")
    found["lms"] = {row["student_id"]: row for row in csv.DictReader((course / "lms.csv").open())}
    return found


def test_first_batch_names_students_by_folder_and_refuses_links(semester):
    """Mallory's `alice.ipynb` is Mallory's, Alice keeps 14 of 15, a link and a broken file get rows."""
    first, rows = semester["first"], semester["rows1"]
    assert first.returncode == 1, first.stderr[-3000:]  # some files were not graded
    alice, mallory = rows["alice"], rows["mallory"]
    assert (alice["status"], alice["total"], alice["max_total"]) == ("graded", "14", "15")
    assert alice["discussion"] == "not graded yet" and alice["sandboxed"] == "yes"
    assert alice["file"].endswith("submissions/alice/a2c.ipynb")
    assert mallory["status"] == "graded" and mallory["total"] == "0"
    assert mallory["discussion"] == "0"  # left as the stub: scored 0 by nbgrader, no grading
    assert mallory["file"].endswith("submissions/mallory/alice.ipynb")
    dan = rows["dan"]
    assert dan["status"].startswith("unreadable") and dan["sandboxed"] == "not run"
    assert "also received" in dan["notes"] and "dan/a2c.ipynb: duplicate" in dan["notes"]
    (link,) = [row for key, row in rows.items() if key.endswith("eve.ipynb")]
    assert link["student"] == "" and "symbolic link: refused" in link["status"]
    assert "added    alice: 14 of 15" in first.stdout
    assert "full marks 15 = 12 autograded + 3 graded by hand" in first.stdout


def test_a_late_batch_adds_its_student_and_keeps_every_other_row(semester):
    """Grading Carol into the same --out: her row added, the four earlier rows as they were."""
    late, before, after = semester["late"], semester["rows1"], semester["rows2"]
    assert late.returncode == 0, late.stderr[-3000:]
    assert after["carol"]["total"] == "14" and after["carol"]["status"] == "graded"
    assert {key: after[key] for key in before} == before
    assert "added    carol: 14 of 15" in late.stdout
    assert "kept     4 earlier row(s) as they were" in late.stdout
    history = semester["history2"]
    assert history.count("--- ") == 2 and "added    mallory" in history
    # the progress log of a finished run is gone: grades.csv holds its rows
    assert not (semester["home"] / "grading-output" / "progress.jsonl").exists()


def test_every_received_file_is_kept_byte_for_byte(semester):
    """Are the submitted bytes in --out/received and <course>/received, the duplicate too?"""
    home, inbox = semester["home"], semester["inbox"]
    for where in (home / "grading-output" / "received", home / "a2c-grading" / "received"):
        for student, source in [
            ("alice", inbox / "alice" / "a2c.ipynb"),
            ("mallory", inbox / "mallory" / "alice.ipynb"),
            ("dan", inbox / "dan" / "a2c.ipynb"),
            ("dan", inbox / "dan" / "a2c (1).ipynb"),
            ("carol", semester["late_dir"] / "carol.ipynb"),
        ]:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()
            (kept,) = (where / student).glob(f"*-{digest[:12]}.ipynb")
            assert kept.read_bytes() == source.read_bytes()
    received = semester["rows2"]["alice"]["received"]
    assert (home / "grading-output" / received).is_file()


def test_nbgrader_autograde_by_hand_removes_nothing(semester):
    """`nbgrader autograde`, `--force` and formgrader's button: refused, course unchanged."""
    for name in ("by_hand", "by_hand_force"):
        done = semester[name]
        assert done.returncode != 0, (name, done.stdout, done.stderr)
        assert "This course grades with `python -m autograder grade-all" in done.stderr, name
        assert "Removing" not in done.stderr, done.stderr
    button = json.loads(semester["button"].stdout.strip().splitlines()[-1])
    assert button["success"] is False and "python -m autograder grade-all" in button["log"]
    assert semester["after_buttons"] == semester["before_buttons"]
    scores = semester["after_buttons"][1]["alice"]
    assert scores["test_a2c"][0] == 4.0 and scores["test_gae"][::3] == (0.0, 2.0)  # extra credit


def test_feedback_before_part_8_says_not_graded_yet_and_runs_nothing(semester):
    """One set of totals (14 / 15 so far), part 8 never 0, the hostile answer inert."""
    html = semester["feedback1"]
    assert "a2c: 14.0 / 15.0 points so far; part 8: not graded yet" in html
    assert "Part 8: not graded yet (3.0 points)" in html
    assert "full marks 15 = 12 autograded + 3 graded by hand" in html
    assert "0.0 / 3.0" not in html and "/ 17" not in html
    assert "The score rose to 600." in html
    for active in ("<script>document.title", "onerror", 'href="javascript'):
        assert active not in html, active


def test_formgrader_gets_sanitized_markdown(semester):
    """Is the notebook formgrader shows free of the answer's script, handler and link?"""
    stored = semester["home"] / "a2c-grading" / "autograded" / "alice" / "a2c" / "a2c.ipynb"
    nb = nbformat.read(stored, as_version=4)
    markdown = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert "The score rose to 600." in markdown
    for active in ("<script", "onerror", "javascript:alert"):
        assert active not in markdown.replace("&lt;script", ""), active


def test_the_run_after_formgrader_says_what_it_changed_and_remakes_those_pages(semester):
    """Part 8 typed in formgrader (Alice 2.5, Carol 2), then Carol resubmits 154 minutes late
    with --late-penalty 10%/day: the change lines name both rows and why, grades.csv and every
    page say the same totals, and Carol's earlier part 8 is set aside, in grader words only
    where graders work."""
    done, rows, pages = (
        semester["resubmission"],
        semester["rows_resubmission"],
        semester["pages_resubmission"],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    alice, carol = rows["alice"], rows["carol"]
    assert (alice["discussion"], alice["total"]) == ("2.5", "16.5")
    assert (carol["discussion"], carol["total"], carol["raw_total"]) == (
        "not graded yet",
        "12.5",
        "14",
    )
    assert (carol["minutes_late"], carol["late_penalty"]) == ("154", "1.5")
    assert "part 8 of an earlier submission (discussion): 2 of 3" in carol["notes"]
    out = done.stdout
    assert (
        "replaced carol: 14 of 15 (part 8 not graded yet) -> 12.5 of 15 (late penalty 1.5 from 14)"
        " (part 8 not graded yet): part 8 of an earlier submission (discussion): 2 of 3 set aside"
    ) in out
    assert (
        "updated  alice: 14 of 15 (part 8 not graded yet) -> 16.5 of 15: part 8 (discussion) "
        "read from the gradebook"
    ) in out
    assert "kept     3 earlier row(s) as they were" in out  # mallory, dan, the link
    assert "a2c: 16.5 / 15.0 points (final: every part graded)" in pages["alice"]
    assert "a2c: 12.5 / 15.0 points so far; part 8: not graded yet" in pages["carol"]
    assert "14.0 points before the late penalty, 1.5 taken off for lateness" in pages["carol"]
    # the words for graders stay in formgrader's comment box, off the student's page
    comment = semester["carol_comment"]
    assert comment.startswith("Part 8 of an earlier submission (discussion): 2 of 3")
    assert "formgrader's total are before it" in comment
    for grader_words in ("Part 8 of an earlier submission", "type the same score", "formgrader's"):
        assert grader_words not in pages["carol"], grader_words


def test_jupyterlab_in_the_course_folder_finds_the_exchange(semester):
    """Do nbgrader's panels (what JupyterLab and formgrader ask in the course folder) find an
    exchange, so that they list nothing instead of warning that it cannot be created?"""
    done = semester["exchange"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "assignments: []" in done.stdout
    assert (semester["home"] / "a2c-grading" / "exchange").is_dir()


def test_export_reads_part_8_from_the_gradebook_and_finalises_feedback(semester):
    """After formgrader: Alice 16.5 of 15 (bonus included), Carol still 'not graded yet'."""
    done, rows = semester["export"], semester["rows3"]
    assert done.returncode == 0, done.stderr[-3000:]
    alice, carol = rows["alice"], rows["carol"]
    assert (alice["discussion"], alice["total"], alice["max_total"]) == ("2.5", "16.5", "15")
    assert "not graded yet" not in alice["notes"]
    assert carol["discussion"] == "not graded yet" and carol["total"] == "12.5"
    assert "part 8 graded for 2 of 3 graded student(s)" in done.stdout  # Mallory's blank: 0
    assert "part 8 not graded yet: carol" in done.stdout
    out = semester["home"] / "grading-output" / "feedback"
    final = (out / "alice.html").read_text(encoding="utf-8")
    assert "a2c: 16.5 / 15.0 points (final: every part graded)" in final
    assert "discussion</a> (part 8, graded by hand): 2.5 / 3.0" in final
    assert "part 8: not graded yet" in (out / "carol.html").read_text(encoding="utf-8")


def test_nbgrader_export_uses_the_same_totals(semester):
    """Does nbgrader's own export say 15 for full marks and 'not graded yet' for Carol's part 8?"""
    assert semester["nbgrader_export"].returncode == 0, semester["nbgrader_export"].stderr
    lms = semester["lms"]
    assert (lms["alice"]["score"], lms["alice"]["max_score"]) == ("16.5", "15")
    assert (lms["alice"]["part_8"], lms["alice"]["complete"]) == ("2.5", "yes")
    assert lms["carol"]["part_8"] == "not graded yet" and lms["carol"]["score"] == "12.5"
    assert (lms["carol"]["raw_score"], lms["carol"]["late_submission_penalty"]) == ("14", "1.5")
    assert lms["carol"]["complete"] == "no: part 8 not graded yet"
