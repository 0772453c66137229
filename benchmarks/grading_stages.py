"""What an instructor waits for: one notebook's `grade --json`, a class's `grade-all` and the
verified agent's replay, stage by stage, with the sandbox's CPU counted; this tree side by side
with a baseline.

Run from the repository root, as root (for the CPU cgroup; needs git and bubblewrap)::

    python -m benchmarks.grading_stages                        # against 0642e52, 3 rounds, 8 copies
    python -m benchmarks.grading_stages --ref REF --rounds 5 --copies 8 --jobs 2
    python -m benchmarks.grading_stages --ref-tree /tmp/wt-0642e52   # an existing checkout of it
    python -m benchmarks.grading_stages --agent runs/si1m/checkpoint.pt --agent-copies 4

Each measured command runs in a subprocess started in one tree or the other (the same Python,
``PYTHONPATH`` set to that tree; the script checks that the tree's own ``autograder`` is the one
imported), the two trees alternating round by round so that both see the same machine load:

1. **one notebook**: ``python -m autograder grade NOTEBOOK --json --student ref``, where
   NOTEBOOK is the tree's own ``solutions/a2c.ipynb`` (its total must be 14);
2. **a class**: ``python -m autograder grade-all COPIES --jobs J --out OUT`` on ``--copies``
   copies of it (feedback pages included, no course);
3. with ``--agent`` (a checkpoint or a saved agent), **the agent's replay**: ``grade-all`` on
   ``--agent-copies`` copies of the notebook holding that agent (the save cell's output),
   once as the course's settings say (the agent played) and once with the replay turned off
   (the driver sets ``a2c.agent.replay`` to false): the difference of the two classes' CPU,
   everything counted, over the copies is what the replay costs a submission (in the
   baseline, 0642e52, its own sandbox's start and the student's network answering every
   step; here the games in the grader's own network and the ``make_model`` check). Both trees
   play the same games: the driver draws each replay's seeds from ``game_seeds(8, k)`` for
   k = 0, 1, ... in the order the replays ask, where the grader draws fresh ones, so game
   lengths (the replay's work) do not differ between the trees by chance; the agent steps a
   submission row shows it.

Both run ``python -m autograder`` (through :mod:`runpy`) in a small driver (:data:`DRIVER`) that
wraps a few of the grader's functions to time them (nothing else changes): the grader's set-up
(template course, the sandbox's snapshot), the template's start where the tree has one (in a
thread, from the process's start: bubblewrap and the template's imports, overlapped with the
grader's own), the sandbox (its start: the mounts, bubblewrap and the runner, or the fork from
the template; the set-up cells, the first of which waits for the executor's start, IPython and
the grading runtime's imports, torch among them, unless forked warm; the student's cells; the
probes: the runner reports the cells' and the probes' own seconds), the reference's side (computed in a thread while the sandbox runs: its wall time, its
CPU, and how long the judging waited for it), judging, recording into nbgrader, the feedback
page. Python's start and imports are the time from the subprocess's start to the driver's
imports; the interpreter's exit is the time from the command's end to the process's.

A grading command of a tree that has them starts its sandbox's Python before its own imports
(``autograder/__main__.py``); the driver does the same before it imports the grader's modules to
time them, so the overlap is measured as an instructor gets it.

**CPU with the sandbox counted**: each subprocess starts in a cgroup of its own in the cgroup v1
``cpuacct`` hierarchy, which the sandbox's processes inherit (or, where the grader gives each run
a ``cpuacct`` group of its own, it makes it inside the grader's: counted all the same): its
``cpuacct.usage`` after the exit is the CPU of everything the command started. The sandbox's share of one notebook is the cgroup's CPU during the sandboxed run less
the grader process's own CPU in that time (the reference's thread). Where there is no
``cpuacct`` hierarchy (not root), ``RUSAGE_CHILDREN`` is used instead and the output says so: it
misses processes that were not waited for.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "0642e52"  #: main before the agent played in the grader's network and the template
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
REPLAY_ROW = "the replay's CPU a submission (the difference)"

#: Run in the tree under test: ``python driver.py ARGV_JSON TIMINGS_PATH CGROUP_USAGE_FILE``.
DRIVER = textwrap.dedent(
    """
    import json, os, runpy, sys, threading, time
    started = time.time()
    from pathlib import Path
    argv, out, usage = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    lock, events = threading.Lock(), []

    def add(stage, wall, cpu=None, **extra):
        with lock:
            events.append({"stage": stage, "wall": wall, "cpu": cpu, **extra})

    try:  # a tree that starts its sandbox's Python first does so before its own imports
        import autograder.__main__ as entry
        if getattr(entry, "grades_here", lambda argv: False)(argv):
            from autograder.core.isolation import template as T
            original_init = T.Template.__init__
            def template_init(self, *args, **kwargs):
                start, wall_clock = time.perf_counter(), time.time()
                try:
                    return original_init(self, *args, **kwargs)
                finally:
                    add("template start", time.perf_counter() - start, None, begin=wall_clock)
            T.Template.__init__ = template_init
            from autograder.core.sandbox_view import warm_start
            warm_start()
    except ImportError:
        pass
    import dataclasses
    import autograder.cli as cli
    from autograder.core import assessor as A
    from autograder.core.grading_job import SETUP_CELLS
    from autograder.nbgrader import grader as G
    imported = time.time()
    for module in (cli, A, G):
        here = Path(module.__file__).resolve()
        assert here.is_relative_to(Path.cwd().resolve()), f"{here} is not this tree's"

    def cgroup_cpu():
        if not usage:
            return float("nan")
        with open(usage) as file:
            return int(file.read()) / 1e9

    def timed(owner, name, stage):
        original = getattr(owner, name, None)
        if original is None:
            return
        def wrapper(*args, **kwargs):
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                add(stage, time.perf_counter() - start, time.thread_time() - cpu,
                    end=time.time())
        setattr(owner, name, wrapper)

    timed(G.Grader, "__init__", "grader set-up")
    timed(G.Grader, "close", "clean-up")
    timed(cli, "grade_student", "naming")  # the baseline's
    try:
        import autograder.commands.grade as command  # this layout
        timed(command, "grade_student", "naming")
    except ImportError:
        pass
    timed(A, "prepare_references", "reference side")
    timed(G, "autograde", "recording")
    timed(G, "check_gradebook", "recording")
    timed(G, "_write_feedback", "feedback")  # this layout
    timed(G, "nbgrader_feedback", "feedback")  # the baseline's
    if os.environ.get("A2C_BENCH_NO_REPLAY"):  # the course's settings with the replay off
        made = A.Assessor.__init__
        def no_replay(self, *args, **kwargs):
            made(self, *args, **kwargs)
            self.agent = dataclasses.replace(self.agent, replay=False)
            if hasattr(self, "course"):  # this layout: the course value holds the settings
                self.course = dataclasses.replace(self.course, agent=self.agent)
        A.Assessor.__init__ = no_replay
    if os.environ.get("A2C_BENCH_GAME_SEEDS"):  # both trees play the same games
        from autograder.core.agent_play import verification as V
        draws, drawn = V.game_seeds, iter(range(1_000_000))
        def same_games(games, seed=None):
            with lock:
                return draws(games, next(drawn) if seed is None else seed)
        V.game_seeds = same_games

    local = threading.local()
    job_cells = A.job_cells
    def recorded(nb, names):  # the set-up cells of the notebook the next run gets
        local.setup = {index for index, cell in enumerate(nb.cells)
                       if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                       in SETUP_CELLS}
        return job_cells(nb, names)
    A.job_cells = recorded

    run = A.Assessor._run
    def sandboxed(self, *args, **kwargs):
        setup = getattr(local, "setup", set())
        start, process, group = time.perf_counter(), time.process_time(), cgroup_cpu()
        ran = run(self, *args, **kwargs)
        wall = time.perf_counter() - start
        cpu = (cgroup_cpu() - group) - (time.process_time() - process)
        cells = {"set-up": 0.0, "student": 0.0, "probes": 0.0}
        for line in ran.channel:  # the runner's own lines (an honest notebook)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("event") == "cell":
                kind = "set-up" if message["index"] in setup else "student"
                cells[kind] += message["seconds"]
            elif message.get("event") == "probe":
                cells["probes"] += message["seconds"]
        add("sandbox", wall, cpu, end=time.time(), isolation=ran.isolation, **cells)
        return ran
    A.Assessor._run = sandboxed

    assess = A.Assessor.assess
    def assessed(self, *args, **kwargs):
        start = time.perf_counter()
        done = assess(self, *args, **kwargs)
        agent = done.result.agent or {}
        add("assess", time.perf_counter() - start, None,
            judge=done.result.timings.get("judge", 0.0), status=done.result.status,
            agent_cpu=agent.get("cpu_seconds"), verified=bool(agent.get("verified")),
            agent_steps=(agent.get("verified") or {}).get("steps"))
        return done
    A.Assessor.assess = assessed

    entered = time.time()
    sys.argv = ["autograder", *argv]
    try:
        runpy.run_module("autograder", run_name="__main__", alter_sys=True)  # python -m autograder
    finally:
        left = time.time()
        own = os.times()
        out.write_text(json.dumps({
            "started": started, "imported": imported, "entered": entered, "left": left,
            "own_cpu": own.user + own.system, "events": events,
        }))
    """
)


class CpuGroup:
    """A cgroup v1 ``cpuacct`` group for one measured command and what it starts."""

    def __init__(self) -> None:
        self.path: Path | None = None
        if os.getuid() == 0 and (CPUACCT / "cgroup.procs").exists():
            self.path = CPUACCT / f"a2c-benchmark-{os.getpid()}-{time.monotonic_ns()}"
            self.path.mkdir()

    @property
    def usage_file(self) -> str:
        return str(self.path / "cpuacct.usage") if self.path else ""

    def join(self) -> None:  # in the child, before exec
        if self.path:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9 if self.path else float("nan")

    def remove(self) -> None:
        if self.path is None:
            return
        for _ in range(100):  # the sandbox's last processes may take a moment to go
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def _python(tree: Path) -> str:
    """The tree's own virtual environment's Python where it has one, else this one."""
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def _env(tree: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A run in ``tree``: its packages first on the path, its interpreter's programs on PATH."""
    programs = f"{Path(_python(tree)).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1",
            "PATH": programs, **(extra or {})}  # fmt: skip


