"""Feedback pages are made in a child process with a time limit, outside the grader's locks.

A page renders student text (markdown, highlighted code, outputs) through libraries whose worst
cases the kit does not bound; the child that does it is killed when it runs late, and the
student keeps their grade with a plain page made from the grader's own scores.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader import grader
from autograder.nbgrader.course import CourseTemplate, NbgraderError
from autograder.nbgrader.feedback_renderer import (
    START_SECONDS,
    FeedbackRenderer,
    FeedbackTimeout,
)
from autograder.nbgrader.plain_feedback import plain_feedback_page

pytestmark = pytest.mark.slow


def test_a_page_that_runs_late_costs_its_child_and_the_next_page_gets_a_fresh_one(tmp_path):
    renderer = FeedbackRenderer(time_limit=0.001)  # no page is made that fast
    nowhere = CourseTemplate(tmp_path / "no-course")
    try:
        started = time.monotonic()
        with pytest.raises(FeedbackTimeout, match="took longer than 0.001 s"):
            renderer.render(nowhere, "alice")
        assert time.monotonic() - started < START_SECONDS
        assert renderer._child is None  # killed and forgotten
        renderer.time_limit = 60
        with pytest.raises(NbgraderError, match="generate feedback") as failed:
            renderer.render(nowhere, "alice")  # a fresh child answers: no such course
        assert not isinstance(failed.value, FeedbackTimeout)
        child = renderer._child
        assert child is not None and child.poll() is None  # kept for the next page
    finally:
        renderer.close()
    assert child.poll() is not None and not os.path.exists(f"/proc/{child.pid}")


def test_the_plain_page_escapes_everything_it_shows():
    page = plain_feedback_page(
        "<b>eve</b>",
        1.5,
        15,
        {"model": (1.0, 1.0, "<script>alert(1)</script>")},
        "The full page could not be made (<img src=x onerror=alert(1)>).",
    )
    assert "<script>" not in page and "<img" not in page and "<b>eve" not in page
    assert "&lt;script&gt;" in page and "1.50 / 15" in page and "1.00 / 1" in page


def test_a_grade_whose_page_fails_stands_with_a_note_and_a_plain_page(tmp_path, monkeypatch):
    def too_slow(course: CourseTemplate, student: str) -> Path:
        raise FeedbackTimeout("the feedback page took longer than 30 s and was not made")

    monkeypatch.setattr(grader, "render_feedback", too_slow)
    result = GradeResult("alice", parts={"model": PartScore(1.0, 1.0, "all checks passed")})
    grader._write_feedback(CourseTemplate(tmp_path / "course"), result, tmp_path / "feedback")
    assert result.status == "graded" and result.total == 1.0
    assert any("took longer than 30 s" in note for note in result.notes)
    page = (tmp_path / "feedback" / "alice.html").read_text(encoding="utf-8")
    assert "1.00 / 1" in page and "took longer than 30 s" in page
