"""Grade submissions with nbgrader: the core assesses, nbgrader records (``grade``, ``grade-all``).

:class:`Grader` is the nbgrader front end of the grading core
(:class:`~autograder.core.assessor.Assessor`). It makes the template course once
(:func:`autograder.nbgrader.course.build_template`: ``generate_assignment`` on the solution notebook, a
fresh gradebook; written from the machine's kept copy when one was built from the same inputs,
:mod:`autograder.nbgrader.template_cache`), makes an assessor from the release it wrote, then
grades any number of notebooks::

    with Grader() as grader:
        result = grader.grade(Path("alice.ipynb"))   # a GradeResult
        print(result.as_dict())                         # {"total", "max_total", "status", ...}

One submission, two steps, two trust domains:

1. :meth:`Grader.assess` (trusted, with a sandbox under it): the core's
   :meth:`~autograder.core.assessor.Assessor.assess` runs the notebook sandboxed and judges what it
   returned. The result is plain data (:class:`~autograder.core.assessor.Assessment`), so the step
   can run on another machine (:mod:`autograder.core.cluster`).
2. :meth:`Grader.record` (trusted, the instructor's machine): ``nbgrader autograde``, with
   execution off, writes the grader's scores once, into the course's gradebook (or, without a
   course, the grader's own, made once per run) (:mod:`autograder.nbgrader.preprocessors`), reads them
   back to check, and ``generate_feedback`` makes the feedback HTML from that gradebook.

:func:`grade_many` grades a list of :class:`~autograder.core.intake.collect.Submission` with the
grading core's one fan-out over a class (:mod:`autograder.core.fan_out`: one sandbox per job,
``cores // jobs`` threads each, or tasks of a Dask cluster), recording each here, and writes
``grades.csv``, ``feedback/<student>.html``, ``summary.txt`` and ``scores.png``.

Nothing here raises because of a submission: the returned
:class:`~autograder.core.reports.grade_result.GradeResult` says what happened in its ``status``, and a failure
of the grader itself on one submission is that submission's ``error`` row.

Why one module: :class:`Grader`'s two steps and :func:`grade_many`'s recording share the grader's
state (the template course, the grader's own course, the feedback child); split, each half would
reach into the other's private names.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import nbformat

from autograder.core.assessor import Assessment, Assessor
from autograder.core.course.limits import Limits
from autograder.core.course.settings import Course
from autograder.core.fan_out import LocalGrading, grade_class
from autograder.core.file_tree import read_tree
from autograder.core.intake.collect import Problem, Submission, student_id
from autograder.core.intake.submission_file import (
    UnreadableNotebook,
    agent_file_for,
    read_bytes,
)
from autograder.core.isolation import require_isolation
from autograder.core.isolation.unsandboxed import require_unsandboxed_user
from autograder.core.reports.grade_result import GradeResult
from autograder.nbgrader.agent_comment import record_agent_comment
from autograder.nbgrader.class_reports.agent_records import AgentRecords
from autograder.nbgrader.course import (
    SOURCE_NOTEBOOK,
    CourseTemplate,
    NbgraderError,
    autograde,
    gradebook_session,
    new_workspace,
    open_course,
)
from autograder.nbgrader.feedback_renderer import render_feedback
from autograder.nbgrader.plain_feedback import plain_feedback_page
from autograder.nbgrader.progress_log import ProgressLog
from autograder.nbgrader.template_cache import template_course
from solutions.parts import ASSIGNMENT, NOTEBOOK

__all__ = ["RECORDING_MODULES", "Assessment", "ClassSettings", "Grader", "grade_many"]

#: What recording a grade imports (nbgrader's apps and converters, nbconvert, SQLAlchemy: 1 to 2
#: s of CPU): imported while the first notebook runs in its sandbox (the assessor's ``imports``),
#: so that ``grade`` starts its sandbox's run without waiting for them.
RECORDING_MODULES = (
    "nbgrader.apps.api",
    "nbgrader.converters.autograde",
    "autograder.nbgrader.gradebook_check",
    "autograder.nbgrader.preprocessors.trusted_scores",
    "autograder.nbgrader.preprocessors.check_cell_metadata",
    "autograder.nbgrader.preprocessors.sanitize_markdown",
    "autograder.nbgrader.exporters.grader_only",
)


@dataclass(frozen=True)
class ClassSettings:
    """What ``grade-all`` says of the class beyond the notebooks, for its reports: the deadline
    (``--deadline``), the roster CSV (``--roster``) and the late-penalty rule
    (``--late-penalty``); each falls back on the course's own (:mod:`autograder.nbgrader.class_reports`)."""

    deadline: Any = None
    roster: Path | None = None
    late_penalty: str | None = None


