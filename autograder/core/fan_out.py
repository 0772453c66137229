"""One pass over a class: every submission graded where the engine runs, recorded here.

:func:`grade_class` is the one fan-out over a class, of ``grade-all`` (on this machine or a Dask
cluster) and ``regrade``: it starts each submission on an engine, as many at a time as the
engine has room for, and hands each :class:`~autograder.core.assessor.Assessment` that comes
back to the front end's ``record`` (for ``grade-all``: nbgrader and the feedback; for
``regrade``: kept to compare), on one recording thread, as the assessments finish. One result
per submission, in the order given, whatever happens to the others; a grading the engine lost
is ``not graded`` with the reason. A progress bar counts the submissions done.

Engines (where the gradings run):

* :class:`LocalGrading`: ``jobs`` threads of this machine, each a sandbox (``cores // jobs``
  torch threads for each notebook), running the front end's own step for one submission
  (``grade-all``: :meth:`~autograder.nbgrader.grader.Grader.grade`, which records as well;
  ``regrade``: the assessment alone); Ctrl-C starts nothing new and lets the gradings under way
  finish;
* :class:`autograder.core.cluster.scheduling.ClusterGrading`: tasks of a Dask cluster, as many
  at a time as the cluster has threads, each file's bytes sent and its assessment recorded
  here (this process is the only writer of grades); Ctrl-C cancels what runs there.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from autograder.core.assessor import Assessment
from autograder.core.intake.collect import Submission
from autograder.core.intake.submission_file import UnreadableNotebook
from autograder.core.reports.grade_result import GradeResult

__all__ = [
    "Engine",
    "LocalGrading",
    "Record",
    "Work",
    "check_jobs",
    "grade_class",
    "not_graded",
    "unreadable",
]

#: What a record step does with an assessment: the front end's recording (nbgrader for grade-all).
Record = Callable[[Assessment], GradeResult]
#: One submission graded on this machine with so many torch threads: its assessment (to be
#: recorded), or its result (recorded already, or why there is none).
Work = Callable[[Submission, int], "Assessment | GradeResult"]
POLL_SECONDS = 1.0  #: the longest wait between looks at the engine (a finished task wakes it)


class Engine(Protocol):
    """Where a class's assessments run (see the module docstring)."""

    #: why the class stopped early (the engine cannot go on), else None
    stopped: str | None

    def slots(self) -> int:
        """How many assessments may run at once now."""

    #: the progress bar's label
    desc: str

    def submit(self, sub: Submission) -> Any:
        """Start grading ``sub``: a future (``done()``, ``add_done_callback``), or what came
        of it at once (an unreadable file's assessment)."""

    def outcome(self, future: Any, sub: Submission) -> Assessment | GradeResult:
        """What a done future brought: an assessment to record, or why there is none."""

    def watch(self, bar: Any) -> None:
        """Say how the engine is doing on the progress ``bar`` (called at every look)."""

    def interrupt(self, running: dict[Any, Submission]) -> str:
        """Ctrl-C: stop what runs, or let it finish; the reason the rest is not graded."""

    def lost(self, error: OSError | TimeoutError) -> str:
        """The engine failed on its own (a scheduler gone): the reason the rest is not graded
        (or raise)."""

    def close(self, running: dict[Any, Submission]) -> None:
        """Release what the engine holds; stop what still ``running`` (the class stopped)."""


def check_jobs(jobs: int | None) -> int:
    """``jobs`` validated; ``None`` gives the number of CPU cores."""
    if jobs is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (parallel gradings), got {jobs!r}.")
    return jobs


def not_graded(sub: Submission, why: str) -> GradeResult:
    """The result of a submission whose grading never came back."""
    return GradeResult(
        sub.student, status=f"not graded: {why}", source=str(sub.path), sandboxed=False
    )


def unreadable(sub: Submission, error: UnreadableNotebook) -> Assessment:
    """The assessment of a file that is no notebook the grader can read (nothing of it ran)."""
    result = GradeResult(
        sub.student, status=f"unreadable: {error}", source=str(sub.path), sandboxed=False
    )
    return Assessment(result)


