"""How long ``python -m solutions.train --help`` takes to answer: this tree against a baseline.

    python benchmarks/cli_start.py --ref 9aeeb93 [--rounds 5]

The baseline revision is exported with ``git archive`` into a temporary folder; each round runs
the command once in each tree, alternating, with that tree first on ``PYTHONPATH`` (so its
``solutions`` and ``course_lib`` are the ones imported, whatever is installed). It prints the
median wall time and the median CPU time (user + system of the child process) of each tree and
their ratios (this tree / baseline), with the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ("-m", "solutions.train", "--help")


def export(ref: str, into: Path) -> Path:
    """The files of revision ``ref`` in ``into`` (``git archive``)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True,
                             check=True).stdout  # fmt: skip
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into / "tree", filter="data")
    return into / "tree"


def time_once(tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``python -m solutions.train --help`` in ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *COMMAND], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the baseline revision (e.g. main)")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each tree (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cli-start-") as tmp:
        trees = {"baseline": export(args.ref, Path(tmp)), "this tree": ROOT}
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                times[name].append(time_once(tree))
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    medians = {}
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        medians[name] = (wall, cpu)
        print(f"{name}: wall {wall:.2f} s, CPU {cpu:.2f} s (medians of {len(runs)})")
    (bw, bc), (tw, tc) = medians["baseline"], medians["this tree"]
    print(f"this tree / baseline: wall {tw / bw:.2f}, CPU {tc / bc:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