class Grader:
    """Grades notebooks against one solution notebook and records them in nbgrader (see the
    module docstring).

    Args:
        source_notebook: the nbgrader source (solution cells and hidden tests).
        timeout: the per-cell time limit (``cell.timeout``), instead of ``limits``'.
        workdir: where the template course, the grader's own course and the sandbox's view go
            (a new temporary folder by default; removed by :meth:`close`).
        keep: keep ``workdir`` (the grader's own course, with every notebook it recorded)
            after :meth:`close`, to debug a grade.
        isolate: run notebooks in the sandbox (``False``: a plain subprocess, for debugging;
            its results are never ``graded``). With ``True`` and no isolation that holds,
            raises :class:`~autograder.core.isolation.SandboxUnavailable` (with the ways out).
        course: an nbgrader course directory (made on first use) that also receives every
            graded notebook and score, for formgrader, ``generate_feedback`` and ``export``.
        limits: the course's limits (:mod:`autograder.core.course.limits`: cell, notebook,
            sandbox, agent), read once by the caller (the command line and a settings file);
            the course itself is read once from the release this grader makes, with them
            (:attr:`Assessor.course`).
    """

    def __init__(
        self,
        source_notebook: Path = SOURCE_NOTEBOOK,
        timeout: float | None = None,
        workdir: Path | None = None,
        keep: bool = False,
        isolate: bool = True,
        course: Path | None = None,
        limits: Limits | None = None,
    ) -> None:
        limits = limits or Limits()  # a bad value stops here, before any nbgrader work
        if timeout is not None:
            limits = limits.with_changes({"cell.timeout": timeout})
        # Refused before any nbgrader work when student code could not be isolated.
        if isolate:
            require_isolation()
        else:
            require_unsandboxed_user()
        self.keep = keep
        self._own_dir = workdir is None
        # Every path absolute: nbgrader changes the working directory while it converts a
        # notebook, and gradings run in parallel threads.
        self.workdir = Path(tempfile.mkdtemp(prefix="a2c-grading-") if workdir is None else workdir)
        self.workdir = self.workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        source_notebook = Path(source_notebook).resolve()
        self.template = template_course(self.workdir / "template", source_notebook)
        release = nbformat.read(self.template.release_notebook, as_version=4)
        self.assessor = Assessor(
            release,
            self.workdir / "sandbox",
            Course.of_release(release, limits),
            isolate=isolate,
            private_folders=[
                self.workdir,
                source_notebook.parent,
                *([course] if course is not None else []),
            ],
            imports=RECORDING_MODULES,
        )
        #: the release's points: what the class's reports count (part 8 and the bonus included)
        self.points = self.assessor.course.points
        self._files = read_tree(self.template.root)
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

    # The grading settings are the assessor's.
    timeout = property(lambda self: self.assessor.timeout)
    isolate = property(lambda self: self.assessor.isolate)
    isolation = property(lambda self: self.assessor.isolation)
    limits = property(lambda self: self.assessor.limits)

    def budget(self, time_scale: float) -> float:
        """What a notebook's whole run may take (:meth:`Assessor.budget`)."""
        return self.assessor.budget(time_scale)

    # ------------------------------------------------------------------ step 1: assess
    def assess(
        self,
        data: bytes,
        student: str,
        name: str = "a2c.ipynb",
        threads: int = 1,
        agent_file: bytes | None = None,
        memory: dict[str, Any] | None = None,
    ) -> Assessment:
        """Run and judge the submission ``data`` (:meth:`Assessor.assess`); never raises."""
        return self.assessor.assess(data, student, name, threads, agent_file, memory)

    # ------------------------------------------------------------------ step 2: record
    def record(
        self,
        assessment: Assessment,
        feedback_dir: Path | None = None,
        log: ProgressLog | None = None,
    ) -> GradeResult:
        """Write ``assessment`` into nbgrader, once: into the course when there is one, else
        into this grader's own gradebook; check the gradebook, make the feedback, append the
        grade to ``log``; never raises."""
        result = assessment.result
        if not assessment.notebook:  # unreadable, or the grader failed: nothing for nbgrader
            _append(log, result)
            return result
        self.assessor.wait_for_imports()  # RECORDING_MODULES, begun with the first run
        from autograder.nbgrader.gradebook_check import check_gradebook
        from autograder.nbgrader.preprocessors.trusted_scores import AGENT_POINTS_KEY

        start = time.perf_counter()
        student = result.student
        scores = self.workdir / "scores" / f"{next(self._ids):05d}.json"
        try:
            record: dict[str, Any] = {
                f"test_{key}": {"score": part.score, "feedback": part.feedback}
                for key, part in result.parts.items()
            }
            if self.points.agent:  # the feedback's totals count them (TrustedScores)
                record[AGENT_POINTS_KEY] = result.agent_points
            scores.write_text(json.dumps(record), encoding="utf-8")
            autograde(self.gradebook, student, assessment.notebook, scores)
            with gradebook_session():
                disagreements = check_gradebook(self.gradebook.db_url, student, result)
            if disagreements:
                result.status = "error: the gradebook does not hold the grader's scores"
                result.notes += disagreements
            else:
                manual = next(iter(self.points.manual), None)
                record_agent_comment(
                    self.gradebook.db_url, ASSIGNMENT, NOTEBOOK, result, manual
                )  # fmt: skip
            if not disagreements and feedback_dir is not None:
                _write_feedback(self.gradebook, result, Path(feedback_dir))
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            if result.graded:
                first = str(error).splitlines()[0] if str(error) else type(error).__name__
                result.status = f"error: {first[:300]}"
            result.notes.append(f"{type(error).__name__}: {str(error)[-2000:]}")
        finally:
            scores.unlink(missing_ok=True)
            result.timings["record"] = time.perf_counter() - start
            result.seconds += time.perf_counter() - start
        _append(log, result)
        return result

    def grade(
        self,
        path: Path,
        student: str | None = None,
        feedback_dir: Path | None = None,
        threads: int = 1,
        log: ProgressLog | None = None,
        memory: dict[str, Any] | None = None,
    ) -> GradeResult:
        """Grade the notebook at ``path`` as ``student`` (by default named after the file).

        With ``feedback_dir``, the feedback HTML is copied to ``feedback_dir/<student>.html``;
        with ``log``, the grade is appended to it once recorded; ``memory``: what the class
        holds of the student's agent (:meth:`Assessor.assess`).
        """
        path = Path(path).resolve()
        student = student or student_id(path) or "student"
        try:
            data = read_bytes(path)
        except UnreadableNotebook as error:
            result = GradeResult(
                student, status=f"unreadable: {error}", source=str(path), sandboxed=False
            )
            _append(log, result)
            return result
        assessment = self.assess(data, student, path.name, threads, agent_file_for(path), memory)
        assessment.result.source = str(path)
        return self.record(assessment, feedback_dir, log)

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


