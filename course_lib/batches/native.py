"""The fast backend: ale-py's C++ vector env behind the course's batch contract.

:class:`NativeAtariBatch` runs ``N`` Atari games on C++ threads
(:class:`ale_py.vector_env.AtariVectorEnv`, which also does the frame skip, max-pool, grayscale,
resize and frame stack in C++) and adds in Python only what the course needs on top:

* **rewards**: the native env runs with ``reward_clipping=False`` so that the raw score is
  visible; the learning reward ``sign(raw)`` (in {-1, 0, 1}) is computed here when
  ``clip_reward``;
* **life loss**: ``life_loss_info=True, episodic_life=False`` makes the native env report
  ``terminated`` at every life loss *and keep playing* (``episodic_life=True`` would restart the
  whole game at each life loss, so no full-game score would exist);
* **full-game statistics**: the raw score and the length (agent steps) of each game are summed
  here and reported only when a game really ends (all lives lost, or truncation), with
  gymnasium's vector ``RecordEpisodeStatistics`` convention;
* **validation** of actions and seeds with messages that say what to pass instead.

How a game over is told from a life loss
----------------------------------------
The native env runs in ``SAME_STEP`` autoreset mode: when a game is over it resets it *inside*
the same ``step`` and returns the reward and flags of the last step but the ``lives`` and
``episode_frame_number`` of the **new** game. A step with ``terminated[i]`` is therefore a life
loss (the game goes on) exactly when

    lives_now < lives_before  and  episode_frame_number_now > episode_frame_number_before

and a game end otherwise (after a reset the lives are back to full and the frame counter
restarts near 0). Both tests are needed: the lives alone are fooled by a game that ends by time
with bonus lives, the frame counter alone by a game over in the first frames.

Differences from the Python wrappers (:func:`course_lib.atari_env.make_atari_env`)
-------------------------------------------------------------------------------------
The Python stack was written to follow this backend: no extra step or FIRE after a life loss
(in Breakout the agent serves the next ball itself, on every backend), the frame stack padded
with black frames at a new game and carried on across a life loss, lengths in agent steps. With
the same seeds and no random no-op start, the two play the same games step for step
(``tests/test_backends_rom.py``). What remains:

* **No-op starts** are 0 to ``noop_max - 1`` single frames after the FIRE (Python: FIRE, then
  1 to ``noop_max`` frames). Both only randomise the start; the frames differ, not the rules.
* **Grayscale and resize**: both take the emulator's own gray screen and resize it with
  OpenCV's ``INTER_AREA`` (here in C++, there in Python); no pixel difference was measured over
  full Breakout and Space Invaders games.
* The frame cap (``max_episode_frames``, 108000 frames = 30 minutes of play) counts frames
  from the end of the no-op start (Python: from the reset, up to 30 frames earlier). When it
  falls on the step of a life loss, the game is restarted with ``terminated=True,
  truncated=False`` (Python: both True); it is still reported as a finished game.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from ..validation import check_int
from .base import ClosingVectorEnv, check_discrete_actions, check_seed

__all__ = ["NativeAtariBatch"]

_MAX_SEED = 2**31 - 1  # ALE seeds are C ints


def _rom_name(env_id: str) -> str:
    """ALE ROM name (``"space_invaders"``) of a gymnasium id or of a ROM name."""
    if not isinstance(env_id, str):
        raise TypeError(
            f"`env_id` must be a str such as 'SpaceInvadersNoFrameskip-v4', got {env_id!r}."
        )
    from ale_py import roms

    if env_id in roms.get_all_rom_ids():
        return env_id
    from ..atari_ids import resolve_env_id

    return resolve_env_id(env_id).game


class NativeAtariBatch(ClosingVectorEnv):
    """``nenvs`` Atari games stepped on C++ threads, with the course's Nature-DQN semantics.

    Vector API (gymnasium 1.x), same as :class:`~course_lib.batches.sequential.EnvBatch`:

    * ``reset(seed=None) -> (obs, infos)``; ``obs`` is ``uint8 (N, 4, 84, 84)``, the 4 last
      frames, oldest first. ``seed=k`` seeds env ``i`` with ``k + i``; ``seed=None`` uses the
      constructor's ``seed`` at the first reset, and continues the RNGs afterwards.
    * ``step(actions) -> (obs, rewards, terminated, truncated, infos)`` with ``actions`` an
      integer array ``(N,)`` in ``[0, n_actions)``; ``rewards`` ``float32 (N,)`` (in {-1, 0, 1}
      when ``clip_reward``), ``terminated``/``truncated`` ``bool (N,)``.

    Obs, rewards and flags:

    * ``terminated[i]`` at every **life loss** and at the **game over**; ``truncated[i]`` when
      the game reaches ``max_episode_frames`` emulator frames.
    * **Same-step autoreset**: at a game end ``obs[i]`` is already the first observation of the
      next game; at a life loss it is the next frame of the same game (see the module notes).
      ``infos["final_obs"][i]`` (mask ``infos["_final_obs"]``) holds the last observation of
      every episode that ended at this step.
    * ``infos["episode"]`` (mask ``infos["_episode"]``), only at a **game end**:
      ``"r"`` raw score of the whole game over all its lives (``float64``), ``"l"`` its length
      in agent steps (``int64``), ``"t"`` its wall-clock duration in seconds. Left out when
      ``game_stats=False``.
    * ``infos["lives"]``, ``infos["episode_frame_number"]``, ``infos["frame_number"]``
      (``int32 (N,)``, masks ``"_lives"``...), read after the autoreset.

    Args:
        env_id: a gymnasium ALE id such as ``"SpaceInvadersNoFrameskip-v4"`` (or a ROM name
            such as ``"space_invaders"``).
        nenvs: number of games, ``N >= 1``.
        seed: seed of the first reset (env ``i`` gets ``seed + i``); ``None``: random.
        clip_reward: return ``sign(raw reward)`` as the reward (the score stays raw in
            ``infos["episode"]``).
        game_stats: report finished games in ``infos["episode"]``.
        noop_max: at most this many no-op frames at the start of a game.
        max_episode_frames: emulator frames after which a game is truncated (108000 = 30 min).
        num_threads: C++ worker threads; 0 = ``min(nenvs, CPU cores)``.

    Use it as a context manager, or call :meth:`close` (idempotent) to stop the threads.
    """

    def __init__(
        self,
        env_id: str,
        nenvs: int,
        seed: int | None = None,
        clip_reward: bool = True,
        game_stats: bool = True,
        *,
        noop_max: int = 30,
        max_episode_frames: int = 108_000,
        num_threads: int = 0,
    ) -> None:
        from ale_py.vector_env import AtariVectorEnv

        nenvs = check_int("nenvs", nenvs, 1, fix="try nenvs=8")
        check_int("noop_max", noop_max, 0, fix="use 0 to turn no-op starts off")
        check_int("max_episode_frames", max_episode_frames, 1)
        check_int("num_threads", num_threads, 0, fix="0 lets ale-py choose")
        self._seed = self._check_seed(seed, int(nenvs))
        self.env_id = env_id
        self.clip_reward = bool(clip_reward)
        self.game_stats = bool(game_stats)
        self._env = AtariVectorEnv(
            _rom_name(env_id),
            int(nenvs),
            num_threads=int(num_threads),
            max_num_frames_per_episode=int(max_episode_frames),
            repeat_action_probability=0.0,
            autoreset_mode=AutoresetMode.SAME_STEP,
            img_height=84,
            img_width=84,
            grayscale=True,
            stack_num=4,
            frameskip=4,
            maxpool=True,
            noop_max=int(noop_max),
            episodic_life=False,
            life_loss_info=True,
            reward_clipping=False,
            use_fire_reset=True,
        )
        self.num_envs = int(nenvs)
        self.single_observation_space = self._env.single_observation_space
        self.single_action_space = self._env.single_action_space
        self.observation_space = self._env.observation_space
        self.action_space = self._env.action_space
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
        self.closed = False
        self._needs_reset = True
        n = self.num_envs
        self._lives = np.zeros(n, dtype=np.int64)
        self._frame = np.zeros(n, dtype=np.int64)
        self._returns = np.zeros(n, dtype=np.float64)
        self._lengths = np.zeros(n, dtype=np.int64)
        self._start_times = np.zeros(n, dtype=np.float64)

    # -- validation --------------------------------------------------------------------------
    @staticmethod
    def _check_seed(seed: Any, nenvs: int) -> int | None:
        seed = check_seed(seed)
        if seed is not None and seed > _MAX_SEED - nenvs + 1:
            raise ValueError(
                f"`seed` must be at most {_MAX_SEED - nenvs + 1} (env i gets seed + i, and an "
                f"ALE seed is a C int), got {seed!r}."
            )
        return seed

    def _check_actions(self, actions: Any) -> np.ndarray:
        n_actions = int(self.single_action_space.n)
        arr = check_discrete_actions(actions, self.num_envs, 0, n_actions)
        return np.ascontiguousarray(arr, dtype=np.int64)

    # -- vector API ----------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new game in every env; returns ``(obs uint8 (N, 4, 84, 84), infos)``."""
        if self.closed:
            raise RuntimeError("This NativeAtariBatch is closed; make a new one.")
        if options:
            raise ValueError(
                f"`options` is not supported by NativeAtariBatch, got {options!r}; pass None."
            )
        seed = self._check_seed(seed, self.num_envs)
        if seed is None and self._needs_reset:
            seed = self._seed
        obs, info = self._env.reset(seed=seed)
        self._needs_reset = False
        self._lives[:] = info["lives"]
        self._frame[:] = info["episode_frame_number"]
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._start_times[:] = time.perf_counter()
        return obs, self._ale_infos(info)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Advance every env by one agent step (4 frames); see the class docstring."""
        if self.closed:
            raise RuntimeError("This NativeAtariBatch is closed; make a new one.")
        if self._needs_reset:
            raise RuntimeError("Call reset() before the first step() of a NativeAtariBatch.")
        actions = self._check_actions(actions)
        obs, raw, terminated, truncated, info = self._env.step(actions)
        raw = raw.astype(np.float64)
        lives = info["lives"].astype(np.int64)
        frame = info["episode_frame_number"].astype(np.int64)

        # A terminated step that kept playing the same game is a life loss; any other end of
        # an episode means the C++ env has restarted the game (see the module docstring).
        done = terminated | truncated
        life_lost = terminated & (lives < self._lives) & (frame > self._frame)
        game_end = done & ~life_lost
        self._returns += raw
        self._lengths += 1
        self._lives, self._frame = lives, frame

        infos = self._ale_infos(info)
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            native_final = info.get("final_obs")
            for i in np.flatnonzero(done):
                # After a life loss obs[i] is the same game's next frame: it is the final one.
                source = native_final if game_end[i] and native_final is not None else obs
                final_obs[i] = source[i].copy()
            infos["final_obs"], infos["_final_obs"] = final_obs, done.copy()
        if game_end.any():
            now = time.perf_counter()
            if self.game_stats:
                # Same layout as the Python batches (gymnasium's `_add_info`): a mask per field.
                infos["episode"] = {
                    "r": np.where(game_end, self._returns, 0.0),
                    "_r": game_end.copy(),
                    "l": np.where(game_end, self._lengths, 0),
                    "_l": game_end.copy(),
                    "t": np.where(game_end, np.round(now - self._start_times, 6), 0.0),
                    "_t": game_end.copy(),
                }
                infos["_episode"] = game_end
            self._returns[game_end] = 0.0
            self._lengths[game_end] = 0
            self._start_times[game_end] = now

        rewards = np.sign(raw) if self.clip_reward else raw
        return obs, rewards.astype(np.float32), terminated, truncated, infos

    def _ale_infos(self, info: dict[str, np.ndarray]) -> dict[str, Any]:
        """The native per-env counters, with gymnasium's ``_key`` masks (always all True)."""
        infos: dict[str, Any] = {}
        for key in ("lives", "episode_frame_number", "frame_number"):
            infos[key] = np.asarray(info[key])
            infos[f"_{key}"] = np.ones(self.num_envs, dtype=bool)
        return infos

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the C++ threads (dropping the native env joins them)."""
        env, self._env = self._env, None
        if env is not None:
            env.close()
            del env

    def __repr__(self) -> str:
        return (
            f"NativeAtariBatch({self.env_id!r}, nenvs={self.num_envs}, "
            f"clip_reward={self.clip_reward}, game_stats={self.game_stats})"
        )
