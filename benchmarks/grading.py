"""How fast is grading, sandbox included? One submission, then a folder graded in parallel.

Run from the repository root::

    python -m benchmarks.grading                       # 1 submission, then 8 copies on all cores
    python -m benchmarks.grading --copies 4 --serial   # also grade the copies with --jobs 1
    python -m benchmarks.grading --jobs 2 --cluster-workers 2   # local pool vs. Dask cluster

Measures, through the real pipeline (``autograder.nbgrader.grader``: the bubblewrap sandbox, judging,
nbgrader's gradebook and feedback):

1. **one submission**: seconds for ``Grader.grade`` on the reference notebook, in the sandbox
   (template already built; the template's own cost is printed apart), side by side with the
   same grading without the sandbox (a plain subprocess), alternating, and their ratio: what
   isolation costs. Target: under 60 s, sandboxed, on a 2-core machine.
2. **a folder**: ``grade_many`` on ``--copies`` copies with ``--jobs`` parallel gradings
   (default: all cores), without feedback HTML: wall time, notebooks per minute, and the
   machine's CPU utilisation meanwhile; with ``--serial``, the same copies with one job, and the
   speed-up.
3. **a Dask cluster** (``--cluster-workers N``, needs ``distributed``): the same copies through
   ``grade_many(..., cluster=ClusterGrading(client))`` on a local cluster of N single-thread worker processes on
   this machine (warmed up first: each worker builds its grader once), side by side with the
   pool, the ratio of their speeds, and the core-seconds a notebook holds a grading slot
   (wall time x slots / notebooks: what a cluster bills) with what a 1,000-submission class
   costs in core-hours.

Timings are noisy on a shared machine: run it on a quiet one for numbers you report.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from autograder.core.intake.collect import Submission
from autograder.nbgrader.course import SOURCE_NOTEBOOK
from autograder.nbgrader.grader import Grader, grade_many

__all__ = ["main"]


def _busy_and_total() -> tuple[float, float]:
    """Busy and total CPU ticks of the whole machine (Linux ``/proc/stat``), or zeros.

    Machine-wide, because the sandboxed processes are killed, not waited for, so the rusage of
    children misses them: run the benchmark on an otherwise idle machine.
    """
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return sum(fields) - idle, sum(fields)


def _grade_folder(
    grader: Grader, subs: list[Submission], out: Path, jobs: int, cluster: object = None
) -> dict:
    """Wall time, graded count, machine CPU use, and ``core_s``: the seconds a notebook holds
    one of the ``jobs`` grading slots (one core each), i.e. what a cluster bills."""
    (busy, total), start = _busy_and_total(), time.perf_counter()
    results = grade_many(
        grader, subs, out, jobs=jobs, histogram=False, feedback=False, cluster=cluster
    )
    wall = time.perf_counter() - start
    busy_after, total_after = _busy_and_total()
    graded = sum(result.status == "graded" for result in results)
    utilisation = (busy_after - busy) / max(total_after - total, 1e-9)
    return {
        "wall": wall,
        "graded": graded,
        "utilisation": utilisation,
        "core_s": wall * jobs / len(subs),
    }


def _on_cluster(grader: Grader, subs: list[Submission], out: Path, workers: int) -> dict:
    """``_grade_folder`` on a local Dask cluster of ``workers`` single-thread processes."""
    from distributed import Client, LocalCluster

    from autograder.core.cluster.scheduling import ClusterGrading

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        warm = subs[:workers]  # each worker imports the kit and builds its grader once
        grade_many(
            grader,
            warm,
            out / "warm-up",
            histogram=False,
            feedback=False,
            cluster=ClusterGrading(client),
        )
        return _grade_folder(grader, subs, out, workers, cluster=ClusterGrading(client))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submission", type=Path, default=SOURCE_NOTEBOOK, help="notebook graded")
    parser.add_argument("--copies", type=int, default=8, help="copies graded in parallel")
    parser.add_argument("--rounds", type=int, default=2, help="alternating one-submission rounds")
    parser.add_argument("--jobs", type=int, default=None, help="parallel gradings (default: cores)")
    parser.add_argument("--serial", action="store_true", help="also grade the copies with 1 job")
    parser.add_argument(
        "--cluster-workers",
        type=int,
        default=0,
        metavar="N",
        help="also grade the copies on a local Dask cluster of N worker processes",
    )
    args = parser.parse_args(argv)
    if args.copies < 1:
        parser.error(f"--copies must be >= 1, got {args.copies}")
    jobs = args.jobs or os.cpu_count() or 1
    cores = os.cpu_count() or 1

    with tempfile.TemporaryDirectory(prefix="a2c-bench-") as scratch:
        scratch_dir = Path(scratch)
        start = time.perf_counter()
        with Grader(SOURCE_NOTEBOOK, workdir=scratch_dir / "work") as grader:
            print(f"template course built in {time.perf_counter() - start:.1f} s")
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(max(1, args.rounds)):
                for isolate in (True, False):
                    grader.isolate = isolate
                    start = time.perf_counter()
                    one = grader.grade(args.submission, student="bench", feedback_dir=scratch_dir)
                    times[isolate].append(time.perf_counter() - start)
                    print(
                        f"one submission, {'sandboxed' if one.sandboxed else 'NOT sandboxed'}: "
                        f"{times[isolate][-1]:.1f} s ({one.total:g}/{one.max_total:g} points, "
                        f"status {one.status})"
                    )
            grader.isolate = True
            boxed, plain = (statistics.median(times[flag]) for flag in (True, False))
            verdict = "PASS" if boxed < 60 else "FAIL"
            print(
                f"median one submission: sandboxed {boxed:.1f} s, plain {plain:.1f} s "
                f"(sandbox costs {boxed / plain:.2f}x); target < 60 s sandboxed: {verdict}"
            )
            subs = []
            for index in range(args.copies):
                copy = scratch_dir / "in" / f"student{index:03d}.ipynb"
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(args.submission, copy)
                subs.append(Submission(copy.stem, copy, 0.0))
            runs = {jobs: _grade_folder(grader, subs, scratch_dir / "out", jobs)}
            if args.serial and jobs != 1:
                runs[1] = _grade_folder(grader, subs, scratch_dir / "out1", 1)
            if args.cluster_workers > 0:
                cluster = _on_cluster(grader, subs, scratch_dir / "outc", args.cluster_workers)
    print(f"\n{args.copies} copies, {cores} cores")
    print(f"{'jobs':>5}{'wall s':>9}{'s/nb':>7}{'nb/min':>8}{'CPU use':>9}{'graded':>8}")
    for count, run in sorted(runs.items()):
        per = run["wall"] / args.copies
        print(
            f"{count:>5}{run['wall']:>9.1f}{per:>7.1f}{60 / per:>8.1f}"
            f"{run['utilisation']:>8.0%}{run['graded']:>8}"
        )
    if 1 in runs and jobs in runs and jobs != 1:
        print(
            f"speed-up of --jobs {jobs} over --jobs 1: {runs[1]['wall'] / runs[jobs]['wall']:.2f}x"
        )
    if args.cluster_workers > 0:
        print(f"\n{'':>16}{'wall s':>9}{'nb/min':>8}{'CPU use':>9}{'core-s/nb':>11}{'graded':>8}")
        for label, run in (
            (f"pool --jobs {jobs}", runs[jobs]),
            (f"Dask {args.cluster_workers} workers", cluster),
        ):
            print(
                f"{label:>16}{run['wall']:>9.1f}{60 * args.copies / run['wall']:>8.1f}"
                f"{run['utilisation']:>8.0%}{run['core_s']:>11.1f}{run['graded']:>8}"
            )
        print(
            f"cluster / pool speed: {runs[jobs]['wall'] / cluster['wall']:.2f}x; a 1,000-submission "
            f"class: {1000 * cluster['core_s'] / 3600:.1f} core-hours on the cluster "
            f"({1000 * runs[jobs]['core_s'] / 3600:.1f} with the pool)"
        )


if __name__ == "__main__":
    main()
