"""Assess one submission: run it sandboxed, judge what it returns, keep what it showed.

The grading core's one entry point. An :class:`Assessor` is made once from the *release*
notebook (the one students got: its nbgrader metadata names the autograded cells and their
points) and grades any number of submissions, each from the file's bytes::

    assessor = Assessor(release_notebook, workdir)
    assessment = assessor.assess(data, "alice")      # an Assessment, plain data
    assessment.result.as_dict()                       # {"total", "max_total", "status", ...}

What :meth:`Assessor.assess` does, in the grader's own trusted process, with a sandbox under it:

1. the file's bytes are parsed and the notebook repaired against the release
   (:mod:`autograder.core.intake.repair`);
2. a plan of probe cases is drawn for this grading alone (:func:`autograder.core.judging.plan.make_plan`);
3. the sandbox (:mod:`autograder.core.isolation`: bubblewrap, or an unprivileged user in a container)
   runs the set-up cells, the student's definitions and, at each autograded cell, the probes of
   that part (:mod:`autograder.core.grading_job`), and streams records back;
4. the records are decoded as untrusted data (:mod:`autograder.core.judging.channel`) and judged against the
   reference here (:mod:`autograder.core.judging.run_outcome`); everything quoted back is stripped of host paths
   (:mod:`autograder.core.isolation.redaction`);
5. the training and evaluation cells are not run: the outputs the student submitted are kept,
   filtered and marked as theirs (:mod:`autograder.core.intake.student_outputs`), and markdown a student
   could change is sanitised (:mod:`autograder.core.intake.student_markdown`).

The result (:class:`Assessment`) is plain data, so the step runs on a cluster's worker as well
as here.

Why one module: the steps above share one assessor's state (the release and its points, the
snapshot the sandbox is shown, the redactor of host paths, the agent's settings and protocol,
the lock the judging takes) and one submission's (its plan, its job's cells, the agent's check
riding in the run), in that order; split, each step would reach into the others' names. Nothing here knows nbgrader: the front ends (``grade``/``grade-all`` with nbgrader's
gradebook, Gradescope, PrairieLearn) record or report what comes back. Nothing here raises
because of a submission: its :class:`~autograder.core.reports.grade_result.GradeResult` says what happened.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from autograder.core.agent_play.feedback import show_in_notebook
from autograder.core.agent_play.handed_in import HandedIn, handed_in
from autograder.core.agent_play.model_check import CHECK_PART, add_check
from autograder.core.agent_play.settings import REPLAY_FRAMES, agent_outcome
from autograder.core.agent_play.verification import verify_agent
from autograder.core.course.limits import Limits
from autograder.core.course.settings import Course
from autograder.core.file_tree import tree_digest
from autograder.core.grading_job import job_cells
from autograder.core.intake.repair import repair_submission
from autograder.core.intake.student_outputs import keep_submitted_outputs
from autograder.core.intake.submission_file import UnreadableNotebook, parse_notebook
from autograder.core.isolation import (
    environment_fingerprint,
    require_isolation,
    run_isolated,
    templates,
)
from autograder.core.isolation.redaction import Redactor
from autograder.core.isolation.supervision import PROCESS_START_LOCK
from autograder.core.isolation.template import Warm
from autograder.core.isolation.unsandboxed import require_unsandboxed_user
from autograder.core.judging import make_plan, new_seed, prepare_references
from autograder.core.judging.channel import Channel, read_channel
from autograder.core.judging.parts import PART_NAMES
from autograder.core.judging.run_outcome import cell_notes, run_status, score_parts
from autograder.core.judging.torch_threads import one_torch_thread
from autograder.core.package_digest import package_files
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.core.sandbox_view import job_argv, job_env, setup_modules, write_view
from autograder.sandboxed.grading_runtime import eager_torch
from autograder.sandboxed.grading_runtime import record as records
from course_lib.evaluation import GRADER_PROTOCOL

__all__ = ["AFTER_RUN_MODULES", "Assessment", "Assessor"]

#: The sandbox's wall clock: the runner's budget plus this, for start-up and kills.
WALL_MARGIN = 60.0
WALL_CLOCK_FACTOR = 2.0  #: the runner stops a probe step after this many times its CPU limit
#: What a run's start takes (the sandbox, Python, IPython and torch imported), for its CPU cap.
START_SECONDS = 30.0
#: What :meth:`Assessor.assess` imports only once a run is done: the notebook's markdown made
#: safe and its languages the course's, rendered with nbconvert (about a second of CPU). A
#: grading process imports them in a thread while its first sandbox runs (once its template has
#: started), instead of before it can start (:meth:`Assessor.wait_for_imports`).
AFTER_RUN_MODULES = (
    "autograder.core.intake.student_markdown",
    "autograder.core.intake.code_highlighting",
)
#: Judging draws on torch's global random state (fixtures are built from seeds), so parallel
#: gradings judge one at a time.
_JUDGE_LOCK = threading.Lock()


@dataclass
class Assessment:
    """One submission assessed (run and judged), as plain data: what a front end records, and
    what travels back from a cluster's worker."""

    result: GradeResult
    notebook: str = ""  #: the submission as assessed (JSON), empty when unreadable

    def to_plain(self) -> dict[str, Any]:
        return {"result": self.result.to_plain(), "notebook": self.notebook}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Assessment:
        return cls(GradeResult.from_plain(data["result"]), str(data.get("notebook", "")))


