"""Env throughput: agent steps per second of every env batch, against gymnasium's AsyncVectorEnv.

Runs, for each game, the same pre-generated random actions through:

* ``default (<name>)``: ``nature_dqn_env(..., backend="auto")``, i.e. ``DEFAULT_BACKEND``;
* ``native``, ``subprocess``, ``sequential``: the three course backends;
* ``gym-async``: the baseline, ``gymnasium.vector.AsyncVectorEnv`` (shared memory, one process
  per env) of ``gym.make(<id>)`` + gymnasium's ``AtariPreprocessing`` (no-op starts, frame skip
  4, max-pool, grayscale 84x84) + ``FrameStackObservation(4)``: the same preprocessing as the
  course wrappers, built from gymnasium's own wrappers;
* ``ale-raw``: ``ale_py.vector_env.AtariVectorEnv`` alone (an upper bound: no Python on top).

All configs of a game are built together and warmed up (``--warmup`` steps, not timed); then
``--rounds`` rounds time ``--steps`` batch steps of each config in turn, so that a slow moment
of the machine hits every config alike; the score is the median over the rounds of agent
steps per second, ``steps * envs / seconds``. The run FAILS (exit
code 1) unless, for every game, the default backend is >= 1.3x gym-async and "subprocess" is
>= 1.0x gym-async. Timings are only meaningful on an otherwise idle machine::

    python benchmarks/env_throughput.py                       # full measurement
    python benchmarks/env_throughput.py --steps 200 --rounds 1 --games Breakout   # quick check
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gymnasium as gym  # noqa: E402

from course_lib import DEFAULT_BACKEND, nature_dqn_env  # noqa: E402
from course_lib.atari_ids import resolve_env_id  # noqa: E402

#: Targets, as multiples of gym-async's throughput.
TARGETS = {"default": 1.3, "subprocess": 1.0}
BASELINE = "gym-async"


def _gym_preprocessed(env_id: str) -> Callable[[], gym.Env]:
    """A picklable factory of one env with gymnasium's own Atari preprocessing."""

    def make() -> gym.Env:
        import ale_py

        gym.register_envs(ale_py)
        env = gym.make(env_id)
        env = gym.wrappers.AtariPreprocessing(
            env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True
        )
        return gym.wrappers.FrameStackObservation(env, 4)

    return make


def make_config(name: str, env_id: str, nenvs: int) -> gym.vector.VectorEnv:
    """Build the batch called ``name`` for ``env_id`` with ``nenvs`` envs."""
    if name.startswith("default"):
        return nature_dqn_env(env_id, nenvs=nenvs, seed=0)
    if name in ("native", "subprocess", "sequential"):
        return nature_dqn_env(env_id, nenvs=nenvs, seed=0, backend=name)
    if name == BASELINE:
        return gym.vector.AsyncVectorEnv([_gym_preprocessed(env_id)] * nenvs)
    if name == "ale-raw":
        from ale_py.vector_env import AtariVectorEnv

        return AtariVectorEnv(resolve_env_id(env_id).game, nenvs)
    raise ValueError(f"unknown config {name!r}")


def measure(env: gym.vector.VectorEnv, actions: np.ndarray) -> float:
    """Agent steps per second over ``actions`` (one row of N actions per batch step)."""
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    seconds = time.perf_counter() - start
    return actions.size / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="timed batch steps per round")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, configs alternate")
    parser.add_argument("--warmup", type=int, default=100, help="untimed batch steps first")
    parser.add_argument("--envs", type=int, default=8, help="envs per batch")
    parser.add_argument(
        "--games", nargs="+", default=["Breakout", "SpaceInvaders"], help="e.g. Breakout Pong"
    )
    args = parser.parse_args(argv)
    for flag in ("steps", "envs", "rounds"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be >= 1, got {getattr(args, flag)}")
    if args.warmup < 0:
        parser.error(f"--warmup must be >= 0, got {args.warmup}")

    configs = ["native", "subprocess", "sequential", BASELINE, "ale-raw"]
    default = f"default ({DEFAULT_BACKEND})"
    print(
        f"{args.envs} envs, {args.warmup} warm-up steps, then {args.rounds} rounds of "
        f"{args.steps} timed steps per config (configs alternate; median shown), "
        f"{os.cpu_count()} CPUs"
    )
    failures = []
    for game in args.games:
        env_id = f"{game}NoFrameskip-v4"
        envs = {name: make_config(name, env_id, args.envs) for name in configs}
        rates: dict[str, list[float]] = {name: [] for name in configs}
        try:
            n_actions = int(envs[BASELINE].single_action_space.n)
            rng = np.random.default_rng(0)  # the same actions for every config
            warmup = rng.integers(0, n_actions, size=(args.warmup, args.envs))
            rounds = rng.integers(0, n_actions, size=(args.rounds, args.steps, args.envs))
            for env in envs.values():
                env.reset(seed=0)
                measure(env, warmup)
            for actions in rounds:
                for name in configs:
                    rates[name].append(measure(envs[name], actions))
        finally:
            for env in envs.values():
                env.close()
        results = {name: float(np.median(r)) for name, r in rates.items()}
        results = {default: results[DEFAULT_BACKEND], **results}
        base = results[BASELINE]
        print(f"\n{game}: agent steps/s (ratio to {BASELINE})")
        for name, rate in results.items():
            spread = rates.get(name, rates[DEFAULT_BACKEND])
            print(
                f"  {name:<22} {rate:>9.0f}   x{rate / base:.2f}"
                f"   (rounds: {', '.join(f'{r:.0f}' for r in spread)})"
            )
        for key, target in TARGETS.items():
            name = default if key == "default" else key
            ratio = results[name] / base
            verdict = "ok" if ratio >= target else "FAIL"
            print(f"  target {name} >= {target}x {BASELINE}: x{ratio:.2f} {verdict}")
            if ratio < target:
                failures.append(f"{game}: {name} x{ratio:.2f} < {target}")
    print("\nFAIL: " + "; ".join(failures) if failures else "\nPASS: every target is met")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
