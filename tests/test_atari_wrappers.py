"""Unit tests of the Nature-DQN wrappers on the fake Atari env (no ROMs, fast)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from course_lib.atari_env import SeedFirstReset, wrap_atari
from course_lib.atari_wrappers import (
    ClipReward,
    EpisodicLife,
    FireReset,
    FrameSkip,
    FrameStack,
    GrayscaleResize,
    MaxLastTwoFrames,
    NoopReset,
    RecordGameStatistics,
)
from tests.fake_atari import MEANINGS_NO_FIRE, FakeAtariEnv, decode_rgb

# --------------------------------------------------------------------------- NoopReset


def test_noop_reset_plays_1_to_noop_max_noops_drawn_from_the_seeded_rng():
    """Are the no-op counts in 1..noop_max, all NOOPs, varied, and repeated by the seed?"""
    fake = FakeAtariEnv()
    env = NoopReset(fake, noop_max=5)
    counts = []
    for seed in range(40):
        env.reset(seed=seed)
        assert set(fake.actions) <= {0}
        counts.append(len(fake.actions))
    assert set(counts) == {1, 2, 3, 4, 5}
    env.reset(seed=7)
    again = len(fake.actions)
    assert again == counts[7]


def test_noop_reset_returns_the_frame_after_the_last_noop():
    fake = FakeAtariEnv(rgb=False)
    env = NoopReset(fake, noop_max=3)
    obs, _ = env.reset(seed=0)
    assert obs[0, 0] == fake.frame_number % 256


def test_noop_max_zero_plays_no_noop():
    fake = FakeAtariEnv()
    NoopReset(fake, noop_max=0).reset(seed=0)
    assert fake.actions == []


def test_noop_reset_resets_again_if_the_game_ends_during_the_noops():
    fake = FakeAtariEnv(game_over_frame=1)
    env = NoopReset(fake, noop_max=3)
    env.reset(seed=0)
    # every no-op ends this game at once, so each one is followed by a fresh reset
    assert fake.n_resets >= 2 and fake.actions == []
    assert fake.episode_frame == 0  # the returned game is a fresh one, not a finished one


@pytest.mark.parametrize("bad", [-1, 2.5, "30", True])
def test_noop_reset_rejects_bad_noop_max(bad):
    with pytest.raises(ValueError, match=r"`noop_max` must be an int >= 0, got .*use 0"):
        NoopReset(FakeAtariEnv(), noop_max=bad)


def test_noop_reset_needs_noop_as_action_0():
    with pytest.raises(ValueError, match=r"action 0 to be 'NOOP'.*noop_max=0"):
        NoopReset(FakeAtariEnv(action_meanings=["FIRE", "NOOP"]), noop_max=30)


# ----------------------------------------------------------- MaxLastTwoFrames + FrameSkip


def _skip(fake: FakeAtariEnv, skip: int = 4) -> gym.Env:
    return FrameSkip(MaxLastTwoFrames(fake), skip=skip)


def test_frame_skip_returns_the_max_of_the_last_two_frames():
    """Channel 0 rises and channel 1 falls with the frame counter: the max shows both ends."""
    fake = FakeAtariEnv()
    env = _skip(fake)
    obs, _ = env.reset(seed=0)
    c0 = fake.frame_number
    assert decode_rgb(obs) == (c0, 255 - c0)  # the reset frame, not pooled with anything
    obs, *_ = env.step(2)
    assert fake.actions == [2, 2, 2, 2]
    # max(frame(c0 + 3), frame(c0 + 4)): channel 0 from the last, channel 1 from the one before
    assert decode_rgb(obs) == (c0 + 4, 255 - (c0 + 3))
    obs, *_ = env.step(1)
    assert decode_rgb(obs) == (c0 + 8, 255 - (c0 + 7))


def test_frame_skip_sums_rewards_over_the_skipped_frames():
    env = _skip(FakeAtariEnv(rewards={1: 1.0, 3: 2.5, 4: -1.0, 5: 7.0}))
    env.reset(seed=0)
    assert env.step(0)[1] == pytest.approx(2.5)  # frames 1..4
    assert env.step(0)[1] == pytest.approx(7.0)  # frames 5..8


@pytest.mark.parametrize("ending", ["game_over_frame", "truncate_frame"])
def test_frame_skip_stops_early_when_the_game_ends(ending):
    fake = FakeAtariEnv(rewards={1: 1.0, 2: 10.0, 3: 100.0}, **{ending: 2})
    env = _skip(fake)
    env.reset(seed=0)
    c0 = fake.frame_number
    obs, reward, terminated, truncated, _ = env.step(3)
    assert fake.actions == [3, 3]  # the third and fourth frames are never played
    assert reward == pytest.approx(11.0)
    assert (terminated, truncated) == (ending == "game_over_frame", ending == "truncate_frame")
    assert decode_rgb(obs) == (c0 + 2, 255 - (c0 + 1))


@pytest.mark.parametrize("bad", [0, -4, 4.0])
def test_frame_skip_rejects_bad_skip(bad):
    with pytest.raises(ValueError, match=r"`frame_skip` must be an int >= 1, got"):
        FrameSkip(FakeAtariEnv(), skip=bad)


# -------------------------------------------------- RecordGameStatistics + EpisodicLife


def _play(env: gym.Env, n_steps: int, action: int = 2) -> list[tuple]:
    """Step with autoreset; return (reward, terminated, truncated, info) of each step."""
    out = []
    for _ in range(n_steps):
        _, reward, terminated, truncated, info = env.step(action)
        out.append((reward, terminated, truncated, info))
        if terminated or truncated:
            env.reset()
    return out


def test_statistics_report_the_raw_score_over_all_lives_once_per_game():
    """Two lives lost, then the game: one report, with every life's reward in it."""
    fake = FakeAtariEnv(
        lives=3,
        rewards={1: 5.0, 3: 10.0, 5: 100.0, 6: 1000.0},
        life_loss_frames={2, 4, 6},
        action_meanings=MEANINGS_NO_FIRE,
    )
    env = ClipReward(EpisodicLife(RecordGameStatistics(fake)))
    env.reset(seed=0)
    steps = _play(env, 6)
    # Two real resets (the first, and the autoreset after the game over) and 6 frames, one per
    # agent step: the resets after the life losses (frames 2, 4) play nothing.
    assert fake.n_resets == 2 and fake.frame_number == 2 + 6
    assert [s[1] for s in steps] == [False, True, False, True, False, True]
    assert [s[0] for s in steps] == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]  # clipped for learning
    reports = [s[3]["episode"] for s in steps if "episode" in s[3]]
    assert len(reports) == 1 and "episode" in steps[-1][3]
    (report,) = reports
    assert report["r"] == 1115.0 and isinstance(report["r"], float)
    assert report["l"] == 6 and isinstance(report["l"], int)  # exactly the 6 agent steps
    assert isinstance(report["t"], float) and report["t"] >= 0.0


