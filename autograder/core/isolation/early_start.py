"""A fresh run started before its job: the sandbox's Python imports while the grader draws the plan.

Where no template can be had (container mode: one grading per container on Gradescope and
PrairieLearn; bubblewrap where the kernel refuses nested namespaces), a grading command that
grades one notebook starts that notebook's run first thing (:func:`start_early`), before its
own imports of torch and nbgrader: the sandbox (or the container's fresh user), the runner and
the executor's imports (IPython, torch) go on in parallel with the grader's, and the run then
waits for its job on standard input (``runner.py`` starts the executor before it reads it).
When the assessor runs the notebook, :mod:`.modes` hands the job to that run (:func:`take`):
the wall clock and the CPU cap count from then on (:class:`.supervision.JobInput`). A run
nobody takes ends at the process's exit, or after :data:`.supervision.JobInput.WAIT_SECONDS`.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path

from autograder.core.isolation.contract import SandboxLimits, SandboxResult
from autograder.core.isolation.supervision import JobInput

__all__ = ["give", "start_early", "take"]

_pending: dict[str, tuple[JobInput, Future, tuple]] = {}
_lock = threading.Lock()


def _terms(env: Mapping[str, str], limits: SandboxLimits) -> tuple:
    """What a run is started with and a job must find as it asked: its environment and its
    limits (the CPU cap aside: it comes with the job)."""
    return tuple(sorted(env.items())), dataclasses.replace(limits, cpu_seconds=None)


def start_early(
    key: str,
    run: Callable[[JobInput], SandboxResult],
    env: Mapping[str, str],
    limits: SandboxLimits,
    clean_up: Sequence[Path] = (),
) -> JobInput | None:
    """Start ``run(job)`` (an isolation mode's run with the job's ``env`` and ``limits``, fed
    :class:`JobInput` ``job``) in a thread, for the view ``key``; ``clean_up``: folders
    removed once it has ended. Returns ``job`` (its ``waiting`` is set once the run's process
    waits for it), or ``None`` when a run of that view was started already."""
    job, future = JobInput(), Future()

    def body() -> None:
        try:
            future.set_result(run(job))
        except BaseException as error:  # noqa: BLE001 - whoever takes it sees the error
            future.set_exception(error)
        finally:
            job.waiting.set()  # ended, perhaps before its process started: nothing to wait for
            for folder in clean_up:
                shutil.rmtree(folder, ignore_errors=True)

    with _lock:
        if key in _pending:
            return None
        _pending[key] = (job, future, _terms(env, limits))
    threading.Thread(target=body, daemon=True, name="a2c-early-run").start()
    return job


def take(key: str) -> tuple[JobInput, Future, tuple] | None:
    """The run started early for the view ``key``, once (``None`` when there is none)."""
    with _lock:
        return _pending.pop(key, None)


def give(
    key: str,
    stdin: bytes,
    wall_seconds: float,
    env: Mapping[str, str],
    limits: SandboxLimits,
) -> SandboxResult | None:
    """Feed the run started early for ``key`` its job and wait for its end; ``None`` when there
    is none, it ended before its job came, or it was started with another environment or
    other limits than the job's (the course's own: it is ended unused), and the caller then
    starts one."""
    taken = take(key)
    if taken is None:
        return None
    job, future, terms = taken
    if terms != _terms(env, limits):
        job.withdraw()  # it reads an empty job and ends, having run nothing
        return None
    if future.done():
        return None  # it could not start, or waited too long: nothing of the job ran
    job.give(stdin, wall_seconds, limits.cpu_seconds)
    return future.result()


@atexit.register
def _withdraw_all() -> None:
    with _lock:
        pending = list(_pending.values())
        _pending.clear()
    for job, _, _ in pending:
        job.withdraw()
