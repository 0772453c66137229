"""Calibrate the copy finder of the class board against real agents.

Two honest runs of the reference from the same seed start from the same weights and must not
be named the same agent; a copy of one of them with a bit flipped, noise added, its layers
scaled or trained a few updates more must be. Given two checkpoints of ``python -m
solutions.train`` from one seed (the second run differing only by its thread count, which
changes the float sums and so the games played), this prints the per-layer distances of
:mod:`autograder.core.agent_play.fingerprint` (with a fresh random key, as a class has) and the
verdict for the honest pair and for each copy of the first run, and writes them as JSON::

    python -m solutions.train --steps 100000 --threads 1 --out runs/h100k-1
    python -m solutions.train --steps 100000 --threads 2 --out runs/h100k-2
    python benchmarks/agent_copies.py runs/h100k-1/checkpoint.pt runs/h100k-2/checkpoint.pt \\
        --save docs/agent_copies_100k.json

The fine-tuned copies are what a copier does: the weights loaded into a fresh reference
network and trained ``K`` updates with a fresh RMSprop (the course's learning rate) on new
games. Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from autograder.core.agent_play.fingerprint import (  # noqa: E402
    layer_distances,
    named_same,
    weights_fingerprint,
)
from course_lib.network_layout import network_layouts  # noqa: E402
from course_lib.saved_agent import pack_agent, unpack_agent  # noqa: E402
from solutions.checkpoint import load_checkpoint  # noqa: E402


def _layers(state: dict) -> list:
    """The course's network of a ``state_dict`` as the grader reads it from a saved bundle."""
    weights = unpack_agent(pack_agent(state, "SpaceInvadersNoFrameskip-v4", 6, {}))
    return network_layouts(weights.tensors, 6)[0].layers(weights.tensors)


def _fine_tuned(state: dict, updates: int, seed: int) -> dict:
    from course_lib import nature_dqn_env
    from course_lib.runners import EnvRunner
    from solutions.config import A2CConfig
    from solutions.reference import MergeTimeBatch
    from solutions.train import NoGradPolicy, make_agent, value_targets

    torch.manual_seed(seed)
    config = A2CConfig(seed=seed)
    env = nature_dqn_env(config.env_id, nenvs=config.nenvs, seed=seed)
    try:
        model, policy, _, a2c = make_agent(config, int(env.single_action_space.n),
                                           torch.device("cpu"))  # fmt: skip
        model.load_state_dict(state)
        runner = EnvRunner(env, NoGradPolicy(policy), config.nsteps,
                           transforms=[value_targets(config, policy), MergeTimeBatch()])  # fmt: skip
        for _ in range(updates):
            a2c.step(runner.get_next())
        return {name: value.detach().clone() for name, value in model.state_dict().items()}
    finally:
        env.close()


def _copies(state: dict, layers: list, updates: list[int]) -> dict[str, list]:
    rng = np.random.default_rng(1)
    copies = {}
    flipped = [(w.copy(), b) for w, b in layers]
    flipped[3][0].view(np.uint32)[100, 100] ^= 1 << 30  # an exponent bit: a huge weight
    copies["a flipped bit (the hidden layer's exponent)"] = flipped
    for share in (0.01, 0.1, 0.3):
        copies[f"noise {share:.0%} of the mean weight"] = [
            (w + rng.normal(0, share * np.abs(w).mean(), w.shape).astype(np.float32), b)
            for w, b in layers
        ]
    copies["every layer scaled (x3, x0.5, ...)"] = [
        (w * factor, b * factor) for (w, b), factor in zip(layers, (3, 0.5, 2, 1.5, 4, 0.25), strict=True)
    ]
    for count in updates:
        copies[f"trained {count} more updates (fresh RMSprop)"] = _layers(
            _fine_tuned(state, count, seed=7)
        )
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("first", type=Path, help="checkpoint of the first honest run")
    parser.add_argument("second", type=Path, help="checkpoint of the second, same seed")
    parser.add_argument("--updates", type=int, nargs="*", default=[1, 10, 100])
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    states = [load_checkpoint(path, map_location="cpu")["model"] for path in (args.first, args.second)]
    key = secrets.token_bytes(32)
    first = _layers(states[0])
    prints = {"the second honest run (same seed)": weights_fingerprint(_layers(states[1]), key)}
    started = time.monotonic()
    for name, layers in _copies(states[0], first, args.updates).items():
        prints[name] = weights_fingerprint(layers, key)
    base = weights_fingerprint(first, key)
    table = []
    print(f"{args.first} against:")
    for name, fingerprint in prints.items():
        distances = layer_distances(base, fingerprint)
        same = named_same(distances)
        table.append({"against": name, "distances": distances, "named_same": same})
        shown = " ".join(f"{d:.3f}" for d in distances)
        print(f"  {name:48} conv1..3, hidden, policy, value: {shown}  -> "
              f"{'the same agent' if same else 'not named'}")  # fmt: skip
    print(f"({time.monotonic() - started:.0f} s)")
    if args.save is not None:
        runs = {"first": str(args.first), "second": str(args.second)}
        args.save.write_text(json.dumps({"runs": runs, "table": table}, indent=1) + "\n")


if __name__ == "__main__":
    main()