def test_statistics_report_truncation_and_restart_counting_for_the_next_game():
    fake = FakeAtariEnv(rewards={1: 2.0, 2: 3.0}, truncate_frame=3)
    env = RecordGameStatistics(fake)
    env.reset(seed=0)
    steps = _play(env, 6)
    reports = [s[3]["episode"] for s in steps if "episode" in s[3]]
    assert [s[2] for s in steps] == [False, False, True] * 2
    assert [(r["r"], r["l"]) for r in reports] == [(5.0, 3), (5.0, 3)]


def test_statistics_count_agent_steps_above_the_frame_skip():
    fake = FakeAtariEnv(rewards={2: 1.0, 9: 4.0}, game_over_frame=10)
    env = RecordGameStatistics(_skip(fake))
    env.reset(seed=0)
    steps = _play(env, 3)
    assert steps[-1][1] and steps[-1][3]["episode"]["l"] == 3  # frames 1-4, 5-8, 9-10
    assert steps[-1][3]["episode"]["r"] == 5.0


def test_life_loss_reset_returns_the_stored_step_without_touching_the_emulator():
    """After a life loss, does reset() give back the life-loss step's obs and info, no step?"""
    fake = FakeAtariEnv(lives=3, life_loss_frames={2}, rgb=False, action_meanings=MEANINGS_NO_FIRE)
    env = EpisodicLife(fake)
    _, info = env.reset(seed=0)
    assert info["new_game"] is True
    _, _, terminated, truncated, info = env.step(1)
    assert not terminated and info["lives"] == 3
    obs, _, terminated, truncated, info = env.step(1)
    assert terminated and not truncated and info["lives"] == 2
    frame_number = fake.frame_number
    reset_obs, reset_info = env.reset()
    assert fake.n_resets == 1 and fake.actions == [1, 1]  # same game, no step played
    assert fake.frame_number == frame_number
    assert np.array_equal(reset_obs, obs)
    assert reset_info == {**info, "new_game": False}
    env.step(1)  # the agent's next step continues the game at frame 3
    assert fake.episode_frame == 3 and fake.actions == [1, 1, 1]


