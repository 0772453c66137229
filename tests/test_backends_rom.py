"""The same contract for every backend of ``nature_dqn_env``, checked on real ROMs.

Each test runs once per backend ("native", "subprocess", "sequential") and plays a few hundred
agent steps with random actions. The ground truth is the raw reward the batch itself returns
with ``clip_reward=False``, summed per env between two game ends, and the number of lives a
game has (Breakout 5, Space Invaders 3): a reported score must cover a whole game, never a life.
The last test plays a Python batch and the native one side by side: same games, step for step.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from course_lib import BACKENDS, DEFAULT_BACKEND, nature_dqn_env
from course_lib.atari_env import make_atari_env
from course_lib.batches.native import NativeAtariBatch
from course_lib.batches.sequential import EnvBatch

pytestmark = pytest.mark.rom

SPACE_INVADERS = "SpaceInvadersNoFrameskip-v4"
BREAKOUT = "BreakoutNoFrameskip-v4"


def play_games(env, n_actions: int, min_games: int, max_steps: int, seed: int = 0) -> list[dict]:
    """Play random actions until ``min_games`` games ended; return one record per game.

    Each record holds the reported ``r`` and ``l``, and what the test saw itself: the sum of
    the returned rewards (``seen``), the number of ``step`` calls (``steps``) and the number of
    episode ends inside the game (``episodes``: life losses + the game over).
    """
    n = env.num_envs
    rng = np.random.default_rng(seed)
    seen, steps, episodes = np.zeros(n), np.zeros(n, dtype=int), np.zeros(n, dtype=int)
    games: list[dict] = []
    env.reset()
    for _ in range(max_steps):
        _, reward, terminated, truncated, infos = env.step(rng.integers(0, n_actions, size=n))
        seen += reward
        steps += 1
        episodes += terminated | truncated
        ended = infos.get("_episode", np.zeros(n, dtype=bool))
        for i in np.flatnonzero(ended):
            assert terminated[i] or truncated[i], "a game can only end with its episode"
            games.append(
                {
                    "r": float(infos["episode"]["r"][i]),
                    "l": int(infos["episode"]["l"][i]),
                    "seen": float(seen[i]),
                    "steps": int(steps[i]),
                    "episodes": int(episodes[i]),
                    "truncated": bool(truncated[i]),
                }
            )
            seen[i], steps[i], episodes[i] = 0.0, 0, 0
        if len(games) >= min_games:
            break
    return games


def test_auto_backend_is_the_default_one():
    """Is backend="auto" the DEFAULT_BACKEND, one of the three?"""
    assert DEFAULT_BACKEND in BACKENDS == ("native", "subprocess", "sequential")
    with (
        nature_dqn_env(BREAKOUT, nenvs=1, seed=0) as auto,
        nature_dqn_env(BREAKOUT, nenvs=1, seed=0, backend=DEFAULT_BACKEND) as explicit,
    ):
        assert type(auto) is type(explicit)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_api_shapes_and_clipped_rewards(backend):
    """Does every backend give uint8 (8, 4, 84, 84) obs, float32 {-1, 0, 1} rewards, bool flags?"""
    with nature_dqn_env(SPACE_INVADERS, nenvs=8, seed=0, backend=backend) as env:
        assert isinstance(env, gym.vector.VectorEnv)
        assert env.num_envs == 8 and not hasattr(env, "nenvs")
        assert env.single_observation_space.shape == (4, 84, 84)
        assert env.single_observation_space.dtype == np.uint8
        assert isinstance(env.single_action_space, gym.spaces.Discrete)
        assert env.single_action_space.n == 6
        obs, infos = env.reset()
        assert isinstance(infos, dict)
        assert obs.shape == (8, 4, 84, 84) and obs.dtype == np.uint8
        rng = np.random.default_rng(0)
        rewards_seen = []
        for _ in range(60):
            obs, rewards, terminated, truncated, infos = env.step(rng.integers(0, 6, size=8))
            assert obs.shape == (8, 4, 84, 84) and obs.dtype == np.uint8
            assert rewards.shape == (8,) and rewards.dtype == np.float32
            assert terminated.shape == truncated.shape == (8,)
            assert terminated.dtype == truncated.dtype == np.bool_
            rewards_seen.append(rewards)
        values = set(np.unique(rewards_seen).tolist())
        assert values <= {-1.0, 0.0, 1.0}
        assert 1.0 in values, "8 random Space Invaders players shoot some aliens in 60 steps"
        with pytest.raises(ValueError, match=r"\(8,\)"):
            env.step(np.zeros(7, dtype=np.int64))
        with pytest.raises(ValueError, match=r"\[0, 6\)"):
            env.step(np.full(8, 6))
    assert env.closed


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_breakout_scores_are_raw_full_game_sums(backend):
    """Is episode r the raw sum over all 5 lives of a game, and l its length in agent steps?"""
    env = nature_dqn_env(BREAKOUT, nenvs=3, seed=1, clip_reward=False, backend=backend)
    with env:
        games = play_games(env, n_actions=4, min_games=4, max_steps=700, seed=1)
    assert len(games) >= 4, f"only {len(games)} Breakout games ended in 700 random steps"
    for game in games:
        assert not game["truncated"]
        assert game["episodes"] == 5, f"a game must span its 5 lives: {game}"
        # No backend plays a step the agent did not choose (no no-op, no FIRE after a lost
        # life): the length is exactly the number of the agent's step() calls.
        assert game["l"] == game["steps"], game
        assert game["r"] == game["seen"], game
    assert any(game["r"] > 0 for game in games)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_space_invaders_scores_are_per_game_not_per_life(backend):
    """Does a random Space Invaders player get whole-game scores (3 lives), far above a life's?"""
    env = nature_dqn_env(SPACE_INVADERS, nenvs=2, seed=2, clip_reward=False, backend=backend)
    with env:
        games = play_games(env, n_actions=6, min_games=2, max_steps=1500, seed=2)
    assert len(games) >= 2, f"only {len(games)} Space Invaders games ended in 1500 steps"
    for game in games:
        assert game["episodes"] == 3, f"a game must span its 3 lives: {game}"
        # Every point is scored by one of the agent's steps and returned as its reward.
        assert game["seen"] == game["r"], game
        assert game["r"] % 5 == 0 and game["r"] > 0, game
        assert game["l"] == game["steps"], game
        assert game["steps"] > 150, f"a 3-life game lasts hundreds of agent steps: {game}"


