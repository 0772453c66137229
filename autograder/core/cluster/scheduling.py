"""Grade a class on a Dask distributed cluster: each submission's assess step is one task.

``grade-all --scheduler tcp://HOST:PORT`` (or ``A2C_DASK_SCHEDULER``) sends every submission to
the cluster: :class:`ClusterGrading` is the engine of the grading core's one fan-out over a class
(:func:`autograder.core.fan_out.grade_class`) for ``grade-all`` and ``regrade``. Any
Dask cluster serves: ``dask scheduler`` and ``dask worker`` started by hand, dask-jobqueue's
``SLURMCluster``, dask-kubernetes. ``distributed`` is an optional dependency
(``pip install -e '.[cluster]'``), imported only when a scheduler is given.

What runs where:

* a **worker** runs :func:`assess_task`: :meth:`~autograder.core.assessor.Assessor.assess` (the
  sandboxed run and the judgement against the reference). It builds its own
  :class:`~autograder.core.assessor.Assessor` once per process and grading settings, from the release
  notebook's bytes sent with the task (no nbgrader runs there), after checking that its
  instructor package (``autograder``, ``solutions``, ``course_lib``) has the very files of the
  instructor's; it refuses (:class:`WorkerRefused`) where the sandbox cannot start, unless
  ``--no-sandbox`` was given, and in container mode where nothing fences the notebook off the
  network (:func:`check_worker_isolation`).
* the **instructor's machine** reads each file (:func:`~autograder.core.intake.submission_file.read_bytes`),
  sends its bytes, gets :meth:`~autograder.core.assessor.Assessment.to_plain` back (JSON-able data,
  never a pickled student object) and hands it to the front end's ``record`` (for ``grade-all``:
  nbgrader and the feedback), one at a time: it is the only writer of grades.

Faults:

* A worker that dies while grading (killed, out of memory, its node gone) costs a retry on
  another worker: the scheduler reschedules the tasks it was running. For the duration of the
  class the scheduler's ``allowed_failures`` is set to :data:`ALLOWED_FAILURES` (1), so a
  submission whose gradings killed two workers comes back as ``KilledWorker`` and is reported
  ``not graded``. At most as many tasks as the cluster has threads are submitted at a time, so a
  dying worker holds only the tasks it was running and no innocent submission is blamed.
* A task raises only when its worker cannot grade at all (:class:`WorkerRefused`, the instructor
  package missing...): ``retries=0``, and the class stops with that error (a worker that fails
  fast would otherwise take every task). What finished is recorded; the rest are ``not graded``.
* Ctrl-C cancels the tasks on the cluster (a worker finishes the notebook it is running and
  drops the result), records what finished and returns; the submissions left are
  ``not graded: interrupted ...``.
* Each student has one future and one result: a retried task never gives two rows.
"""

from __future__ import annotations

import contextlib
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from autograder.core.assessor import Assessment, Assessor
from autograder.core.cluster.connection import connect
from autograder.core.cluster.worker import assess_task, assessor_settings
from autograder.core.fan_out import Engine, not_graded, unreadable
from autograder.core.intake.collect import Submission
from autograder.core.intake.student_markdown import mark_markdown_here
from autograder.core.intake.submission_file import (
    UnreadableNotebook,
    agent_file_for,
    read_bytes,
)
from autograder.core.reports.grade_result import GradeResult

__all__ = ["ALLOWED_FAILURES", "ClusterGrading", "Memory"]

#: Worker deaths a task may survive: one retry, and a second death reports it ``not graded``.
ALLOWED_FAILURES = 1
NO_WORKER_NOTICE_SECONDS = 30.0
#: What the class holds of a submission's student's agent (``Assessor.assess``'s ``memory``).
Memory = Callable[[Submission], dict[str, Any]]


def _allowed_failures(client: Any, value: int | None) -> int | None:
    """Set the scheduler's ``allowed_failures`` (unless ``value`` is None); the one it had."""

    def swap(dask_scheduler: Any = None, value: int | None = None) -> int:
        before = dask_scheduler.allowed_failures
        if value is not None:
            dask_scheduler.allowed_failures = value
        return before

    try:  # a local function travels by value: the scheduler needs no instructor package
        return client.run_on_scheduler(swap, value=value)
    except Exception as error:  # noqa: BLE001 - e.g. a scheduler that refuses pickled functions
        print(
            f"warning: could not set the scheduler's allowed-failures ({type(error).__name__}); "
            "start it with DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 so that a notebook "
            "that kills two workers is reported, not retried further",
            file=sys.stderr,
        )
        return None


