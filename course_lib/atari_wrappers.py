"""The Nature-DQN Atari preprocessing, one small gymnasium wrapper per idea.

Where each idea comes from: frame skip 4 with the max over the last two frames, 84x84 gray,
a stack of 4 frames, reward clipping and a lost life as the end of a learning episode are the
Nature DQN's (Mnih et al., 2015), and so is "no-op max 30" (its hyperparameter table: up to 30
"do nothing" actions at the start of an episode). Pressing FIRE at the start of a game is a
convention of OpenAI baselines' Atari wrappers (which its A2C used), not of the Nature paper;
baselines also draws the random no-op start at every real reset, as done here.

:func:`course_lib.atari_env.make_atari_env` stacks them in this order, from the emulator out::

    gym.make("XxxNoFrameskip-v4")   RGB (210, 160, 3), one frame per step, raw reward
    FireReset                       real reset: press FIRE for one frame (Breakout serves)
    NoopReset(noop_max=30)          real reset: 1..30 random no-ops, so games do not all start alike
    MaxLastTwoFrames                obs: pixel-wise max of this frame and the previous one
    FrameSkip(skip=4)               one agent step = 4 frames; reward summed; obs of the last frame
    RecordGameStatistics            info["episode"] = raw score, length, time of each full game
    EpisodicLife                    terminated=True at every life loss; reset continues the game
    GrayscaleResize(84)             obs: uint8 (84, 84) gray
    FrameStack(4)                   obs: uint8 (4, 84, 84), oldest frame first
    ClipReward                      reward: sign(r) in {-1.0, 0.0, 1.0}

These are the semantics of ale-py's C++ vector env (the ``"native"`` backend), so every
backend of :func:`course_lib.nature_dqn_env` plays the same episodes: the emulator never plays
a step the agent did not choose once a game has started (FIRE and no-ops only start a new game;
after a life loss the game goes on with the agent's next action), so a game's length ``"l"`` is
exactly the number of the agent's ``step`` calls. A reset says whether a new game started:
``info["new_game"]`` is ``True`` after a real reset, ``False`` after a life loss.

Pitfalls the order avoids:

* the max must see raw consecutive frames, so it sits *inside* the frame skip (the frame skip
  returns the last max, that is ``max(frame[3], frame[4])``);
* the statistics must see the raw reward and the real end of the game, so they sit *above* the
  frame skip and the reset-time FIRE and no-ops, but *below* EpisodicLife and ClipReward.

Every wrapper reads the emulator through ``env.unwrapped`` (``ale.lives()``,
``get_action_meanings()``, ``np_random``), which the tests' fake env has too.
"""

from __future__ import annotations

import time
from typing import Any, SupportsFloat

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .validation import check_int

__all__ = ["ClipReward", "EpisodicLife", "FireReset", "FrameSkip", "FrameStack"]
__all__ += ["GrayscaleResize", "MaxLastTwoFrames", "NoopReset", "RecordGameStatistics"]

StepReturn = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
ResetReturn = tuple[Any, dict[str, Any]]

#: Reset-info key: ``True`` after a real reset (new game), ``False`` after a life loss.
NEW_GAME = "new_game"


def _lives(env: gym.Env) -> int:
    return int(env.unwrapped.ale.lives())  # the emulator's count, through every wrapper


def _is_new_game(info: dict[str, Any]) -> bool:
    """Did the reset that returned ``info`` start a new game? (``True`` without EpisodicLife.)"""
    return bool(info.get(NEW_GAME, True))


class FireReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset: after a real reset (a new game), press FIRE once; never after a lost life.

    Breakout (and a few others) wait for FIRE before serving the first ball; an untrained agent
    could spend thousands of steps before it presses it. (A convention of OpenAI baselines'
    wrappers, not of the Nature DQN.) In games that do not need it, one FIRE
    at the start is harmless. The FIRE frame's reward is dropped (it is 0 in practice) and it is
    not counted in the game's length: it happens before the game, like the no-op start.

    Note: after a **lost life** the agent has to press FIRE itself to get a new ball in Breakout
    (FIRE is one of its 4 actions; a random policy presses it every 4th step), exactly as with
    ale-py's vector env, whose FIRE reset only acts at the start of a game. The kit does the
    same so that every backend plays the same episodes: a FIRE pressed for the agent would be a
    step it never chose, hidden from learning, and game lengths would differ between backends.
    :func:`~course_lib.atari_env.wrap_atari` puts it directly on the emulator (one FIRE frame,
    then the no-ops, as ale-py); above :class:`EpisodicLife` it skips ``new_game=False`` resets.
    If the FIRE ends the game (it practically never does), the env is reset again.
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
        if not _is_new_game(info):
            return obs, info  # a life was lost: the game goes on, the agent fires itself
        for _ in range(3):
            obs, _, terminated, truncated, step_info = self.env.step(self.fire_action)
            if not (terminated or truncated):
                return obs, {**info, **step_info}
            obs, info = self.env.reset(options=options)  # FIRE ended the game: start again
        return obs, info


class NoopReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reset: after the real reset, play a random number (1 to ``noop_max``) of NOOP frames.

    Atari games are deterministic: without this, every game would start from the very same
    frame and an agent could memorise one sequence of actions. (The Nature DQN's "no-op max
    30"; drawn at every real reset, as OpenAI baselines' wrappers do.) The count is drawn from the
    emulator's ``np_random``, so ``reset(seed=s)`` repeats it. ``noop_max=0`` turns it off.
    If the game ends during the no-ops (it practically never does) the env is reset again.
    """

    def __init__(self, env: gym.Env, noop_max: int = 30):
        gym.utils.RecordConstructorArgs.__init__(self, noop_max=noop_max)
        super().__init__(env)
        self.noop_max = check_int("noop_max", noop_max, 0, fix="use 0 to turn no-op starts off")
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
        self._previous = obs  # no copy: see observation()
        return obs, info

    def observation(self, observation: np.ndarray) -> np.ndarray:
        assert self._previous is not None, "step() before reset()"  # OrderEnforcing checks it
        pooled = np.maximum(self._previous, observation)
        # No copy: ale-py returns a new array for every frame (and so do the test fakes).
        self._previous = observation
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
        self.skip = check_int(
            "frame_skip", skip, 1, fix="use 4 as in the Nature DQN, 1 to turn off"
        )

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
    cut (``truncated``). ``"r"`` is the raw, unclipped game score over all lives (a float: the
    number to compare with published results), ``"l"`` the number of agent steps (``step``
    calls on this wrapper), ``"t"`` the seconds since the game's reset. This is the single-env
    form of gymnasium's ``RecordEpisodeStatistics``; the env batches turn it into
    ``infos["episode"]["r"][i]``.

    Note: it sits below :class:`EpisodicLife` (which ends an *episode* at every life loss and
    continues the game without calling this ``reset``) and :class:`ClipReward`, and above
    :class:`FrameSkip`, :class:`NoopReset` and :class:`FireReset`, whose FIRE and no-ops come
    before the game. So ``"l"`` is exactly the number of the agent's ``step`` calls in the
    game, the same number as ale-py's vector env reports.
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
    """Terminated: ``True`` when a life is lost; reset: after a life loss, continue the game.

    The Nature DQN ends the *learning* episode at each lost life, so the value of a state just
    before a death is not bootstrapped from the next life: losing a life becomes visibly bad.
    The *game* goes on: the ``reset()`` that follows a life loss does **not** touch the
    emulator; it returns the observation and info of the life-loss step again (stored), with
    ``info["new_game"] = False``. The agent's next ``step`` continues the game from there.
    A real reset (``info["new_game"] = True``) happens when the game is over (all lives lost,
    or truncation), on the first reset, and on any ``reset(seed=...)`` or
    ``reset(options=...)``. This is ale-py's vector env with ``life_loss_info=True,
    episodic_life=False``: after a lost life it just keeps playing the agent's actions.

    Note: a life loss that takes the last life is left to the emulator's own ``terminated``
    (some games show 0 lives a few frames before the game is over).
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        self._lives = 0
        # (obs, info) of a life-loss step while the game goes on, else None.
        self._continuation: ResetReturn | None = None

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        lives = _lives(self.env)
        life_lost = 0 < lives < self._lives
        self._lives = lives
        # Continue on the next reset only if the game itself is not over.
        game_goes_on = life_lost and not (terminated or truncated)
        self._continuation = (obs, dict(info)) if game_goes_on else None
        return obs, reward, terminated or life_lost, truncated, info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> ResetReturn:
        continuation, self._continuation = self._continuation, None
        if continuation is not None and seed is None and options is None:
            obs, info = continuation
            return obs, {**info, NEW_GAME: False}
        obs, info = self.env.reset(seed=seed, options=options)
        self._lives = _lives(self.env)
        return obs, {**info, NEW_GAME: True}


class GrayscaleResize(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Obs: a frame -> gray ``uint8 (size, size)``, resized with ``cv2.INTER_AREA``.

    Colour carries little information in most Atari games and 84x84 gray is about 14 times
    smaller than the raw RGB frame (210 * 160 * 3 / (84 * 84) = 14.3). An RGB frame ``(210, 160, 3)`` is converted with
    Gray = 0.299 R + 0.587 G + 0.114 B (``cv2.COLOR_RGB2GRAY``); a frame that is already gray
    ``(210, 160)`` (the emulator's own conversion, ``obs_type="grayscale"``, which
    :func:`~course_lib.atari_env.make_atari_env` uses: it is faster and is what ale-py's vector
    env does) is only resized. ``INTER_AREA`` averages the source pixels that fall into each
    target pixel, so thin objects (bullets, the ball) fade instead of disappearing as with
    nearest-neighbour.
    """

    def __init__(self, env: gym.Env, size: int = 84):
        gym.utils.RecordConstructorArgs.__init__(self, size=size)
        super().__init__(env)
        self.size = check_int("size", size, 1, fix="use 84 as in the Nature DQN")
        space = env.observation_space
        shape = getattr(space, "shape", None) or ()
        self._rgb = len(shape) == 3 and shape[2] == 3
        if not (isinstance(space, spaces.Box) and (self._rgb or len(shape) == 2)):
            raise ValueError(
                f"GrayscaleResize needs RGB frames (height, width, 3) or gray frames "
                f"(height, width), got the observation space {space}: make the env with "
                f"obs_type='rgb' or 'grayscale'."
            )
        self.observation_space = spaces.Box(0, 255, (self.size, self.size), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        if self._rgb:
            observation = cv2.cvtColor(np.ascontiguousarray(observation), cv2.COLOR_RGB2GRAY)
        return cv2.resize(observation, (self.size, self.size), interpolation=cv2.INTER_AREA)


class FrameStack(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Obs: the last ``n`` frames stacked channels-first, ``(n, *frame_shape)``, oldest first.

    One frame has no motion (where is the ball going?); four consecutive frames do. Channels
    come first because ``torch.nn.Conv2d`` expects ``(C, H, W)``: ``obs[-1]`` is the newest
    frame. Resets (as ale-py's vector env does):

    * a **new game** (``info["new_game"]`` missing or ``True``): ``n - 1`` black (zero) frames,
      then the first frame, so a new game never shows frames of the previous one;
    * a **lost life** (``info["new_game"] is False``, from :class:`EpisodicLife`): the stack is
      kept unchanged; the observation is the one of the life-loss step, and the next step
      shifts in the next frame of the same game.
    """

    def __init__(self, env: gym.Env, n: int = 4):
        gym.utils.RecordConstructorArgs.__init__(self, n=n)
        super().__init__(env)
        self.n = check_int("frame_stack", n, 1, fix="use 4 as in the Nature DQN, 1 to turn off")
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
        if _is_new_game(info):
            self._frames[:-1] = 0  # black frames: nothing of the previous game
            self._frames[-1] = obs
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
