"""Feedback pages made in a child process, one student at a time, each within a time limit.

A feedback page is the student's notebook rendered to HTML: their markdown, their code
highlighted, their outputs. That is student text going through nbconvert, mistune and pygments,
libraries whose worst cases are not ours to bound. So the grader's own process never renders it:
:func:`render_feedback` asks a child process (``python -m autograder.nbgrader.feedback_renderer``)
to run nbgrader's ``generate_feedback`` for one student, and waits at most
:data:`FEEDBACK_SECONDS` for its answer, holding no lock: the child is a process of its own, with
its own nbgrader state, and reads the gradebook through SQLite as formgrader does. A child that
does not answer in time is killed (its whole process group) and the next student gets a fresh
one; the student whose page it was keeps their grade, with a note and a plain page
(:func:`autograder.nbgrader.plain_feedback.plain_feedback_page`).

The children are shared by the grading threads (:class:`_Children`): a page goes to a child
that is free, else, while every child is busy, waits for one to come free, but never more than
:data:`WAIT_SECONDS` past the start of the page it waits on, after which its thread starts a
child of its own. A page takes a fraction of a second, and a child's start (its imports, 1.5 s
of CPU) more: a class graded by two threads mostly needs one child, and a page that runs to its
limit delays another student's page by at most :data:`WAIT_SECONDS`. There are never more
children than threads making pages at once.

The child reads one JSON request a line on stdin (``{"root", "persistent", "student"}``) and
answers one JSON line (``{"html": path}`` or ``{"error": text}``); its stdout is kept for the
answers (nbgrader's own output goes to stderr, which is discarded). Its address space is capped
(:data:`CHILD_MEMORY_BYTES`), so a page that blows up costs that child, not the grader.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from autograder.nbgrader.course import CourseTemplate, NbgraderError

__all__ = ["FEEDBACK_SECONDS", "FeedbackRenderer", "FeedbackTimeout", "render_feedback"]

#: Seconds one feedback page may take. A page takes well under a second on an idle machine
#: (docs/benchmarks.md); the limit leaves room for a loaded one.
FEEDBACK_SECONDS = 30.0
#: Seconds the child may take to start (its imports), on top of the page's limit.
START_SECONDS = 180.0
#: The child's first line: imports done, ready for requests.
READY = b'{"ready": true}\n'
#: The child's address space: nbgrader, nbconvert and one notebook fit in a fraction of it.
CHILD_MEMORY_BYTES = 2 * 1024**3
#: The longest answer line read from the child (a path or an error's first lines).
ANSWER_BYTES = 64 * 1024
#: How long a page waits for a busy child, counted from the start of that child's page (its
#: start-up not counted), before its thread starts a child of its own.
WAIT_SECONDS = 2.0


class FeedbackTimeout(NbgraderError):
    """The child did not make the page within the time limit (it was killed)."""


class FeedbackRenderer:
    """One child process that makes feedback pages on request, each within ``time_limit``.

    Not thread-safe: one thread at a time uses it (:func:`render_feedback` lends each of its
    children to one page at a time). The child starts on the first request and after a timeout
    or a crash.
    """

    def __init__(self, time_limit: float = FEEDBACK_SECONDS) -> None:
        self.time_limit = time_limit
        self._child: subprocess.Popen[bytes] | None = None
        #: when the page being made was asked for (``time.monotonic``); None between pages
        self.page_started: float | None = None

    def render(self, workspace: CourseTemplate, student: str) -> Path:
        """The feedback HTML of ``student`` in ``workspace`` (nbgrader's feedback folder).

        Raises:
            FeedbackTimeout: no answer within the time limit (the child was killed).
            NbgraderError: nbgrader failed, or the child died or answered nonsense.
        """
        child = self._started()
        request = {"root": str(workspace.root), "persistent": workspace.persistent,
                   "student": student}  # fmt: skip
        self.page_started = time.monotonic()
        try:
            return self._page(child, request)
        finally:
            self.page_started = None

    def _page(self, child: subprocess.Popen[bytes], request: dict[str, Any]) -> Path:
        assert child.stdin is not None and child.stdout is not None
        deadline = time.monotonic() + self.time_limit  # counted from the request on
        try:
            child.stdin.write(json.dumps(request).encode() + b"\n")
            child.stdin.flush()
        except OSError as error:
            self.close()
            raise NbgraderError(f"the feedback process stopped: {error}") from error
        line = self._answer(child.stdout.fileno(), deadline)
        if line is None:
            self.close()
            raise FeedbackTimeout(
                f"the feedback page took longer than {self.time_limit:g} s and was not made"
            )
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.close()
            raise NbgraderError("the feedback process died or answered nonsense")
        if "html" in answer:
            return Path(str(answer["html"]))
        raise NbgraderError(str(answer.get("error", "the feedback process gave no page"))[:2000])

    def _started(self) -> subprocess.Popen[bytes]:
        """The running child, or a new one that has said it is ready (its imports take a few
        seconds, which the page's time limit does not count)."""
        if self._child is not None and self._child.poll() is None:
            return self._child
        self.close()
        child = self._child = subprocess.Popen(
            [sys.executable, "-m", "autograder.nbgrader.feedback_renderer"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: a kill takes all of it
        )
        assert child.stdout is not None
        ready = self._answer(child.stdout.fileno(), time.monotonic() + START_SECONDS)
        if ready != READY:
            self.close()
            raise NbgraderError(f"the feedback process did not start within {START_SECONDS:.0f} s")
        return child

    def _answer(self, fd: int, deadline: float) -> bytes | None:
        """One line from ``fd`` before ``deadline`` (``b""`` when the child closed it), at most
        :data:`ANSWER_BYTES`; ``None`` on timeout."""
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if b"\n" in chunk or size > ANSWER_BYTES:
                return b"".join(chunks)[:ANSWER_BYTES]

    def close(self) -> None:
        """Stop the child (and anything it started)."""
        child, self._child = self._child, None
        if child is None:
            return
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


class _Children:
    """The renderers the grading threads share (the module docstring): :meth:`take` one for a
    page, :meth:`give_back` it after; the lock is held only to pick one from the lists."""

    def __init__(self, wait_seconds: float = WAIT_SECONDS) -> None:
        self.wait_seconds = wait_seconds
        self._changed = threading.Condition()
        self._free: list[FeedbackRenderer] = []
        self._busy: list[FeedbackRenderer] = []
        self.made: list[FeedbackRenderer] = []  #: every renderer made, for the exit

    def take(self) -> FeedbackRenderer:
        """A free renderer, or a new one once no busy one will come free in time."""
        with self._changed:
            while not self._free and not self._waited_enough():
                self._changed.wait(0.05)
            if self._free:
                renderer = self._free.pop()
            else:
                renderer = FeedbackRenderer()
                self.made.append(renderer)
            self._busy.append(renderer)
            return renderer

    def _waited_enough(self) -> bool:
        """No renderer is busy, or every busy one's page began over ``wait_seconds`` ago (one
        still starting its child is waited for: its start-up is not the student's doing)."""
        now = time.monotonic()
        return all(
            renderer.page_started is not None and now - renderer.page_started > self.wait_seconds
            for renderer in self._busy
        )

    def give_back(self, renderer: FeedbackRenderer) -> None:
        with self._changed:
            self._busy.remove(renderer)
            self._free.append(renderer)
            self._changed.notify()

    def close(self) -> None:
        for renderer in self.made:
            renderer.close()


_children = _Children()


def render_feedback(workspace: CourseTemplate, student: str) -> Path:
    """:meth:`FeedbackRenderer.render` with a child the grading threads share (started on first
    use, stopped when the process exits)."""
    renderer = _children.take()
    try:
        return renderer.render(workspace, student)
    finally:
        _children.give_back(renderer)


@atexit.register
def _close_all() -> None:
    _children.close()


def _serve() -> None:
    """The child: answer each request line on stdin with one JSON line on the real stdout."""
    import resource

    import nbgrader.apps.api  # noqa: F401 - imported before the child says it is ready

    from autograder.nbgrader.course import generate_feedback

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever nbgrader prints goes to stderr, not into the answers
    answers.write(READY.decode())
    answers.flush()
    for line in sys.stdin:
        answer: dict[str, Any]
        try:
            request = json.loads(line)
            workspace = CourseTemplate(Path(request["root"]), bool(request["persistent"]))
            answer = {"html": str(generate_feedback(workspace, str(request["student"])))}
        except MemoryError:
            answer = {"error": "the feedback page needed more memory than it may have"}
        except Exception as error:  # noqa: BLE001 - any failure is this student's answer
            answer = {"error": f"{type(error).__name__}: {str(error)[-1500:]}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    _serve()