class _Tasks:
    """The :class:`~autograder.core.fan_out.Engine` of :class:`ClusterGrading`: each assessment
    a task, at most as many at a time as the cluster has threads; the scheduler's
    ``allowed_failures`` is :data:`ALLOWED_FAILURES` while it runs."""

    desc = "grading on the cluster"

    def __init__(
        self, scheduler: Any, assessor: Assessor, isolate: bool | None, memory: Memory | None
    ):
        self.scheduler, self.memory = scheduler, memory
        self.client = connect(scheduler) if isinstance(scheduler, str) else scheduler
        self.settings = assessor_settings(assessor, isolate)
        self.previous = _allowed_failures(self.client, ALLOWED_FAILURES)
        self.stopped: str | None = None  # why the class stopped early
        self.threads = 0  # the cluster's, as last seen (watch)
        self.started, self.noticed, self.shown = time.monotonic(), False, ""

    def _workers(self) -> tuple[int, int, int]:
        """(workers, threads, busy workers) as the scheduler sees them now."""
        nthreads = self.client.nthreads()
        busy = sum(bool(keys) for keys in self.client.processing().values())
        return len(nthreads), sum(nthreads.values()), busy

    def watch(self, bar: Any) -> None:
        workers, self.threads, busy = self._workers()
        if f"workers {busy} busy / {workers}" != self.shown:
            self.shown = f"workers {busy} busy / {workers}"
            bar.set_postfix_str(self.shown)
        waited = time.monotonic() - self.started
        if not workers and not self.noticed and waited > NO_WORKER_NOTICE_SECONDS:
            self.noticed = True
            print(
                f"\nwaiting: no worker has joined the scheduler after {waited:.0f} s "
                "(start `dask worker SCHEDULER_ADDRESS` on the grading machines)",
                file=sys.stderr,
            )

    def slots(self) -> int:
        return self.threads

    def submit(self, sub: Submission) -> Any:
        try:
            data = read_bytes(sub.path)
        except UnreadableNotebook as error:
            return unreadable(sub, error)
        key = f"a2c-grade-{sub.student}-{uuid.uuid4().hex[:8]}"
        return self.client.submit(
            assess_task,
            data,
            sub.student,
            sub.path.name,
            self.settings,
            agent_file_for(sub.path),
            self.memory(sub) if self.memory is not None else None,
            key=key,
            pure=False,
            retries=0,
        )

    def outcome(self, future: Any, sub: Submission) -> GradeResult | Assessment:
        from distributed import KilledWorker

        if future.status == "finished":
            assessment = Assessment.from_plain(future.result())
            if assessment.notebook:  # the worker's marks are not this process's: marked here
                assessment.notebook = mark_markdown_here(assessment.notebook)
            return assessment
        if future.status == "cancelled":
            self.stopped = "grading stopped: the cluster cancelled the tasks (scheduler restarted?)"
            return not_graded(sub, self.stopped)
        error = future.exception()
        if isinstance(error, KilledWorker):
            last = getattr(getattr(error, "last_worker", None), "address", "?")
            return not_graded(
                sub,
                f"its grading killed {ALLOWED_FAILURES + 1} workers (KilledWorker, last on "
                f"{last}); it may exhaust a worker's memory: grade it alone to see why",
            )
        print(f"error: a worker cannot grade: {type(error).__name__}: {error}", file=sys.stderr)
        self.stopped = f"grading stopped ({type(error).__name__}: {error})"
        return not_graded(sub, self.stopped)

    def interrupt(self, running: dict[Any, Submission]) -> str:
        print("\ninterrupted: cancelling the tasks, recording what was graded", file=sys.stderr)
        return "interrupted (Ctrl-C) before its grading finished"

    def lost(self, error: OSError | TimeoutError) -> str:  # distributed's CommClosedError too
        why = f"grading stopped: the scheduler was lost ({type(error).__name__})"
        print(f"\nerror: {why}: {error}", file=sys.stderr)
        return why

    def close(self, running: dict[Any, Submission]) -> None:
        try:
            if running:
                with contextlib.suppress(OSError, TimeoutError):
                    self.client.cancel([future for future in running if not future.done()])
            if self.previous is not None and self.previous != ALLOWED_FAILURES:
                _allowed_failures(self.client, self.previous)
        finally:
            if isinstance(self.scheduler, str):
                self.client.close()


class ClusterGrading:
    """A class graded on a Dask cluster: ``grade_many(..., cluster=ClusterGrading(client))``
    (``client``: a ``distributed.Client`` or a scheduler's address; ``isolate``: whether the
    workers sandbox, default as the instructor's grader), as
    :class:`~autograder.core.fan_out.LocalGrading` grades on this machine.

    Each submission is assessed once, as on this machine: a notebook whose run failed or timed
    out costs one grading, not two.
    """

    def __init__(self, scheduler: Any, isolate: bool | None = None) -> None:
        self.scheduler, self.isolate = scheduler, isolate

    def engine(self, assessor: Assessor, memory: Memory | None = None) -> Engine:
        """The engine that assesses as ``assessor`` would, on the cluster's workers;
        ``memory(sub)``: what the class holds of that student's agent (plain data, sent with the
        task: :meth:`~autograder.core.assessor.Assessor.assess`'s ``memory``).

        Raises:
            ClusterError: ``distributed`` is missing or the scheduler cannot be reached.
        """
        return _Tasks(self.scheduler, assessor, self.isolate, memory)
