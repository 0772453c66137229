"""Feedback pages are made in a child process with a time limit, outside the grader's locks; the
grading threads share their children.

A page renders student text (markdown, highlighted code, outputs) through libraries whose worst
cases the kit does not bound; the child that does it is killed when it runs late, and the
student keeps their grade with a plain page made from the grader's own scores.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader import feedback_renderer, grader
from autograder.nbgrader.course import CourseTemplate, NbgraderError
from autograder.nbgrader.feedback_renderer import (
    START_SECONDS,
    FeedbackRenderer,
    FeedbackTimeout,
)
from autograder.nbgrader.plain_feedback import plain_feedback_page

pytestmark = pytest.mark.slow


def test_a_page_that_runs_late_costs_its_child_and_the_next_page_gets_a_fresh_one(tmp_path):
    renderer = FeedbackRenderer(time_limit=0.5)
    nowhere = CourseTemplate(tmp_path / "no-course")
    try:
        late = renderer._started()  # its imports done
        # Stopped, it cannot answer in time whatever the machine's load (a limit that no page
        # meets on an idle machine, 1 ms, was met on a loaded one: the grader's thread waited
        # for a core while the child answered).
        os.kill(late.pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(FeedbackTimeout, match="took longer than 0.5 s"):
            renderer.render(nowhere, "alice")
        assert time.monotonic() - started < START_SECONDS
        assert renderer._child is None  # killed and forgotten
        assert late.poll() is not None
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


class _FakeRenderer:
    """A renderer whose pages take ``SECONDS[student]`` (0.05 s by default); no child."""

    SECONDS: dict[str, float] = {}

    def __init__(self) -> None:
        self.page_started: float | None = None
        self.pages: list[str] = []

    def render(self, workspace: CourseTemplate, student: str) -> Path:
        self.page_started = time.monotonic()
        try:
            time.sleep(self.SECONDS.get(student, 0.05))
            self.pages.append(student)
            return Path(student)
        finally:
            self.page_started = None

    def close(self) -> None:
        pass


def _pages_in_threads(children, students_of_threads):
    import threading

    done: list[tuple[str, float]] = []

    def make(students):
        for student in students:
            renderer = children.take()
            try:
                renderer.render(CourseTemplate(Path("/nowhere")), student)
                done.append((student, time.monotonic()))
            finally:
                children.give_back(renderer)

    threads = [threading.Thread(target=make, args=(s,)) for s in students_of_threads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done


def test_grading_threads_share_one_feedback_child_while_pages_are_quick(monkeypatch):
    """Do two threads making pages at once share one child (one start-up, 1.5 s of CPU) rather
    than start one each, every page made once?"""
    monkeypatch.setattr(feedback_renderer, "FeedbackRenderer", _FakeRenderer)
    children = feedback_renderer._Children(wait_seconds=2.0)
    done = _pages_in_threads(children, [["a1", "a2", "a3"], ["b1", "b2", "b3"]])
    assert len(children.made) == 1
    assert sorted(children.made[0].pages) == sorted(student for student, _ in done)
    assert len(done) == 6


def test_a_page_that_runs_long_keeps_another_thread_waiting_only_briefly(monkeypatch):
    """While one student's page runs long, does the other thread start a child of its own after
    the wait, and make its pages before the long one is done?"""
    monkeypatch.setattr(feedback_renderer, "FeedbackRenderer", _FakeRenderer)
    monkeypatch.setattr(_FakeRenderer, "SECONDS", {"slow": 1.5})
    children = feedback_renderer._Children(wait_seconds=0.2)
    done = dict(_pages_in_threads(children, [["slow"], ["quick1", "quick2"]]))
    assert len(children.made) == 2
    assert done["quick2"] < done["slow"]