@pytest.mark.slow
def test_python_and_native_backends_play_the_very_same_breakout_games():
    """Same seed, same actions, same start: are the games step for step identical?

    The random no-op starts come from different generators, so both sides start without
    them: Python ``noop_max=0`` (it turns them off) and native ``noop_max=1`` (it draws
    0..noop_max-1 no-ops, so 0).
    Then both press FIRE for one frame at a new game and nothing after a lost life, so the two
    emulators go through the same frames: same observations (black-padded stack at a new game,
    the stack kept at a life loss), rewards, flags, game lengths and scores.
    """
    seed, nenvs = 4, 2
    factory = functools.partial(make_atari_env, BREAKOUT, clip_reward=False, noop_max=0)
    python = EnvBatch([factory] * nenvs, seed=seed)
    native = NativeAtariBatch(BREAKOUT, nenvs, seed=seed, clip_reward=False, noop_max=1)
    with python, native:
        obs_py, _ = python.reset()
        obs_native, _ = native.reset()
        np.testing.assert_array_equal(obs_py, obs_native)
        assert not obs_py[:, :3].any(), "a new game's stack starts with 3 black frames"
        rng = np.random.default_rng(seed)
        life_losses, games = np.zeros(nenvs, dtype=int), {"python": [], "native": []}
        for _ in range(1_000):
            actions = rng.integers(0, 4, size=nenvs)
            obs_py, r_py, term_py, trunc_py, info_py = python.step(actions)
            obs_native, r_native, term_native, trunc_native, info_native = native.step(actions)
            np.testing.assert_array_equal(r_py, r_native)
            np.testing.assert_array_equal(term_py, term_native)
            np.testing.assert_array_equal(trunc_py, trunc_native)
            np.testing.assert_array_equal(obs_py, obs_native)
            for name, info in (("python", info_py), ("native", info_native)):
                for i in np.flatnonzero(info.get("_episode", np.zeros(nenvs, dtype=bool))):
                    games[name].append((i, info["episode"]["r"][i], info["episode"]["l"][i]))
            ended = info_native.get("_episode", np.zeros(nenvs, dtype=bool))
            life_losses += term_native & ~ended
            for i in np.flatnonzero(ended):
                assert life_losses[i] == 4, "5 lives: 4 life losses, then the game over"
                life_losses[i] = 0
            if len(games["native"]) >= 3:
                break
    assert len(games["native"]) >= 3, f"only {games['native']} games ended in 1000 steps"
    assert games["python"] == games["native"]