def measure(tree: Path, argv: list[str], scratch: Path, extra: dict | None = None) -> dict:
    """Run ``python -m autograder ARGV`` through the driver in ``tree`` (``extra``: more
    environment): wall, CPU, stages."""
    driver, timings = scratch / "driver.py", Path(tempfile.mkstemp(dir=scratch)[1])
    driver.write_text(DRIVER)
    group = CpuGroup()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            process = subprocess.Popen(
                [_python(tree), str(driver), json.dumps(argv), str(timings), group.usage_file],
                cwd=tree, env=_env(tree, extra), stdout=out, stderr=err, preexec_fn=group.join,
            )  # fmt: skip
            process.wait()
            ended = time.time()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = group.seconds()
    finally:
        group.remove()
    if process.returncode != 0:
        raise SystemExit(f"{argv} in {tree} failed ({process.returncode}):\n{stderr[-3000:]}")
    found = json.loads(timings.read_text())
    found["stdout"] = stdout
    found["wall"] = ended - start
    found["python_start"] = found["imported"] - start
    found["exit"] = ended - found["left"]
    waited = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    found["cpu"], found["cpu_source"] = (cpu, "cpuacct") if group.path else (waited, "rusage")
    return found


def _sum(found: dict, stage: str, key: str = "wall") -> float:
    return sum(event[key] or 0.0 for event in found["events"] if event["stage"] == stage)