def test_the_continuation_keeps_the_game_statistics_running():
    """A life-loss reset must not reach RecordGameStatistics.reset (it would zero the game)."""
    fake = FakeAtariEnv(lives=2, rewards={1: 3.0, 2: 4.0}, life_loss_frames={1, 2})
    env = EpisodicLife(RecordGameStatistics(fake))
    env.reset(seed=0)
    assert env.step(2)[2]  # frame 1: +3, first life lost
    env.reset()
    *_, terminated, _, info = env.step(2)  # frame 2: +4, the last life: game over
    assert terminated and info["episode"]["r"] == 7.0 and info["episode"]["l"] == 2


def test_real_game_over_gives_a_real_reset():
    fake = FakeAtariEnv(lives=2, life_loss_frames={1, 3}, action_meanings=MEANINGS_NO_FIRE)
    env = EpisodicLife(fake)
    env.reset(seed=0)
    assert env.step(1)[2]  # frame 1: first life lost
    assert env.reset()[1]["new_game"] is False
    assert not env.step(1)[2]  # frame 2
    _, _, terminated, _, info = env.step(1)  # frame 3: last life lost, the game is over
    assert fake.n_resets == 1 and info["lives"] == 0 and terminated
    _, info = env.reset()
    assert fake.n_resets == 2 and fake.actions == [] and info["new_game"] is True


def test_episodic_life_reset_with_a_seed_restarts_the_game():
    fake = FakeAtariEnv(lives=3, life_loss_frames={1})
    env = EpisodicLife(fake)
    env.reset(seed=0)
    assert env.step(2)[2]
    _, info = env.reset(seed=1)  # a seed always starts a new game, even after a lost life
    assert fake.n_resets == 2 and fake.actions == [] and fake.ale.lives() == 3
    assert info["new_game"] is True


def test_truncation_with_lives_left_gives_a_real_reset():
    fake = FakeAtariEnv(lives=3, truncate_frame=1)
    env = EpisodicLife(fake)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(2)
    assert truncated and not terminated
    env.reset()
    assert fake.n_resets == 2


def test_losing_the_last_life_is_left_to_the_emulator():
    fake = FakeAtariEnv(lives=1, life_loss_frames={2}, action_meanings=MEANINGS_NO_FIRE)
    env = EpisodicLife(fake)
    env.reset(seed=0)
    env.step(1)
    _, _, terminated, _, _ = env.step(1)
    assert terminated
    env.reset()
    assert fake.n_resets == 2  # game over: a real reset, no continuation


# --------------------------------------------------------------------------- FireReset


def test_fire_is_pressed_after_a_real_reset_only_never_after_a_lost_life():
    """Above EpisodicLife: FIRE at a new game; after a life loss the agent must fire itself."""
    fake = FakeAtariEnv(lives=2, life_loss_frames={3, 5})
    env = FireReset(EpisodicLife(fake))
    _, info = env.reset(seed=0)
    assert fake.actions == [1] and info["new_game"] is True  # FIRE, frame 1
    assert env.step(2)[2] is False
    assert env.step(2)[2] is True  # frame 3: life lost
    _, info = env.reset()
    assert fake.actions == [1, 2, 2] and info["new_game"] is False  # no FIRE, no no-op
    assert env.step(2)[2] is False  # frame 4: the agent's next step goes on with the game
    assert env.step(2)[2] is True  # frame 5: the last life, game over
    assert fake.actions == [1, 2, 2, 2, 2]
    env.reset()
    assert fake.n_resets == 2 and fake.actions == [1]  # a new game: FIRE again


def test_fire_reset_resets_again_if_fire_ends_the_game():
    fake = FakeAtariEnv(game_over_frame=1)
    env = FireReset(fake)
    env.reset(seed=0)
    assert fake.n_resets >= 2


def test_fire_reset_refuses_a_game_without_fire():
    with pytest.raises(ValueError, match=r"needs a 'FIRE' action.*\['NOOP', 'UP', 'DOWN'\]"):
        FireReset(FakeAtariEnv(action_meanings=MEANINGS_NO_FIRE))


@pytest.mark.parametrize(("meanings", "has_fire"), [(None, True), (MEANINGS_NO_FIRE, False)])
def test_the_stack_adds_fire_reset_only_for_games_with_fire(meanings, has_fire):
    env = wrap_atari(FakeAtariEnv(action_meanings=meanings), noop_max=0)
    wrapper_types = []
    while isinstance(env, gym.Wrapper):
        wrapper_types.append(type(env))
        env = env.env
    assert (FireReset in wrapper_types) == has_fire


