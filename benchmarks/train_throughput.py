"""Training throughput: the reference A2C vs Stable-Baselines3's A2C, same settings, one run.

    python benchmarks/train_throughput.py [--env SpaceInvadersNoFrameskip-v4] [--chunks 10]
                                          [--chunk 30] [--threads 2] [--sb3-env sb3|course]

Both train on CPU with 8 envs x 5 steps per update, gamma 0.99, RMSprop (alpha 0.99, eps 1e-5,
lr 7e-4 linearly decayed), value_loss_coef 0.25, entropy_coef 0.01, max_grad_norm 0.5, the
Nature-DQN CNN with shared features, and the same ``torch.set_num_threads``. Both learners are
built once and then trained in alternating chunks of ``--chunk`` updates (reference, SB3,
reference, SB3, ...), so that load bursts on a shared machine hit both alike; the median
chunk speed of each is reported. Target: reference >= 1.2x SB3.

``--sb3-env sb3`` (default) gives SB3 its own pipeline, as its users run it: ``make_atari_env``
(``DummyVecEnv`` of Python wrappers) + ``VecFrameStack(4)``. ``--sb3-env course`` feeds SB3 the
course's env batch through a small ``VecEnv`` adapter, which isolates the learner's speed.

What makes the reference fast (the measurements are in docs/benchmarks.md):

* the update is dominated by convolutions (forward and backward) and the emulators; Python
  overhead is small;
* OpenMP workers that spin while waiting steal the cores from the emulator threads:
  ``OMP_WAIT_POLICY=PASSIVE`` (``course_lib.openmp.passive_openmp``, called at the top of
  this script and of the training and evaluation scripts, before torch loads) lets them sleep. It applies to SB3 too here (set
  ``OMP_WAIT_POLICY=ACTIVE`` to compare with the spinning default);
* the rollout runs under ``no_grad`` and A2C makes one forward pass with graph over the B = 40
  rows, instead of keeping the graphs of the 5 rollout forwards of 8 rows
  (``solutions.train.NoGradPolicy``);
* the env batch: the native ale-py vector env steps faster than SB3's ``DummyVecEnv`` +
  ``VecFrameStack``;
* the bootstrap value V(latest_observation) under ``no_grad``; the merged batch of
  observations reaches torch with ``torch.as_tensor`` (no copy on the CPU).
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
# Before torch starts OpenMP (applies to both contenders): course_lib.openmp.
from course_lib.openmp import passive_openmp

passive_openmp()

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course_lib import nature_dqn_env
from course_lib.runners import EnvRunner
from solutions.config import A2CConfig
from solutions.reference import ComputeValueTargets, MergeTimeBatch
from solutions.train import NoGradPolicy, make_agent


class ReferenceLearner:
    """The loop of ``solutions.train`` without logging: runner -> A2C.step, lr decay."""

    def __init__(self, config: A2CConfig, total_updates: int) -> None:
        self.config, self.total_updates, self.update = config, total_updates, 0
        self.env = nature_dqn_env(config.env_id, nenvs=config.nenvs, seed=config.seed)
        n_actions = self.env.single_action_space.n
        _, policy, self.optimizer, self.a2c = make_agent(config, n_actions, torch.device("cpu"))
        transforms = [ComputeValueTargets(policy, config.gamma), MergeTimeBatch()]
        self.runner = EnvRunner(
            self.env, NoGradPolicy(policy), config.nsteps, transforms=transforms
        )

    def train(self, updates: int) -> None:
        for _ in range(updates):
            for group in self.optimizer.param_groups:
                group["lr"] = self.config.lr * (1 - self.update / self.total_updates)
            self.a2c.step(self.runner.get_next())
            self.update += 1

    def close(self) -> None:
        self.env.close()


def course_vec_env(env_id: str, nenvs: int, seed: int):
    """An SB3 ``VecEnv`` over the course's env batch (isolates the learners' speed)."""
    from stable_baselines3.common.vec_env import VecEnv

    class CourseVecEnv(VecEnv):
        def __init__(self) -> None:
            self.batch = nature_dqn_env(env_id, nenvs=nenvs, seed=seed)
            space = self.batch.single_observation_space
            super().__init__(nenvs, space, self.batch.single_action_space)

        def reset(self):
            return self.batch.reset()[0]

        def step_async(self, actions) -> None:
            self._actions = np.asarray(actions, dtype=np.int64)

        def step_wait(self):
            obs, rewards, terminated, truncated, _ = self.batch.step(self._actions)
            # Same-step autoreset; the final observation is not kept, so SB3 does not
            # bootstrap truncated episodes (rare in 5-step rollouts; no effect on speed).
            infos = [{"TimeLimit.truncated": bool(t)} for t in truncated]
            return obs, rewards, terminated | truncated, infos

        def close(self) -> None:
            self.batch.close()

        def get_attr(self, attr_name, indices=None):
            return [None] * nenvs

        def set_attr(self, attr_name, value, indices=None) -> None:
            pass

        def env_method(self, method_name, *args, indices=None, **kwargs):
            return [None] * nenvs

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * nenvs

    return CourseVecEnv()


class SB3Learner:
    """``stable_baselines3.A2C("CnnPolicy")`` with the reference's settings."""

    def __init__(self, config: A2CConfig, total_updates: int, env_kind: str) -> None:
        import ale_py
        import gymnasium as gym
        from stable_baselines3 import A2C
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack

        gym.register_envs(ale_py)
        self.config = config
        if env_kind == "sb3":
            vec = make_atari_env(config.env_id, n_envs=config.nenvs, seed=config.seed)
            self.env = VecFrameStack(vec, n_stack=4)
        else:
            self.env = course_vec_env(config.env_id, config.nenvs, config.seed)
        self.model = A2C(
            "CnnPolicy",
            self.env,
            learning_rate=lambda progress_remaining: config.lr * progress_remaining,
            n_steps=config.nsteps,
            gamma=config.gamma,
            gae_lambda=1.0,  # plain n-step returns, as the reference
            ent_coef=config.entropy_coef,
            vf_coef=config.value_loss_coef,
            max_grad_norm=config.max_grad_norm,
            rms_prop_eps=config.rmsprop_eps,  # RMSprop(alpha=0.99): SB3's default for A2C
            use_rms_prop=True,
            normalize_advantage=False,
            device="cpu",
            seed=config.seed,
            verbose=0,
        )
        self.first = True

    def train(self, updates: int) -> None:
        steps = updates * self.config.batch_size
        self.model.learn(total_timesteps=steps, reset_num_timesteps=self.first)
        self.first = False

    def close(self) -> None:
        self.env.close()


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="SpaceInvadersNoFrameskip-v4")
    parser.add_argument("--chunks", type=int, default=10, help="timed chunks of each learner")
    parser.add_argument("--chunk", type=int, default=30, help="updates per chunk")
    parser.add_argument("--warmup", type=int, default=10, help="untimed updates first")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: cores)")
    parser.add_argument("--sb3-env", choices=("sb3", "course"), default="sb3")
    args = parser.parse_args(argv)
    for name, low in (("chunks", 1), ("chunk", 1), ("warmup", 0)):
        if getattr(args, name) < low:
            parser.error(f"--{name} must be >= {low}, got {getattr(args, name)}")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    config = A2CConfig(env_id=args.env, device="cpu")
    total = args.warmup + args.chunks * args.chunk
    print(
        f"{args.env}: {config.nenvs} envs x {config.nsteps} steps, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
        f"{args.chunks} chunks of {args.chunk} updates each, SB3 on its {args.sb3_env!r} env",
        flush=True,
    )
    torch.manual_seed(config.seed)
    learners = {"reference": ReferenceLearner(config, total)}
    learners["sb3"] = SB3Learner(config, total, args.sb3_env)
    rates: dict[str, list[float]] = {name: [] for name in learners}
    try:
        for learner in learners.values():
            learner.train(max(args.warmup, 1))
        for chunk in range(args.chunks):
            for name, learner in learners.items():
                start = time.perf_counter()
                learner.train(args.chunk)
                rates[name].append(args.chunk * config.batch_size / (time.perf_counter() - start))
            print(
                f"  chunk {chunk + 1:2d}: reference {rates['reference'][-1]:6.1f} steps/s, "
                f"SB3 {rates['sb3'][-1]:6.1f} steps/s",
                flush=True,
            )
    finally:
        for learner in learners.values():
            learner.close()
    ref, sb3 = statistics.median(rates["reference"]), statistics.median(rates["sb3"])
    paired = statistics.median(r / s for r, s in zip(rates["reference"], rates["sb3"], strict=True))
    verdict = "meets" if ref / sb3 >= 1.2 else "below"
    print(
        f"median: reference {ref:.1f} steps/s, SB3 {sb3:.1f} steps/s, ratio {ref / sb3:.2f}x "
        f"(median of paired chunk ratios {paired:.2f}x; {verdict} the 1.2x target)"
    )
    return {"reference": ref, "sb3": sb3, "ratio": ref / sb3, "paired_ratio": paired}


if __name__ == "__main__":
    main()
