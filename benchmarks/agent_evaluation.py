"""What an evaluation of a trained agent costs: CPU of the emulators and of the network, per protocol.

Plays the evaluation protocol (``course_lib.evaluation``) in this process, as the notebook and
``python -m solutions.evaluate`` do, with the reference network: trained (``--agent``, a
``checkpoint.pt`` or an ``a2c_agent.json``) or untrained. For each protocol it prints the games,
agent steps and capped games, the CPU seconds of the whole evaluation (this process, torch's
threads included), the share spent in the agent's answers, and the CPU per 1,000 agent steps::

    python benchmarks/agent_evaluation.py                               # untrained, both protocols
    python benchmarks/agent_evaluation.py --agent runs/si1m/checkpoint.pt --repeats 3

The grader's side (the same protocol with the agent in the sandbox, across a pipe) is measured
by ``benchmarks/grading.py``; figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from course_lib.evaluation import (  # noqa: E402
    COURSE_PROTOCOL,
    GRADER_PROTOCOL,
    game_seeds,
    model_agent,
    play_games,
)

PROTOCOLS = {"grader": GRADER_PROTOCOL, "course": COURSE_PROTOCOL}


def _network(agent: str | None) -> torch.nn.Module:
    from solutions.reference import make_model

    if agent is None:
        torch.manual_seed(0)
        return make_model(6).eval()
    from solutions.evaluate import _load_model

    return _load_model(Path(agent), torch.device("cpu"))[0].eval()


def measure(network: torch.nn.Module, protocol_name: str, seed: int) -> dict[str, float]:
    """One evaluation: steps, capped games, mean score, CPU seconds in all and in the agent."""
    protocol = PROTOCOLS[protocol_name]
    answer = model_agent(network)
    agent_cpu = 0.0

    def timed(observations: np.ndarray) -> np.ndarray:
        nonlocal agent_cpu
        start = time.process_time()
        logits = answer(observations)
        agent_cpu += time.process_time() - start
        return logits

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    result = play_games(timed, protocol, game_seeds(protocol.games, seed))
    cpu = time.process_time() - start_cpu
    return {
        "games": len(result.games),
        "steps": result.steps,
        "capped": result.capped,
        "score": result.mean,
        "cpu": cpu,
        "agent_cpu": agent_cpu,
        "wall": time.perf_counter() - start_wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default=None, help="checkpoint.pt or a2c_agent.json")
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    parser.add_argument("--repeats", type=int, default=1, help="evaluations per protocol")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the sandbox's: 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    network = _network(args.agent)
    print(f"agent: {args.agent or 'untrained reference network'}; torch threads {args.threads}; "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name in args.protocols:
        for repeat in range(args.repeats):
            row = measure(network, name, seed=repeat)
            print(
                f"{name:6s} #{repeat}: {row['games']} games, {row['steps']:,} agent steps, "
                f"{row['capped']} capped, mean score {row['score']:.1f}; CPU {row['cpu']:.1f} s "
                f"(agent {row['agent_cpu'] / row['cpu']:.0%}), "
                f"{1000 * row['cpu'] / row['steps']:.2f} s per 1,000 steps; wall {row['wall']:.1f} s"
            )


if __name__ == "__main__":
    main()