def test_the_stack_plays_fire_then_the_noops_at_a_new_game_and_nothing_at_a_life_loss():
    """As ale-py's vector env: one FIRE frame first, then the no-ops; never after a life loss."""
    fake = FakeAtariEnv(frame_shape=(210, 160), lives=2, life_loss_frames={20})
    env = wrap_atari(fake, noop_max=3)
    env.reset(seed=0)
    n_noops = len(fake.actions) - 1
    assert fake.actions == [1] + [0] * n_noops and 1 <= n_noops <= 3
    terminated = False
    while not terminated:  # 4 frames a step until frame 20 takes a life
        terminated = env.step(2)[2]
    played = list(fake.actions)
    env.reset()
    assert fake.actions == played and fake.n_resets == 1


# ------------------------------------------------------------ GrayscaleResize, FrameStack


# ------------------------------------------------------------ GrayscaleResize, FrameStack


def test_grayscale_resize_gives_84x84_uint8_luminance():
    fake = FakeAtariEnv(frame_shape=(210, 160))
    env = GrayscaleResize(fake)
    obs, _ = env.reset(seed=0)
    c = fake.frame_number
    assert obs.shape == (84, 84) and obs.dtype == np.uint8
    expected = 0.299 * c + 0.587 * (255 - c)  # uniform frame (c, 255 - c, 0)
    assert np.abs(obs.astype(float) - expected).max() <= 1.0
    assert env.observation_space == gym.spaces.Box(0, 255, (84, 84), np.uint8)


def test_grayscale_resize_only_resizes_frames_that_are_already_gray():
    fake = FakeAtariEnv(rgb=False, frame_shape=(210, 160))
    env = GrayscaleResize(fake)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (84, 84) and obs.dtype == np.uint8
    assert np.all(obs == fake.frame_number % 256)  # a uniform gray frame stays that gray


def test_grayscale_resize_refuses_frames_that_are_neither_rgb_nor_gray():
    fake = FakeAtariEnv(rgb=False)
    fake.observation_space = gym.spaces.Box(0, 255, (6, 5, 4), np.uint8)
    with pytest.raises(ValueError, match=r"needs RGB frames \(height, width, 3\) or gray"):
        GrayscaleResize(fake)


def test_frame_stack_is_channels_first_oldest_first_and_black_padded_at_a_new_game():
    fake = FakeAtariEnv(rgb=False, truncate_frame=3)
    env = FrameStack(fake, n=4)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 6, 5), np.uint8)
    obs, _ = env.reset(seed=0)
    c = fake.frame_number
    assert obs.shape == (4, 6, 5) and obs.dtype == np.uint8
    assert obs[:, 0, 0].tolist() == [0, 0, 0, c]  # black frames, then the first frame
    assert not obs[:3].any()
    first = obs
    obs, *_ = env.step(0)
    obs, *_ = env.step(0)
    assert obs[:, 0, 0].tolist() == [0, c, c + 1, c + 2]
    assert first[:, 0, 0].tolist() == [0, 0, 0, c]  # earlier observations are not overwritten
    *_, truncated, _ = env.step(0)
    assert truncated
    obs, _ = env.reset()
    assert obs[:, 0, 0].tolist() == [0, 0, 0, c + 4]  # nothing of the previous episode


def test_frame_stack_is_kept_unchanged_when_a_life_loss_continues_the_game():
    fake = FakeAtariEnv(rgb=False, lives=3, life_loss_frames={2})
    env = FrameStack(EpisodicLife(fake), n=4)
    env.reset(seed=0)
    c = fake.frame_number
    env.step(0)
    obs, _, terminated, *_ = env.step(0)
    assert terminated and obs[:, 0, 0].tolist() == [0, c, c + 1, c + 2]
    reset_obs, info = env.reset()
    assert info["new_game"] is False
    assert np.array_equal(reset_obs, obs)  # the same view: not refilled, not blanked
    obs, *_ = env.step(0)
    assert obs[:, 0, 0].tolist() == [c, c + 1, c + 2, c + 3]  # and it goes on shifting


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_frame_stack_rejects_bad_size(bad):
    with pytest.raises(ValueError, match=r"`frame_stack` must be an int >= 1"):
        FrameStack(FakeAtariEnv(rgb=False), n=bad)


# --------------------------------------------------------------------------- ClipReward


@pytest.mark.parametrize(
    ("raw", "clipped"), [(-3.0, -1.0), (-0.5, -1.0), (0.0, 0.0), (0.25, 1.0), (200.0, 1.0)]
)
def test_clip_reward_is_the_sign_as_a_float(raw, clipped):
    env = ClipReward(FakeAtariEnv(rewards={1: raw}))
    env.reset(seed=0)
    reward = env.step(0)[1]
    assert reward == clipped and type(reward) is float


