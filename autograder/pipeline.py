"""Grade submissions: the notebook runs in a sandbox, the parts are judged here, nbgrader records.

:class:`Grader` builds the template course once (:func:`autograder.course.build_template`:
``generate_assignment`` on the solution notebook, a fresh gradebook, a snapshot of
``course_lib``) and the plan of every probe (:func:`autograder.hidden.make_plan`), then grades
any number of notebooks::

    with Grader() as grader:
        result = grader.grade(Path("alice.ipynb"))   # a GradeResult
        print(result.as_dict())                         # {"total", "max_total", "status", ...}

One submission, two trust domains:

1. *here* (trusted): the notebook is read and repaired (deleted cells restored, duplicates
   dropped, edited locked cells put back) and a probe cell is added after each autograded cell;
2. *in the sandbox* (:mod:`autograder.sandbox`, throw-away, no network, read-only except its
   scratch folder, its own process namespace): the notebook runs top to bottom in quick mode,
   and each probe cell runs the plan's probes on the student's part, writing plain-data records;
3. *here* again: the records are decoded (no pickle, numeric arrays only) and judged against the
   reference (:func:`autograder.hidden.judge_part`); the sandbox's outputs are merged into the
   grader's own copy of the notebook (text and images only, never the autograded cells); then
   ``nbgrader autograde``, with execution off, writes the grader's scores into the gradebook
   (:mod:`autograder.nbgrader_steps`) and ``generate_feedback`` makes the feedback HTML.

:func:`grade_many` grades a list of :class:`~autograder.collect.Submission` in parallel (one
sandbox per job, ``cores // jobs`` threads each), with a progress bar, and writes
``grades.csv``, ``feedback/<student>.html``, ``summary.txt`` and ``scores.png``.

Nothing here raises because of a submission: the returned
:class:`~autograder.results.GradeResult` says what happened in its ``status``.
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
from pathlib import Path
from types import TracebackType
from typing import Any

import nbformat

from .checks import PART_NAMES
from .collect import Problem, Submission, student_id
from .course import (
    SOURCE_NOTEBOOK,
    CourseTemplate,
    NbgraderError,
    autograde,
    build_template,
    new_workspace,
    open_course,
    read_tree,
    tree_digest,
)
from .course import generate_feedback as nbgrader_feedback
from .judging import judge_part, make_plan
from .prepare import (
    UnreadableNotebook,
    graded_part,
    merge_outputs,
    prepare_submission,
    read_submission,
    restore_locked_cells,
    with_probe_cells,
)
from .report import save_histogram, summary_table, write_grades_csv
from .results import GradeResult, PartScore, check_gradebook
from .runtime.harness import PLAN_VARIABLE, RECORDS_VARIABLE
from .runtime.record import RecordError, dumps, loads
from .sandbox import SCRATCH, run_in_sandbox

__all__ = ["Grader", "check_jobs", "check_timeout", "grade_many"]

RUNNER = Path(__file__).resolve().with_name("notebook_runner.py")
#: Per-cell time limit (seconds) of the sandboxed run, and the limit of the whole run.
CELL_TIMEOUT = 120.0
WALL_SECONDS = 900.0
MAX_NOTEBOOK_BYTES = 100 * 1024**2
_GRADER_DIR, _LIB_DIR = "/grader", "/course-lib"
#: Judging draws on torch's global random state (fixtures are built from seeds), so parallel
#: gradings judge one at a time; it takes well under a second once the reference is cached.
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


def read_records(folder: Path, plan: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``{part: {step key: record}}`` from the sandbox's record files, and what was malformed."""
    records: dict[str, dict[str, Any]] = {part: {} for part in plan["parts"]}
    malformed = []
    for part, steps in plan["parts"].items():
        for step in steps:
            path = folder / f"{part}.{step['key']}.json"
            if not path.is_file() or path.is_symlink():
                continue
            try:
                if path.stat().st_size > 64 * 1024**2:
                    raise RecordError("record too large")
                record = loads(path.read_bytes())
                if not isinstance(record, dict) or not isinstance(record.get("ok"), bool):
                    raise RecordError("not a record")
                if record["ok"] and not isinstance(record.get("observation"), dict):
                    raise RecordError("a record without an observation")
            except (RecordError, OSError, UnicodeDecodeError) as error:
                malformed.append(f"{path.name}: {error}")
                continue
            records[part][step["key"]] = record
    return records, malformed


def _read_executed(path: Path) -> nbformat.NotebookNode | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_NOTEBOOK_BYTES:
            return None
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # noqa: BLE001 - whatever the sandbox left, it is only missing outputs
        return None


