"""Grade a class on a Dask distributed cluster: each submission's assess step is one task.

``grade-all --scheduler tcp://HOST:PORT`` (or ``A2C_DASK_SCHEDULER``) sends every submission to
the cluster; :func:`grade_on_cluster` does it for :func:`autograder.nbgrader.grader.grade_many`. Any
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
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from autograder.core.assessor import Assessment, Assessor
from autograder.core.cluster.connection import connect
from autograder.core.cluster.worker import assess_task, assessor_settings
from autograder.core.intake.collect import Submission
from autograder.core.intake.student_markdown import mark_markdown_here
from autograder.core.intake.submission_file import (
    UnreadableNotebook,
    agent_file_for,
    read_bytes,
)
from autograder.core.reports.grade_result import GradeResult

__all__ = ["ALLOWED_FAILURES", "ClusterGrading", "Record", "grade_on_cluster"]

#: Worker deaths a task may survive: one retry, and a second death reports it ``not graded``.
ALLOWED_FAILURES = 1
POLL_SECONDS = 1.0  #: the longest wait between looks at the cluster (a result wakes it)
NO_WORKER_NOTICE_SECONDS = 30.0
#: What a record step does with an assessment: the front end's recording (nbgrader for grade-all).
Record = Callable[[Assessment], GradeResult]
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


class _ClassOnCluster:
    """One pass over submissions: submit within the cluster's threads, record as they come."""

    def __init__(
        self,
        client: Any,
        assessor: Assessor,
        record: Record,
        progress: bool,
        isolate: bool | None,
        memory: Memory | None = None,
    ):
        self.client, self.record, self.memory = client, record, memory
        self.progress = progress
        self.settings = assessor_settings(assessor, isolate)
        self.stopped: str | None = None  # why the class stopped early

    def _workers(self) -> tuple[int, int, int]:
        """(workers, threads, busy workers) as the scheduler sees them now."""
        nthreads = self.client.nthreads()
        busy = sum(bool(keys) for keys in self.client.processing().values())
        return len(nthreads), sum(nthreads.values()), busy

    def _finished(self, future: Any, sub: Submission) -> GradeResult | Assessment:
        from distributed import KilledWorker

        if future.status == "finished":
            assessment = Assessment.from_plain(future.result())
            assessment.result.source = str(sub.path)
            if assessment.notebook:  # the worker's marks are not this process's: marked here
                assessment.notebook = mark_markdown_here(assessment.notebook)
            return assessment
        if future.status == "cancelled":
            self.stopped = "grading stopped: the cluster cancelled the tasks (scheduler restarted?)"
            return _not_graded(sub, self.stopped)
        error = future.exception()
        if isinstance(error, KilledWorker):
            last = getattr(getattr(error, "last_worker", None), "address", "?")
            return _not_graded(
                sub,
                f"its grading killed {ALLOWED_FAILURES + 1} workers (KilledWorker, last on "
                f"{last}); it may exhaust a worker's memory: grade it alone to see why",
            )
        print(f"error: a worker cannot grade: {type(error).__name__}: {error}", file=sys.stderr)
        self.stopped = f"grading stopped ({type(error).__name__}: {error})"
        return _not_graded(sub, self.stopped)

    def run(self, subs: Sequence[Submission], desc: str) -> dict[Submission, GradeResult]:
        from tqdm.auto import tqdm

        results: dict[Submission, GradeResult] = {}
        recorded: dict[Submission, Future] = {}
        todo, running = deque(subs), {}
        bar = tqdm(total=len(subs), desc=desc, unit="nb", disable=not self.progress)
        started, noticed, shown = time.monotonic(), False, ""
        recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a2c-record")
        wake = threading.Event()  # set by each finished task: its worker gets the next at once
        try:
            while (todo or running) and self.stopped is None:
                workers, threads, busy = self._workers()
                if f"workers {busy} busy / {workers}" != shown:
                    shown = f"workers {busy} busy / {workers}"
                    bar.set_postfix_str(shown)
                waited = time.monotonic() - started
                if not workers and not noticed and waited > NO_WORKER_NOTICE_SECONDS:
                    noticed = True
                    print(
                        f"\nwaiting: no worker has joined the scheduler after {waited:.0f} s "
                        "(start `dask worker SCHEDULER_ADDRESS` on the grading machines)",
                        file=sys.stderr,
                    )
                while todo and len(running) < max(1, threads):
                    sub = todo.popleft()
                    try:
                        data = read_bytes(sub.path)
                    except UnreadableNotebook as error:
                        results[sub] = GradeResult(
                            sub.student,
                            status=f"unreadable: {error}",
                            source=str(sub.path),
                            sandboxed=False,
                        )
                        bar.update(1)
                        continue
                    key = f"a2c-grade-{sub.student}-{uuid.uuid4().hex[:8]}"
                    future = self.client.submit(
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
                    future.add_done_callback(lambda _: wake.set())
                    running[future] = sub
                wake.wait(POLL_SECONDS)
                wake.clear()
                for future in [f for f in running if f.done()]:
                    sub = running.pop(future)
                    outcome = self._finished(future, sub)
                    if isinstance(outcome, GradeResult):
                        results[sub] = outcome
                        bar.update(1)
                    else:
                        recorded[sub] = recorder.submit(self.record, outcome)
                        recorded[sub].add_done_callback(lambda _: bar.update(1))
        except KeyboardInterrupt:
            self.stopped = "interrupted (Ctrl-C) before its grading finished"
            print("\ninterrupted: cancelling the tasks, recording what was graded", file=sys.stderr)
        except (OSError, TimeoutError) as error:  # distributed's CommClosedError is an OSError
            self.stopped = f"grading stopped: the scheduler was lost ({type(error).__name__})"
            print(f"\nerror: {self.stopped}: {error}", file=sys.stderr)
        finally:
            if running:
                with contextlib.suppress(OSError, TimeoutError):
                    self.client.cancel(list(running))
            recorder.shutdown(wait=True)
            bar.close()
        for sub, future in recorded.items():
            results[sub] = future.result()
        for sub in subs:
            if sub not in results:
                results[sub] = _not_graded(sub, self.stopped or "no result came back")
        return results


def _not_graded(sub: Submission, why: str) -> GradeResult:
    return GradeResult(
        sub.student, status=f"not graded: {why}", source=str(sub.path), sandboxed=False
    )


def grade_on_cluster(
    assessor: Assessor,
    record: Record,
    submissions: Sequence[Submission],
    scheduler: Any,
    progress: bool = True,
    isolate: bool | None = None,
    memory: Memory | None = None,
) -> list[GradeResult]:
    """Assess ``submissions`` on the Dask cluster ``scheduler`` (an address or a ``Client``)
    as ``assessor`` would, and ``record`` each here, one at a time; one result per submission,
    never raises for one. ``isolate``: whether the workers sandbox (default: as ``assessor``).
    ``memory(sub)``: what the class holds of that student's agent (plain data, sent with the
    task: :meth:`~autograder.core.assessor.Assessor.assess`'s ``memory``).

    Each submission is assessed once, as :func:`~autograder.nbgrader.grader.grade_many` does: a
    notebook whose run failed or timed out costs one grading, not two.

    Raises:
        ClusterError: ``distributed`` is missing or the scheduler cannot be reached.
    """
    client = connect(scheduler) if isinstance(scheduler, str) else scheduler
    previous = _allowed_failures(client, ALLOWED_FAILURES)
    try:
        run = _ClassOnCluster(client, assessor, record, progress, isolate, memory)
        results = run.run(submissions, "grading on the cluster")
        return [results[sub] for sub in submissions]
    finally:
        if previous is not None and previous != ALLOWED_FAILURES:
            _allowed_failures(client, previous)
        if isinstance(scheduler, str):
            client.close()


class ClusterGrading:
    """How :func:`~autograder.nbgrader.grader.grade_many` grades a class on a Dask cluster:
    ``grade_many(..., cluster=ClusterGrading(client))`` (``client``: a ``distributed.Client``
    or a scheduler's address; ``isolate``: whether the workers sandbox, default as the
    instructor's grader)."""

    def __init__(self, scheduler: Any, isolate: bool | None = None) -> None:
        self.scheduler, self.isolate = scheduler, isolate

    def grade_class(
        self,
        assessor: Assessor,
        record: Record,
        submissions: Sequence[Submission],
        progress: bool,
        memory: Memory | None = None,
    ) -> list[GradeResult]:
        """:func:`grade_on_cluster` on this cluster."""
        return grade_on_cluster(
            assessor, record, submissions, self.scheduler, progress, self.isolate, memory
        )
