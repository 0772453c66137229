"""What one feedback page costs the feedback child, with and without the markdown answers kept.

A feedback page is nbgrader's ``generate_feedback`` for one student, run in a child process
(:mod:`autograder.nbgrader.feedback_renderer`). Most of a page's CPU was the markdown safety
pass rendering every editable markdown cell of the notebook once more
(:func:`autograder.core.intake.markdown_safety.sanitize_markdown`); a class's notebooks hold
the release's markdown cells unchanged, and a process now keeps their answers. This script
grades ``--copies`` copies of the solution notebook into a course of its own (``grade-all
--course``, no feedback), then makes every student's page in this process, round after round,
once with the answers kept and once with nothing kept (the limit on a kept cell set below any
cell's length), alternating, and prints the CPU of a page for each and their ratio::

    python -m benchmarks.feedback_pages                  # 8 copies, 3 rounds
    python -m benchmarks.feedback_pages --copies 16 --rounds 5

The first page of a process (nbgrader's own first-use costs) is made before timing. Run it on
an idle machine; figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograder  # noqa: E402, F401 - the grader's own import settings, as the child has them
from autograder.core.intake import markdown_safety  # noqa: E402
from autograder.nbgrader.course import CourseTemplate, generate_feedback  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "a2c.ipynb"


def _graded_course(folder: Path, copies: int) -> list[str]:
    """Grade ``copies`` copies of the solution into ``folder/course``; the students' ids."""
    inbox = folder / "inbox"
    inbox.mkdir()
    students = [f"student{i:02d}" for i in range(copies)]
    for student in students:
        shutil.copyfile(SOLUTION, inbox / f"{student}.ipynb")
    command = [sys.executable, "-m", "autograder", "grade-all", str(inbox), "--course",
               str(folder / "course"), "--out", str(folder / "out"), "--no-feedback",
               "--no-histogram"]  # fmt: skip
    subprocess.run(command, check=True, cwd=folder, capture_output=True)
    return students


def _pages(workspace, students: list[str], keep: bool) -> float:
    """CPU seconds a page, every student's page made once; ``keep``: answers kept."""
    markdown_safety._kept.cache_clear()
    limit = markdown_safety.CACHED_CELL_CHARS
    markdown_safety.CACHED_CELL_CHARS = limit if keep else -1
    try:
        start = time.process_time()
        for student in students:
            generate_feedback(workspace, student)
        return (time.process_time() - start) / len(students)
    finally:
        markdown_safety.CACHED_CELL_CHARS = limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.copies < 1 or args.rounds < 1:
        parser.error("--copies and --rounds take a positive number")
    with tempfile.TemporaryDirectory(prefix="a2c-feedback-bench-") as name:
        folder = Path(name)
        print(f"grading {args.copies} copies of {SOLUTION.name} into a course ...", flush=True)
        students = _graded_course(folder, args.copies)
        workspace = CourseTemplate(folder / "course", True)
        generate_feedback(workspace, students[0])  # nbgrader's first-use costs, not timed
        kept, fresh = [], []
        for round_ in range(1, args.rounds + 1):
            for keep in (True, False) if round_ % 2 else (False, True):  # alternating
                seconds = _pages(workspace, students, keep)
                (kept if keep else fresh).append(seconds)
                print(f"round {round_}, answers {'kept' if keep else 'not kept'}: "
                      f"{seconds:.3f} s of CPU a page", flush=True)  # fmt: skip
    print(f"\n{args.copies} pages a round, medians of {args.rounds} rounds, {os.cpu_count()} cores")
    print(f"  a page, nothing kept:    {statistics.median(fresh):.3f} s of CPU")
    print(f"  a page, answers kept:    {statistics.median(kept):.3f} s of CPU")
    print(f"  ratio:                   {statistics.median(kept) / statistics.median(fresh):.2f}")


if __name__ == "__main__":
    main()
