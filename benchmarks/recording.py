"""Recording a grade in nbgrader, a class and one notebook: this tree against a baseline, side by side.

Run from the repository root (needs git and bubblewrap)::

    python -m benchmarks.recording                      # against main, 8 notebooks, 2 jobs
    python -m benchmarks.recording --ref REF --copies 16 --jobs 2 --records 6
    python -m benchmarks.recording --measure one --rounds 3   # one of the three only

The baseline (``--ref``) is checked out into a temporary git worktree; every measurement runs in
a subprocess started in one tree or the other (the same Python), the two alternating, so that
both see the same machine load. Three measurements, each printed with the ratio now / baseline:

1. **recording one notebook** (``Grader.record``, the instructor's machine): the reference
   notebook is assessed once (sandboxed), then recorded ``--records`` times as different
   students, with the feedback HTML, into an instructor's course (``grade-all --course``'s path)
   and without one; seconds per notebook (wall and the process's CPU).
2. **a class**: ``python -m autograder grade-all`` on ``--copies`` copies of the reference
   notebook with ``--jobs`` parallel gradings and ``--course``: wall time and the core-seconds per
   notebook (user + system CPU of the grader and every child process it waited for, from
   ``wait4``; the sandbox's processes are reaped inside it and counted there).
3. **one notebook end to end**: ``python -m autograder grade solutions/a2c.ipynb --json --student ref``
   (start, template course, one grading), wall time and CPU.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "a2c.ipynb"
MEASURES = ("record", "class", "one")

#: Run in the tree under test (its own ``autograder``): record the reference notebook ``n`` times.
_RECORD_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    # The tree's own layout, chosen by its files: a failed import would fall through to the
    # editable install's finder, which imports the checkout's newer modules into an older tree.
    if Path("autograder/pipeline.py").is_file():  # before the grading core was split out
        from autograder.pipeline import Assessment, Grader
    else:
        from autograder.nbgrader.grader import Assessment, Grader
    source = Path(sys.modules[Grader.__module__].__file__).resolve()
    assert source.is_relative_to(Path.cwd().resolve()), f"{source} is not this tree's grader"
    notebook, folder, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    found = {}
    for label, course in (("course", folder / "course"), ("no course", None)):
        with Grader(course=course, workdir=folder / label.replace(" ", "-")) as grader:
            assessed = grader.assess(notebook.read_bytes(), "warm", notebook.name).to_plain()
            assert assessed["result"]["status"] == "graded", assessed["result"]["status"]
            walls, cpus = [], []
            for index in range(n + 1):  # the first one warms nbgrader's imports up
                assessment = Assessment.from_plain(assessed)
                assessment.result.student = f"s{index:03d}"
                wall, cpu = time.perf_counter(), time.process_time()
                result = grader.record(assessment, folder / f"feedback-{label}")
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                assert result.status == "graded", result.status
                if index:
                    walls.append(wall)
                    cpus.append(cpu)
            found[label] = {"wall": walls, "cpu": cpus}
    print(json.dumps(found))
    """
)


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the process and the children it waited for) and stdout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} in {cwd} failed:\n{stderr[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, stdout


def _env(tree: Path) -> dict[str, str]:
    """The environment of a run in ``tree``: its own packages first on the path, the
    interpreter's programs (an older tree runs nbgrader's ``alembic``) first on ``PATH``."""
    programs = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "PATH": programs}


def record_once(tree: Path, scratch: Path, records: int) -> dict[str, dict[str, float]]:
    """Median seconds (wall, CPU) a notebook takes to record, with and without a course."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    script = folder / "record.py"
    script.write_text(_RECORD_SCRIPT)
    argv = [sys.executable, str(script), str(NOTEBOOK), str(folder), str(records)]
    _, _, stdout = _timed(argv, tree, _env(tree))
    found = json.loads(stdout.strip().splitlines()[-1])
    return {
        label: {kind: statistics.median(values) for kind, values in times.items()}
        for label, times in found.items()
    }


def class_run(tree: Path, scratch: Path, copies: int, jobs: int) -> dict[str, float]:
    """``grade-all --course`` on ``copies`` copies: wall seconds, core-seconds per notebook."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    for index in range(copies):
        (folder / "inbox" / f"student{index:02d}").mkdir(parents=True)
        shutil.copyfile(NOTEBOOK, folder / "inbox" / f"student{index:02d}" / "a2c.ipynb")
    argv = [sys.executable, "-m", "autograder", "grade-all", str(folder / "inbox")]
    argv += ["--out", str(folder / "out"), "--course", str(folder / "course")]
    argv += ["--jobs", str(jobs), "--no-histogram"]
    wall, cpu, _ = _timed(argv, tree, _env(tree))
    with open(folder / "out" / "grades.csv", encoding="utf-8") as table:
        graded = sum(row["status"] == "graded" for row in csv.DictReader(table))
    if graded != copies:
        raise SystemExit(f"{tree}: {graded} of {copies} notebooks graded")
    return {"wall": wall, "core_seconds": cpu / copies}


def one_notebook(tree: Path) -> dict[str, float]:
    """``grade --json`` on the reference notebook: wall and CPU seconds; checks the grade."""
    argv = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(NOTEBOOK),
        "--json",
        "--student",
        "ref",
    ]
    wall, cpu, stdout = _timed(argv, tree, _env(tree))
    report = json.loads(stdout)
    if report["total"] != 14.0:
        raise SystemExit(f"{tree}: the reference got {report['total']}: {report['status']}")
    return {"wall": wall, "cpu": cpu}


