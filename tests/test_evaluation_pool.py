"""Emulators kept between evaluations (course_lib.env_pool), and the evaluation's lean envs: a
seeded reset that restores the emulator instead of loading its ROM again
(course_lib.atari_env.RestoreOnSeededReset), a frame skip that fetches only the frames it uses
(course_lib.atari_env.EmulatorFrameSkip).

The promise: an evaluation played with envs that played before, and a game started from the
restored emulator, give exactly the games of new envs and of ale-py's own reset: the same
frames, rewards, scores, lengths and endings. First the pool's bookkeeping on the course's stack
over tests/fake_atari.py's scripted emulator, then real ROMs, frame by frame.
"""

from __future__ import annotations

import functools
import threading

import gymnasium as gym
import numpy as np
import pytest

from course_lib.atari_env import RESTORABLE_GAMES, RestoreOnSeededReset, make_atari_env, wrap_atari
from course_lib.atari_ids import resolve_env_id
from course_lib.env_pool import EnvPool
from course_lib.evaluation import EvaluationProtocol, game_seeds, play_games
from tests.fake_atari import MEANINGS_NO_FIRE, FakeAtariEnv


class Maker:
    """The course's stack on a scripted game (a life lost every 40 frames); counts the envs it
    made and the ones closed."""

    def __init__(self):
        self.made, self.closed = 0, 0

    def __call__(self, render_mode=None):
        self.made += 1
        emulator = FakeAtariEnv(action_meanings=MEANINGS_NO_FIRE, rgb=False,
                                life_loss_frames=(40, 80, 120), render_mode=render_mode)  # fmt: skip
        env = wrap_atari(emulator, clip_reward=False, noop_max=5)
        close = env.close

        def counted_close():
            self.closed += 1
            close()

        env.close = counted_close
        return env


def frame_agent(n_actions):
    """Logits that depend on the frames (a fixed random map of every 4th pixel), so that any
    difference in what the agent sees changes the actions it draws."""
    weights = np.random.default_rng(0).standard_normal((4 * 21 * 21, n_actions)) / 30

    def answer(observations):
        pixels = observations[:, :, ::4, ::4].reshape(len(observations), -1)
        return pixels.astype(np.float64) / 255 @ weights

    return answer


FAKE = EvaluationProtocol("Fake", games=5, games_at_once=3, max_agent_steps=25)


def test_a_pooled_evaluation_makes_its_envs_once_and_plays_as_new_envs_do():
    """The second evaluation takes the first one's envs (none made), and every evaluation,
    pooled or not, gives the same games for the same seeds."""
    pool, maker = EnvPool(), Maker()
    agent = frame_agent(3)
    alone = play_games(agent, FAKE, [1, 2, 3, 4, 5], make_env=Maker())
    first = play_games(agent, FAKE, [1, 2, 3, 4, 5], make_env=maker, pool=pool)
    assert maker.made == 3 and maker.closed == 0 and pool.idle((maker, None)) == 3
    other = play_games(agent, FAKE, [9, 8, 7, 6, 5], make_env=maker, pool=pool)
    again = play_games(agent, FAKE, [1, 2, 3, 4, 5], make_env=maker, pool=pool)
    assert maker.made == 3 and pool.idle((maker, None)) == 3
    assert alone.games == first.games == again.games != other.games
    assert other.games[-1] == first.games[-1]  # seed 5 in both, after other games


def test_the_rendering_env_is_pooled_apart_and_a_failed_evaluation_closes_its_envs():
    pool, maker = EnvPool(), Maker()
    agent = frame_agent(3)
    play_games(agent, FAKE, [1, 2, 3, 4, 5], make_env=maker, pool=pool, replay_steps=4)
    # Game 0 in the rendering env, games 1 and 2 beside it, the others in theirs.
    assert pool.idle((maker, "rgb_array")) == 1 and pool.idle((maker, None)) == 2
    calls = []

    def breaks_on_the_third_batch(observations):
        calls.append(len(observations))
        if len(calls) == 3:
            raise RuntimeError("the agent broke")
        return agent(observations)

    with pytest.raises(RuntimeError, match="the agent broke"):
        play_games(breaks_on_the_third_batch, FAKE, [1, 2, 3, 4, 5], make_env=maker, pool=pool)
    assert pool.idle((maker, None)) == 0 and maker.closed == 3  # taken, then closed


def test_the_pool_keeps_at_most_keep_idle_envs_of_a_kind_and_lends_each_to_one_caller():
    pool, maker = EnvPool(keep=2), Maker()
    envs = [pool.take("kind", maker) for _ in range(3)]
    for env in envs:
        pool.give_back("kind", env)
    assert pool.idle("kind") == 2 and maker.closed == 1
    lent, barrier = [], threading.Barrier(4)

    def borrow():
        barrier.wait()
        env = pool.take("kind", maker)
        lent.append(env)

    threads = [threading.Thread(target=borrow) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(env) for env in lent}) == 4 and maker.made == 5  # 2 idle ones, 2 new
    pool.close()
    with pytest.raises(ValueError, match="`keep`"):
        EnvPool(keep=-1)


