"""Formgrader driven in a real browser (headless Chromium), as an instructor grades part 8.

A course holds Bob (on time), Dave (26 hours late, under the rule ``10%/day``: 3 points off)
and Erin (on no roster); the grader's scores are recorded as the pipeline records them
(``tests/test_part8_policy.py``'s helpers). Then, in formgrader's own pages served by
``jupyter server`` in the course folder: the names and the totals out of 15, each submission's
time, part 8 typed into the score field for Dave and Bob, Bob's resubmission (the field empty,
the earlier score in the comment, the flag), the same score typed again; after each step
``python -m autograder export`` and ``nbgrader export`` must give the numbers the pages show.

Needs ``chromium`` and ``chromium-driver`` (Debian: ``apt-get install -y chromium
chromium-driver``; ``.ci/run`` installs them) and ``selenium`` (``requirements.txt``). Without
them the test is skipped with that message on a workstation, and fails on CI (``CI=true``).
"""

from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from autograder.nbgrader.course import ASSIGNMENT, NOTEBOOK, open_course
from autograder.nbgrader.final_export import export
from autograder.nbgrader.late_penalty import course_late_penalty
from autograder.nbgrader.roster import name_unnamed
from tests.test_part8_policy import _grade, _lms, _scores

pytestmark = pytest.mark.slow

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
HOURS = 3600.0
STUDENTS = ("bob", "dave", "erin")
WAIT = 120  # seconds a page or a save may take on a loaded machine


def _require_browser() -> None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing = "selenium (pip install -r requirements.txt)"
    else:
        missing = "" if CHROMIUM and DRIVER else "chromium and chromedriver"
    if missing:
        message = f"needs {missing}: apt-get install -y chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI installs them in .ci/run)")
        pytest.skip(message)


