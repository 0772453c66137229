"""Short tests of the single-env Atari stack on real ROMs (a few hundred steps each)."""

from __future__ import annotations

import functools
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

from course_lib import nature_dqn_env
from course_lib.atari_env import make_atari_env, wrap_atari
from course_lib.atari_wrappers import FrameSkip, FrameStack, GrayscaleResize, MaxLastTwoFrames

pytestmark = pytest.mark.rom
GAMES = ["BreakoutNoFrameskip-v4", "SpaceInvadersNoFrameskip-v4", "PongNoFrameskip-v4"]


@pytest.mark.slow
@pytest.mark.parametrize("env_id", GAMES)
def test_observations_are_uint8_4x84x84_and_check_env_passes(env_id):
    env = make_atari_env(env_id)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        obs, reward, *_ = env.step(env.action_space.sample())
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        assert reward in (-1.0, 0.0, 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The render check would make a "human" env (a window): render is tested below.
        check_env(env, skip_render_check=True)
    # The checker always warns that a wrapped env is not its unwrapped version; nothing else.
    unexpected = [
        str(w.message) for w in caught if "different from the unwrapped" not in str(w.message)
    ]
    assert unexpected == []
    env.close()


def test_render_gives_raw_rgb_frames_for_videos():
    env = make_atari_env("PongNoFrameskip-v4", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    env.close()


def test_bad_render_mode_is_refused():
    with pytest.raises(ValueError, match=r"`render_mode` must be None, 'rgb_array'.*got 'rgb'"):
        make_atari_env("PongNoFrameskip-v4", render_mode="rgb")


def test_the_factory_pickles_for_spawned_workers():
    factory = functools.partial(
        make_atari_env, "BreakoutNoFrameskip-v4", clip_reward=False, game_stats=True
    )
    env = pickle.loads(pickle.dumps(factory))()
    assert env.reset(seed=0)[0].shape == (4, 84, 84)
    env.close()


def _play(env: gym.Env, actions: list[int]) -> tuple[list[np.ndarray], list[float]]:
    observations, rewards = [], []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            env.reset()
    return observations, rewards


@pytest.mark.slow
def test_same_seed_and_actions_give_the_same_observations():
    actions = np.random.default_rng(0).integers(0, 6, size=150).tolist()
    runs = []
    for _ in range(2):
        env = nature_dqn_env("SpaceInvadersNoFrameskip-v4", seed=7)  # no reset here ...
        first, _ = env.reset()  # ... the user's first reset is the seeded one
        runs.append(([first], *_play(env, actions)))
        env.close()
    (first_a, obs_a, rew_a), (first_b, obs_b, rew_b) = runs
    assert np.array_equal(first_a[0], first_b[0])
    assert all(np.array_equal(a, b) for a, b in zip(obs_a, obs_b, strict=True))
    assert rew_a == rew_b


@pytest.mark.slow
def test_the_seed_sets_the_number_of_noop_frames():
    def frames_after_reset(seed: int) -> int:
        env = nature_dqn_env("PongNoFrameskip-v4", seed=seed)
        env.reset()
        frames = env.unwrapped.ale.getEpisodeFrameNumber()
        env.close()
        return frames

    counts = [frames_after_reset(seed) for seed in range(4)]
    assert counts[0] == frames_after_reset(0)
    assert len(set(counts)) > 1  # four seeds drawing 1..30 no-ops all alike: not random


@pytest.mark.slow
@pytest.mark.parametrize("env_id", GAMES)
def test_preprocessing_matches_gymnasium_atari_preprocessing(env_id):
    """Does our stack see what gymnasium's AtariPreprocessing + FrameStackObservation see?

    Both sides: the emulator's own grayscale (``make_atari_env`` uses ``obs_type="grayscale"``,
    gymnasium's wrapper reads ALE's gray screen), no no-op start, 4-frame skip, max over the
    last two frames, ``INTER_AREA`` resize to 84x84, 4 frames stacked, padded with black frames
    at reset; no fire reset and no episodic life (ours are tested on their own). So every pixel
    must be equal. The one intended difference: on the step where the game ends early within a
    skip, gymnasium returns the frames of the previous step, we return the last two frames
    played, so that step's pixels are not compared.

    Rewards, terminations and truncations must be equal at every step.
    """
    base = gym.make(env_id, obs_type="grayscale")
    ours = FrameStack(GrayscaleResize(FrameSkip(MaxLastTwoFrames(base), 4)), 4)
    theirs = FrameStackObservation(
        AtariPreprocessing(gym.make(env_id), noop_max=0, frame_skip=4, screen_size=84),
        4,
        padding_type="zero",
    )
    obs_ours, _ = ours.reset(seed=3)
    obs_theirs, _ = theirs.reset(seed=3)
    assert np.array_equal(obs_ours, obs_theirs)
    rng = np.random.default_rng(0)
    compared = 0
    for _ in range(250):
        action = int(rng.integers(ours.action_space.n))
        obs_ours, r_ours, term_ours, trunc_ours, _ = ours.step(action)
        obs_theirs, r_theirs, term_theirs, trunc_theirs, _ = theirs.step(action)
        assert (r_ours, term_ours, trunc_ours) == (r_theirs, term_theirs, trunc_theirs)
        if term_ours or trunc_ours:
            break
        diff = np.abs(obs_ours.astype(np.int16) - obs_theirs.astype(np.int16))
        assert diff.max() == 0, f"step {compared}: {np.count_nonzero(diff)} pixels differ"
        compared += 1
    assert compared >= 100
    ours.close()
    theirs.close()


class RawRewardTally(gym.Wrapper):
    """Ground truth: the sum of the emulator's rewards since its last reset."""

    def reset(self, **kwargs):
        self.total = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += float(reward)
        return obs, reward, terminated, truncated, info


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "max_frames"),
    [("SpaceInvadersNoFrameskip-v4", 108_000), ("PongNoFrameskip-v4", 3_000)],
)
def test_reported_game_score_is_the_sum_of_the_raw_emulator_rewards(env_id, max_frames):
    """SpaceInvaders: a full random game (3 lives); Pong: cut by the emulator's frame cap."""
    tally = RawRewardTally(gym.make(env_id, max_num_frames_per_episode=max_frames))
    env = wrap_atari(tally, clip_reward=True, game_stats=True)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    n_terminated, clipped = 0, []
    for _ in range(3_000):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        clipped.append(reward)
        if "episode" in info:
            break
        if terminated or truncated:
            n_terminated += 1
            env.reset()
    else:
        pytest.fail("no full game ended within 3000 agent steps")
    report = info["episode"]
    assert report["r"] == tally.total
    assert set(clipped) <= {-1.0, 0.0, 1.0}
    if env_id.startswith("SpaceInvaders"):
        assert terminated and n_terminated == 2  # two lives lost before the last one
        assert report["r"] > sum(clipped) > 0  # raw points (5 to 30 each), not clipped ones
    else:
        assert truncated and not terminated
        assert report["l"] * 4 >= max_frames - 30 - 4  # lasted until the cap (minus no-ops)


