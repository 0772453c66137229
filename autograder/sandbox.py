"""Run one piece of student code so that nothing it does can break the grading cell.

nbgrader scores a graded cell from its outputs (``nbgrader.utils.determine_grade``): an
``error`` output **or any output on stderr** gives 0 points, a float ``execute_result`` gives
partial credit. So a grading call must (1) never raise because of the student's code, (2) never
write to stderr, and (3) never hang. :func:`run_guarded` provides the three:

* every exception from the checked code becomes a failed :class:`Outcome` whose message names
  the exception and the line of the student's code it came from (:func:`describe_exception`);
* ``sys.stdout``/``sys.stderr``, Python warnings and the stderr *file descriptor* (C++ code,
  e.g. torch, writes there directly and ipykernel forwards it as a stderr stream) are captured
  while it runs (:func:`quiet`);
* a wall-clock limit (:func:`time_limit`) stops it with :class:`SubCheckTimeout`.

Limits of the time limit (documented for instructors):

* it uses ``SIGALRM``, so it works on Linux and macOS, in the main thread only (that is where
  ipykernel and ``python -m`` run cells); elsewhere (Windows, a worker thread) checks run
  without a limit and nbgrader's cell timeout is the only guard;
* the alarm is delivered between Python bytecodes: a single long C call (one enormous tensor
  operation) is stopped only when it returns;
* :class:`SubCheckTimeout` derives from ``BaseException`` so that ``except Exception`` in the
  student's code cannot swallow it; a bare ``except:`` inside an endless loop still can.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CheckFailed",
    "Outcome",
    "SubCheckTimeout",
    "describe_exception",
    "quiet",
    "run_guarded",
    "time_limit",
]


class CheckFailed(Exception):
    """Raised by a check when the student's result is wrong; the message is student-facing."""


class SubCheckTimeout(BaseException):
    """The time limit of a sub-check ran out (a ``BaseException``: see the module notes)."""


@dataclass(frozen=True)
class Outcome:
    """What happened when one sub-check ran."""

    passed: bool
    message: str  #: empty when passed; otherwise what went wrong, in the student's terms
    seconds: float
    timed_out: bool = False


#: The wall-clock backstop of :func:`time_limit`, as a multiple of its CPU-time limit.
WALL_CLOCK_FACTOR = 4.0


def alarm_available() -> bool:
    """True when :func:`time_limit` can enforce its limit here (SIGPROF/SIGALRM, main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`SubCheckTimeout` in this thread if the block uses more than ``seconds``.

    The limit counts the process's CPU time (``ITIMER_PROF``), not the wall clock, so that a
    correct part does not lose points on a busy grading machine (several kernels sharing the
    cores). A block that waits without computing (``time.sleep`` in a loop) is stopped by a
    wall-clock backstop of ``WALL_CLOCK_FACTOR * seconds``. ``None`` (or where no alarm is
    available) runs the block without a limit.
    """
    if seconds is None or not alarm_available():
        yield
        return

    def on_cpu_limit(signum: int, frame: Any) -> None:
        raise SubCheckTimeout(f"still running after {seconds:g} s of CPU time")

    def on_wall_limit(signum: int, frame: Any) -> None:
        raise SubCheckTimeout(f"still running after {WALL_CLOCK_FACTOR * seconds:g} s")

    previous_prof = signal.signal(signal.SIGPROF, on_cpu_limit)
    previous_alarm = signal.signal(signal.SIGALRM, on_wall_limit)
    signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-3))
    signal.setitimer(signal.ITIMER_REAL, max(WALL_CLOCK_FACTOR * seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous_prof)
        signal.signal(signal.SIGALRM, previous_alarm)


@contextlib.contextmanager
def _captured_stderr_fd() -> Iterator[None]:
    """Point file descriptor 2 at a temporary file for the duration of the block."""
    try:
        if sys.__stderr__ is not None:
            sys.__stderr__.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real fd 2 (some embedded interpreters)
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    """Swallow everything the block prints: stdout, stderr (Python and fd 2) and warnings.

    Yields the buffer that received the Python-level output, should a caller want to show it.
    """
    buffer = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(_captured_stderr_fd())
        stack.enter_context(contextlib.redirect_stdout(buffer))
        stack.enter_context(contextlib.redirect_stderr(buffer))
        yield buffer


_LIBRARY_ROOTS = tuple(
    str(path)
    for path in {
        Path(__file__).resolve().parent,  # autograder/
        Path(__file__).resolve().parent.parent / "solutions",
        Path(contextlib.__file__).resolve().parent,  # the standard library
    }
)


def _is_library_frame(filename: str) -> bool:
    if "site-packages" in filename or "dist-packages" in filename:
        return True
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return resolved.startswith(_LIBRARY_ROOTS)


def _student_location(error: BaseException) -> str:
    """``" (line 12: `x = y / 0`)"`` for the deepest frame in the student's code, or ``""``."""
    location = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if _is_library_frame(frame.filename):
            continue
        line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
        location = f" (in `{frame.name}`, line {frame.lineno}"
        location += f": `{line[:80]}`)" if line else ")"
    return location


def describe_exception(error: BaseException) -> str:
    """A one-line, student-facing account of an exception raised while checking."""
    if isinstance(error, SubCheckTimeout):
        return (
            f"did not finish: {error} (an endless loop? a `while` whose condition never changes, "
            "or a loop over something that keeps growing?)"
        )
    if isinstance(error, NotImplementedError):
        return (
            "not implemented yet: your code raised NotImplementedError"
            f"{_student_location(error)}; replace the `raise NotImplementedError()` stub"
        )
    text = str(error).strip().splitlines()
    first = text[0][:300] if text else ""
    return f"your code raised {type(error).__name__}: {first}{_student_location(error)}"


def run_guarded(function: Callable[[], None], seconds: float | None) -> Outcome:
    """Run ``function()`` quietly under a time limit; never raises (except KeyboardInterrupt).

    ``function`` signals a wrong result with :class:`CheckFailed`; any other exception counts
    as a failure too, described by :func:`describe_exception`.
    """
    start = time.perf_counter()
    try:
        with quiet(), time_limit(seconds):
            function()
    except CheckFailed as failure:
        return Outcome(False, str(failure), time.perf_counter() - start)
    except KeyboardInterrupt:  # nbgrader's cell timeout interrupts this way: let it through
        raise
    except BaseException as error:  # anything the student's code raises, SystemExit included
        timed_out = isinstance(error, SubCheckTimeout)
        return Outcome(False, describe_exception(error), time.perf_counter() - start, timed_out)
    return Outcome(True, "", time.perf_counter() - start)