def one_notebook_rows(found: dict) -> dict[str, float]:
    """The stages of one `grade --json` (seconds of wall time, and CPU where named)."""
    sandbox = next(event for event in found["events"] if event["stage"] == "sandbox")
    assess = next(event for event in found["events"] if event["stage"] == "assess")
    reference = next(event for event in found["events"] if event["stage"] == "reference side")
    cells = sandbox["set-up"] + sandbox["student"] + sandbox["probes"]
    waited = max(0.0, reference["end"] - sandbox["end"])
    template = [event for event in found["events"] if event["stage"] == "template start"]
    began = sandbox["end"] - sandbox["wall"]
    waited_template = max(
        [0.0] + [min(sandbox["wall"], e["begin"] + e["wall"] - began) for e in template]
    )
    timed = sum(
        _sum(found, stage) for stage in ("grader set-up", "recording", "naming", "clean-up")
    )
    return {
        "Python start, the grader's imports": found["python_start"],
        "grader set-up (template course, snapshot)": _sum(found, "grader set-up"),
        "waiting for the template's start": waited_template,
        "sandbox, start (bwrap and the runner, or the fork)": sandbox["wall"]
        - cells
        - waited_template,
        "sandbox, executor start + set-up cells (imports)": sandbox["set-up"],
        "sandbox, the student's cells": sandbox["student"],
        "sandbox, probes": sandbox["probes"],
        "waiting for the reference's side": waited,
        "intake, plan": assess["wall"] - sandbox["wall"] - waited - assess["judge"],
        "judging": assess["judge"],
        "recording (nbgrader autograde, check)": _sum(found, "recording"),
        "naming the student (collect)": _sum(found, "naming"),
        "grader clean-up": _sum(found, "clean-up"),
        "the rest of `main`": found["left"] - found["entered"] - assess["wall"] - timed,
        "interpreter exit": found["exit"],
        "= wall, end to end": found["wall"],
        "(overlapped) the template's start, wall": sum(e["wall"] for e in template),
        "(overlapped) the reference's side, wall": reference["wall"],
        "(overlapped) the reference's side, CPU": reference["cpu"],
        "CPU, everything": found["cpu"],
        "CPU, the sandbox": sandbox["cpu"],
        "CPU, the grader's process": found["own_cpu"],
    }


