"""Tiny, fast, picklable fake envs for testing env batches without Atari ROMs.

:class:`CounterEnv` makes every output predictable:

* observation ``uint8 (2,)`` = ``[start, t]``: ``start`` is drawn from the env's RNG at each
  reset (so seeding is checkable), ``t`` counts the steps of the current episode (so the
  same-step autoreset is checkable: right after an episode ends, ``t`` is back to 0);
* reward = ``REWARD_SCALE * action + t`` (after the step), so each env's reward shows which
  action it received and when;
* ``terminated`` after ``episode_length`` steps, or ``truncated`` instead when
  ``truncate=True``; the finishing step's info holds ``"episode": {"r", "l", "t"}`` like
  the course's Atari wrappers, and every step's info holds ``"t"`` (the step count);
* the reset's info holds ``"reset_info": True`` (a batch must NOT let it replace the info
  of a finishing step).

Subclasses fail on demand: :class:`RaisingEnv` raises, :class:`DyingEnv` kills its own
process with ``os._exit``, :class:`SlowEnv` sleeps in ``step``, :class:`LockInfoEnv` puts an
object that cannot be pickled in its info.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["REWARD_SCALE", "CounterEnv", "DyingEnv", "LockInfoEnv", "RaisingEnv", "SlowEnv"]

REWARD_SCALE = 10.0


class CounterEnv(gym.Env):
    """Observation ``[start, t]``; the episode ends after ``episode_length`` steps."""

    def __init__(self, episode_length: int = 3, n_actions: int = 4, truncate: bool = False):
        self.episode_length = episode_length
        self.truncate = truncate
        self.observation_space = gym.spaces.Box(0, 255, shape=(2,), dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(n_actions)
        self.t = 0
        self.start = 0
        self.total_steps = 0
        self.score = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.start = int(self.np_random.integers(0, 200))
        self.t = 0
        self.score = 0.0
        return self._obs(), {"reset_info": True}

    def step(self, action):
        assert self.action_space.contains(action), f"bad action {action!r}"
        self.t += 1
        self.total_steps += 1
        reward = REWARD_SCALE * int(action) + self.t
        self.score += reward
        done = self.t >= self.episode_length
        info: dict[str, Any] = {"t": self.t}
        if done:
            # an int score on purpose: the batch must still give a float array
            info["episode"] = {"r": int(self.score), "l": self.t, "t": 0.5}
        terminated = done and not self.truncate
        truncated = done and self.truncate
        return self._obs(), reward, terminated, truncated, info

    def _obs(self) -> np.ndarray:
        return np.array([self.start, self.t], dtype=np.uint8)


class RaisingEnv(CounterEnv):
    """Raises ``RuntimeError`` on its ``fail_at``-th step (counted over all episodes)."""

    def __init__(self, fail_at: int = 2, **kwargs: Any):
        super().__init__(**kwargs)
        self.fail_at = fail_at

    def step(self, action):
        if self.total_steps + 1 == self.fail_at:
            raise RuntimeError(f"fake env failure at step {self.fail_at}")
        return super().step(action)


class DyingEnv(CounterEnv):
    """Ends its whole process with ``os._exit(3)`` on its ``die_at``-th step (like a segfault)."""

    def __init__(self, die_at: int = 2, **kwargs: Any):
        super().__init__(**kwargs)
        self.die_at = die_at

    def step(self, action):
        if self.total_steps + 1 == self.die_at:
            os._exit(3)
        return super().step(action)


class SlowEnv(CounterEnv):
    """Sleeps ``delay`` seconds in every step."""

    def __init__(self, delay: float = 0.5, **kwargs: Any):
        super().__init__(**kwargs)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


class LockInfoEnv(CounterEnv):
    """Puts a ``threading.Lock`` (which cannot be pickled) in the info of every step."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "lock": threading.Lock()}
