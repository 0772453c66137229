"""One preprocessed Atari env: the Nature-DQN wrappers stacked in order on an ALE emulator.

:func:`make_atari_env` makes the emulator (``gym.make``) and :func:`wrap_atari` stacks the
wrappers of :mod:`course_lib.atari_wrappers` on it, in the order that module's docstring
explains; :class:`SeedFirstReset` gives :func:`course_lib.nature_dqn_env` its ``seed``.

>>> env = make_atari_env("BreakoutNoFrameskip-v4")  # doctest: +SKIP
>>> obs, info = env.reset(seed=0)                    # obs: uint8 (4, 84, 84), info["new_game"]
>>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

The evaluation (:mod:`course_lib.evaluation`) plays thousands of agent steps a submission in
the grader, so its envs are made leaner, with the same games: a seeded reset restores the
emulator instead of loading the ROM again (``restore_on_seed=True``,
:class:`RestoreOnSeededReset`, for the games of :data:`RESTORABLE_GAMES`), and the frames a
step skips are emulated without being fetched (``fetch_skipped_frames=False``,
:class:`EmulatorFrameSkip`).

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
    StepReturn,
)
from .validation import check_int

__all__ = [
    "RESTORABLE_GAMES",
    "EmulatorFrameSkip",
    "RestoreOnSeededReset",
    "SeedFirstReset",
    "make_atari_env",
    "wrap_atari",
]

#: Games (ale-py's ROM names) whose seeded reset may restore the emulator as loading the ROM
#: left it (:class:`RestoreOnSeededReset`): the course's games, each checked frame by frame
#: against ale-py's own reset on real ROMs (tests/test_atari_restore_rom.py). Another game
#: loads its ROM again at every seeded reset, as ale-py does.
RESTORABLE_GAMES = frozenset({"breakout", "pong", "space_invaders"})


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


class RestoreOnSeededReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset with a seed: restore the emulator as the ROM's load left it, not load it again.

    ale-py's ``reset(seed=s)`` reseeds its generators and then loads the ROM once more, which
    costs as much CPU as a thousand emulator frames (0.1 s), once per game an evaluation plays.
    The load's outcome does not depend on the seed: the console's memory and timers are drawn
    from the emulator's own fixed seed, and the ALE's generator that ``s`` seeds is drawn only
    for sticky actions (``NoFrameskip-v4`` ids have none) and by a few games' settings (e.g.
    Adventure's mode selection, which is why only :data:`RESTORABLE_GAMES` use this). So the
    state right after the load is cloned once, when the env is made, and each seeded reset
    reseeds as ale-py does, restores that state and resets the game: the same frames, rewards
    and endings as ale-py's reset, and nothing of the game played before survives it (the
    console's memory, the CPU, the timers and the cartridge are all in the restored state).
    A reset without a seed is ale-py's own.
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        atari = env.unwrapped
        if atari.ale.getFloat("repeat_action_probability") != 0.0:
            raise ValueError(
                "RestoreOnSeededReset needs an emulator without sticky actions (a "
                "'NoFrameskip-v4' id): their draws depend on the seed."
            )
        self._loaded = atari.ale.cloneState()  # gym.make loaded the ROM and reset nothing yet

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        if seed is None:
            return self.env.reset(options=options)
        atari = self.env.unwrapped
        gym.Env.reset(atari, seed=seed)  # as ale-py's reset does first: gymnasium's generator
        seeds = atari.seed_game(seed)  # the generator of the no-ops, and the ALE's seed
        atari.ale.restoreState(self._loaded)  # in place of ale-py's load_game()
        obs, info = self.env.reset(options=options)  # ale-py's reset: reset_game(), the frame
        return obs, {**info, "seeds": seeds}


class EmulatorFrameSkip(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """:class:`~course_lib.atari_wrappers.FrameSkip` over
    :class:`~course_lib.atari_wrappers.MaxLastTwoFrames`, played on ale-py's emulator itself.

    An agent step repeats the action ``skip`` times, but the observation is the max of its last
    two frames only: the stack of wrappers fetches every frame's screen (and its info) through
    five Python layers and drops the others. This wrapper, on the emulator (under the no-ops and
    FIRE, which it leaves to the wrappers below it), acts ``skip`` times and fetches the two
    screens the max uses: the same rewards, flags, lives and observations, with one exception
    that nobody sees: when the game ends on a frame whose predecessor was skipped (the second
    or third of four), the observation of that last step is the max with the last frame
    fetched instead (the game is over: :func:`course_lib.evaluation.play_games` never reads it).
    For the evaluation only (``make_atari_env(..., fetch_skipped_frames=False)``); learning uses
    the two wrappers, which the course teaches.
    """

    def __init__(self, env: gym.Env, skip: int = 4):
        gym.utils.RecordConstructorArgs.__init__(self, skip=skip)
        super().__init__(env)
        self.skip = check_int(
            "frame_skip", skip, 1, fix="use 4 as in the Nature DQN, 1 to turn off"
        )
        atari = env.unwrapped
        self._ale, self._actions = atari.ale, atari._action_set  # what ale-py's step uses
        self._previous: np.ndarray | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        obs, info = self.env.reset(seed=seed, options=options)
        self._previous = obs
        return obs, info

    def step(self, action: Any) -> StepReturn:
        if self._previous is None:
            raise gym.error.ResetNeeded("Cannot call env.step() before calling env.reset()")
        ale, action_index = self._ale, self._actions[action]
        total_reward, previous, frame = 0.0, self._previous, None
        for index in range(self.skip):
            # ale-py's step with one frame: act with full strength, then the two flags
            total_reward += float(ale.act(action_index, 1.0))
            terminated = ale.game_over(with_truncation=False)
            truncated = ale.game_truncated()
            if terminated or truncated or index >= self.skip - 2:
                previous = frame if frame is not None else previous
                frame = ale.getScreenGrayscale()
            if terminated or truncated:
                break
        assert frame is not None  # the last frame is always fetched
        self._previous = frame
        info = {
            "lives": ale.lives(),
            "episode_frame_number": ale.getEpisodeFrameNumber(),
            "frame_number": ale.getFrameNumber(),
        }
        return np.maximum(previous, frame), total_reward, terminated, truncated, info


def wrap_atari(
    env: gym.Env,
    *,
    clip_reward: bool = True,
    game_stats: bool = True,
    noop_max: int = 30,
    frame_skip: int = 4,
    frame_stack: int = 4,
    fetch_skipped_frames: bool = True,
) -> gym.Env:
    """Wrap an emulator env (one RGB frame per step) in the Nature-DQN stack, in order.

    :func:`make_atari_env` calls it on ``gym.make(env_id)``; the tests call it on a fake env.
    FireReset is added only when the game has a FIRE action, directly on the emulator: a new
    game starts with one FIRE frame, then the no-ops (as in ale-py's vector env). Arguments as
    in :func:`make_atari_env` (``fetch_skipped_frames=False`` needs ale-py's emulator).
    """
    # Each wrapper checks its own argument; the two flags choose wrappers, so they are checked here.
    for name, flag in (("clip_reward", clip_reward), ("game_stats", game_stats)):
        if not isinstance(flag, bool | np.bool_):
            raise ValueError(f"`{name}` must be True or False, got {flag!r}.")
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    env = NoopReset(env, noop_max=noop_max)
    if fetch_skipped_frames:
        env = MaxLastTwoFrames(env)
        env = FrameSkip(env, skip=frame_skip)
    else:
        env = EmulatorFrameSkip(env, skip=frame_skip)
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
    restore_on_seed: bool = False,
    fetch_skipped_frames: bool = True,
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
        restore_on_seed: for a game of :data:`RESTORABLE_GAMES`, a seeded reset restores the
            emulator as the ROM's load left it instead of loading the ROM again
            (:class:`RestoreOnSeededReset`: the same games, a tenth of a second less per
            game); ignored for other games.
        fetch_skipped_frames: ``False``: the frame skip and the max of the last two frames
            act on the emulator itself and fetch only the two frames the max uses
            (:class:`EmulatorFrameSkip`; for the evaluation, which never reads the
            observation of a game's last step).

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
        if restore_on_seed and game.game in RESTORABLE_GAMES:
            env = RestoreOnSeededReset(env)
        return wrap_atari(
            env,
            clip_reward=clip_reward,
            game_stats=game_stats,
            noop_max=noop_max,
            frame_skip=frame_skip,
            frame_stack=frame_stack,
            fetch_skipped_frames=fetch_skipped_frames,
        )
    except ValueError:
        env.close()  # a bad argument: do not leave the emulator open
        raise
