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
* the **instructor's machine** reads each file (:func:`~autograder.core.submission_file.read_bytes`),
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

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import nbformat

from autograder.core.assessor import Assessment, Assessor
from autograder.core.collect import Submission
from autograder.core.package_digest import package_files
from autograder.core.results import GradeResult
from autograder.core.sandbox import SandboxLimits, SandboxUnavailable
from autograder.core.submission_file import UnreadableNotebook, read_bytes

__all__ = [
    "ALLOWED_FAILURES",
    "SCHEDULER_VARIABLE",
    "ClusterError",
    "WorkerRefused",
    "assess_task",
    "check_worker_isolation",
    "connect",
    "grade_on_cluster",
    "package_files",
    "scheduler_address",
]

SCHEDULER_VARIABLE = "A2C_DASK_SCHEDULER"  #: the scheduler's address when --scheduler is left out
CONNECT_SECONDS = 10.0  #: how long to try reaching the scheduler
#: Worker deaths a task may survive: one retry, and a second death reports it ``not graded``.
ALLOWED_FAILURES = 1
POLL_SECONDS = 1.0  #: the longest wait between looks at the cluster (a result wakes it)
NO_WORKER_NOTICE_SECONDS = 30.0


class ClusterError(RuntimeError):
    """The cluster cannot grade: no ``distributed``, an unreachable scheduler, a worker refused."""


class WorkerRefused(ClusterError):
    """A worker cannot grade at all (no sandbox, another instructor package); raised on it."""


def scheduler_address(given: str | None = None) -> str | None:
    """``given``, else ``$A2C_DASK_SCHEDULER``; ``None`` (grade on this machine) when neither."""
    return (given or os.environ.get(SCHEDULER_VARIABLE, "")).strip() or None


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            "grading on a cluster needs Dask distributed, which is not installed here: "
            "pip install -e '.[cluster]' (or leave out --scheduler and "
            f"{SCHEDULER_VARIABLE} to grade on this machine)"
        ) from None
    return distributed


def connect(address: str, timeout: float = CONNECT_SECONDS, security: Any = None) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (with ``security``, a
    ``distributed.security.Security``, for a ``tls://`` one:
    :mod:`autograder.core.cluster_security`); :class:`ClusterError` if none answers within
    ``timeout`` seconds."""
    distributed = _distributed()
    try:
        return distributed.Client(
            address, timeout=timeout, set_as_default=False, security=security
        )
    except (OSError, TimeoutError) as error:
        tls = (
            " and that it was started with the same certificates (--tls-cert, --tls-key)"
            if security is not None
            else ""
        )
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
            f"({type(error).__name__}: {str(error)[:200]}): check that `dask scheduler` runs "
            f"there{tls}, and that this machine can reach its host and port (firewall, VPN, SSH "
            f"tunnel); leave out --scheduler and {SCHEDULER_VARIABLE} to grade on this machine"
        ) from None


# ------------------------------------------------------------------------ on a worker
#: What a record step does with an assessment: the front end's recording (nbgrader for grade-all).
Record = Callable[[Assessment], GradeResult]
_ASSESSORS: dict[str, Assessor] = {}
_ASSESSORS_LOCK = threading.Lock()


def _settings(assessor: Assessor, isolate: bool | None = None) -> dict[str, Any]:
    """What a worker needs to build an Assessor like the instructor's (plain data); ``isolate``
    (when given) instead of the instructor's own: the workers sandbox, this machine need not."""
    return {
        "source": nbformat.writes(assessor.release).encode(),
        "timeout": assessor.timeout,
        "isolate": assessor.isolate if isolate is None else isolate,
        "wall_seconds": assessor.wall_seconds,
        "limits": asdict(assessor.limits),
        "package": package_files(),
    }