def _line(what: str, before: float, now: float, unit: str = "s") -> str:
    return f"  {what:44s} baseline {before:7.2f} {unit}   now {now:7.2f} {unit}   ratio {now / before:5.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the baseline git revision (default main)")
    parser.add_argument("--copies", type=int, default=8, help="notebooks in the class run")
    parser.add_argument("--jobs", type=int, default=2, help="parallel gradings in the class run")
    parser.add_argument("--records", type=int, default=5, help="recordings per measurement")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the two trees")
    parser.add_argument(
        "--measure", nargs="+", choices=MEASURES, default=list(MEASURES), help="what to measure"
    )
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the start")
    runs: dict[str, dict[str, list]] = {"baseline": {}, "now": {}}
    with tempfile.TemporaryDirectory(prefix="a2c-recording-") as tmp:
        scratch = Path(tmp)
        baseline = scratch / "baseline"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(baseline), args.ref],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            trees = {"baseline": baseline, "now": ROOT}
            for round_ in range(args.rounds):
                order = ("baseline", "now") if round_ % 2 == 0 else ("now", "baseline")
                for what, run in (
                    ("record", lambda tree: record_once(tree, scratch, args.records)),
                    ("class", lambda tree: class_run(tree, scratch, args.copies, args.jobs)),
                    ("one", one_notebook),
                ):
                    if what not in args.measure:
                        continue
                    for name in order:
                        runs[name].setdefault(what, []).append(run(trees[name]))
                        print(
                            f"round {round_ + 1}, {name}, {what}: {runs[name][what][-1]}",
                            flush=True,
                        )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(baseline)],
                cwd=ROOT, capture_output=True,
            )  # fmt: skip
    print(f"load {os.getloadavg()[0]:.2f} at the end; medians over {args.rounds} round(s)")

    def median(name: str, what: str, *keys: str) -> float:
        values = []
        for run in runs[name][what]:
            for key in keys:
                run = run[key]
            values.append(run)
        return statistics.median(values)

    if "record" in args.measure:
        print("recording one notebook (Grader.record, feedback HTML included), per notebook:")
    for label in ("course", "no course") if "record" in args.measure else ():
        for kind in ("wall", "cpu"):
            before, now = (
                median("baseline", "record", label, kind),
                median("now", "record", label, kind),
            )
            print(_line(f"{label}, {kind}", before, now))
    if "class" in args.measure:
        print(f"a class: grade-all --course, {args.copies} notebooks, --jobs {args.jobs}:")
    classes = (("wall", "wall time"), ("core_seconds", "core-seconds per notebook"))
    for key, what in classes if "class" in args.measure else ():
        print(_line(what, median("baseline", "class", key), median("now", "class", key)))
    if "one" in args.measure:
        print("one notebook end to end (grade --json):")
    for key in ("wall", "cpu") if "one" in args.measure else ():
        print(_line(key, median("baseline", "one", key), median("now", "one", key)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
