"""NativeAtariBatch on real ROMs: does the C++ vector env keep the course's contract?

Every test plays a few hundred agent steps at most. Ground truth comes from the ALE itself:
raw rewards (``clip_reward=False``) summed per env between game ends, and the number of life
losses a game must have before its game over (Breakout: 5 lives).
"""

from __future__ import annotations

import numpy as np
import pytest

from course_lib.batches.native import NativeAtariBatch

pytestmark = [pytest.mark.rom, pytest.mark.slow]

BREAKOUT = "BreakoutNoFrameskip-v4"
SPACE_INVADERS = "SpaceInvadersNoFrameskip-v4"


def random_actions(n_actions: int, steps: int, nenvs: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_actions, size=(steps, nenvs))


def test_shapes_dtypes_and_spaces():
    """Are obs uint8 (N, 4, 84, 84), rewards float32 (N,) and flags bool (N,)?"""
    with NativeAtariBatch(SPACE_INVADERS, 3, seed=0) as env:
        assert env.num_envs == 3 and not hasattr(env, "nenvs")
        assert env.single_observation_space.shape == (4, 84, 84)
        assert env.observation_space.shape == (3, 4, 84, 84)
        assert env.single_action_space.n == 6
        obs, infos = env.reset()
        assert obs.shape == (3, 4, 84, 84) and obs.dtype == np.uint8
        assert infos["lives"].tolist() == [3, 3, 3]
        assert obs[:, -1].max() > 0, "the newest frame of a fresh game is not black"
        obs, rewards, terminated, truncated, infos = env.step(np.zeros(3, dtype=np.int64))
        assert obs.shape == (3, 4, 84, 84) and obs.dtype == np.uint8
        assert rewards.shape == (3,) and rewards.dtype == np.float32
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert terminated.shape == truncated.shape == (3,)
        assert env.observation_space.contains(obs)


