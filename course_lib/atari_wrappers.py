"""The Nature-DQN Atari preprocessing, one small gymnasium wrapper per idea.

:func:`make_atari_env` stacks them in this order, from the emulator outwards::

    gym.make("XxxNoFrameskip-v4")   RGB (210, 160, 3), one frame per step, raw reward
    NoopReset(noop_max=30)          reset: 1..30 random no-ops, so games do not all start alike
    MaxLastTwoFrames                obs: pixel-wise max of this frame and the previous one
    FrameSkip(skip=4)               one agent step = 4 frames; reward summed; obs of the last frame
    RecordGameStatistics            info["episode"] = raw score, length, time of each full game
    EpisodicLife                    terminated=True at every life loss; reset continues the game
    FireReset                       reset: press FIRE (games that wait for it, e.g. Breakout)
    GrayscaleResize(84)             obs: uint8 (84, 84) gray
    FrameStack(4)                   obs: uint8 (4, 84, 84), oldest frame first
    ClipReward                      reward: sign(r) in {-1.0, 0.0, 1.0}

Pitfalls the order avoids:

* the max must see raw consecutive frames, so it sits *inside* the frame skip (the frame skip
  returns the last max, that is ``max(frame[3], frame[4])``);
* the statistics must see the raw reward and the real end of the game, so they sit *above* the
  frame skip (lengths count agent steps) but *below* EpisodicLife and ClipReward;
* FireReset sits above EpisodicLife, so FIRE is pressed again after every lost life, when
  Breakout waits for a new ball.

Every wrapper reads the emulator through ``env.unwrapped`` (``ale.lives()``,
``get_action_meanings()``, ``np_random``), which the fake env of the tests provides as well.
"""

from __future__ import annotations

import time
from typing import Any, SupportsFloat

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .atari_ids import resolve_env_id

__all__ = [
    "ClipReward",
    "EpisodicLife",
    "FireReset",
    "FrameSkip",
    "FrameStack",
    "GrayscaleResize",
    "MaxLastTwoFrames",
    "NoopReset",
    "RecordGameStatistics",
    "SeedFirstReset",
    "make_atari_env",
    "wrap_atari",
]

StepReturn = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
ResetReturn = tuple[Any, dict[str, Any]]