# ----- real ROMs -------------------------------------------------------------------------------

COURSE_GAMES = ["SpaceInvadersNoFrameskip-v4", "BreakoutNoFrameskip-v4", "PongNoFrameskip-v4"]


def _game(env, seed, steps):
    """A game from ``reset(seed=seed)``: every observation, reward, flag and info of its first
    ``steps`` agent steps (the game goes on after a lost life), with actions drawn from
    ``seed``. The observation of the step that ends the game is left out: nobody reads it, and
    :class:`EmulatorFrameSkip` does not fetch all it would need."""
    obs, info = env.reset(seed=seed)
    trace = [(obs.tobytes(), sorted(info.items(), key=str))]
    actions = np.random.default_rng(seed).integers(env.action_space.n, size=steps)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(int(action))
        over = "episode" in info
        trace.append((None if over else obs.tobytes(), reward, terminated, truncated,
                      info["lives"], info.get("episode", {}).get("r")))  # fmt: skip
        if over:
            break
        if terminated or truncated:
            obs, info = env.reset()
            trace.append((obs.tobytes(), info["new_game"]))
    return trace


@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.parametrize("env_id", COURSE_GAMES)
def test_the_evaluation_s_lean_env_plays_the_games_of_the_course_stack_frame_by_frame(env_id):
    """The course's games, seeds one after the other in the same env (each starts from an
    emulator that played the one before to its end or 500 steps), then three games cut by the
    emulator's frame cap (at a frame of the step that the no-ops decide): each agent step's
    observation, reward,
    flags and lives, and every reset's, are the plain stack's (ale-py's reset, every frame
    fetched), and the lean env never loads the ROM again."""
    assert resolve_env_id(env_id).game in RESTORABLE_GAMES
    for cap in (108_000, 401):
        plain = make_atari_env(env_id, clip_reward=False, max_game_frames=cap)
        lean = make_atari_env(env_id, clip_reward=False, max_game_frames=cap,
                              restore_on_seed=True, fetch_skipped_frames=False)  # fmt: skip
        assert isinstance(lean.unwrapped, type(plain.unwrapped))
        loads = []
        lean.unwrapped.load_game = functools.partial(loads.append, 1)  # counted, not made
        seeds = (3, 4) if cap == 108_000 else (5, 6, 7)
        traces = [(_game(lean, seed, 500), _game(plain, seed, 500)) for seed in seeds]
        assert all(mine == theirs for mine, theirs in traces) and loads == []
        if cap < 108_000:  # each game cut at the cap: a break within a step
            assert all(mine[-1][3] and mine[-1][-1] is not None for mine, _ in traces)
        plain.close()
        lean.close()


def test_the_lean_frame_skip_needs_a_reset_first():
    env = make_atari_env("PongNoFrameskip-v4", fetch_skipped_frames=False)
    with pytest.raises(gym.error.ResetNeeded, match="before calling env.reset"):
        env.step(0)
    env.close()


@pytest.mark.rom
def test_only_the_course_s_checked_games_restore_others_load_their_rom_again():
    def restores(env_id):
        env = make_atari_env(env_id, restore_on_seed=True)
        try:
            layer = env
            while hasattr(layer, "env"):
                if isinstance(layer, RestoreOnSeededReset):
                    return True
                layer = layer.env
            return False
        finally:
            env.close()

    assert restores("PongNoFrameskip-v4")
    assert not restores("AdventureNoFrameskip-v4")  # its mode selection draws from the seed
    assert not restores("MsPacmanNoFrameskip-v4")  # not checked here


@pytest.mark.rom
@pytest.mark.slow
def test_pooled_evaluations_score_as_the_plain_course_stack_and_nothing_carries_over():
    """Space Invaders, 3 games of up to 250 steps with an agent that looks at the frames: the
    pooled and restored evaluation A equals the plain stack's (new envs, ale-py's reset), and A
    again after evaluation B on the same emulators is A."""
    protocol = EvaluationProtocol(COURSE_GAMES[0], games=3, games_at_once=2, max_agent_steps=250)
    plain = functools.partial(make_atari_env, protocol.env_id, clip_reward=False,
                              noop_max=protocol.noop_max, max_game_frames=protocol.max_game_frames)  # fmt: skip
    agent, pool = frame_agent(6), EnvPool()
    seeds_a, seeds_b = game_seeds(3, 1), game_seeds(3, 2)
    want = play_games(agent, protocol, seeds_a, make_env=plain, replay_steps=5)
    first = play_games(agent, protocol, seeds_a, pool=pool, replay_steps=5)
    other = play_games(agent, protocol, seeds_b, pool=pool)
    again = play_games(agent, protocol, seeds_a, pool=pool, replay_steps=5)
    assert first.games == want.games == again.games != other.games
    assert pool.idle() == 2  # two games at once, the replay's game in one of them
    assert all(np.array_equal(a, b) for a, b in zip(first.replay, want.replay, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(again.replay, want.replay, strict=True))
    pool.close()
