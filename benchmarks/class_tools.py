"""What the instructor's class tools cost for a class of 300: similarity, LMS files, regrade.

Run from the repository root::

    python -m benchmarks.class_tools            # a few minutes on 2 cores
    python -m benchmarks.class_tools --quick    # 60 and 120 students

Prints, side by side, for a generated class (tests/submissions/generated_class.py: every part
written independently, ten pairs with a lightly edited copy of one part):

1. **the similarity report** (``python -m autograder similarity``): seconds for the whole report
   for half the class and the whole class, and their ratio (2: linear in students; the pair
   scoring is quadratic in students but a small share of the time), and whether the ten copied
   pairs, and only they, were flagged;
2. **pair scoring alone**: seconds to score every pair of the whole class on every part with
   the report's blocked matrix product (:func:`autograder.similarity.class_scores.score_part`)
   and with plain Python set intersections of the same fingerprints, pair by pair, and the ratio;
3. **the LMS files** of ``export``: seconds to write the Canvas, Moodle and long-format files
   for the whole class (:func:`autograder.nbgrader.class_reports.lms_files.write_lms_files`);
4. **regrade's own work** (:func:`autograder.nbgrader.regrading.regrade`, no course): reading
   the whole class's kept files and ``grades.csv``, comparing, writing the rows that moved (a
   tenth of the class), with a stand-in grader that answers at once, so that what is left is
   what ``regrade`` adds to the gradings themselves (those cost what ``grade-all`` costs a
   notebook: ``benchmarks/grading_stages.py``), as a dry run and for real.

Timings are noisy on a shared machine: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.core.assessor import Assessment
from autograder.core.course.points import CoursePoints
from autograder.core.intake.collect import Submission
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.grades_csv import result_row
from autograder.nbgrader.class_reports.lms_files import write_lms_files
from autograder.nbgrader.class_reports.writing import write_outputs
from autograder.nbgrader.regrading import regrade
from autograder.nbgrader.roster import RosterStudent
from autograder.similarity.class_scores import score_part
from autograder.similarity.fingerprints import course_vocabulary, fingerprint
from autograder.similarity.report import similarity_report
from solutions.build_notebooks import RELEASE_NOTEBOOK
from solutions.parts import PARTS
from tests.submissions.generated_class import disguise, notebook_of, student_parts, write_class

COPIES = 10


def _class(size: int) -> dict[str, dict[str, str]]:
    students = {f"s{n:03d}": student_parts(seed=n) for n in range(size)}
    keys = list(PARTS)
    for n in range(COPIES):  # s000 copies a part of s001's, s002 of s003's, ...
        a, b = f"s{2 * n:03d}", f"s{2 * n + 1:03d}"
        key = keys[n % len(keys)]
        students[a][key] = disguise(students[b][key], seed=n)
    return students


def _report(size: int, folder: Path) -> tuple[float, str]:
    out = write_class(folder / f"class-{size}", _class(size))
    started = time.perf_counter()
    text = similarity_report(out)
    return time.perf_counter() - started, text


def _naive(prints: dict[str, set[int]]) -> int:
    hits = 0
    for (_, a), (_, b) in itertools.combinations(prints.items(), 2):
        hits += len(a & b) >= 0.5 * max(1, min(len(a), len(b)))
    return hits


@dataclasses.dataclass
class _InstantGrader:
    """A stand-in for the grader: every part 2 of 2, ``a2c`` 0 for the ``fixed`` students."""

    points: CoursePoints
    fixed: set[str]
    course: None = None

    def assess(
        self, data: bytes, student: str, name: str, threads: int, agent_file=None, memory=None
    ) -> Assessment:
        scores = {k: 0.0 if (k == "a2c" and student in self.fixed) else 2.0 for k in PARTS}
        parts = {k: PartScore(v, 2.0, "") for k, v in scores.items()}
        return Assessment(GradeResult(student, parts=parts), "")

    def record(self, assessment: Assessment) -> GradeResult:
        return assessment.result


def _regrade(size: int, folder: Path) -> tuple[float, float, int]:
    """Seconds of a dry run and of a real regrade of ``size`` students, and how many moved."""
    points = CoursePoints({key: 2.0 for key in PARTS}, {})
    subs, results = [], []
    for n in range(size):
        student, path = f"s{n:03d}", folder / "inbox" / f"s{n:03d}" / "a2c.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(notebook_of(student_parts(seed=n)), path)
        subs.append(Submission(student, path, 0.0))
        result = _InstantGrader(points, set()).assess(b"", student, "", 1).result
        result.source = str(path)
        results.append(result)
    out = folder / "grading-output"
    write_outputs(out, results, points, subs, histogram=False)
    grader = _InstantGrader(points, {f"s{n:03d}" for n in range(0, size, 10)})
    started = time.perf_counter()
    regrade(grader, out, dry_run=True, jobs=2)
    dry = time.perf_counter() - started
    started = time.perf_counter()
    done = regrade(grader, out, jobs=2)
    return dry, time.perf_counter() - started, len(done.moved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 and 120 students")
    size = 120 if parser.parse_args().quick else 300
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} core(s)")
    with tempfile.TemporaryDirectory(prefix="a2c-class-tools-") as scratch:
        half, _ = _report(size // 2, Path(scratch))
        whole, text = _report(size, Path(scratch))
    found = text.splitlines()[0]
    expected = f"{size} submission(s), {COPIES} pair(s) with a part unusually alike"
    print(f"1. similarity report: {size // 2} students {half:.1f} s, {size} students {whole:.1f} s, ratio {whole / half:.2f}")
    print(f"   {found} ({'as planted' if found == expected else 'NOT as planted: ' + expected})")

    students = _class(size)
    release = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    known = course_vocabulary([cell.source for cell in release.cells if cell.cell_type == "code"])
    prints = {
        s: {k: fingerprint(code, known) for k, code in parts.items()} for s, parts in students.items()
    }
    started = time.perf_counter()
    for key in PARTS:
        score_part({s: p[key] for s, p in prints.items()}, frozenset())
    blocked = time.perf_counter() - started
    started = time.perf_counter()
    for key in PARTS:
        _naive({s: set(p[key].lines) for s, p in prints.items()})
    naive = time.perf_counter() - started
    pairs = size * (size - 1) // 2
    print(f"2. scoring {pairs} pairs x {len(PARTS)} parts: blocked product {blocked:.2f} s, set intersections {naive:.2f} s, ratio {naive / blocked:.1f}")

    points = CoursePoints({key: 2.0 for key in PARTS}, {"discussion": 3.0})
    rows = [
        result_row(GradeResult(s, parts={k: PartScore(1.0, 2.0, "") for k in PARTS}), points, "")
        for s in students
    ]
    roster = {s: RosterStudent(s, "F", s, f"{s}@uni.example", "Lab 1", s, s, s) for s in students}
    with tempfile.TemporaryDirectory(prefix="a2c-lms-") as scratch:
        started = time.perf_counter()
        write_lms_files(rows, points, roster, Path(scratch))
        lms = time.perf_counter() - started
    print(f"3. LMS files for {size} students: {lms:.3f} s")
    with tempfile.TemporaryDirectory(prefix="a2c-regrade-") as scratch:
        dry, real, moved = _regrade(size, Path(scratch))
    print(f"4. regrade of {size} students, an instant stand-in grader: dry run {dry:.1f} s, "
          f"real {real:.1f} s ({moved} moved and written)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