# --------------------------------------------------------------------- the whole stack


def test_full_stack_on_the_fake_env_has_exact_spaces_and_passes_check_env():
    fake = FakeAtariEnv(frame_shape=(210, 160), life_loss_frames={9}, global_counter=False)
    env = wrap_atari(fake)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True, skip_close_check=True)
    unexpected = [
        str(w.message) for w in caught if "different from the unwrapped" not in str(w.message)
    ]
    assert unexpected == []


def test_full_stack_reports_raw_score_while_learning_rewards_are_clipped():
    fake = FakeAtariEnv(
        frame_shape=(210, 160),
        lives=2,
        rewards={6: 30.0, 13: 50.0},
        life_loss_frames={8, 16},
        action_meanings=MEANINGS_NO_FIRE,
    )
    env = wrap_atari(fake, noop_max=0)
    obs, _ = env.reset(seed=0)
    rewards, reports, n_terminated, n_steps = [], [], 0, 0
    for _ in range(10):
        obs, reward, terminated, truncated, info = env.step(2)
        n_steps += 1
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        rewards.append(reward)
        reports += [info["episode"]] if "episode" in info else []
        if terminated or truncated:
            n_terminated += 1
            if "episode" in info:
                break
            env.reset()
    assert n_terminated == 2  # one lost life, then the game
    assert sorted(set(rewards)) == [0.0, 1.0]
    assert [r["r"] for r in reports] == [80.0]
    assert [r["l"] for r in reports] == [n_steps] == [4]  # frames 1-4, 5-8 (life), 9-12, 13-16
    assert fake.n_resets == 1 and len(fake.actions) == 16  # only the agent's 4 x 4 frames


def test_full_stack_game_length_counts_only_agent_steps_with_fire_and_noops():
    """With FIRE and no-op starts, is `l` still exactly the number of step() calls?"""
    fake = FakeAtariEnv(frame_shape=(210, 160), lives=3, life_loss_frames={10, 30, 50})
    env = wrap_atari(fake, noop_max=5)
    env.reset(seed=1)
    start_frames = len(fake.actions)  # FIRE + no-ops, played before the game
    n_steps, n_terminated = 0, 0
    while True:
        *_, terminated, truncated, info = env.step(3)
        n_steps += 1
        n_terminated += terminated
        if "episode" in info:
            break
        if terminated or truncated:
            env.reset()
    assert n_terminated == 3 and info["episode"]["l"] == n_steps
    # frame 50 ends the game: 4 frames a step, the last step cut short; nothing else played
    assert fake.n_resets == 1 and fake.episode_frame == len(fake.actions) == 50
    assert n_steps == -(-(50 - start_frames) // 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clip_reward": "yes"}, r"`clip_reward` must be True or False, got 'yes'"),
        ({"game_stats": None}, r"`game_stats` must be True or False, got None"),
        ({"noop_max": -1}, r"`noop_max` must be an int >= 0, got -1"),
        ({"frame_skip": 0}, r"`frame_skip` must be an int >= 1, got 0"),
        ({"frame_stack": 0}, r"`frame_stack` must be an int >= 1, got 0"),
    ],
)
def test_wrap_atari_validates_its_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        wrap_atari(FakeAtariEnv(), **kwargs)


# ----------------------------------------------------------------------- SeedFirstReset


def test_seed_applies_to_the_users_first_reset_only():
    fake = FakeAtariEnv()
    env = SeedFirstReset(fake, seed=123)
    assert fake.n_resets == 0  # no hidden reset at construction
    env.reset()
    env.reset()
    assert fake.reset_seeds == [123, None]


def test_an_explicit_seed_on_the_first_reset_wins():
    fake = FakeAtariEnv()
    env = SeedFirstReset(fake, seed=123)
    env.reset(seed=5)
    env.reset()
    assert fake.reset_seeds == [5, None]


def test_seed_first_reset_seeds_the_action_space():
    a = SeedFirstReset(FakeAtariEnv(), seed=3)
    b = SeedFirstReset(FakeAtariEnv(), seed=3)
    assert [a.action_space.sample() for _ in range(20)] == [
        b.action_space.sample() for _ in range(20)
    ]


def test_seed_first_reset_rejects_a_non_int_seed():
    with pytest.raises(ValueError, match=r"`seed` must be an int >= 0, got '1'"):
        SeedFirstReset(FakeAtariEnv(), seed="1")