class Grader:
    """Grades notebooks against one solution notebook (see the module docstring).

    Args:
        source_notebook: the nbgrader source (solution cells and hidden tests).
        timeout: per-cell time limit of the sandboxed run, in seconds (default 120).
        workdir: where the temporary courses go (a new temporary folder by default; removed by
            :meth:`close`).
        keep: keep each submission's course folder after grading (to debug a grade).
        isolate: run notebooks in the bubblewrap sandbox when it works (``False``: a plain
            subprocess; results then say ``sandboxed: false``).
        wall_seconds: the whole sandboxed run is killed after this long (default 900 s).
        course: an nbgrader course directory (made on first use) that also receives every
            graded notebook and score, for formgrader, ``generate_feedback`` and ``export``.
    """

    def __init__(
        self,
        source_notebook: Path = SOURCE_NOTEBOOK,
        timeout: float | None = None,
        workdir: Path | None = None,
        keep: bool = False,
        isolate: bool = True,
        wall_seconds: float = WALL_SECONDS,
        course: Path | None = None,
    ) -> None:
        self.timeout = check_timeout(timeout)
        self.keep, self.isolate, self.wall_seconds = keep, isolate, float(wall_seconds)
        self._own_dir = workdir is None
        # Every path absolute: nbgrader changes the working directory while it converts a
        # notebook, and gradings run in parallel threads.
        self.workdir = Path(tempfile.mkdtemp(prefix="a2c-grading-") if workdir is None else workdir)
        self.workdir = self.workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        source_notebook = Path(source_notebook).resolve()
        self.template = build_template(self.workdir / "template", source_notebook)
        self._files = {
            name: data
            for name, data in read_tree(self.template.root).items()
            if not name.startswith("lib/")
        }
        self._lib_digest = tree_digest(self.template.lib)
        self._release = nbformat.read(self.template.release_notebook, as_version=4)
        self._points = _points(self._release)
        self._names = {part: PART_NAMES[part] for part in self._points}
        self.plan = make_plan()
        self._grader_dir = self.workdir / "grader"
        self._grader_dir.mkdir()
        (self._grader_dir / "plan.json").write_text(dumps(self.plan))
        shutil.copyfile(RUNNER, self._grader_dir / "run_notebook.py")
        self._ids = itertools.count(1)  # thread-safe in CPython: workspace names stay unique
        self.course: CourseTemplate | None = None
        if course is not None:
            self.course = open_course(course, source_notebook)

    def _run_notebook(self, nb: nbformat.NotebookNode, scratch: Path, threads: int):
        (scratch / "work").mkdir(parents=True)
        (scratch / "home").mkdir()
        run = with_probe_cells(nb, self._names)
        nbformat.write(run, scratch / "work" / "a2c.ipynb")
        env = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
            "HOME": f"{SCRATCH}/home",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONPATH": _LIB_DIR,
            "PYTHONDONTWRITEBYTECODE": "1",
            PLAN_VARIABLE: f"{_GRADER_DIR}/plan.json",
            RECORDS_VARIABLE: f"{SCRATCH}/records",
            "A2C_KIT_QUICK": "1",
            "NBGRADER_EXECUTION": "autograde",
            "MPLBACKEND": "Agg",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            **{name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")},
        }
        argv = [
            sys.executable,
            f"{_GRADER_DIR}/run_notebook.py",
            f"{SCRATCH}/work/a2c.ipynb",
            f"{SCRATCH}/work/a2c.executed.ipynb",
            str(self.timeout),
            "180",
        ]
        readonly = {_GRADER_DIR: self._grader_dir, _LIB_DIR: self.template.lib}
        return run_in_sandbox(
            argv, scratch, readonly, env, self.wall_seconds, isolate=self.isolate
        )

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
        start = time.perf_counter()
        path = Path(path).resolve()
        student = student or student_id(path) or "student"
        result = GradeResult(student, source=str(path))
        try:
            nb = read_submission(path)
        except UnreadableNotebook as error:
            result.status = f"unreadable: {error}"
            return result
        nb, result.notes = prepare_submission(nb, self._release)
        edited = restore_locked_cells(nb, self._release)
        if edited:
            result.notes.append("restored edited locked cells: " + ", ".join(edited))
        workspace = new_workspace(self._files, self.workdir / f"{next(self._ids):04d}-{student}")
        try:
            ran = self._run_notebook(nb, workspace.root / "scratch", threads)
            result.sandboxed = ran.sandboxed
            with _JUDGE_LOCK:
                self._judge(result, workspace.root / "scratch", ran)
            result.notes += merge_outputs(
                nb, _read_executed(workspace.root / "scratch" / "work" / "a2c.executed.ipynb")
            )
            record = workspace.root / "scores.json"
            record.write_text(
                json.dumps(
                    {
                        f"test_{key}": {"score": part.score, "feedback": part.feedback}
                        for key, part in result.parts.items()
                    }
                ),
                encoding="utf-8",
            )
            autograde(workspace, student, nb, record)
            disagreements = check_gradebook(workspace.db_url, student, result)
            if self.course is not None and not disagreements:
                autograde(self.course, student, nb, record)
                disagreements = check_gradebook(self.course.db_url, student, result)
            if disagreements:
                result.status = "error: the gradebook does not hold the grader's scores"
                result.notes += disagreements
            if feedback_dir is not None:
                html = nbgrader_feedback(workspace, student)
                Path(feedback_dir).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(html, Path(feedback_dir) / f"{student}.html")
        except NbgraderError as error:
            if result.graded:
                result.status = f"error: {str(error).splitlines()[0]}"
            result.notes.append(str(error)[-2000:])
        finally:
            if not self.keep:
                shutil.rmtree(workspace.root, ignore_errors=True)
            result.seconds = time.perf_counter() - start
        return result

    def _judge(self, result: GradeResult, scratch: Path, ran: Any) -> None:
        """Score every part from the sandbox's records; set the status from how the run ended."""
        records, malformed = read_records(scratch / "records", self.plan)
        for part, points in self._points.items():
            judged = judge_part(part, records[part], points)
            result.parts[part] = PartScore(judged.score, judged.max_points, judged.feedback())
            if judged.malformed:
                malformed.append(f"{part}: observations the probes do not produce")
        if not ran.sandboxed:
            result.notes.append(
                "NOT SANDBOXED: bubblewrap could not start, so the notebook ran as a plain "
                "process with your user's rights; install bubblewrap (Linux) before trusting "
                "this grade"
            )
            now = tree_digest(self.template.lib)
            changed = sorted(
                name
                for name in now.keys() | self._lib_digest.keys()
                if self._lib_digest.get(name) != now.get(name)
            )
            if changed:
                result.status = "tampered: the notebook changed the grader's copy of course_lib"
                result.notes.append("changed: " + ", ".join(changed[:10]))
        if malformed:
            result.status = "tampered: the sandbox returned malformed results"
            result.notes.append("malformed: " + "; ".join(malformed[:5]))
        elif ran.timed_out:
            result.status = (
                f"timeout: the notebook ran past the grading limit ({self.wall_seconds:g} s) and "
                "was stopped; parts judged before that are shown"
            )
        elif "DeadKernelError" in ran.output or "Kernel died" in ran.output:
            result.status = "error: the notebook's kernel died (os._exit, a crash in C code?)"
        elif ran.returncode != 0:
            result.status = f"error: the notebook could not be run: {ran.output.strip()[-300:]}"

    def close(self) -> None:
        """Remove the temporary courses (when the workdir was made here)."""
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


