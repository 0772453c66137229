"""One preprocessed Atari env: the Nature-DQN wrappers stacked in order on an ALE emulator.

:func:`make_atari_env` makes the emulator (``gym.make``) and :func:`wrap_atari` stacks the
wrappers of :mod:`course_lib.atari_wrappers` on it, in the order that module's docstring
explains; :class:`SeedFirstReset` gives :func:`course_lib.nature_dqn_env` its ``seed``.

>>> env = make_atari_env("BreakoutNoFrameskip-v4")  # doctest: +SKIP
>>> obs, info = env.reset(seed=0)                    # obs: uint8 (4, 84, 84), info["new_game"]
>>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

The env batches (``"sequential"`` and ``"subprocess"`` backends) run one such env per slot;
the ``"native"`` backend does the same preprocessing in ale-py's C++ vector env, with the same
episodes: a life loss is ``terminated`` and the game goes on, FIRE and no-ops only start a new
game, and ``info["episode"]["l"]`` counts the agent's steps only.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .atari_ids import resolve_env_id
from .atari_wrappers import (
    ClipReward,
    EpisodicLife,
    FireReset,
    FrameSkip,
    FrameStack,
    GrayscaleResize,
    MaxLastTwoFrames,
    NoopReset,
    RecordGameStatistics,
    ResetReturn,
)
from .validation import check_int

__all__ = ["SeedFirstReset", "make_atari_env", "wrap_atari"]


class SeedFirstReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset: the first ``reset()`` without a seed uses ``seed``; later resets continue the RNG.

    This gives ``nature_dqn_env(env_id, seed=s)`` its meaning without a hidden reset at
    construction time: the user's own first ``reset()`` is the seeded one, and a seed passed
    explicitly to that first reset wins. The action space is seeded too, so
    ``env.action_space.sample()`` is reproducible.
    """

    def __init__(self, env: gym.Env, seed: int):
        gym.utils.RecordConstructorArgs.__init__(self, seed=seed)
        super().__init__(env)
        seed = check_int("seed", seed, 0, fix="or leave it out (None) for a random start")
        self._pending_seed: int | None = seed
        self.action_space.seed(seed)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        if seed is None:
            seed = self._pending_seed
        self._pending_seed = None
        return self.env.reset(seed=seed, options=options)


def wrap_atari(
    env: gym.Env,
    *,
    clip_reward: bool = True,
    game_stats: bool = True,
    noop_max: int = 30,
    frame_skip: int = 4,
    frame_stack: int = 4,
) -> gym.Env:
    """Wrap an emulator env (one RGB frame per step) in the Nature-DQN stack, in order.

    :func:`make_atari_env` calls it on ``gym.make(env_id)``; the tests call it on a fake env.
    FireReset is added only when the game has a FIRE action, directly on the emulator: a new
    game starts with one FIRE frame, then the no-ops (as in ale-py's vector env). Arguments as
    in :func:`make_atari_env`.
    """
    # Each wrapper checks its own argument; the two flags choose wrappers, so they are checked here.
    for name, flag in (("clip_reward", clip_reward), ("game_stats", game_stats)):
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"`{name}` must be True or False, got {flag!r}.")
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    env = NoopReset(env, noop_max=noop_max)
    env = MaxLastTwoFrames(env)
    env = FrameSkip(env, skip=frame_skip)
    if game_stats:
        env = RecordGameStatistics(env)
    env = EpisodicLife(env)
    env = GrayscaleResize(env, size=84)
    env = FrameStack(env, n=frame_stack)
    if clip_reward:
        env = ClipReward(env)
    return env


def make_atari_env(
    env_id: str,
    *,
    clip_reward: bool = True,
    game_stats: bool = True,
    noop_max: int = 30,
    frame_skip: int = 4,
    frame_stack: int = 4,
    render_mode: str | None = None,
    max_game_frames: int = 108_000,
) -> gym.Env:
    """Make one Atari env with the Nature-DQN preprocessing: obs ``uint8 (frame_stack, 84, 84)``.

    A module-level function, so that ``functools.partial(make_atari_env, env_id, ...)`` can be
    pickled and sent to worker processes (``spawn`` start method).

    Args:
        env_id: e.g. ``"SpaceInvadersNoFrameskip-v4"``; checked by
            :func:`course_lib.atari_ids.resolve_env_id`.
        clip_reward: clip the reward to {-1.0, 0.0, 1.0} (:class:`ClipReward`).
        game_stats: report each full game in ``info["episode"]`` (:class:`RecordGameStatistics`).
        noop_max: up to this many random no-op frames after a real reset; 0 turns it off.
        frame_skip: emulator frames per agent step (4 in the Nature DQN).
        frame_stack: frames per observation (4 in the Nature DQN).
        render_mode: passed to ``gym.make``; ``"rgb_array"`` makes ``env.render()`` return the
            raw RGB frame ``(210, 160, 3)`` for videos.
        max_game_frames: emulator frames after which the emulator cuts a game (``truncated``):
            108,000 frames, 30 minutes of play, the usual Atari cap.

    Raises:
        ValueError: a bad env id (the message says which id to use) or a bad argument.
    """
    game = resolve_env_id(env_id)
    if render_mode not in (None, "rgb_array", "human"):
        raise ValueError(
            f"`render_mode` must be None, 'rgb_array' (frames for videos) or 'human', "
            f"got {render_mode!r}."
        )
    check_int("max_game_frames", max_game_frames, 1, fix="the usual cap is 108_000 (30 minutes)")
    # No PassiveEnvChecker: it wraps every emulator frame in one more Python call, and
    # tests/test_atari_single_rom.py runs gymnasium's full env checker on the stack instead.
    # obs_type="grayscale": the emulator converts to gray (its palette's luminance, as ale-py's
    # vector env does), so the max over two frames and the resize work on a third of the bytes.
    env = gym.make(
        game.env_id,
        obs_type="grayscale",
        render_mode=render_mode,
        max_num_frames_per_episode=max_game_frames,
        disable_env_checker=True,
    )
    try:
        return wrap_atari(
            env,
            clip_reward=clip_reward,
            game_stats=game_stats,
            noop_max=noop_max,
            frame_skip=frame_skip,
            frame_stack=frame_stack,
        )
    except ValueError:
        env.close()  # a bad argument: do not leave the emulator open
        raise