def _check_int(name: str, value: Any, minimum: int, fix: str) -> int:
    """Return ``value`` if it is an int >= ``minimum``, else raise a ValueError that says the fix."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an int >= {minimum}, got {value!r}: {fix}.")
    return int(value)


def _lives(env: gym.Env) -> int:
    return int(env.unwrapped.ale.lives())


class NoopReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset: after the real reset, play a random number (1 to ``noop_max``) of NOOP frames.

    Atari games are deterministic: without this, every game would start from the very same
    frame and an agent could memorise one sequence of actions. The count is drawn from the
    emulator's ``np_random``, so ``reset(seed=s)`` repeats it. ``noop_max=0`` turns it off.
    If the game ends during the no-ops (it practically never does) the env is reset again.
    """

    def __init__(self, env: gym.Env, noop_max: int = 30):
        gym.utils.RecordConstructorArgs.__init__(self, noop_max=noop_max)
        super().__init__(env)
        self.noop_max = _check_int("noop_max", noop_max, 0, "use 0 to turn no-op starts off")
        meanings = env.unwrapped.get_action_meanings()
        if self.noop_max > 0 and meanings[0] != "NOOP":
            raise ValueError(
                f"NoopReset needs action 0 to be 'NOOP', but this game's actions are "
                f"{meanings}: pass noop_max=0."
            )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        obs, info = self.env.reset(seed=seed, options=options)
        if self.noop_max == 0:
            return obs, info
        n_noops = int(self.env.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(n_noops):
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(options=options)
        return obs, info


class MaxLastTwoFrames(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Obs: the pixel-wise maximum of the current frame and the previous one (same shape, uint8).

    The Atari 2600 draws some sprites only on every other frame (flicker) to save hardware;
    a single frame can miss an enemy or a bullet, the max of two consecutive frames shows it.
    Placed inside :class:`FrameSkip`, the agent sees ``max(frame[k-1], frame[k])`` of the last
    two frames of each skip. After a reset the "previous" frame is the reset frame itself.
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self._previous: np.ndarray | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        obs, info = self.env.reset(seed=seed, options=options)
        self._previous = np.array(obs, copy=True)
        return self._previous.copy(), info

    def observation(self, observation: np.ndarray) -> np.ndarray:
        assert self._previous is not None, "step() before reset()"  # OrderEnforcing checks it
        pooled = np.maximum(self._previous, observation)
        self._previous = np.array(observation, copy=True)
        return pooled


class FrameSkip(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Step: repeat the action for ``skip`` frames; reward = sum; obs and flags of the last frame.

    An agent step is ``skip`` emulator frames (4 in the Nature DQN: 15 decisions a second
    instead of 60), which makes episodes 4 times shorter in steps and credit assignment easier.
    The repetition stops early when the game terminates or is truncated, so no frame of a
    finished game is played; ``info`` is the last frame's.
    """

    def __init__(self, env: gym.Env, skip: int = 4):
        gym.utils.RecordConstructorArgs.__init__(self, skip=skip)
        super().__init__(env)
        self.skip = _check_int("frame_skip", skip, 1, "use 4 as in the Nature DQN, 1 to turn off")

    def step(self, action: Any) -> StepReturn:
        total_reward = 0.0
        for _ in range(self.skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total_reward += float(reward)
            if terminated or truncated:
                break
        return obs, total_reward, terminated, truncated, info


class RecordGameStatistics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Info: when a full game ends, ``info["episode"] = {"r": score, "l": steps, "t": seconds}``.

    A *full game* ends when the emulator says so (all lives lost: ``terminated``) or when it is
    cut (``truncated``). ``"r"`` is the raw, unclipped game score (a float: the number to compare
    with published results), ``"l"`` the number of agent steps (``step`` calls on this wrapper),
    ``"t"`` the seconds since the game's reset. This is the single-env form of gymnasium's
    ``RecordEpisodeStatistics``; the env batches turn it into ``infos["episode"]["r"][i]``.

    Note: it must sit below :class:`EpisodicLife` (which ends an *episode* at every life loss)
    and below :class:`ClipReward`, and above :class:`FrameSkip`. The steps that EpisodicLife and
    FireReset play on the agent's behalf (a no-op after a life loss, FIRE) count as game steps;
    the no-op start of :class:`NoopReset` happens before the game and is not counted.
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self._score = 0.0
        self._length = 0
        self._start = time.perf_counter()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        self._score, self._length, self._start = 0.0, 0, time.perf_counter()
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._score += float(reward)
        self._length += 1
        if terminated or truncated:
            info = dict(info)
            info["episode"] = {
                "r": self._score,
                "l": self._length,
                "t": round(time.perf_counter() - self._start, 6),
            }
        return obs, reward, terminated, truncated, info


class EpisodicLife(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Terminated: ``True`` when a life is lost; reset: continue the same game after a life loss.

    The Nature DQN ends the *learning* episode at each lost life, so the value of a state just
    before a death is not bootstrapped from the next life: losing a life becomes visibly bad.
    The *game* goes on: the ``reset()`` that follows a life loss plays one NOOP step and returns
    its observation instead of restarting the emulator. A real reset happens when the game is
    over (all lives lost, or truncation), on the first reset, and on any ``reset(seed=...)`` or
    ``reset(options=...)``. ``info["lives"]`` keeps the emulator's lives count.

    Note: a life loss that takes the last life is left to the emulator's own ``terminated``
    (some games show 0 lives a few frames before the game is over).
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self._lives = 0
        self._continue_game = False

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = _lives(self.env)
        life_lost = 0 < lives < self._lives
        self._lives = lives
        # Continue on the next reset only if the game itself is not over.
        self._continue_game = life_lost and not (terminated or truncated)
        return obs, reward, terminated or life_lost, truncated, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        if self._continue_game and seed is None and options is None:
            self._continue_game = False
            obs, _, terminated, truncated, info = self.env.step(0)
            if not (terminated or truncated):
                self._lives = _lives(self.env)
                return obs, info
            # The game ended during the no-op: start a new one (keeping the statistics).
            game_end_info = info
            obs, info = self.env.reset()
            info = {**game_end_info, **info}
        else:
            obs, info = self.env.reset(seed=seed, options=options)
        self._continue_game = False
        self._lives = _lives(self.env)
        return obs, info


class FireReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset: press FIRE once after each reset, for games whose actions include FIRE.

    Breakout (and a few others) wait for FIRE before the ball is served; an untrained agent
    could spend thousands of steps before it presses it. Above :class:`EpisodicLife`, FIRE is
    pressed after every reset *including* the continuation after a lost life, when Breakout
    waits for a new ball. In games that do not need it, one FIRE at the start is harmless.
    The FIRE step's reward is not given to the agent (it still counts in the game score).
    If the FIRE step ends the episode, the env is reset again (at most a few times).
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        if "FIRE" not in meanings:
            raise ValueError(
                f"FireReset needs a 'FIRE' action, but this game's actions are {meanings}: "
                f"do not wrap it with FireReset."
            )
        self.fire_action = meanings.index("FIRE")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        obs, info = self.env.reset(seed=seed, options=options)
        for _ in range(3):
            obs, _, terminated, truncated, step_info = self.env.step(self.fire_action)
            if not (terminated or truncated):
                return obs, {**info, **step_info}
            # FIRE ended the episode: reset again, keeping a finished game's statistics.
            obs, info = self.env.reset()
            info = {**step_info, **info}
        return obs, info


class GrayscaleResize(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Obs: RGB ``(210, 160, 3)`` -> gray ``uint8 (size, size)``, resized with ``cv2.INTER_AREA``.

    Colour carries little information in most Atari games and 84x84 gray is 19 times smaller
    than the raw frame. Gray = 0.299 R + 0.587 G + 0.114 B (``cv2.COLOR_RGB2GRAY``);
    ``INTER_AREA`` averages the source pixels that fall into each target pixel, so thin
    objects (bullets, the ball) fade instead of disappearing as with nearest-neighbour.
    """

    def __init__(self, env: gym.Env, size: int = 84):
        gym.utils.RecordConstructorArgs.__init__(self, size=size)
        super().__init__(env)
        self.size = _check_int("size", size, 1, "use 84 as in the Nature DQN")
        space = env.observation_space
        if not (isinstance(space, spaces.Box) and len(space.shape) == 3 and space.shape[2] == 3):
            raise ValueError(
                f"GrayscaleResize needs RGB frames of shape (height, width, 3), got the "
                f"observation space {space}: make the env with the default obs_type='rgb'."
            )
        self.observation_space = spaces.Box(0, 255, (self.size, self.size), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        gray = cv2.cvtColor(np.ascontiguousarray(observation), cv2.COLOR_RGB2GRAY)
        return cv2.resize(gray, (self.size, self.size), interpolation=cv2.INTER_AREA)


class FrameStack(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Obs: the last ``n`` frames stacked channels-first, ``(n, *frame_shape)``, oldest first.

    One frame has no motion (where is the ball going?); four consecutive frames do. Channels
    come first because ``torch.nn.Conv2d`` expects ``(C, H, W)``: ``obs[-1]`` is the newest
    frame. At reset every slot is filled with the first frame, so a new episode never shows
    frames of the previous one (including the continuation after a lost life).
    """

    def __init__(self, env: gym.Env, n: int = 4):
        gym.utils.RecordConstructorArgs.__init__(self, n=n)
        super().__init__(env)
        self.n = _check_int("frame_stack", n, 1, "use 4 as in the Nature DQN, 1 to turn off")
        space = env.observation_space
        if not isinstance(space, spaces.Box):
            raise ValueError(f"FrameStack needs a Box observation space, got {space}.")
        low = np.repeat(space.low[np.newaxis], self.n, axis=0)
        high = np.repeat(space.high[np.newaxis], self.n, axis=0)
        self.observation_space = spaces.Box(low, high, dtype=space.dtype)
        self._frames = np.zeros(self.observation_space.shape, dtype=space.dtype)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        obs, info = self.env.reset(seed=seed, options=options)
        self._frames[:] = obs  # broadcast the first frame into every slot
        return self._frames.copy(), info

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._frames[:-1] = self._frames[1:]  # shift left: drop the oldest frame
        self._frames[-1] = obs
        return self._frames.copy(), reward, terminated, truncated, info


class ClipReward(gym.RewardWrapper, gym.utils.RecordConstructorArgs):
    """Reward: ``sign(r)``, one of -1.0, 0.0, 1.0 (a float).

    Scores differ by orders of magnitude between games (Pong: +-1, SpaceInvaders: 5 to 200);
    clipping lets one learning rate work everywhere, at the price of treating every positive
    reward alike. The raw score is still reported by :class:`RecordGameStatistics`.
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)

    def reward(self, reward: SupportsFloat) -> float:
        return float(np.sign(float(reward)))


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
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"`seed` must be an int or None, got {seed!r}.")
        self._pending_seed: int | None = int(seed)
        self.action_space.seed(int(seed))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        if seed is None:
            seed = self._pending_seed
        self._pending_seed = None
        return self.env.reset(seed=seed, options=options)


def _check_stack_args(
    clip_reward: bool, summaries: bool, noop_max: int, frame_skip: int, frame_stack: int
) -> None:
    """Check the arguments of :func:`wrap_atari` before anything is built."""
    for name, flag in (("clip_reward", clip_reward), ("summaries", summaries)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"`{name}` must be True or False, got {flag!r}.")
    _check_int("noop_max", noop_max, 0, "use 0 to turn no-op starts off")
    _check_int("frame_skip", frame_skip, 1, "use 4 as in the Nature DQN, 1 to turn off")
    _check_int("frame_stack", frame_stack, 1, "use 4 as in the Nature DQN, 1 to turn off")


def wrap_atari(
    env: gym.Env,
    *,
    clip_reward: bool = True,
    summaries: bool = True,
    noop_max: int = 30,
    frame_skip: int = 4,
    frame_stack: int = 4,
) -> gym.Env:
    """Wrap an emulator env (one RGB frame per step) in the Nature-DQN stack, in order.

    :func:`make_atari_env` calls it on ``gym.make(env_id)``; the tests call it on a fake env.
    FireReset is added only when the game has a FIRE action. Arguments as in
    :func:`make_atari_env`.
    """
    _check_stack_args(clip_reward, summaries, noop_max, frame_skip, frame_stack)
    env = NoopReset(env, noop_max=noop_max)
    env = MaxLastTwoFrames(env)
    env = FrameSkip(env, skip=frame_skip)
    if summaries:
        env = RecordGameStatistics(env)
    env = EpisodicLife(env)
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireReset(env)
    env = GrayscaleResize(env, size=84)
    env = FrameStack(env, n=frame_stack)
    if clip_reward:
        env = ClipReward(env)
    return env


def make_atari_env(
    env_id: str,
    *,
    clip_reward: bool = True,
    summaries: bool = True,
    noop_max: int = 30,
    frame_skip: int = 4,
    frame_stack: int = 4,
    render_mode: str | None = None,
) -> gym.Env:
    """Make one Atari env with the Nature-DQN preprocessing: obs ``uint8 (frame_stack, 84, 84)``.

    A module-level function, so that ``functools.partial(make_atari_env, env_id, ...)`` can be
    pickled and sent to worker processes (``spawn`` start method).

    Args:
        env_id: e.g. ``"SpaceInvadersNoFrameskip-v4"``; checked by
            :func:`course_lib.atari_ids.resolve_env_id`.
        clip_reward: clip the reward to {-1.0, 0.0, 1.0} (:class:`ClipReward`).
        summaries: report each full game in ``info["episode"]`` (:class:`RecordGameStatistics`).
        noop_max: up to this many random no-op frames after a real reset; 0 turns it off.
        frame_skip: emulator frames per agent step (4 in the Nature DQN).
        frame_stack: frames per observation (4 in the Nature DQN).
        render_mode: passed to ``gym.make``; ``"rgb_array"`` makes ``env.render()`` return the
            raw RGB frame ``(210, 160, 3)`` for videos.

    Raises:
        ValueError: a bad env id (the message says which id to use) or a bad argument.
    """
    game = resolve_env_id(env_id)
    _check_stack_args(clip_reward, summaries, noop_max, frame_skip, frame_stack)
    if render_mode not in (None, "rgb_array", "human"):
        raise ValueError(
            f"`render_mode` must be None, 'rgb_array' (frames for videos) or 'human', "
            f"got {render_mode!r}."
        )
    env = gym.make(game.env_id, render_mode=render_mode)
    return wrap_atari(
        env,
        clip_reward=clip_reward,
        summaries=summaries,
        noop_max=noop_max,
        frame_skip=frame_skip,
        frame_stack=frame_stack,
    )
