"""Run the probe steps of a plan on a student part, quietly, seeded and under time limits.

The grader gives the process that runs the student's notebook the plan's steps for each part,
``{"key", "probe", "case", "seconds"}`` (plain data). :func:`run_steps` runs each step on the
student's name for that part and yields one record per step: ``{"ok": true, "observation":
{...}, "seconds": ...}`` or ``{"ok": false, "error": "...", "timed_out": bool}``. The caller
ships each record as text (:func:`.record.dumps`) to the grader, which judges it.

This code runs next to the student's code and decides nothing: it only reports. Inside the
sandbox it is the read-only package ``grading_runtime``; in the grader, ``autograder.sandboxed.grading_runtime``.

Time limits use ``SIGPROF``/``SIGALRM`` (Linux and macOS, main thread): a step that runs out of
CPU time, or of ``WALL_CLOCK_FACTOR`` times that in wall-clock time, is stopped (the timers fire
again every ``REFIRE_SECONDS`` until it is, in case Python ignored one in a finaliser); after
``MAX_TIMEOUTS`` stopped steps the part's other steps are not run. The grader enforces its own
limits from outside as well.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from course_lib.checks.properties import student_error

from .probes import run_probe
from .seeding import seed_all

__all__ = [
    "StepTimeout",
    "guarded",
    "quiet",
    "run_steps",
    "seed_all",
    "state_kept",
    "time_limit",
]

WALL_CLOCK_FACTOR = 4.0
REFIRE_SECONDS = 0.05  #: how often a step's timers fire again once it is over its limit
MAX_TIMEOUTS = 2
SEED = 20240
_HERE = (str(Path(__file__).resolve().parent),)


class StepTimeout(BaseException):
    """A step ran out of time (a ``BaseException``, so ``except Exception`` cannot swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`StepTimeout` if the block uses more than ``seconds`` of CPU time."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        yield
        return

    def on_limit(signum: int, frame: Any) -> None:
        raise StepTimeout(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGPROF, on_limit), signal.signal(signal.SIGALRM, on_limit)
    # Once over the limit, the timers fire again every REFIRE_SECONDS: Python ignores an
    # exception raised while it runs a finaliser or a weakref callback (a ``__del__``, a garbage
    # collection), and a single StepTimeout landing there would be lost.
    signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-3), REFIRE_SECONDS)
    signal.setitimer(signal.ITIMER_REAL, max(WALL_CLOCK_FACTOR * seconds, 1e-3), REFIRE_SECONDS)
    try:
        yield
    finally:
        while True:  # a timer firing again while the block is left is stopped, not raised
            try:
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGPROF, previous[0])
                signal.signal(signal.SIGALRM, previous[1])
                break
            except StepTimeout:
                continue


@contextlib.contextmanager
def _stderr_fd_captured() -> Iterator[None]:
    try:
        if sys.__stderr__ is not None:
            sys.__stderr__.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
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
    """Swallow everything the block prints: stdout, stderr (Python and fd 2) and warnings."""
    buffer = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(_stderr_fd_captured())
        stack.enter_context(contextlib.redirect_stdout(buffer))
        stack.enter_context(contextlib.redirect_stderr(buffer))
        yield buffer


@contextlib.contextmanager
def state_kept() -> Iterator[None]:
    """Restore the random states, grad mode and default dtype the caller had."""
    import torch

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        torch.set_grad_enabled(True)
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def guarded(function: Callable[[], Any], seconds: float | None) -> dict[str, Any]:
    """``{"ok": True, "observation": function()}``, or what stopped it; never raises."""
    start = time.perf_counter()
    try:
        with quiet(), time_limit(seconds):
            observation = function()
    except KeyboardInterrupt:
        raise
    except StepTimeout as error:
        return {"ok": False, "timed_out": True, "error": f"did not finish: {error}"}
    except BaseException as error:  # anything the student's code raises, SystemExit included
        return {"ok": False, "timed_out": False, "error": student_error(error, _HERE)}
    return {"ok": True, "observation": observation, "seconds": time.perf_counter() - start}


def run_steps(
    candidate: Any, steps: list[dict[str, Any]], scale: float = 1.0
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(key, record)`` for each step of a part, each seeded and time-limited."""

    timeouts = 0
    with state_kept():
        for index, step in enumerate(steps):
            if timeouts >= MAX_TIMEOUTS:
                record = {
                    "ok": False,
                    "timed_out": False,
                    "error": f"not run: {timeouts} checks above did not finish in time; fix the "
                    "endless loop first",
                }
            else:
                seed_all(SEED + index)
                seconds = None if step.get("seconds") is None else step["seconds"] * scale
                record = guarded(
                    lambda step=step: run_probe(step["probe"], candidate, step["case"]), seconds
                )
                timeouts += bool(record.get("timed_out"))
            yield step["key"], record