def class_rows(found: dict, copies: int) -> dict[str, float]:
    """A class's figures per notebook (wall and CPU sums over its gradings, divided)."""
    return {
        "wall, the whole class": found["wall"],
        "notebooks a minute": 60 * copies / found["wall"],
        "core-seconds a notebook (all CPU / notebooks)": found["cpu"] / copies,
        "  of which the grader's process": found["own_cpu"] / copies,
        "  of which the sandboxes and helpers": (found["cpu"] - found["own_cpu"]) / copies,
        "sandbox wall a notebook": _sum(found, "sandbox") / copies,
        "  executor start + set-up cells a notebook": _sum(found, "sandbox", "set-up") / copies,
        "  probes a notebook": _sum(found, "sandbox", "probes") / copies,
        "reference's side CPU a notebook": _sum(found, "reference side", "cpu") / copies,
        "recording wall a notebook": _sum(found, "recording") / copies,
        "feedback wall a notebook": _sum(found, "feedback") / copies,
        "grader set-up (once)": _sum(found, "grader set-up"),
        "template's start (once, wall)": _sum(found, "template start"),
    }


def agent_rows(played: dict, not_played: dict, copies: int) -> dict[str, float]:
    """What the agent's replay costs a submission: the class with it less the class without
    it (all CPU, the sandboxes' included), over the copies; and the replay's own figure."""
    agent_cpu = [
        event["agent_cpu"]
        for event in played["events"]
        if event["stage"] == "assess" and event.get("agent_cpu") is not None
    ]
    steps = [
        event.get("agent_steps") or 0 for event in played["events"] if event["stage"] == "assess"
    ]
    return {
        "CPU a submission, the agent played": played["cpu"] / copies,
        "CPU a submission, the replay off": not_played["cpu"] / copies,
        REPLAY_ROW: (played["cpu"] - not_played["cpu"]) / copies,
        "  the replay's own figure (the result's cpu_seconds)": sum(agent_cpu)
        / max(1, len(agent_cpu)),
        "agent steps a submission (the same games in both trees)": sum(steps) / copies,
        "wall a submission, the agent played": played["wall"] / copies,
        "wall a submission, the replay off": not_played["wall"] / copies,
    }


def _print(title: str, rows: list[dict[str, float]], labels: tuple[str, str]) -> None:
    print(f"\n{title} (median of {len(rows[0]['_runs'])} rounds)")
    print(f"  {'':52s}{labels[0]:>10s}{labels[1]:>10s}{'ratio':>8s}")
    for key in rows[0]["_runs"][0]:
        old = statistics.median(run[key] for run in rows[0]["_runs"])
        new = statistics.median(run[key] for run in rows[1]["_runs"])
        ratio = f"{new / old:8.2f}" if old > 0.05 else ""
        print(f"  {key:52s}{old:10.2f}{new:10.2f}{ratio}")


def _check_one(found: dict, tree: Path) -> None:
    report = json.loads(found["stdout"])
    if report["total"] != 14.0:
        raise SystemExit(f"{tree}: the reference got {report['total']}, not 14: {report['status']}")


def _check_agents(found: dict, replay: bool, tree: Path) -> None:
    """Every copy graded, and its agent played (or not) as asked."""
    assessed = [event for event in found["events"] if event["stage"] == "assess"]
    for event in assessed:
        if not event["status"].startswith("graded") or event["verified"] != replay:
            raise SystemExit(f"{tree}: a copy got {event['status']!r}, verified "
                             f"{event['verified']} (the replay {'on' if replay else 'off'})")  # fmt: skip


def _load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _with_agent(notebook: Path, agent: Path) -> dict:
    """``notebook`` (read as JSON) with ``agent`` (a checkpoint or a saved agent) as the output
    of its save cell, as a student who ran it hands it in."""
    from benchmarks.agent_grading import _bundle
    from course_lib.saved_agent import AGENT_MIME

    nb = json.loads(notebook.read_text())
    save = next(
        cell
        for cell in nb["cells"]
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "save_agent"
    )
    save["outputs"] = [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                        "data": {"text/plain": "agent", AGENT_MIME: _bundle(agent)}}]  # fmt: skip
    return nb