def grade_many(
    grader: Grader,
    submissions: Sequence[Submission],
    out: Path,
    problems: Sequence[Problem] = (),
    jobs: int | None = None,
    progress: bool = True,
    histogram: bool = True,
    feedback: bool = True,
) -> list[GradeResult]:
    """Grade ``submissions`` with ``jobs`` parallel nbgrader runs and write the reports to ``out``.

    Files in ``problems`` (unreadable, duplicates...) get a row in the CSV with their reason.
    A submission whose grading failed or ran out of time is graded a second time, alone, after
    the others (see the comment in the code).
    """
    from tqdm.auto import tqdm

    jobs = check_jobs(jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    feedback_dir = out / "feedback" if feedback else None
    results: list[GradeResult] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(grader.grade, sub.path, sub.student, feedback_dir, threads)
            for sub in submissions
        ]
        bar = tqdm(total=len(futures), desc="grading", unit="nb", disable=not progress)
        for future in as_completed(futures):
            results.append(future.result())
            bar.update(1)
        bar.close()
    # Second pass, one at a time: a grading that failed or ran out of time may have been slowed
    # down by the others running at the same time; graded alone, only its own code is the cause.
    by_path = {sub.path: sub for sub in submissions}
    for index, first in enumerate(results):
        retry = first.status.startswith(("error", "timeout")) and jobs > 1
        if retry and Path(first.source) in by_path:
            sub = by_path[Path(first.source)]
            again = grader.grade(sub.path, sub.student, feedback_dir, os.cpu_count() or 1)
            again.notes.append(f"graded again alone (first try: {first.status})")
            results[index] = again
    for problem in problems:
        if "duplicate" in problem.reason:
            continue  # the student's other file was graded
        name = student_id(problem.path) or problem.path.name
        results.append(
            GradeResult(name, status=f"not graded: {problem.reason}", source=str(problem.path))
        )
    origins = {str(sub.path): sub.origin for sub in submissions if sub.origin}
    for result in results:  # name files as the instructor knows them (zip members too)
        result.source = origins.get(result.source, result.source)
    results.sort(key=lambda result: result.student)
    write_grades_csv(results, out / "grades.csv")
    (out / "summary.txt").write_text(summary_table(results) + "\n", encoding="utf-8")
    if histogram and any(result.parts and result.graded for result in results):
        save_histogram(results, out / "scores.png")
    return results