class Formgrader:
    """``jupyter server`` in the course folder and a headless Chromium looking at it."""

    def __init__(self, course, log: Path) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        self.course = course
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self._log = log.open("w")
        self.server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                "server",
                f"--port={port}",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                "--ServerApp.allow_root=True",
                f"--ServerApp.root_dir={course.root}",
            ],  # fmt: skip
            cwd=course.root,  # formgrader reads the course's nbgrader_config.py from here
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        options = Options()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
            options.add_argument(argument)
        self.driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        deadline = time.monotonic() + WAIT
        while True:
            try:
                urllib.request.urlopen(self.base + "/api/status", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.server.poll() is not None:
                    raise RuntimeError(f"no jupyter server: {log.read_text()}") from None
                time.sleep(0.5)

    def close(self) -> None:
        self.driver.quit()
        self.server.terminate()
        self.server.wait(30)
        self._log.close()

    def text(self, path: str, until) -> str:
        """The visible text of ``path`` once ``until(text)`` holds (the tables load late)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.get(self.base + path)
        body = lambda driver: driver.find_element(By.TAG_NAME, "body").text  # noqa: E731
        WebDriverWait(self.driver, WAIT).until(lambda driver: until(body(driver)))
        return body(self.driver)

    def rows(self, path: str) -> dict[str, str]:
        """``{student id: the row's text}`` of a formgrader table listing every student."""

        def found(text: str) -> dict[str, str]:
            lines = text.splitlines()
            return {sid: line for line in lines for sid in STUDENTS if f" {sid} " in line}

        return found(self.text(path, lambda text: len(found(text)) == len(STUDENTS)))

    def part_8(self, student: str) -> dict:
        """Open ``student``'s submission: the score field and the comment as shown."""
        from nbgrader.api import Gradebook
        from selenium.webdriver.common.by import By

        with Gradebook(self.course.db_url) as gradebook:
            found = gradebook.find_submission_notebook(NOTEBOOK, ASSIGNMENT, student).id
        self.text(f"/formgrader/submissions/{found}", lambda text: "Part 8" in text)
        field = self.driver.find_element(By.ID, "discussion")
        comment = self.driver.find_element(By.ID, "discussion-comment")
        return {"field": field.get_attribute("value"), "comment": comment.get_attribute("value")}

    def type_part_8(self, student: str, score: str) -> dict:
        """Type ``score`` into the open submission's part 8 field and leave it (formgrader
        saves on change); returns the gradebook's grade once saved."""
        from nbgrader.api import Gradebook
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        field = self.driver.find_element(By.ID, "discussion")
        field.clear()
        field.send_keys(score, Keys.TAB)
        deadline = time.monotonic() + WAIT
        while True:
            with Gradebook(self.course.db_url) as gradebook:
                grade = gradebook.find_grade("discussion", NOTEBOOK, ASSIGNMENT, student)
                saved = (grade.manual_score, grade.needs_manual_grade)
            if saved[0] == float(score) or time.monotonic() > deadline:
                return {"manual_score": saved[0], "needs_manual_grade": saved[1]}
            time.sleep(0.5)


def _grades(out: Path) -> dict[str, dict[str, str]]:
    with (out / "grades.csv").open() as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _look(browser: Formgrader, course, out: Path, tmp: Path, feedback: bool = False) -> dict:
    """What formgrader's pages, grades.csv and nbgrader's export say, after ``export``."""
    summary = export(course.root, out, feedback=feedback)
    return {
        "students": browser.rows("/formgrader/manage_students"),
        "submissions": browser.rows(f"/formgrader/manage_submissions/{ASSIGNMENT}"),
        "csv": _grades(out),
        "lms": {sid: _lms(course, tmp, sid) for sid in STUDENTS},
        "export": summary,
        "feedback": {
            sid: (out / "feedback" / f"{sid}.html").read_text() if feedback else ""
            for sid in ("bob", "dave")
        },
    }


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    _require_browser()
    tmp = tmp_path_factory.mktemp("browser")
    (tmp / "roster.csv").write_text(
        "id,first_name,last_name,email\n"
        "bob,Bob,Builder,b@uni.example\ndave,Dave,Diaz,d@uni.example\n"
    )
    course, out = open_course(tmp / "course"), tmp / "out"
    rule = course_late_penalty("10%/day", course.root)
    _grade(course, out, "bob", _scores(course, 1.5, a2c=0.0), "Rose.", -HOURS, rule)
    _grade(course, out, "dave", _scores(course, 2.0, a2c=0.0), "It rose.", 26 * HOURS, rule)
    _grade(course, out, "erin", _scores(course, 2.0), "Flat.", -HOURS, rule)
    name_unnamed(course.db_url)  # as grade-all does after recording
    browser = Formgrader(course, tmp / "server.log")
    steps: dict = {}
    try:
        steps["first"] = _look(browser, course, out, tmp)
        steps["dave_page"] = browser.part_8("dave")
        steps["dave_saved"] = browser.type_part_8("dave", "2.5")
        browser.part_8("bob")
        steps["bob_saved"] = browser.type_part_8("bob", "2")
        steps["graded"] = _look(browser, course, out, tmp, feedback=True)
        _grade(course, out, "bob", _scores(course, 2.0), "Rose, then fell.", -HOURS / 2, rule)
        steps["resubmitted"] = _look(browser, course, out, tmp)
        steps["bob_page"] = browser.part_8("bob")
        steps["bob_again"] = browser.type_part_8("bob", "2")
        steps["confirmed"] = _look(browser, course, out, tmp, feedback=True)
    finally:
        browser.close()
    return steps


def _agree(step: dict) -> None:
    """Formgrader's score is the raw total; grades.csv and both exports take the penalty off."""
    assert sorted(step["students"]) == sorted(step["csv"]) == list(STUDENTS)
    for sid, line in step["students"].items():
        row, lms = step["csv"][sid], step["lms"][sid]
        assert f" {row['raw_total']} / 15" in line, (sid, line, row)
        assert float(row["total"]) == max(0.0, float(row["raw_total"]) - float(row["late_penalty"]))
        assert (lms["raw_score"], lms["late_submission_penalty"], lms["score"]) == (
            row["raw_total"], row["late_penalty"], row["total"],
        )  # fmt: skip
        assert "/ 17" not in line and "None, None" not in line


def test_formgrader_shows_names_totals_out_of_15_and_times(walk):
    first = walk["first"]
    _agree(first)
    students, submissions = first["students"], first["submissions"]
    assert students["bob"].startswith("Builder, Bob bob b@uni.example")
    assert students["erin"].startswith("erin, erin ")  # "<id>, " then the id column
    assert "2026-03-03 00:59:00 UTC needs manual grading" in submissions["dave"]
    assert first["csv"]["dave"]["minutes_late"] == "1560"
    assert (first["csv"]["dave"]["late_penalty"], first["csv"]["dave"]["total"]) == ("3", "7")


def test_part_8_typed_in_formgrader_reaches_every_report(walk):
    assert walk["dave_page"]["field"] == ""
    assert walk["dave_page"]["comment"].startswith("Late submission: 1560 minute(s)")
    assert walk["dave_saved"] == {"manual_score": 2.5, "needs_manual_grade": False}
    assert walk["bob_saved"] == {"manual_score": 2.0, "needs_manual_grade": False}
    graded = walk["graded"]
    _agree(graded)
    assert (graded["csv"]["dave"]["raw_total"], graded["csv"]["dave"]["total"]) == ("12.5", "9.5")
    assert "graded" in graded["submissions"]["dave"]
    assert "needs manual grading" not in graded["submissions"]["dave"]
    assert "a2c: 9.5 / 15.0 points (final: every part graded)" in graded["feedback"]["dave"]


def test_a_resubmission_empties_the_field_and_the_same_score_is_one_action(walk):
    waiting = walk["resubmitted"]
    _agree(waiting)
    assert "needs manual grading" in waiting["submissions"]["bob"]
    assert waiting["csv"]["bob"]["discussion"] == "not graded yet"
    assert waiting["lms"]["bob"]["complete"] == "no: part 8 not graded yet"
    assert walk["bob_page"]["field"] == ""
    assert walk["bob_page"]["comment"].startswith(
        "Part 8 of an earlier submission (discussion): 2 of 3"
    )
    assert walk["bob_again"] == {"manual_score": 2.0, "needs_manual_grade": False}
    done = walk["confirmed"]
    _agree(done)
    assert "needs manual grading" not in done["submissions"]["bob"]
    assert (done["csv"]["bob"]["discussion"], done["csv"]["bob"]["total"]) == ("2", "16")
    assert "a2c: 16.0 / 15.0 points (final: every part graded)" in done["feedback"]["bob"]
    assert "part 8 graded for 2 of 3" in done["export"]