def _build_assessor(settings: dict[str, Any], where: str) -> Assessor:
    theirs, ours = settings["package"], package_files()
    if theirs != ours:
        changed = sorted(n for n in theirs.keys() | ours.keys() if theirs.get(n) != ours.get(n))
        raise WorkerRefused(
            f"{where}: its instructor package differs from the instructor's in {len(changed)} "
            f"file(s) ({', '.join(changed[:5])}): install the same version of the course kit on "
            "every worker (pip install -e '.[cluster]' from the same commit) and restart them"
        )
    if settings["isolate"]:
        check_worker_isolation(where)
    folder = Path(tempfile.mkdtemp(prefix="a2c-worker-"))
    atexit.register(shutil.rmtree, folder, True)
    try:
        return Assessor(
            nbformat.reads(settings["source"].decode(), as_version=4),
            folder / "grading",
            timeout=settings["timeout"],
            isolate=settings["isolate"],
            wall_seconds=settings["wall_seconds"],
            limits=SandboxLimits(**settings["limits"]),
        )
    except SandboxUnavailable as error:
        raise WorkerRefused(f"{where} cannot start the sandbox: {error}") from None
    except Exception as error:  # noqa: BLE001 - said to the instructor, with the worker's name
        raise WorkerRefused(
            f"{where} could not set up grading: {type(error).__name__}: {str(error)[:500]}"
        ) from None


def check_worker_isolation(where: str) -> None:
    """Raise :class:`WorkerRefused` where this worker would grade in container mode without a
    network fence (:func:`~autograder.core.container_isolation.network_fence`): the student's
    code would reach the scheduler, and through it every worker's grading."""
    from autograder.core.container_isolation import network_fence
    from autograder.core.isolation import CONTAINER, require_isolation

    try:
        mode = require_isolation()
    except SandboxUnavailable as error:
        raise WorkerRefused(f"{where} cannot start the sandbox: {error}") from None
    if mode == CONTAINER and not network_fence():
        raise WorkerRefused(
            f"{where} would grade in container mode (bubblewrap cannot start there) with nothing "
            "to keep the notebook off the network (no Landlock TCP rule: Linux 6.7 or later; no "
            "network namespace): its code could reach the scheduler and change every worker's "
            "grading. Give the worker bubblewrap (user namespaces), or a kernel with Landlock "
            "ABI 4, or run it where root may make a network namespace"
        )


def _worker_assessor(settings: dict[str, Any], where: str) -> Assessor:
    """This process's Assessor for ``settings``, built on first use."""
    plain = {key: value for key, value in settings.items() if key not in ("source", "package")}
    key = hashlib.sha256(
        json.dumps(plain, sort_keys=True).encode() + hashlib.sha256(settings["source"]).digest()
    ).hexdigest()
    with _ASSESSORS_LOCK:
        if key not in _ASSESSORS:
            _ASSESSORS[key] = _build_assessor(settings, where)
        return _ASSESSORS[key]


def assess_task(data: bytes, student: str, name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The task a worker runs: ``Assessor.assess`` of one file's bytes, as plain data.

    Raises:
        WorkerRefused: this worker cannot grade (see the message); never because of ``data``.
    """
    from distributed import get_worker

    worker = get_worker()
    assessor = _worker_assessor(settings, f"worker {worker.address} on {socket.gethostname()}")
    # One thread a notebook, Dask's own convention (its nannies set OMP_NUM_THREADS=1): a worker
    # cannot see the other workers on its machine, and the cluster's threads are its cores.
    plain = assessor.assess(data, student, name, threads=1).to_plain()
    plain["worker"] = worker.address
    return plain


# ------------------------------------------------------------------------ on the instructor's
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
        self, client: Any, assessor: Assessor, record: Record, progress: bool, isolate: bool | None
    ):
        self.client, self.record = client, record
        self.progress = progress
        self.settings = _settings(assessor, isolate)
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
) -> list[GradeResult]:
    """Assess ``submissions`` on the Dask cluster ``scheduler`` (an address or a ``Client``)
    as ``assessor`` would, and ``record`` each here, one at a time; one result per submission,
    never raises for one. ``isolate``: whether the workers sandbox (default: as ``assessor``).

    Each submission is assessed once, as :func:`~autograder.nbgrader.grader.grade_many` does: a
    notebook whose run failed or timed out costs one grading, not two.

    Raises:
        ClusterError: ``distributed`` is missing or the scheduler cannot be reached.
    """
    client = connect(scheduler) if isinstance(scheduler, str) else scheduler
    previous = _allowed_failures(client, ALLOWED_FAILURES)
    try:
        run = _ClassOnCluster(client, assessor, record, progress, isolate)
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
    ) -> list[GradeResult]:
        """:func:`grade_on_cluster` on this cluster."""
        return grade_on_cluster(
            assessor, record, submissions, self.scheduler, progress, self.isolate
        )