def test_clipped_rewards_are_the_signs_of_the_raw_rewards():
    """With the same seed and actions, is the clipped reward sign(raw) and the score the same?"""
    actions = random_actions(6, 250, 2)
    raw_env = NativeAtariBatch(SPACE_INVADERS, 2, seed=3, clip_reward=False)
    clip_env = NativeAtariBatch(SPACE_INVADERS, 2, seed=3, clip_reward=True)
    with raw_env, clip_env:
        raw_env.reset()
        clip_env.reset()
        raw_seen, clip_seen = [], []
        for a in actions:
            raw_seen.append(raw_env.step(a)[1])
            clip_seen.append(clip_env.step(a)[1])
    raw_seen, clip_seen = np.array(raw_seen), np.array(clip_seen)
    assert raw_seen.max() > 1, "Space Invaders scores 5 to 30 per alien: raw rewards must show it"
    assert set(np.unique(clip_seen)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(clip_seen, np.sign(raw_seen))


@pytest.mark.slow
def test_game_statistics_are_full_games_of_raw_score():
    """Is every reported score the raw sum over a whole game (all 5 lives), and never per life?"""
    nenvs, steps = 4, 1100
    with NativeAtariBatch(BREAKOUT, nenvs, seed=11, clip_reward=False) as env:
        _, infos = env.reset()
        lives = infos["lives"].copy()
        score, length = np.zeros(nenvs), np.zeros(nenvs, dtype=int)
        life_losses = np.zeros(nenvs, dtype=int)
        games = []
        for a in random_actions(4, steps, nenvs, seed=1):
            obs, reward, terminated, truncated, infos = env.step(a)
            score += reward
            length += 1
            game_over = infos.get("_episode", np.zeros(nenvs, dtype=bool))
            for i in range(nenvs):
                if game_over[i]:
                    assert terminated[i] or truncated[i]
                    assert infos["episode"]["r"][i] == score[i]
                    assert infos["episode"]["l"][i] == length[i]
                    assert life_losses[i] == 4, "a Breakout game has 5 lives: 4 losses, then over"
                    assert infos["lives"][i] == 5, "obs[i] must already be the next game's"
                    assert infos["_final_obs"][i]
                    assert not np.array_equal(infos["final_obs"][i], obs[i])
                    assert obs[i, 0].max() == 0, "a new game's stack starts with black frames"
                    games.append(score[i])
                    score[i], length[i], life_losses[i] = 0, 0, 0
                elif terminated[i]:
                    # A life loss: the episode ends for learning, the game goes on.
                    assert infos["lives"][i] == lives[i] - 1
                    assert "episode" not in infos or infos["episode"]["r"][i] == 0
                    life_losses[i] += 1
                else:
                    assert infos["lives"][i] == lives[i]
            lives = infos["lives"].copy()
    assert len(games) >= 8, f"only {len(games)} games finished in {steps} steps"
    assert max(games) > 0


def test_life_loss_is_terminated_without_episode_statistics():
    """Does a life loss give terminated=True, no `_episode`, and keep the same game running?"""
    with NativeAtariBatch(BREAKOUT, 2, seed=5) as env:
        _, infos = env.reset()
        frames_before = infos["episode_frame_number"].copy()
        for a in random_actions(4, 200, 2, seed=2):
            obs, _, terminated, _, infos = env.step(a)
            if terminated.any():
                i = int(np.flatnonzero(terminated)[0])
                assert not infos.get("_episode", np.zeros(2, dtype=bool))[i]
                assert infos["lives"][i] == 4
                assert infos["episode_frame_number"][i] > frames_before[i]
                assert infos["_final_obs"][i]
                np.testing.assert_array_equal(infos["final_obs"][i], obs[i])
                return
            frames_before = infos["episode_frame_number"].copy()
    pytest.fail("no life was lost in 200 random steps of Breakout")


def test_truncation_at_the_frame_cap_reports_the_game():
    """At `max_episode_frames` frames, is the game truncated, reported, and restarted?"""
    frames = 160  # 40 agent steps of 4 frames: before Space Invaders' first life loss
    with NativeAtariBatch(SPACE_INVADERS, 2, seed=0, max_episode_frames=frames) as env:
        env.reset()
        actions = random_actions(6, 40, 2, seed=4)
        score = np.zeros(2)
        for t, a in enumerate(actions):
            _, reward, terminated, truncated, infos = env.step(a)
            score += reward
            if t < len(actions) - 1:
                assert not truncated.any() and not terminated.any()
        assert truncated.all() and not terminated.any()
        assert infos["_episode"].all()
        assert infos["episode"]["l"].tolist() == [40, 40]
        np.testing.assert_array_equal(infos["episode"]["r"], score)
        assert (infos["episode_frame_number"] < frames).all(), "a new game has started"


@pytest.mark.slow
def test_seeding_is_reproducible_and_env_i_gets_seed_plus_i():
    """Same seed and actions, same game; does env 1 of seed 7 play like env 0 of seed 8?"""
    actions = random_actions(4, 60, 2, seed=9)

    def play(nenvs: int, seed: int, reseed: bool = False) -> np.ndarray:
        with NativeAtariBatch(BREAKOUT, nenvs, seed=None if reseed else seed) as env:
            if reseed:
                env.reset(seed=seed + 100)
                env.step(actions[0, :nenvs])
            obs, _ = env.reset(seed=seed) if reseed else env.reset()
            seen = [obs]
            for a in actions[:, :nenvs]:
                seen.append(env.step(a)[0])
        return np.array(seen)

    first = play(2, seed=7)
    np.testing.assert_array_equal(first, play(2, seed=7))
    np.testing.assert_array_equal(first, play(2, seed=7, reseed=True))
    shifted = play(1, seed=8)
    with NativeAtariBatch(BREAKOUT, 2, seed=7) as env:
        env.reset()
        obs = [env.reset(seed=8)[0][0]]  # reset(seed=k): env 0 gets k
        for a in actions:
            obs.append(env.step(a)[0][0])
    np.testing.assert_array_equal(np.array(obs), shifted[:, 0])
    assert not np.array_equal(first[:, 0], shifted[:, 0]), "different seeds, same game?"


@pytest.mark.parametrize(
    "actions, match",
    [
        (np.zeros(3, dtype=np.int64), r"shape \(2,\)"),
        (np.zeros((2, 1), dtype=np.int64), r"shape \(2,\)"),
        (np.array([0.0, 1.0]), "dtype float64"),
        (np.array([0, 4]), r"\[0, 4\)"),
        (np.array([-1, 0]), r"\[0, 4\)"),
    ],
)
def test_bad_actions_raise_value_error_before_stepping(actions, match):
    """Do wrong shapes, float dtypes and out-of-range actions raise a ValueError that says why?"""
    with NativeAtariBatch(BREAKOUT, 2, seed=0) as env:
        env.reset()
        with pytest.raises(ValueError, match=match):
            env.step(actions)
        env.step([1, 1])  # a list of ints is fine, and the batch is still usable


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"nenvs": 0}, ValueError),
        ({"nenvs": 2, "seed": -1}, ValueError),
        ({"nenvs": 2, "seed": 1.5}, ValueError),
        ({"nenvs": 2, "noop_max": -1}, ValueError),
        ({"nenvs": 2, "env_id": "NotAGameNoFrameskip-v4"}, ValueError),
    ],
)
def test_bad_arguments_are_rejected(kwargs, error):
    """Are a bad nenvs, seed, noop_max or game rejected with a ValueError?"""
    kwargs = {"env_id": BREAKOUT, **kwargs}
    with pytest.raises(error):
        NativeAtariBatch(**kwargs)


def test_close_is_idempotent_and_stops_the_batch():
    """Can close() be called twice, and does a closed batch refuse to step?"""
    env = NativeAtariBatch(BREAKOUT, 2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    env.close()
    env.close()
    assert env.closed
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.zeros(2, dtype=np.int64))
    with NativeAtariBatch(BREAKOUT, 1) as env2:
        env2.reset()
    assert env2.closed
