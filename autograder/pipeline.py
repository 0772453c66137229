"""Grade submissions through the real ``nbgrader autograde``, one private course each.

:class:`Grader` builds the template course once (:func:`autograder.course.build_template`:
``generate_assignment`` on the solution notebook, a fresh gradebook, a snapshot of the packages)
and then grades any number of notebooks, each in its own copy of the template::

    with Grader(timeout=120) as grader:
        result = grader.grade(Path("alice.ipynb"))         # a GradeResult
        print(result.as_dict())                               # {"total", "max_total", "parts"}

:func:`grade_many` grades a list of :class:`~autograder.collect.Submission` in parallel (one
nbgrader process per job; each job's kernel gets ``cores // jobs`` threads), with a progress
bar, and writes ``grades.csv``, ``feedback/<student>.html``, ``summary.txt`` and, optionally,
``scores.png`` into an output folder.

Nothing here raises because of a submission: an unreadable file or a notebook nbgrader cannot
grade gives a :class:`~autograder.results.GradeResult` whose ``status`` says what happened.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from types import TracebackType

import nbformat

from .collect import Problem, Submission, student_id
from .course import (
    SOURCE_NOTEBOOK,
    NbgraderError,
    autograde,
    build_template,
    new_workspace,
    read_tree,
    tree_digest,
)
from .course import generate_feedback as nbgrader_feedback
from .prepare import UnreadableNotebook, prepare_submission, read_submission
from .report import save_histogram, summary_table, write_grades_csv
from .results import GradeResult, read_result

__all__ = ["Grader", "check_jobs", "check_timeout", "grade_many"]


def check_timeout(timeout: float | None) -> float | None:
    """``timeout`` validated: ``None`` (the config's) or a number of seconds >= 1."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 1:
        raise ValueError(
            f"timeout must be a number of seconds >= 1 (the per-cell limit), got {timeout!r}; "
            "leave it out to use the course's (autograder/nbgrader_config.py, 120 s)."
        )
    return float(timeout)


def check_jobs(jobs: int | None) -> int:
    """``jobs`` validated; ``None`` gives the number of CPU cores."""
    if jobs is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (parallel gradings), got {jobs!r}.")
    return jobs


def _changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


class Grader:
    """Grades notebooks against one solution notebook (see the module docstring).

    Args:
        source_notebook: the nbgrader source (solution cells and hidden tests).
        timeout: per-cell time limit in seconds; ``None`` keeps the config's.
        workdir: where the temporary courses go (a new temporary folder by default; removed by
            :meth:`close`).
        keep: keep each submission's course folder after grading (to debug a grade).
    """

    def __init__(
        self,
        source_notebook: Path = SOURCE_NOTEBOOK,
        timeout: float | None = None,
        workdir: Path | None = None,
        keep: bool = False,
    ) -> None:
        self.timeout = check_timeout(timeout)
        self.keep = keep
        self._own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="a2c-grading-") if workdir is None else workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.template = build_template(self.workdir / "template", source_notebook)
        self._files = read_tree(self.template.root)
        self._lib_digest = tree_digest(self.template.lib)
        self._release = nbformat.read(self.template.release_notebook, as_version=4)
        self._ids = itertools.count(1)  # thread-safe in CPython: workspace names stay unique

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
        path = Path(path)
        student = student or student_id(path.resolve()) or "student"
        result = GradeResult(student, source=str(path))
        try:
            nb = read_submission(path)
        except UnreadableNotebook as error:
            result.status = f"unreadable: {error}"
            return result
        nb, result.notes = prepare_submission(nb, self._release)
        workspace = new_workspace(self._files, self.workdir / f"{next(self._ids):04d}-{student}")
        try:
            autograded = autograde(workspace, student, nb, timeout=self.timeout, threads=threads)
            read_result(workspace.db_url, autograded, student, result)
            changed = _changed_files(self._lib_digest, tree_digest(workspace.lib))
            if changed:
                result.status = "tampered: the notebook changed the autograder's files"
                result.notes.append("changed during grading: " + ", ".join(changed[:10]))
            if feedback_dir is not None:
                html = nbgrader_feedback(workspace, student)
                Path(feedback_dir).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(html, Path(feedback_dir) / f"{student}.html")
        except NbgraderError as error:
            if not result.parts:
                result.status = f"error: {str(error).splitlines()[0]}"
            result.notes.append(str(error)[-2000:])
        finally:
            if not self.keep:
                shutil.rmtree(workspace.root, ignore_errors=True)
            result.seconds = time.perf_counter() - start
        return result

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
    A submission whose grading failed or was flagged as tampering is graded a second time,
    alone, after the others (see the comment in the code).
    """
    from tqdm.auto import tqdm

    jobs = check_jobs(jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    out = Path(out)
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
    # Second pass, one at a time: a grading that failed, or whose autograder files changed,
    # may have been disturbed by ANOTHER submission running at the same time (they run as the
    # same user); graded alone, only its own code can be the cause.
    by_path = {sub.path: sub for sub in submissions}
    for index, first in enumerate(results):
        retry = first.status.startswith(("error", "tampered")) and jobs > 1
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
    if histogram and any(result.parts for result in results):
        save_histogram(results, out / "scores.png")
    return results
