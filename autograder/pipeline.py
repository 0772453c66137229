"""Grade submissions: the parts run in a sandbox, are judged here, and nbgrader records them.

:class:`Grader` builds the template course once (:func:`autograder.course.build_template`:
``generate_assignment`` on the solution notebook, a fresh gradebook, a snapshot of
``course_lib``), then grades any number of notebooks::

    with Grader() as grader:
        result = grader.grade(Path("alice.ipynb"))   # a GradeResult
        print(result.as_dict())                         # {"total", "max_total", "status", ...}

One submission, two steps, two trust domains:

1. :meth:`Grader.assess` (trusted, with a sandbox under it): the file's bytes are parsed and
   the notebook repaired (:mod:`autograder.repair`); a plan of probe cases is drawn for this
   grading alone; the sandbox (:mod:`autograder.sandbox`: throw-away, no network, nothing of
   the host writable, its own processes) runs the set-up cells, the student's definitions and,
   at each autograded cell, the probes of that part (:mod:`autograder.grading_job`); the
   records it streams back are validated as untrusted data and judged against the reference
   (:func:`autograder.judging.judge_part`). The training and evaluation cells are not run: the
   outputs the student submitted are kept, filtered and marked as theirs
   (:mod:`autograder.submitted_outputs`). The result is plain data (:class:`Assessment`), so
   the step can run on another machine.
2. :meth:`Grader.record` (trusted, the instructor's machine): ``nbgrader autograde``, with
   execution off, writes the grader's scores once, into the course's gradebook (or, without a
   course, the grader's own, made once per run) (:mod:`autograder.nbgrader_steps`), reads them
   back to check, and ``generate_feedback`` makes the feedback HTML from that gradebook.

:func:`grade_many` grades a list of :class:`~autograder.collect.Submission` in parallel (one
sandbox per job, ``cores // jobs`` threads each), with a progress bar, and writes
``grades.csv``, ``feedback/<student>.html``, ``summary.txt`` and ``scores.png``.

Nothing here raises because of a submission: the returned
:class:`~autograder.results.GradeResult` says what happened in its ``status``, and a failure
of the grader itself on one submission is that submission's ``error`` row.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import nbformat

from . import environment
from .channel import read_channel
from .checks import PART_NAMES
from .collect import Problem, Submission, student_id
from .course import (
    GRADEBOOK_LOCK,
    SOURCE_NOTEBOOK,
    CourseTemplate,
    autograde,
    build_template,
    new_workspace,
    open_course,
    read_tree,
    tree_digest,
)
from .course import generate_feedback as nbgrader_feedback
from .grading_job import job_cells
from .host_paths import Redactor
from .isolation import require_isolation, run_isolated
from .judging import make_plan, new_seed, prepare_references
from .package_digest import package_files
from .progress_log import ProgressLog
from .repair import graded_part, repair_submission
from .results import GradeResult, PartScore, check_gradebook
from .runtime import record as records
from .sandbox import (
    DEFAULT_LIMITS,
    PYTHON,
    SCRATCH,
    SandboxLimits,
    require_unsandboxed_user,
)
from .sandbox_layout import PYTHON_BIN
from .submission_file import UnreadableNotebook, parse_notebook, read_bytes
from .submitted_markdown import safe_markdown
from .submitted_outputs import keep_submitted_outputs
from .verdict import cell_notes, run_status, score_parts

__all__ = ["Assessment", "Grader", "check_jobs", "check_timeout", "grade_many"]

IN_SANDBOX = Path(__file__).resolve().with_name("in_sandbox")
#: The grading runtime (probes, records, harness): shown to the sandbox as ``grading_runtime``.
RUNTIME_DIR = Path(records.__file__).resolve().parent
#: Per-cell time limit (seconds) of the sandboxed run, and the limit of the whole run.
CELL_TIMEOUT = 120.0
WALL_SECONDS = 900.0
#: Besides one cell limit, what a notebook's whole run may take (times the time scale): the
#: set-up, the definitions and the probes of an honest notebook take a few seconds.
RESERVE_SECONDS = 60.0
#: The sandbox's wall clock: the runner's budget plus this, for start-up and kills.
WALL_MARGIN = 60.0
WALL_CLOCK_FACTOR = 2.0  #: the runner stops a probe step after this many times its CPU limit
_GRADER_DIR = "/grader"
#: Judging draws on torch's global random state (fixtures are built from seeds), so parallel
#: gradings judge one at a time.
_JUDGE_LOCK = threading.Lock()


def check_timeout(timeout: float | None) -> float:
    """``timeout`` validated: ``None`` (120 s) or a number of seconds >= 1."""
    if timeout is None:
        return CELL_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 1:
        raise ValueError(
            f"timeout must be a number of seconds >= 1 (the per-cell limit), got {timeout!r}; "
            f"leave it out for the default, {CELL_TIMEOUT:g} s."
        )
    return float(timeout)


def check_jobs(jobs: int | None) -> int:
    """``jobs`` validated; ``None`` gives the number of CPU cores."""
    if jobs is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (parallel gradings), got {jobs!r}.")
    return jobs


def _points(release: nbformat.NotebookNode) -> dict[str, float]:
    """part key -> points of its autograded cell, in notebook order."""
    return {
        graded_part(cell): float(cell.metadata["nbgrader"].get("points", 0))
        for cell in release.cells
        if graded_part(cell) in PART_NAMES
    }


@dataclass
class Assessment:
    """One submission assessed (run and judged), as plain data: what :meth:`Grader.record`
    needs, and what travels back from another machine."""

    result: GradeResult
    notebook: str = ""  #: the notebook nbgrader records (JSON), empty when unreadable

    def to_plain(self) -> dict[str, Any]:
        return {"result": self.result.to_plain(), "notebook": self.notebook}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Assessment:
        return cls(GradeResult.from_plain(data["result"]), str(data.get("notebook", "")))


class Grader:
    """Grades notebooks against one solution notebook (see the module docstring).

    Args:
        source_notebook: the nbgrader source (solution cells and hidden tests).
        timeout: per-cell time limit of the sandboxed run, in seconds (default 120).
        workdir: where the template course and the grader's own course go (a new temporary
            folder by default; removed by :meth:`close`).
        keep: keep ``workdir`` (the grader's own course, with every notebook it recorded)
            after :meth:`close`, to debug a grade.
        isolate: run notebooks in the bubblewrap sandbox (``False``: a plain subprocess, for
            debugging; its results are never ``graded``). With ``True`` and no working
            bubblewrap, raises :class:`~autograder.sandbox.SandboxUnavailable` (with the fix).
        wall_seconds: the whole sandboxed run is killed after this long (default 900 s).
        course: an nbgrader course directory (made on first use) that also receives every
            graded notebook and score, for formgrader, ``generate_feedback`` and ``export``.
        limits: memory, process and size limits of one sandboxed run.
    """

    #: While :func:`grade_many` runs, every recorded grade is appended here at once.
    progress: ProgressLog | None = None

    def __init__(
        self,
        source_notebook: Path = SOURCE_NOTEBOOK,
        timeout: float | None = None,
        workdir: Path | None = None,
        keep: bool = False,
        isolate: bool = True,
        wall_seconds: float = WALL_SECONDS,
        course: Path | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> None:
        self.timeout = check_timeout(timeout)
        #: "bubblewrap", "container" (root where bubblewrap cannot start) or "none"
        self.isolation = require_isolation() if isolate else "none"
        if not isolate:
            require_unsandboxed_user()
        self.keep, self.isolate, self.wall_seconds = keep, isolate, float(wall_seconds)
        # Without the sandbox, a notebook could change the environment: fingerprinted now and
        # after each such grading (and the grader itself writes no bytecode from here on, so
        # that only a notebook can change it).
        self._environment: environment.Fingerprint | None = None
        self._changed_environment = ""
        if not isolate:
            sys.dont_write_bytecode = True
            self._environment = environment.fingerprint()
        self.limits = limits
        self._own_dir = workdir is None
        self._package_files = package_files()
        # Every path absolute: nbgrader changes the working directory while it converts a
        # notebook, and gradings run in parallel threads.
        self.workdir = Path(tempfile.mkdtemp(prefix="a2c-grading-") if workdir is None else workdir)
        self.workdir = self.workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        source_notebook = Path(source_notebook).resolve()
        self.template = build_template(self.workdir / "template", source_notebook)
        # What the sandbox sees of the grader: course_lib's snapshot, the grading runtime (the
        # probes and the record format) and the two scripts that run a job.
        shutil.copytree(RUNTIME_DIR, self.template.lib / "grading_runtime", ignore=_ignored)
        self._bin = self.workdir / "bin"
        shutil.copytree(IN_SANDBOX, self._bin, ignore=_ignored)
        self._files = {
            name: data
            for name, data in read_tree(self.template.root).items()
            if not name.startswith("lib/")
        }
        self._lib_digest = tree_digest(self.template.lib)
        self._release = nbformat.read(self.template.release_notebook, as_version=4)
        self._points = _points(self._release)
        self._names = {part: PART_NAMES[part] for part in self._points}
        self._ids = itertools.count(1)  # thread-safe in CPython: score files' names stay unique
        self.course: CourseTemplate | None = None
        if course is not None:
            self.course = open_course(course, source_notebook)
        #: Where each submission is recorded, once: the instructor's course, or else a course
        #: of this grader's own (written from the template's bytes, so that nothing on disk
        #: since the template was built is used), whose gradebook the feedback is made from.
        self.gradebook: CourseTemplate = self.course or new_workspace(
            self._files, self.workdir / "gradebook"
        )
        (self.workdir / "scores").mkdir(exist_ok=True)
        self._redactor = Redactor(
            [self.workdir, source_notebook.parent, *([course] if course is not None else [])]
        )

    # ------------------------------------------------------------------ step 1: assess
    def budget(self, time_scale: float) -> float:
        """What a notebook's whole run may take: one cell limit and a reserve for the rest."""
        return self.timeout + RESERVE_SECONDS * time_scale

    def _run(self, nb: nbformat.NotebookNode, plan: dict[str, Any], threads: int):
        budget = self.budget(plan.get("time_scale", 1.0))
        job = {
            "cells": job_cells(nb, self._names),
            "steps": plan["parts"],
            "time_scale": plan.get("time_scale", 1.0),
            "cell_seconds": self.timeout,
            "budget_seconds": budget,
            "wall_factor": WALL_CLOCK_FACTOR,
        }
        env = {
            "PATH": os.pathsep.join([PYTHON_BIN, "/usr/bin", "/bin"]),
            "HOME": f"{SCRATCH}/home",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONPATH": f"{_GRADER_DIR}/lib",
            "PYTHONDONTWRITEBYTECODE": "1",
            "A2C_KIT_QUICK": "1",
            "NBGRADER_EXECUTION": "autograde",
            "MPLBACKEND": "Agg",
            **{name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        }
        argv = [
            PYTHON,
            f"{_GRADER_DIR}/bin/runner.py",
            f"{_GRADER_DIR}/bin/executor.py",
        ]
        readonly = {f"{_GRADER_DIR}/bin": self._bin, f"{_GRADER_DIR}/lib": self.template.lib}
        return run_isolated(
            argv,
            readonly,
            env,
            records.dumps(job).encode(),
            min(self.wall_seconds, budget + WALL_MARGIN),
            limits=self.limits,
            isolate=self.isolate,
        )

    def assess(
        self, data: bytes, student: str, name: str = "a2c.ipynb", threads: int = 1
    ) -> Assessment:
        """Run and judge the submission ``data`` (the file's bytes); never raises."""
        start = time.perf_counter()
        result = GradeResult(
            student, source=name, sandboxed=self.isolate, isolation=self.isolation
        )
        try:
            if package_files() != self._package_files:
                raise RuntimeError(
                    "the grader's own files changed since it started (a notebook graded without "
                    "the sandbox?): reinstall the course kit and grade again"
                )
            if self._changed_environment:
                raise RuntimeError(
                    "a notebook graded without the sandbox changed the Python environment "
                    f"({self._changed_environment}): reinstall it before grading anything else"
                )
            try:
                nb = parse_notebook(data, name)
            except UnreadableNotebook as error:
                result.status, result.sandboxed = f"unreadable: {error}", False
                return Assessment(result)
            result.notes += repair_submission(nb, self._release)
            plan = make_plan(new_seed())  # this grading's own cases, unknown in advance
            # The reference's observations on these cases, computed while the sandbox runs.
            references = threading.Thread(target=self._prepare_references, args=(plan,))
            references.start()
            try:
                ran = self._run(nb, plan, threads)
            finally:
                references.join()
            result.timings["sandbox"] = ran.seconds
            judged = time.perf_counter()
            with _JUDGE_LOCK:
                self._judge(result, nb, plan, ran)
            result.timings["judge"] = time.perf_counter() - judged
            result.notes += keep_submitted_outputs(nb)
            result.notes += safe_markdown(nb, self._release)
            return Assessment(result, nbformat.writes(nb))
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            result.status = f"error: the grader failed on this submission ({type(error).__name__})"
            result.notes.append(f"{type(error).__name__}: {str(error)[:500]}")
            return Assessment(result)
        finally:
            result.seconds = time.perf_counter() - start

    @staticmethod
    def _prepare_references(plan: dict[str, Any]) -> None:
        with _JUDGE_LOCK:
            prepare_references(plan)

    def _judge(self, result: GradeResult, nb: Any, plan: dict[str, Any], ran: Any) -> None:
        """Score every part from the channel; set the status from how the run ended."""
        channel = read_channel(ran.channel, plan)
        result.isolation = ran.isolation
        score_parts(result, channel, self._points, plan)
        for part, seconds in channel.probe_seconds.items():
            result.timings[f"probe:{part}"] = seconds
        result.notes += cell_notes(channel, nb)
        if ran.sandboxed and not ran.limits.startswith("cgroup"):
            result.notes.append(ran.limits)
        channel.malformed += self._tampering(ran)
        if channel.stopped:
            result.notes.append(f"run stopped: {channel.stopped}")
        if channel.malformed:
            result.notes.append("malformed: " + "; ".join(channel.malformed[:5]))
        result.status = run_status(channel, ran) or result.status
        if not ran.sandboxed:
            rights = "your user's rights" if ran.uid is None else "an unprivileged user's rights"
            result.notes.append(f"NOT SANDBOXED: the notebook ran as a plain process with {rights}")
        # What came out of the sandbox is quoted below: no host path or user id in it.
        for part, score in result.parts.items():
            feedback = self._redactor.redact(score.feedback, ran.uid)
            result.parts[part] = PartScore(score.score, score.max, feedback)
        result.notes = [self._redactor.redact(note, ran.uid) for note in result.notes]
        result.status = self._redactor.redact(result.status, ran.uid)

    def _tampering(self, ran: Any) -> list[str]:
        """What the run changed that it must not: the grader's copy of ``course_lib`` and the
        Python environment (without the sandbox), the channel's size cap."""
        found = []
        if not ran.sandboxed:
            now = tree_digest(self.template.lib)
            changed = sorted(
                name
                for name in now.keys() | self._lib_digest.keys()
                if self._lib_digest.get(name) != now.get(name)
            )
            if changed:
                found.append("changed the grader's copy of course_lib: " + ", ".join(changed[:10]))
        if self._environment is not None:
            changed = environment.changes(self._environment)
            if changed:  # every later grading of this grader refuses (see assess)
                self._changed_environment = ", ".join(changed[:5])
                found.append(f"changed the Python environment: {self._changed_environment}")
        if ran.channel_overflow:
            found.append(f"more than {self.limits.channel_bytes} bytes of results")
        return found

    # ------------------------------------------------------------------ step 2: record
    def record(self, assessment: Assessment, feedback_dir: Path | None = None) -> GradeResult:
        """Write ``assessment`` into nbgrader, once: into the course when there is one, else
        into this grader's own gradebook; check the gradebook, make the feedback; never raises."""
        result = assessment.result
        if not assessment.notebook:  # unreadable, or the grader failed: nothing for nbgrader
            self._log_progress(result)
            return result
        start = time.perf_counter()
        student = result.student
        scores = self.workdir / "scores" / f"{next(self._ids):05d}.json"
        try:
            nb = nbformat.reads(assessment.notebook, as_version=4)
            scores.write_text(
                json.dumps(
                    {
                        f"test_{key}": {"score": part.score, "feedback": part.feedback}
                        for key, part in result.parts.items()
                    }
                ),
                encoding="utf-8",
            )
            autograde(self.gradebook, student, nb, scores)
            with GRADEBOOK_LOCK:
                disagreements = check_gradebook(self.gradebook.db_url, student, result)
            if disagreements:
                result.status = "error: the gradebook does not hold the grader's scores"
                result.notes += disagreements
            elif feedback_dir is not None:
                html = nbgrader_feedback(self.gradebook, student)
                Path(feedback_dir).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(html, Path(feedback_dir) / f"{student}.html")
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            if result.graded:
                first = str(error).splitlines()[0] if str(error) else type(error).__name__
                result.status = f"error: {first[:300]}"
            result.notes.append(f"{type(error).__name__}: {str(error)[-2000:]}")
        finally:
            scores.unlink(missing_ok=True)
            result.timings["record"] = time.perf_counter() - start
            result.seconds += time.perf_counter() - start
        self._log_progress(result)
        return result

    def _log_progress(self, result: GradeResult) -> None:
        if self.progress is not None:
            self.progress.write(result)

    def grade(
        self,
        path: Path,
        student: str | None = None,
        feedback_dir: Path | None = None,
        threads: int = 1,
    ) -> GradeResult:
        """Grade the notebook at ``path`` as ``student`` (by default named after the file).

        With ``feedback_dir``, the feedback HTML is copied to ``feedback_dir/<student>.html``.
        """
        path = Path(path).resolve()
        student = student or student_id(path) or "student"
        try:
            data = read_bytes(path)
        except UnreadableNotebook as error:
            result = GradeResult(
                student, status=f"unreadable: {error}", source=str(path), sandboxed=False
            )
            self._log_progress(result)
            return result
        assessment = self.assess(data, student, path.name, threads)
        assessment.result.source = str(path)
        return self.record(assessment, feedback_dir)

    def close(self) -> None:
        """Remove the template and the grader's own course (when the workdir was made here)."""
        if self._own_dir and not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Grader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _ignored(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name == "__pycache__" or name.endswith(".pyc")}


def _outcome(future: Any, sub: Submission) -> GradeResult:
    """The result of one local grading future; never raises (one submission, one row)."""
    if future.cancelled():
        return GradeResult(
            sub.student,
            status="not graded: interrupted (Ctrl-C) before this notebook was graded",
            sandboxed=False,
            source=str(sub.path),
        )
    try:
        return future.result()
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        return GradeResult(
            sub.student,
            status=f"error: the grader failed on this submission ({type(error).__name__})",
            notes=[str(error)[:500]],
            source=str(sub.path),
        )


def _grade_locally(
    grader: Grader,
    submissions: Sequence[Submission],
    feedback_dir: Path | None,
    jobs: int | None,
    progress: bool,
) -> list[GradeResult]:
    """``grader.grade`` on each submission in ``jobs`` threads, each once.

    Ctrl-C stops it: what was graded (and what was under way) is returned, the rest as
    ``not graded: interrupted``.
    """
    from tqdm.auto import tqdm

    jobs = check_jobs(jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {
        pool.submit(grader.grade, sub.path, sub.student, feedback_dir, threads): sub
        for sub in submissions
    }
    bar = tqdm(total=len(futures), desc="grading", unit="nb", disable=not progress)
    try:
        for _ in as_completed(futures):
            bar.update(1)
    except KeyboardInterrupt:
        # Ctrl-C: nothing new starts; the gradings under way finish and are kept.
        bar.close()
        print("\ninterrupted: finishing the gradings under way, then writing what was graded")
        pool.shutdown(wait=True, cancel_futures=True)
        return [_outcome(future, sub) for future, sub in futures.items()]
    bar.close()
    pool.shutdown()
    return [_outcome(future, sub) for future, sub in futures.items()]


def grade_many(
    grader: Grader,
    submissions: Sequence[Submission],
    out: Path,
    problems: Sequence[Problem] = (),
    jobs: int | None = None,
    progress: bool = True,
    histogram: bool = True,
    feedback: bool = True,
    cluster: Any = None,
) -> list[GradeResult]:
    """Grade ``submissions`` with ``jobs`` parallel nbgrader runs and write the reports to ``out``.

    Files in ``problems`` (unreadable, duplicates...) get a row in the CSV with their reason.
    Each submission is graded once, a failed or timed-out one too (its run's cost is bounded by
    the runner's budget, and a second try would double it). Each student's grade is appended to
    ``out/progress.jsonl`` as it is recorded; the file goes once ``grades.csv`` holds every row.
    With ``cluster`` (an :class:`autograder.cluster.ClusterGrading`: a Dask
    cluster), the assess steps run there instead of ``jobs`` local threads; recording stays here.
    """
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    feedback_dir = out / "feedback" if feedback else None
    progress = grader.progress = ProgressLog(out / "progress.jsonl")
    if cluster is not None:
        results = cluster.grade_class(grader, submissions, feedback_dir, progress)
    else:
        results = _grade_locally(grader, submissions, feedback_dir, jobs, progress)
    # The reports: merged by student into what `out` holds already (autograder.outputs).
    from .outputs import write_reports

    written = write_reports(
                grader,
        out,
        results,
        submissions,
        problems,
        histogram=histogram,
        feedback_dir=feedback_dir,
        make_feedback=nbgrader_feedback,
    )
    progress.remove()  # every row is in grades.csv now
    grader.progress = None
    return written
