"""A tiny scripted stand-in for an ale-py Atari env, to unit-test the wrappers without ROMs.

What it imitates (all the wrappers read):

* ``step(action) -> (obs, reward, terminated, truncated, info)``, one emulator frame per step;
* ``unwrapped.ale.lives()``, ``unwrapped.get_action_meanings()``, ``unwrapped.np_random``
  (seeded by ``reset(seed=...)``), ``render()`` in ``"rgb_array"`` mode.

What makes it checkable:

* **frames encode a counter**: ``frame_number`` counts every frame since construction (resets
  included, so episodes are distinguishable; ``global_counter=False`` shows the frame number
  of the episode instead, so that a seeded reset repeats the same frames, as check_env wants). An RGB frame has channel 0 = ``c % 256``,
  channel 1 = ``(255 - c) % 256`` (it *decreases*, so a max over two frames differs from
  either frame), channel 2 = 0; a gray frame (``rgb=False``) is ``c % 256`` everywhere;
* **scripted games** (frames counted from 1 after each reset, no-ops included):
  ``rewards={frame: reward}``, ``life_loss_frames`` (one life lost at each; the game is over
  when the last life goes), ``game_over_frame`` (terminated), ``truncate_frame`` (truncated);
* **a log**: ``actions`` (every action since the last reset), ``n_resets``, ``reset_seeds``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["FakeAle", "FakeAtariEnv", "MEANINGS_NO_FIRE", "MEANINGS_WITH_FIRE", "decode_rgb"]

MEANINGS_WITH_FIRE = ["NOOP", "FIRE", "RIGHT", "LEFT"]
MEANINGS_NO_FIRE = ["NOOP", "UP", "DOWN"]


def decode_rgb(frame: np.ndarray) -> tuple[int, int]:
    """``(channel 0, channel 1)`` of the top-left pixel: ``(c, 255 - c)`` for counter ``c``."""
    return int(frame[0, 0, 0]), int(frame[0, 0, 1])


class FakeAle:
    """The part of ``ale_py.ALEInterface`` the wrappers use: ``lives()``."""

    def __init__(self) -> None:
        self._lives = 0

    def lives(self) -> int:
        return self._lives


class FakeAtariEnv(gym.Env):
    """One fake emulator frame per ``step``, with scripted rewards, life losses and endings."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}

    def __init__(
        self,
        *,
        lives: int = 3,
        rewards: Mapping[int, float] | None = None,
        life_loss_frames: Iterable[int] = (),
        game_over_frame: int | None = None,
        truncate_frame: int | None = None,
        action_meanings: list[str] | None = None,
        rgb: bool = True,
        frame_shape: tuple[int, int] = (6, 5),
        render_mode: str | None = None,
        global_counter: bool = True,
    ) -> None:
        self.start_lives = lives
        self.rewards = dict(rewards or {})
        self.life_loss_frames = set(life_loss_frames)
        self.game_over_frame = game_over_frame
        self.truncate_frame = truncate_frame
        self.meanings = list(action_meanings or MEANINGS_WITH_FIRE)
        self.rgb = rgb
        self.render_mode = render_mode
        self.global_counter = global_counter
        shape = (*frame_shape, 3) if rgb else frame_shape
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.action_space = gym.spaces.Discrete(len(self.meanings))
        self.ale = FakeAle()
        self.frame_number = 0  # every frame since construction
        self.episode_frame = 0  # frames since the last reset
        self.actions: list[int] = []
        self.n_resets = 0
        self.reset_seeds: list[int | None] = []
        self._over = True

    def get_action_meanings(self) -> list[str]:
        return list(self.meanings)

    def _frame(self) -> np.ndarray:
        c = self.frame_number if self.global_counter else self.episode_frame
        if not self.rgb:
            return np.full(self.observation_space.shape, c % 256, np.uint8)
        frame = np.zeros(self.observation_space.shape, np.uint8)
        frame[..., 0] = c % 256
        frame[..., 1] = (255 - c) % 256
        return frame

    def _info(self) -> dict[str, Any]:
        return {"lives": self.ale.lives(), "episode_frame_number": self.episode_frame}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.n_resets += 1
        self.reset_seeds.append(seed)
        self.actions = []
        self.episode_frame = 0
        self.frame_number += 1
        self.ale._lives = self.start_lives
        self._over = False
        return self._frame(), self._info()

    def step(self, action: Any):
        assert not self._over, "FakeAtariEnv.step() after the game ended: reset() first"
        assert self.action_space.contains(action), f"bad action {action!r}"
        self.actions.append(int(action))
        self.frame_number += 1
        self.episode_frame += 1
        t = self.episode_frame
        reward = float(self.rewards.get(t, 0.0))
        if t in self.life_loss_frames and self.ale._lives > 0:
            self.ale._lives -= 1
        terminated = self.ale._lives == 0 or t == self.game_over_frame
        truncated = t == self.truncate_frame
        self._over = terminated or truncated
        return self._frame(), reward, terminated, truncated, self._info()

    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array":
            return self._frame()
        return None
