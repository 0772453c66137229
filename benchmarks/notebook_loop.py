"""Speed of the notebook's training loop (part 7), in agent steps per second.

    python benchmarks/notebook_loop.py [--steps 40000] [--warmup 2000] [--repeats 1]
                                       [--notebook solutions/a2c.ipynb]

It runs the solution notebook's own cells in a Jupyter kernel, as *Run All* does: the set-up and
import cells, the solution cells of parts 1 to 6, then the part 7 cell (``grade_id`` ``train``)
as written, with one line inserted before its ``n_updates = ...`` line, ``TOTAL_STEPS = <--steps
+ --warmup>``, so that the run is short. The dashboard draws as it does for a student (in place,
every few seconds), since the kernel is a notebook's. Nothing of the loop is copied here: a
change to the notebook's loop changes what this script times. The hidden-test cells, the peeks
at the environments and the visible checks are skipped (they are not part of the loop).

A cell run before part 7 replaces the notebook's ``trange`` with one that notes the time at the
start of each update and at the end of the loop, and counts the dashboard's redraws; the updates
that cover the first ``--warmup`` agent steps are not timed. ``python -m solutions.train`` plays
the rollout under ``torch.no_grad()`` instead, so its speed is another number
(``benchmarks/train_throughput.py``). The script prints the machine it ran on, so that the figure
can be written down with it (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "solutions" / "a2c.ipynb"
#: The cells run before part 7, by nbgrader ``grade_id``: what part 7 needs, in notebook order.
BEFORE_TRAIN = (
    "setup", "imports", "course_imports", "model", "policy", "compute_value_targets",
    "merge_time_batch", "a2c", "gae",
)  # fmt: skip
TRAIN = "train"
#: The line of the part 7 cell before which the step budget is set.
BUDGET_ANCHOR = "n_updates = math.ceil(TOTAL_STEPS"

_TIMER = """\
# benchmarks/notebook_loop.py: the notebook's trange, noting when each update starts.
import time as _bench_time
from tqdm.auto import trange as _bench_trange
_BENCH_TIMES = []
def trange(*args, **kwargs):
    for update in _bench_trange(*args, **kwargs):
        _BENCH_TIMES.append(_bench_time.perf_counter())
        yield update
    _BENCH_TIMES.append(_bench_time.perf_counter())
# ... and counting the dashboard's redraws (it still draws as it would).
from course_lib.plots import TrainingDashboard as _BenchDashboard
_BENCH_DRAWS = [0]
_bench_update = _BenchDashboard.update
def _bench_counting_update(self, force=False):
    drew = _bench_update(self, force)
    _BENCH_DRAWS[0] += int(drew)
    return drew
_BenchDashboard.update = _bench_counting_update
"""
_REPORT = """\
# benchmarks/notebook_loop.py: the figures, as one JSON line.
import json as _bench_json
print(_bench_json.dumps({"times": _BENCH_TIMES, "steps": runner.step_var,
                         "batch": NENVS * NSTEPS, "device": str(device),
                         "threads": torch.get_num_threads(), "draws": _BENCH_DRAWS[0]}))
"""


def machine() -> str:
    """One line: CPU model, cores, load average."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    return f"{cpu}, {os.cpu_count()} cores, load average {load[0]:.2f}"


def benchmark_notebook(source: Path, total_steps: int) -> nbformat.NotebookNode:
    """The cells of ``source`` that this benchmark runs, part 7's with the step budget set."""
    nb = nbformat.read(source, as_version=4)
    by_id = {
        cell.metadata.get("nbgrader", {}).get("grade_id"): cell
        for cell in nb.cells
        if cell.cell_type == "code"
    }
    missing = [key for key in (*BEFORE_TRAIN, TRAIN) if key not in by_id]
    if missing:
        raise SystemExit(f"{source}: no code cell with grade_id {missing} (expected the course notebook)")
    train = by_id[TRAIN].source
    if BUDGET_ANCHOR not in train:
        raise SystemExit(f"{source}: the part 7 cell has no line starting {BUDGET_ANCHOR!r}")
    train = train.replace(BUDGET_ANCHOR, f"TOTAL_STEPS = {total_steps}\n{BUDGET_ANCHOR}", 1)
    cells = [nbformat.v4.new_code_cell(by_id[key].source) for key in BEFORE_TRAIN]
    cells += [nbformat.v4.new_code_cell(_TIMER), nbformat.v4.new_code_cell(train)]
    cells.append(nbformat.v4.new_code_cell(_REPORT))
    return nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)


def run_once(source: Path, steps: int, warmup: int) -> dict:
    """Run the benchmark's cells once, in a fresh kernel; the timed speed and what it covered."""
    nb = benchmark_notebook(source, steps + warmup)
    started = time.perf_counter()
    client = NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    wall = time.perf_counter() - started
    text = "".join(out.get("text", "") for out in nb.cells[-1].outputs if out.output_type == "stream")
    report = json.loads(text.strip().splitlines()[-1])
    times, batch = report["times"], report["batch"]
    n_updates = len(times) - 1
    first = min(math.ceil(warmup / batch), n_updates - 1)
    timed = (n_updates - first) * batch
    elapsed = times[-1] - times[first]
    return {**report, "updates": n_updates, "timed_steps": timed, "elapsed": elapsed,
            "steps_per_s": timed / elapsed, "wall": wall}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40_000, help="timed agent steps")
    parser.add_argument("--warmup", type=int, default=2_000, help="untimed agent steps first")
    parser.add_argument("--repeats", type=int, default=1, help="runs, each in a fresh kernel")
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK, help="the solution notebook")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.repeats < 1:
        parser.error("--steps and --repeats must be positive integers and --warmup one >= 0")
    env = {k: v for k, v in os.environ.items() if k not in ("A2C_KIT_QUICK", "NBGRADER_EXECUTION")}
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits it: no quick mode
    speeds = []
    for repeat in range(1, args.repeats + 1):
        print(f"run {repeat}/{args.repeats} starts: machine: {machine()}", flush=True)
        r = run_once(args.notebook, args.steps, args.warmup)
        speeds.append(r["steps_per_s"])
        print(
            f"run {repeat}/{args.repeats}: notebook loop ({args.notebook.name}, part 7 cell as "
            f"written, {r['updates']} updates, dashboard drawn {r['draws']} times, device "
            f"{r['device']}, {r['threads']} torch threads): {r['timed_steps']} timed agent steps "
            f"in {r['elapsed']:.1f} s = {r['steps_per_s']:.0f} steps/s; the whole run "
            f"{r['wall']:.0f} s; machine after: {machine()}",
            flush=True,
        )
    median = statistics.median(speeds)
    print(
        f"median of {len(speeds)} runs: {median:.0f} agent steps/s "
        f"({', '.join(f'{v:.0f}' for v in speeds)}); 1M agent steps at the median: "
        f"{1e6 / median / 60:.0f} minutes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