def grade_class(
    engine: Engine,
    record: Record,
    submissions: Sequence[Submission],
    progress: bool = True,
) -> list[GradeResult]:
    """Assess ``submissions`` on ``engine`` and ``record`` each here, one at a time; one result
    per submission, in their order; never raises for one (see the module docstring)."""
    from tqdm.auto import tqdm

    recorded: dict[Submission, Future] = {}
    results: dict[Submission, GradeResult] = {}
    todo, running = deque(submissions), {}
    bar = tqdm(total=len(submissions), desc=engine.desc, unit="nb", disable=not progress)
    recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="a2c-record")
    wake = threading.Event()  # set by each finished assessment: the next starts at once
    stopped = ""

    def keep(sub: Submission, assessment: Assessment) -> None:
        recorded[sub] = recorder.submit(record, assessment)
        recorded[sub].add_done_callback(lambda _: bar.update(1))

    def done(sub: Submission, outcome: Assessment | GradeResult) -> None:
        if isinstance(outcome, GradeResult):
            results[sub] = outcome
            bar.update(1)
        else:
            outcome.result.source = str(sub.path)
            keep(sub, outcome)

    def collect(finished: list[Any]) -> None:
        for future in finished:
            sub = running.pop(future)
            done(sub, engine.outcome(future, sub))

    try:
        while (todo or running) and engine.stopped is None:
            engine.watch(bar)
            while todo and len(running) < max(1, engine.slots()):
                sub = todo.popleft()
                started = engine.submit(sub)
                if isinstance(started, (Assessment, GradeResult)):
                    done(sub, started)
                    continue
                started.add_done_callback(lambda _: wake.set())
                running[started] = sub
            wake.wait(POLL_SECONDS)
            wake.clear()
            collect([future for future in running if future.done()])
    except KeyboardInterrupt:
        bar.close()
        stopped = engine.interrupt(running)
        collect([future for future in running if future.done()])
    except (OSError, TimeoutError) as error:  # the engine itself was lost (a scheduler)
        stopped = engine.lost(error)
    finally:
        engine.close(running)
        recorder.shutdown(wait=True)
        bar.close()
    for sub, future in recorded.items():
        results[sub] = future.result()
    why = stopped or engine.stopped or "no result came back"
    return [results[sub] if sub in results else not_graded(sub, why) for sub in submissions]


class LocalGrading:
    """A class graded on this machine, ``jobs`` gradings at a time (default: one a core)."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = check_jobs(jobs)

    def engine(self, work: Work) -> Engine:
        """The engine that runs ``work`` for each submission in ``jobs`` threads."""
        return _Threads(work, self.jobs)


class _Threads:
    """The :class:`Engine` of :class:`LocalGrading`."""

    desc = "grading"

    def __init__(self, work: Work, jobs: int) -> None:
        self.work, self.jobs = work, jobs
        self.threads = max(1, (os.cpu_count() or 1) // jobs)  # torch threads of each notebook
        self.pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="a2c-grade")
        self.stopped: str | None = None

    def slots(self) -> int:
        return self.jobs

    def submit(self, sub: Submission) -> Future:
        return self.pool.submit(self.work, sub, self.threads)

    def outcome(self, future: Future, sub: Submission) -> Assessment | GradeResult:
        if future.cancelled():
            return not_graded(sub, "interrupted (Ctrl-C) before this notebook was graded")
        try:
            return future.result()
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            return GradeResult(
                sub.student,
                status=f"error: the grader failed on this submission ({type(error).__name__})",
                notes=[str(error)[:500]],
                source=str(sub.path),
            )

    def watch(self, bar: Any) -> None:
        return None

    def interrupt(self, running: dict[Any, Submission]) -> str:
        # Nothing new starts; the gradings under way finish and are kept.
        print("\ninterrupted: finishing the gradings under way, then writing what was graded")
        self.pool.shutdown(wait=True, cancel_futures=True)
        return "interrupted (Ctrl-C) before this notebook was graded"

    def lost(self, error: OSError | TimeoutError) -> str:
        raise error  # this process's own threads: nothing is lost but the process itself

    def close(self, running: dict[Any, Submission]) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
