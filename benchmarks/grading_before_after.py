"""Is grading faster than before the rebuild, and where does a grading's time go?

Run from the repository root (needs git and bubblewrap)::

    python -m benchmarks.grading_before_after                 # against bd1766d, 3 rounds
    python -m benchmarks.grading_before_after --ref REF --rounds 5

1. **Side by side**: ``python -m autograder grade solutions/a2c.ipynb --json --student ref`` (one perfect
   notebook, sandboxed, what an instructor runs) with this tree's grader and with the grader of
   ``--ref`` (checked out into a temporary git worktree, run with the same Python), alternating
   round by round so that both see the same machine load; medians and their ratio.
2. **Where the time goes** (this tree): ``Grader.grade`` on the same notebook with a template
   built once, split into the sandbox (starting Python and IPython, the set-up cells, the
   student's definitions, each part's probes, as the runner timed them), judging, and nbgrader
   recording the grade (one autograde into the grader's own gradebook, the gradebook check).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "a2c.ipynb"
BEFORE = "bd1766d"  #: main before the grading rebuild


def _grade_cli(cwd: Path) -> float:
    """Seconds for one `grade --json` run with the grader found in ``cwd``; checks the grade."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(NOTEBOOK), "--json", "--student", "ref"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.perf_counter() - start
    report = json.loads(done.stdout)
    if report["total"] != 14.0:
        raise SystemExit(f"{cwd}: the reference got {report['total']}, not 14: {report['status']}")
    return seconds


def side_by_side(ref: str, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="a2c-before-") as folder:
        before = Path(folder) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(before), ref],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            now, old = [], []
            for index in range(rounds):
                old.append(_grade_cli(before))
                now.append(_grade_cli(ROOT))
                print(f"round {index + 1}: before {old[-1]:.1f} s, now {now[-1]:.1f} s", flush=True)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True
            )
    b, n = statistics.median(old), statistics.median(now)
    print(f"\none perfect notebook, `grade --json` end to end (median of {rounds}):")
    print(f"  before ({ref}): {b:.1f} s   now: {n:.1f} s   now/before: {n / b:.2f}")


def breakdown(rounds: int) -> None:
    from autograder.nbgrader.grader import Grader

    start = time.perf_counter()
    with Grader() as grader:
        print(f"\ntemplate course (once per run): {time.perf_counter() - start:.1f} s")
        runs = []
        for _ in range(rounds):
            result = grader.grade(NOTEBOOK, student="ref", threads=os.cpu_count() or 1)
            assert result.total == 14.0, result.status
            runs.append((result.seconds, dict(result.timings)))
    seconds, timings = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
    probes = {k[len("probe:") :]: v for k, v in timings.items() if k.startswith("probe:")}
    print(f"one grading, template built (median of {rounds}): {seconds:.1f} s")
    print(f"  sandbox, whole run          {timings['sandbox']:6.1f} s")
    print(f"    of which probes           {sum(probes.values()):6.1f} s")
    for part, value in probes.items():
        print(f"      {part:24s}{value:6.1f} s")
    rest = timings["sandbox"] - sum(probes.values())
    print(f"    start, imports, cells     {rest:6.1f} s")
    print(f"  judging                     {timings['judge']:6.1f} s")
    print(f"  nbgrader records the grade  {timings['record']:6.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=BEFORE, help="the git commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    side_by_side(args.ref, args.rounds)
    breakdown(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