def test_breakout_life_loss_continues_the_game_without_fire_and_keeps_the_stack():
    """Real ROM: does a lost life end the episode while the emulator and the stack go on?

    Checked on the ALE itself: the reset after a life loss plays no frame (the episode frame
    counter does not move, no FIRE), returns the life-loss observation again, and a new game
    starts with 3 black frames and FIRE (the ball is served by the wrapper only then).
    """
    env = make_atari_env("BreakoutNoFrameskip-v4", clip_reward=False, noop_max=0)
    ale = env.unwrapped.ale
    obs, info = env.reset(seed=0)
    assert info["new_game"] is True and info["lives"] == 5
    assert not obs[:3].any() and obs[3].any(), "a new game: 3 black frames, then the first"
    assert ale.getEpisodeFrameNumber() == 1, "one FIRE frame, no no-op"
    rng = np.random.default_rng(0)
    for _ in range(300):
        obs, _, terminated, truncated, info = env.step(int(rng.integers(4)))
        if terminated:
            break
    else:
        pytest.fail("a random Breakout player kept its first life for 300 steps")
    assert info["lives"] == 4 and not truncated and "episode" not in info
    frame = ale.getEpisodeFrameNumber()
    reset_obs, reset_info = env.reset()
    assert reset_info["new_game"] is False and reset_info["lives"] == 4
    assert ale.getEpisodeFrameNumber() == frame, "the reset after a life loss plays nothing"
    assert np.array_equal(reset_obs, obs), "the same view: the stack is kept, not refilled"
    next_obs, *_ = env.step(0)
    assert np.array_equal(next_obs[:3], obs[1:]), "the stack goes on shifting"
    assert ale.getEpisodeFrameNumber() == frame + 4
    env.close()
