"""Speed of the notebook's training loop (part 7), in agent steps per second, and what it learns.

    python benchmarks/notebook_loop.py [--steps 40000] [--warmup 2000] [--repeats 1]
                                       [--notebook solutions/a2c.ipynb]
    python benchmarks/notebook_loop.py --minutes 30 --save docs/spaceinvaders_30min_cpu.json

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

``--minutes M`` asks what a session of M minutes shows: the part 7 cell runs with the budget it
sets itself (no ``TOTAL_STEPS`` line is inserted unless ``--steps`` is given: on a CPU the
notebook's 1M steps, whose learning-rate schedule spans them), and the loop stops after M minutes
of training, counted from its first update, as a student whose session ends there would see it.
``--save PATH.json`` then keeps what the dashboard logged (every series and every finished game,
by agent step; ``course_lib.plots.plot_metrics_file`` draws it again), with the run's speed and
the load averages sampled every minute under ``"run"``, and the dashboard's picture beside it
(``PATH.png``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import threading
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
# benchmarks/notebook_loop.py: the notebook's trange, noting when each update starts
# (and ending the loop once _BENCH_SECONDS of training have passed, when set).
import time as _bench_time
from tqdm.auto import trange as _bench_trange
_BENCH_TIMES = []
_BENCH_SECONDS = {seconds!r}
def trange(*args, **kwargs):
    for update in _bench_trange(*args, **kwargs):
        now = _bench_time.perf_counter()
        if _BENCH_SECONDS is not None and _BENCH_TIMES and now - _BENCH_TIMES[0] >= _BENCH_SECONDS:
            break
        _BENCH_TIMES.append(now)
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
_SAVE = """\
# benchmarks/notebook_loop.py: what the dashboard logged, and its picture.
dashboard.save_metrics({json_path!r})
dashboard.save({png_path!r})
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


def benchmark_notebook(
    source: Path, total_steps: int | None, seconds: float | None = None, save: Path | None = None
) -> nbformat.NotebookNode:
    """The cells of ``source`` that this benchmark runs, part 7's with the step budget set
    (``None``: the notebook's own), stopped after ``seconds`` of training if given, and a last
    cell that saves the dashboard's metrics to ``save`` if given."""
    nb = nbformat.read(source, as_version=4)
    by_id = {
        cell.metadata.get("nbgrader", {}).get("grade_id"): cell
        for cell in nb.cells
        if cell.cell_type == "code"
    }
    missing = [key for key in (*BEFORE_TRAIN, TRAIN) if key not in by_id]
    if missing:
        raise SystemExit(
            f"{source}: no code cell with grade_id {missing} (expected the course notebook)"
        )
    train = by_id[TRAIN].source
    if BUDGET_ANCHOR not in train:
        raise SystemExit(f"{source}: the part 7 cell has no line starting {BUDGET_ANCHOR!r}")
    if total_steps is not None:
        train = train.replace(BUDGET_ANCHOR, f"TOTAL_STEPS = {total_steps}\n{BUDGET_ANCHOR}", 1)
    cells = [nbformat.v4.new_code_cell(by_id[key].source) for key in BEFORE_TRAIN]
    timer = _TIMER.format(seconds=seconds)
    cells += [nbformat.v4.new_code_cell(timer), nbformat.v4.new_code_cell(train)]
    if save is not None:
        png = save.with_suffix(".png")
        cells.append(
            nbformat.v4.new_code_cell(_SAVE.format(json_path=str(save), png_path=str(png)))
        )
    cells.append(nbformat.v4.new_code_cell(_REPORT))
    return nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)


class LoadSampler:
    """The 1-minute load average, sampled every ``interval`` seconds while it runs (a thread)."""

    def __init__(self, interval: float = 60.0) -> None:
        self.interval = interval
        self.samples: list[tuple[float, float]] = []  # (seconds since start, load)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        start = time.monotonic()
        while True:
            self.samples.append((round(time.monotonic() - start), os.getloadavg()[0]))
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_once(
    source: Path, steps: int | None, warmup: int, seconds: float | None = None,
    save: Path | None = None,
) -> dict:  # fmt: skip
    """Run the benchmark's cells once, in a fresh kernel; the timed speed and what it covered."""
    nb = benchmark_notebook(source, None if steps is None else steps + warmup, seconds, save)
    started = time.perf_counter()
    client = NotebookClient(
        nb, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    with LoadSampler() as load:
        client.execute()
    wall = time.perf_counter() - started
    text = "".join(
        out.get("text", "") for out in nb.cells[-1].outputs if out.output_type == "stream"
    )
    report = json.loads(text.strip().splitlines()[-1])
    times, batch = report["times"], report["batch"]
    n_updates = len(times) - 1
    first = min(math.ceil(warmup / batch), n_updates - 1)
    timed = (n_updates - first) * batch
    elapsed = times[-1] - times[first]
    result = {**report, "updates": n_updates, "timed_steps": timed, "elapsed": elapsed,
              "steps_per_s": timed / elapsed, "wall": wall, "load": load.samples}  # fmt: skip
    if save is not None:
        _keep_run(save, result, warmup)
    return result


def _keep_run(path: Path, result: dict, warmup: int) -> None:
    """Add the run's figures to the metrics file the notebook saved (under ``"run"``)."""
    data = json.loads(path.read_text())
    times = result["times"]
    data["run"] = {
        "command": "python benchmarks/notebook_loop.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "agent_steps": result["steps"],
        "training_seconds": round(times[-1] - times[0], 1),
        "steps_per_s_after_warmup": round(result["steps_per_s"], 1),
        "warmup_steps": warmup,
        "dashboard_draws": result["draws"],
        "device": result["device"],
        "torch_threads": result["threads"],
        "load_average_1min": result["load"],
    }
    path.write_text(json.dumps(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="timed agent steps (default 40,000; with --minutes, the notebook's budget)",
    )
    parser.add_argument("--warmup", type=int, default=2_000, help="untimed agent steps first")
    parser.add_argument("--repeats", type=int, default=1, help="runs, each in a fresh kernel")
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK, help="the solution notebook")
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help="stop the loop after this many minutes of training",
    )
    parser.add_argument(
        "--save",
        type=Path,
        default=None,
        help="a .json file for what the dashboard logged (one run only)",
    )
    args = parser.parse_args(argv)
    if args.steps is None and args.minutes is None:
        args.steps = 40_000
    if (args.steps is not None and args.steps < 1) or args.warmup < 0 or args.repeats < 1:
        parser.error("--steps and --repeats must be positive integers and --warmup one >= 0")
    if args.minutes is not None and not args.minutes > 0:
        parser.error("--minutes must be a positive number")
    if args.save is not None and (args.save.suffix != ".json" or args.repeats != 1):
        parser.error("--save needs a .json path and one run (--repeats 1)")
    seconds = None if args.minutes is None else args.minutes * 60
    env = {k: v for k, v in os.environ.items() if k not in ("A2C_KIT_QUICK", "NBGRADER_EXECUTION")}
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits it: no quick mode
    speeds = []
    for repeat in range(1, args.repeats + 1):
        print(f"run {repeat}/{args.repeats} starts: machine: {machine()}", flush=True)
        save = None if args.save is None else args.save.resolve()
        r = run_once(args.notebook, args.steps, args.warmup, seconds, save)
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