class Assessor:
    """Runs and judges submissions against one release notebook (see the module docstring).

    Args:
        release: the release notebook (a path or a read notebook): which cells are autograded,
            and their points; a submission is repaired against it.
        workdir: an empty or new folder for what the sandbox is shown (the ``course_lib``
            snapshot, the grading runtime, the scripts that run a job:
            :func:`~autograder.core.sandbox_view.write_view`).
        course: the course (:class:`~autograder.core.course.settings.Course`: the parts'
            points, the agent's settings, every limit), read once where grading starts; by
            default the release's, with the declared limits.
        isolate: run notebooks isolated (``False``: a plain subprocess, for debugging; its
            results are never ``graded``). With ``True`` and no isolation that holds, raises
            :class:`~autograder.core.isolation.SandboxUnavailable` (with the ways out).
        timeout: the per-cell time limit (``cell.timeout``), instead of the course's.
        private_folders: more host folders whose paths never reach a student (the grader's
            course, the solution's folder); ``workdir`` is one already.
        warm: fork each student's sandbox from this process's template where one can be had
            (:mod:`autograder.core.isolation.template`); ``False``: every run starts afresh.
        imports: more modules the caller needs once a run is done (a front end's recording),
            imported with the assessor's own (:data:`AFTER_RUN_MODULES`) while the first run
            goes on (:meth:`wait_for_imports`).
    """

    def __init__(
        self,
        release: Path | nbformat.NotebookNode,
        workdir: Path,
        course: Course | None = None,
        isolate: bool = True,
        private_folders: Sequence[Path] = (),
        timeout: float | None = None,
        warm: bool = True,
        imports: Sequence[str] = (),
    ) -> None:
        if not isinstance(release, nbformat.NotebookNode):
            release = nbformat.read(Path(release), as_version=4)
        course = course or Course.of_release(release)
        if timeout is not None:
            limits = course.limits.with_changes({"cell.timeout": timeout})
            course = dataclasses.replace(course, limits=limits)
        self.course = course
        #: "bubblewrap", "container" (root where bubblewrap cannot start) or "none"
        self.isolation = require_isolation() if isolate else "none"
        if not isolate:
            require_unsandboxed_user()
        self.isolate = isolate
        # Without the sandbox, a notebook could change the environment: fingerprinted now and
        # after each such grading (and the grader itself writes no bytecode from here on, so
        # that only a notebook can change it).
        self._environment: environment_fingerprint.Fingerprint | None = None
        self._changed_environment = ""
        if not isolate:
            sys.dont_write_bytecode = True
            self._environment = environment_fingerprint.fingerprint()
        self._package_files = package_files()
        self.release = release
        #: the autograded parts this grader judges -> their points
        self.points = {k: v for k, v in course.points.auto.items() if k in PART_NAMES}
        #: the course's agent settings (the release's metadata ``a2c.agent``): whether each
        #: submission's saved agent is played after its parts are judged, and its points
        self.agent = course.agent
        self.agent_protocol = GRADER_PROTOCOL  #: what the agent plays (tests shorten it)
        self._names = {part: PART_NAMES[part] for part in self.points}
        # Every path absolute: gradings run in parallel threads, whatever the working directory.
        self.workdir = Path(workdir).resolve()
        self.view = write_view(self.workdir)
        self.lib = self.view.lib
        self._lib_digest = tree_digest(self.lib)
        #: how a run starts: forked from the process's template for this view (None: afresh)
        self.warm = (
            Warm(self.view.key, self.view.bin_inside, tuple(setup_modules(release)))
            if warm
            else None
        )
        self._redactor = Redactor([self.workdir, *private_folders])
        self._imports = threading.Thread(
            target=self._import_once_started, args=((*AFTER_RUN_MODULES, *imports),),
            daemon=True, name="a2c-imports-during-run",
        )  # fmt: skip
        self._imports_lock = threading.Lock()
        # The reference's A2C builds torch optimizers, whose first build imports torch.compile's
        # machinery (1 to 3 s of CPU) unless the eager stand-in is in place: this process
        # compiles nothing (autograder/sandboxed/grading_runtime/eager_torch.py).
        eager_torch.install()

    @property
    def limits(self) -> Limits:
        """The course's limits."""
        return self.course.limits

    @property
    def timeout(self) -> float:
        """The per-cell time limit (``cell.timeout``)."""
        return self.limits.cell.timeout

    def budget(self, time_scale: float) -> float:
        """What a notebook's whole run may take: one cell limit and a reserve for the rest."""
        return self.timeout + self.limits.notebook.reserve_seconds * time_scale

    def _run(self, cells: list[dict[str, Any]], plan: dict[str, Any], threads: int):
        budget = self.budget(plan.get("time_scale", 1.0))
        job = {
            "cells": cells,
            "steps": plan["parts"],
            "time_scale": plan.get("time_scale", 1.0),
            "timeout": self.timeout,
            "budget_seconds": budget,
            "wall_factor": WALL_CLOCK_FACTOR,
        }
        env = job_env(threads)
        limits = self.limits.sandbox
        if limits.cpu_seconds is None:  # every process it starts counted (isolation.cpu_meter)
            limits = dataclasses.replace(limits, cpu_seconds=self.cpu_cap(budget, threads))
        return run_isolated(
            job_argv(),
            self.view.readonly,
            env,
            records.dumps(job).encode(),
            min(self.limits.notebook.wall_seconds, budget + WALL_MARGIN),
            limits=limits,
            isolate=self.isolate,
            warm=self.warm,
        )

    @staticmethod
    def cpu_cap(budget: float, threads: int) -> float:
        """The CPU a notebook's whole run may use, every process it starts counted: its
        ``threads`` busy for its budget and its start. An honest run cannot reach it (one thread
        is busy at most for the wall clock); cells that fork processes burning the CPU are
        stopped there, not at the wall clock, which counts no process."""
        return (budget + START_SECONDS) * max(1, threads)

    def assess(
        self,
        data: bytes,
        student: str,
        name: str = "a2c.ipynb",
        threads: int = 1,
        agent_file: bytes | None = None,
        memory: Mapping[str, Any] | None = None,
    ) -> Assessment:
        """Run and judge the submission ``data`` (the file's bytes), then, where the course's
        settings ask for it, play its saved agent (from the notebook's output, else
        ``agent_file``: the bytes of the ``a2c_agent.json`` handed in beside it) in the
        grader's own network, once its make_model, checked in the same run, earns it; never
        raises. ``memory``: what the class already holds of this student's agent,
        ``{"key": hex, "previous": outcome}`` (plain data: the class's key for the weights'
        fingerprint, the outcome recorded at an earlier grading, kept for the same weights)."""
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
            result.notes += repair_submission(nb, self.release)
            plan = make_plan(new_seed())  # this grading's own cases, unknown in advance
            cells = job_cells(nb, self._names)
            agent, check = None, None
            if self.agent.replay:  # read as plain data now, before the notebook's output goes
                agent = handed_in(nb, agent_file=agent_file, protocol=self.agent_protocol)
                if agent.playable:  # make_model's check rides in the parts' run
                    check = add_check(plan, cells, agent.weights)
            # The reference's observations on these cases, computed while the sandbox runs.
            references = threading.Thread(target=self._prepare_references, args=(plan,))
            references.start()
            self._start_imports()
            try:
                ran = self._run(cells, plan, threads)
            finally:
                references.join()
            result.timings["sandbox"] = ran.seconds
            judged = time.perf_counter()
            channel = read_channel(ran.channel, plan)  # bounded, untrusted: outside the lock
            with _JUDGE_LOCK, one_torch_thread():
                self._judge(result, nb, plan, ran, channel)
            result.timings["judge"] = time.perf_counter() - judged
            if agent is not None:
                records = channel.records.get(CHECK_PART) if CHECK_PART in plan["parts"] else None
                self._play_agent(result, agent, records, check, memory or {})
            result.notes += keep_submitted_outputs(nb)
            show_in_notebook(nb, result.agent)
            self.wait_for_imports()  # then each module is imported by one thread only
            from autograder.core.intake.code_highlighting import course_languages
            from autograder.core.intake.student_markdown import safe_markdown

            result.notes += safe_markdown(nb, self.release)
            result.notes += course_languages(nb, self.release)
            return Assessment(result, nbformat.writes(nb))
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            result.status = f"error: the grader failed on this submission ({type(error).__name__})"
            result.notes.append(f"{type(error).__name__}: {str(error)[:500]}")
            return Assessment(result)
        finally:
            result.seconds = time.perf_counter() - start

    def _play_agent(
        self,
        result: GradeResult,
        agent: HandedIn,
        check: dict[str, Any] | None,
        case: dict[str, Any] | None,
        memory: Mapping[str, Any],
    ) -> None:
        """The verified score of the submission's agent into ``result.agent``: played here, in
        the grader's own network, when make_model's ``check`` (its records from the parts' run)
        passed; what went wrong (no agent, a refused one, a make_model that computes another
        network, a claim far above the games) in its notes."""
        played = time.perf_counter()
        key = bytes.fromhex(str(memory.get("key") or ""))
        report = verify_agent(
            agent, check, case, self.agent_protocol, self.limits.agent, REPLAY_FRAMES, key=key,
            previous=memory.get("previous"),
        )  # fmt: skip
        result.agent = agent_outcome(report, self.agent)
        result.timings["agent"] = time.perf_counter() - played
        # What it cost: this thread's CPU while it played (a figure for docs/benchmarks.md,
        # never part of a grade).
        result.agent["cpu_seconds"] = round(report.cpu_seconds, 2)
        if report.note:
            note = self._redactor.redact(report.note, None)
            result.agent["note"] = note
            result.notes.append(f"agent: {note}")

    def _start_imports(self) -> None:
        """Begin the imports a run's end needs (:data:`AFTER_RUN_MODULES` and the caller's), in a
        thread, once: the sandbox's run comes next (the template's start first, where it is
        still starting: the thread waits for that)."""
        with self._imports_lock:
            if self._imports.ident is None:
                self._imports.start()

    def _import_once_started(self, names: Sequence[str]) -> None:
        """Import ``names`` once this assessor's template has started (at once without one):
        a template still starting needs the CPU more, as the first run waits for it."""
        if self.warm is not None:
            templates.wait_for_start(self.warm.key, timeout=START_SECONDS)
        _import_quietly(names)

    def wait_for_imports(self) -> None:
        """Return once the imports begun with the first run are done (at once if none began):
        a caller imports those modules after this, so that no module is imported by two threads
        at once (two threads importing modules that import each other can deadlock)."""
        with self._imports_lock:
            started = self._imports.ident is not None
        if started:
            self._imports.join()

    @staticmethod
    def _prepare_references(plan: dict[str, Any]) -> None:
        with _JUDGE_LOCK, one_torch_thread():
            prepare_references(plan)

    def _judge(
        self, result: GradeResult, nb: Any, plan: dict[str, Any], ran: Any, channel: Channel
    ) -> None:
        """Score every part from the ``channel`` (what the run sent, validated); set the
        status from how the run ended."""
        result.isolation = ran.isolation
        score_parts(result, channel, self.points, plan)
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
            now = tree_digest(self.lib)
            changed = sorted(
                name
                for name in now.keys() | self._lib_digest.keys()
                if self._lib_digest.get(name) != now.get(name)
            )
            if changed:
                found.append("changed the grader's copy of course_lib: " + ", ".join(changed[:10]))
        if self._environment is not None:
            changed = environment_fingerprint.changes(self._environment)
            if changed:  # every later grading of this assessor refuses (see assess)
                self._changed_environment = ", ".join(changed[:5])
                found.append(f"changed the Python environment: {self._changed_environment}")
        if ran.channel_overflow:
            found.append(f"more than {self.limits.sandbox.channel_bytes} bytes of results")
        return found


def _import_quietly(names: Sequence[str]) -> None:
    """Import ``names``; a module that fails is left for its user to import (and see why)."""
    import importlib

    for name in names:
        try:
            # One module at a time, never while a run's process is being forked (see the lock).
            with PROCESS_START_LOCK:
                importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the import where the module is used says why
            continue