def _write_feedback(course: CourseTemplate, result: GradeResult, feedback_dir: Path) -> None:
    """``feedback_dir/<student>.html``: nbgrader's page, made in the feedback process within its
    time limit (:mod:`autograder.nbgrader.feedback_renderer`); where that fails, a plain page of
    the grader's own scores and a note. The grade stands either way."""
    feedback_dir.mkdir(parents=True, exist_ok=True)
    page = feedback_dir / f"{result.student}.html"
    try:
        shutil.copyfile(render_feedback(course, result.student), page)
    except NbgraderError as error:
        reason = f"The full feedback page could not be made ({str(error).splitlines()[0]})."
        result.notes.append(f"feedback: {reason}")
        parts = {name: (part.score, part.max, part.feedback) for name, part in result.parts.items()}
        page.write_text(
            plain_feedback_page(
                result.student, result.total, result.points.graded_here, parts, reason
            ),
            encoding="utf-8",
        )


def _append(log: ProgressLog | None, result: GradeResult) -> None:
    if log is not None:
        log.write(result)


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
    settings: ClassSettings = ClassSettings(),
) -> list[GradeResult]:
    """Grade ``submissions`` with ``jobs`` parallel nbgrader runs and write the reports to ``out``.

    Files in ``problems`` (unreadable, duplicates...) get a row in the CSV with their reason.
    Each submission is graded once, a failed or timed-out one too (its run's cost is bounded by
    the runner's budget, and a second try would double it). Each student's grade is appended to
    ``out/progress.jsonl`` as it is recorded; the file goes once ``grades.csv`` holds every row.
    With ``cluster`` (an :class:`autograder.core.cluster.scheduling.ClusterGrading`: a Dask
    cluster), the assess steps run there instead of ``jobs`` local threads; recording stays here.
    ``settings``: the class's deadline, roster and late penalty, for the reports.

    Raises:
        ValueError: the source's points differ from the course's release (the message says
            to run ``regrade`` first, :func:`~autograder.nbgrader.course_point_changes.refuse_changed_points`).
    """
    out = Path(out).resolve()
    if grader.course is not None:  # a changed point value: refused before anything is graded
        from autograder.nbgrader.course_point_changes import refuse_changed_points

        refuse_changed_points(grader, out)
    out.mkdir(parents=True, exist_ok=True)
    feedback_dir = out / "feedback" if feedback else None
    log = ProgressLog(out / "progress.jsonl")
    records = AgentRecords(out)  # the class's key and each student's agent, kept in out/agents
    if cluster is not None:  # assessed there, recorded here
        engine = cluster.engine(grader.assessor, lambda sub: records.memory(sub.student))
    else:  # each job grades and records its submission
        engine = LocalGrading(jobs).engine(
            lambda sub, threads: grader.grade(
                sub.path, sub.student, feedback_dir, threads, log, records.memory(sub.student)
            )
        )
    results = grade_class(
        engine, lambda assessment: grader.record(assessment, feedback_dir, log), submissions, progress
    )
    # The reports: merged by student into what `out` holds already (autograder.nbgrader.class_reports).
    from autograder.nbgrader.class_reports.writing import write_reports

    written = write_reports(
        grader.course,
        grader.points,
        out,
        results,
        submissions,
        problems,
        histogram=histogram,
        feedback_dir=feedback_dir,
        make_feedback=render_feedback,
        settings=settings,
    )
    log.remove()  # every row is in grades.csv now
    return written
