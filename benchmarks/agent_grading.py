"""What the grader's verified score costs per submission: the saved weights played in the grader's
own network.

Plays the grader's protocol (``course_lib.evaluation.GRADER_PROTOCOL``: 8 games, each capped at
1,000 agent steps) with a trained agent, side by side in one run:

* **verified**: what grading does (:mod:`autograder.core.agent_play`): the bundle read as plain
  data and as the course's network (:func:`~autograder.core.agent_play.verification.handed_in`),
  then :func:`~autograder.core.agent_play.verification.play_agent`: the grader's emulators and
  its own copy of the network in this process, one torch thread, no sandbox; plus the check
  that earns it, the student's ``make_model`` loaded with the weights on 16 frames (the probe
  step that rides in the parts' sandbox), timed here on the reference's ``make_model``;
* **in-process**: :func:`course_lib.evaluation.play_games` with the reference's own
  ``nn.Module`` (what the notebook's save cell does), the floor.

For each it prints wall seconds and CPU seconds of this process, games, agent steps and capped
games, and the ratio of the two CPU figures::

    python benchmarks/agent_grading.py --agent runs/si1m/checkpoint.pt
    python benchmarks/agent_grading.py --agent a2c_agent.json --repeats 2

With ``--class N``, it grades a class of ``N`` copies of the solution notebook holding the agent
the way ``grade-all --jobs 2`` does (:func:`autograder.nbgrader.grader.grade_many`), once with
the course's default (the agent played) and once with ``a2c.agent.replay`` off, side by side,
and with ``--dask`` also on a local Dask cluster of two workers (a scheduler and two ``dask
worker`` processes with the kit's TLS certificate); for each it prints the class's wall time,
the added wall time per submission and the play's CPU per submission (``agent["cpu_seconds"]``,
the grader's thread)::

    python benchmarks/agent_grading.py --agent runs/si1m/checkpoint.pt --class 4 --dask

Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nbformat  # noqa: E402
import torch  # noqa: E402

from autograder.core.agent_play.handed_in import handed_in  # noqa: E402
from autograder.core.agent_play.verification import play_agent  # noqa: E402
from autograder.sandboxed.grading_runtime.probes.saved_agent import (  # noqa: E402
    saved_agent_outputs,
)
from course_lib.evaluation import GRADER_PROTOCOL, game_seeds, model_agent, play_games  # noqa: E402
from course_lib.saved_agent import AGENT_MIME, load_weights, pack_agent, unpack_agent  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _bundle(path: Path) -> dict:
    """The bundle of a checkpoint (its last-100 training score as the claim) or saved agent."""
    import json

    if path.suffix == ".json":
        return json.loads(path.read_text())
    from solutions.checkpoint import load_checkpoint

    ckpt = load_checkpoint(path, map_location="cpu")
    claimed = {"score": None, "games": 0, "steps": int(ckpt.get("step", 0) or 0)}
    return pack_agent(ckpt["model"], ckpt["config"].env_id, ckpt["extra"]["n_actions"], claimed)


def _cpu() -> tuple[float, float]:
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


def _grade_class(nb, count: int, replay: bool, cluster: object | None, folder: Path) -> tuple:
    """Grade ``count`` copies of ``nb`` as ``grade-all --jobs 2`` (or on ``cluster``): the wall
    seconds and the results."""
    from autograder.core.agent_play.settings import AgentSettings
    from autograder.core.cluster.scheduling import ClusterGrading
    from autograder.core.intake.collect import Submission
    from autograder.nbgrader.grader import Grader, grade_many

    subs = []
    for index in range(count):
        own = folder / f"in-{replay}" / f"s{index:03d}"
        own.mkdir(parents=True)
        nbformat.write(nb, own / "a2c.ipynb")
        subs.append(Submission(f"s{index:03d}", own / "a2c.ipynb", 0.0))
    with Grader(ROOT / "solutions" / "a2c.ipynb") as grader:
        if not replay:  # the course's setting, as the release (and so each worker) carries it
            grader.assessor.release.metadata["a2c"] = {"agent": {"replay": False}}
            grader.assessor.agent = AgentSettings(replay=False)
        wall = time.monotonic()
        results = grade_many(
            grader, subs, folder / f"out-{replay}", jobs=2, progress=False, histogram=False,
            cluster=ClusterGrading(cluster.client) if cluster is not None else None,
        )  # fmt: skip
        return time.monotonic() - wall, results


def _class_costs(nb, count: int, dask: bool) -> None:
    where = Path(tempfile.mkdtemp(prefix="agent-class-"))
    clusters: list[tuple[str, object | None]] = [("grade-all --jobs 2", None)]
    if dask:
        import subprocess

        from tests.test_cluster_grading import LocalCluster

        made = subprocess.run([sys.executable, "-m", "autograder", "cluster-certificates",
                               str(where / "certificates")], capture_output=True, check=True)  # fmt: skip
        del made
        clusters.append(("Dask, 2 workers", LocalCluster(where / "dask", 2, None, where / "certificates")))
    try:
        for name, cluster in clusters:
            timed = {}
            for replay in (True, False):
                folder = where / name.split()[0] / str(replay)
                timed[replay] = _grade_class(nb, count, replay, cluster, folder)
            (on, results), (off, _) = timed[True], timed[False]
            statuses = sorted({r.status for r in results})
            agents = [r.agent or {} for r in results]
            cpu = [a.get("cpu_seconds", math.nan) for a in agents]
            scores = [a["verified"]["score"] for a in agents if a.get("verified")]
            print(
                f"{name}: {count} submissions, agent played {on:.1f} s wall, not played "
                f"{off:.1f} s: +{(on - off) / count:.1f} s wall per submission "
                f"({on / off:.2f}x); agent CPU per submission mean {sum(cpu) / len(cpu):.1f} s, "
                f"max {max(cpu):.1f} s; verified scores {[round(x, 1) for x in scores]}; "
                f"statuses {statuses}; notes {[a.get('note') for a in agents if a.get('note')]}"
            )
    finally:
        for _, cluster in clusters:
            if cluster is not None:
                cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", type=Path, required=True, help="checkpoint.pt or a2c_agent.json")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--class", dest="count", type=int, default=0,
                        help="grade a class of this many copies, agent played and not")
    parser.add_argument("--dask", action="store_true", help="with --class: on Dask too")
    args = parser.parse_args()
    torch.set_num_threads(1)
    bundle = _bundle(args.agent)
    weights = unpack_agent(bundle)
    model = load_weights(__import__("solutions.reference").reference.make_model(
        weights.n_actions), weights).eval()  # fmt: skip
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    save = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get(
        "grade_id") == "save_agent")  # fmt: skip
    save.outputs = [nbformat.v4.new_output("execute_result", execution_count=1,
                                           data={"text/plain": "agent", AGENT_MIME: bundle})]  # fmt: skip
    if args.count:
        print(f"load average at the start: {os.getloadavg()[0]:.1f}")
        _class_costs(nb, args.count, args.dask)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        return
    protocol = GRADER_PROTOCOL
    print(f"protocol: {protocol.describe()}")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    make_model = __import__("solutions.reference").reference.make_model
    for repeat in range(args.repeats):
        wall, (own, _) = time.monotonic(), _cpu()
        agent = handed_in(nb, protocol=protocol)
        if not agent.playable:
            print(f"verified: no score: {agent.note}")
            return
        case = {"tensors": agent.weights.tensors, "n_actions": agent.weights.n_actions,
                "n": 16, "obs_seed": repeat}  # fmt: skip
        saved_agent_outputs(make_model, case)  # the check's probe step (in the parts' sandbox)
        check = _cpu()[0] - own
        played = play_agent(agent.layouts[0].layers(agent.weights.tensors), protocol)
        verified = _cpu()[0] - own
        if played.result is None:
            print(f"verified: no score: {played.failure}")
            return
        v = played.result.summary()
        print(
            f"[{repeat}] verified: {time.monotonic() - wall:.1f} s wall, CPU {verified:.1f} s "
            f"(reading and mapping the weights and make_model's check {check:.1f} s, the play "
            f"{played.cpu_seconds:.1f} s on its thread); score {v['score']:.1f} (std "
            f"{v['std']:.1f}) over {v['games']} games, {v['steps']:,} steps, {v['capped']} capped"
            + (f"; {played.capped}" if played.capped else "; within the CPU cap")
        )
        wall, (own, _) = time.monotonic(), _cpu()
        result = play_games(model_agent(model), protocol, game_seeds(protocol.games))
        inproc = _cpu()[0] - own
        print(
            f"[{repeat}] in-process: {time.monotonic() - wall:.1f} s wall, CPU {inproc:.1f} s; "
            f"score {result.mean:.1f} (std {result.std:.1f}) over {len(result.games)} games, "
            f"{result.steps:,} steps, {result.capped} capped; verified/in-process CPU "
            f"{verified / inproc:.2f}x"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