def _copies(folder: Path, nb: dict | Path, count: int) -> Path:
    folder.mkdir()
    for number in range(count):
        path = folder / f"student{number:02d}.ipynb"
        if isinstance(nb, Path):
            shutil.copyfile(nb, path)
        else:
            path.write_text(json.dumps(nb))
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=BEFORE, help="the git commit to compare with")
    parser.add_argument("--ref-tree", type=Path, default=None, help="a checkout of it, kept")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=8, help="notebooks in the class (0: none)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--agent", type=Path, default=None,
                        help="a checkpoint or saved agent: measure the replay too")  # fmt: skip
    parser.add_argument("--agent-copies", type=int, default=4,
                        help="notebooks holding the agent in that class")  # fmt: skip
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    print(f"machine: {os.cpu_count()} cores; this tree {commit}, baseline {args.ref}")
    print(f"load average at the start: {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="a2c-stages-") as folder:
        scratch = Path(folder)
        before = args.ref_tree
        if before is None:
            before = scratch / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(before), args.ref],
                           cwd=ROOT, check=True, capture_output=True)  # fmt: skip
        trees = {"before": before.resolve(), "now": ROOT}
        one = {name: {"_runs": []} for name in trees}
        many = {name: {"_runs": []} for name in trees}
        agents = {name: {"_runs": []} for name in trees}
        agent_nb = _with_agent(ROOT / "solutions" / "a2c.ipynb", args.agent) if args.agent else None
        cpu_source = ""
        try:
            for index in range(args.rounds):
                order = list(trees) if index % 2 == 0 else list(reversed(trees))
                for name in order:
                    tree = trees[name]
                    notebook = tree / "solutions" / "a2c.ipynb"
                    found = measure(
                        tree, ["grade", str(notebook), "--json", "--student", "ref"], scratch
                    )
                    _check_one(found, tree)
                    cpu_source = found["cpu_source"]
                    one[name]["_runs"].append(one_notebook_rows(found))
                    print(f"round {index + 1}, one notebook, {name}: {found['wall']:.1f} s wall, "
                          f"{found['cpu']:.1f} s CPU; load {_load()}", flush=True)  # fmt: skip
                    if args.copies > 0:
                        copies = _copies(scratch / f"class-{name}-{index}", notebook, args.copies)
                        out = scratch / f"out-{name}-{index}"
                        found = measure(
                            tree,
                            ["grade-all", str(copies), "--jobs", str(args.jobs), "--out", str(out)],
                            scratch,
                        )
                        many[name]["_runs"].append(class_rows(found, args.copies))
                        print(f"round {index + 1}, class of {args.copies}, {name}: "
                              f"{found['wall']:.1f} s wall, {found['cpu'] / args.copies:.2f} "
                              f"core-s a notebook; load {_load()}", flush=True)  # fmt: skip
                    if agent_nb is None:
                        continue
                    count, both = args.agent_copies, {}
                    for replay in (True, False):
                        copies = _copies(
                            scratch / f"agents-{name}-{index}-{replay}", agent_nb, count
                        )
                        out = scratch / f"agents-out-{name}-{index}-{replay}"
                        both[replay] = measure(
                            tree,
                            ["grade-all", str(copies), "--jobs", str(args.jobs), "--out", str(out)],
                            scratch,
                            {"A2C_BENCH_GAME_SEEDS" if replay else "A2C_BENCH_NO_REPLAY": "1"},
                        )
                        _check_agents(both[replay], replay, tree)
                    rows = agent_rows(both[True], both[False], count)
                    agents[name]["_runs"].append(rows)
                    cost = rows[REPLAY_ROW]
                    print(f"round {index + 1}, the agent's replay, {name}: {cost:.2f} core-s a "
                          f"submission; load {_load()}", flush=True)  # fmt: skip
        finally:
            if args.ref_tree is None:
                subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT,
                               capture_output=True)  # fmt: skip
    labels = ("before", "now")
    print(f"\nCPU counted from: {cpu_source}")
    _print("one notebook, `grade --json`, seconds", [one["before"], one["now"]], labels)
    if args.copies > 0:
        _print(
            f"a class of {args.copies}, `grade-all --jobs {args.jobs}`, seconds",
            [many["before"], many["now"]],
            labels,
        )
    if agent_nb is not None:
        _print(
            f"the agent's replay, a class of {args.agent_copies} holding the agent, "
            f"`grade-all --jobs {args.jobs}`, seconds",
            [agents["before"], agents["now"]],
            labels,
        )
    print(f"\nload average at the end: {_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
