"""The evaluation protocol (course_lib.evaluation): its arithmetic on fake envs, then real ROMs.

The fake games are the course's own wrapper stack (``wrap_atari``) on the scripted emulator of
tests/fake_atari.py, so a game's raw score, length and ending are known frame by frame; the
sampling is checked on tests/fake_envs.py's ``CounterEnv``, whose reward shows the action taken.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from course_lib.atari_env import wrap_atari
from course_lib.evaluation import (
    COURSE_PROTOCOL,
    GRADER_PROTOCOL,
    AgentAnswerError,
    EvaluationProtocol,
    game_seeds,
    model_agent,
    play_games,
)
from tests.fake_atari import MEANINGS_NO_FIRE, FakeAtariEnv
from tests.fake_envs import REWARD_SCALE, CounterEnv

SPACE_INVADERS = "SpaceInvadersNoFrameskip-v4"


def fake_game(render_mode=None, **script):
    """The course's stack on a scripted game, without no-ops or FIRE: agent step k (from 1)
    plays emulator frames 4k-3 .. 4k."""
    emulator = FakeAtariEnv(action_meanings=MEANINGS_NO_FIRE, render_mode=render_mode, **script)
    return wrap_atari(emulator, clip_reward=False, noop_max=0)


def uniform_agent(n_actions=3):
    return lambda observations: np.zeros((len(observations), n_actions))


def protocol(**changes):
    return EvaluationProtocol(**{"env_id": "Fake", "games": 1, **changes})


def test_a_game_scores_its_raw_points_over_every_life():
    """Is the score the sum of the raw (unclipped) rewards of all three lives, the game
    ending at the last life lost, and its length the agent's steps?"""
    script = dict(
        lives=3, rewards={2: 7.0, 9: 30.0, 30: 200.0, 45: 5.0}, life_loss_frames=(12, 24, 36)
    )

    def make_env(render_mode=None):
        return fake_game(render_mode, **script)

    result = play_games(uniform_agent(), protocol(games=2), game_seeds(2, 0), make_env=make_env)
    # Lives go at frames 12, 24, 36 (agent steps 3, 6, 9): the rewards of frames 2, 9, 30
    # count, raw; frame 45 comes after the game is over.
    assert [game.score for game in result.games] == [237.0, 237.0]
    assert [(game.steps, game.ended, game.capped) for game in result.games] == [
        (9, "game over", False)
    ] * 2
    assert (result.mean, result.std, result.steps, result.capped) == (237.0, 0.0, 18, 0)


def test_each_ended_game_is_reported_as_it_ends():
    """Does ``on_game_end`` (a progress bar's hook) hear of every game once, with its result?"""
    ended = []
    def make_env(render_mode=None):  # a game that ends (the bare fake never does)
        return fake_game(render_mode, lives=1, game_over_frame=40)

    result = play_games(uniform_agent(), protocol(games=3, games_at_once=2), game_seeds(3, 1),
                        make_env=make_env, on_game_end=ended.append)  # fmt: skip
    assert sorted(ended, key=lambda game: game.seed) == sorted(result.games, key=lambda g: g.seed)
    assert len(ended) == 3


def test_the_step_cap_stops_a_game_and_counts_its_score_so_far_as_capped():
    script = dict(lives=1, rewards={2: 10.0, 10: 20.0, 30: 40.0}, game_over_frame=40)
    capped = protocol(games=3, max_agent_steps=5)  # 20 frames: the rewards of frames 2 and 10
    result = play_games(uniform_agent(), capped, game_seeds(3, 1),
                        make_env=lambda render_mode=None: fake_game(render_mode, **script))  # fmt: skip
    assert [(g.score, g.steps, g.ended) for g in result.games] == [(30.0, 5, "step cap")] * 3
    assert result.capped == 3 and result.steps == 15
    assert "3 games stopped at the cap of 5 agent steps" in result.describe()
    assert result.summary()["capped"] == 3
    uncapped = play_games(uniform_agent(), protocol(games=1), [1],
                          make_env=lambda render_mode=None: fake_game(render_mode, **script))  # fmt: skip
    assert (uncapped.games[0].score, uncapped.games[0].steps, uncapped.capped) == (70.0, 10, 0)
    assert "cap" not in uncapped.describe()


def test_a_game_cut_by_the_emulator_frame_cap_ends_with_its_score():
    script = dict(lives=3, rewards={5: 50.0, 30: 1.0}, truncate_frame=20)
    result = play_games(uniform_agent(), protocol(), [3],
                        make_env=lambda render_mode=None: fake_game(render_mode, **script))  # fmt: skip
    assert (result.games[0].score, result.games[0].steps, result.games[0].ended) == (
        50.0,
        5,
        "frame cap",
    )
    assert not result.games[0].capped


class ActionLog(CounterEnv):
    """CounterEnv (reward 10 * action + t) that keeps every action it was given."""

    log: list[int] = []

    def step(self, action):
        ActionLog.log.append(int(action))
        return super().step(action)


def counter_env(render_mode=None, episode_length=6):
    return CounterEnv(episode_length=episode_length, n_actions=4)


def test_each_game_depends_on_its_seed_alone_not_on_how_many_play_at_once():
    """Game k starts from seeds[k] and samples from its own generator: the same seeds give the
    same games whether 1, 3 or 8 play side by side, and other seeds give other games."""
    seeds = game_seeds(7, seed=5)
    results = [
        play_games(
            uniform_agent(4), protocol(games=7, games_at_once=n), seeds, make_env=counter_env
        )
        for n in (1, 3, 8)
    ]
    scores = [result.scores.tolist() for result in results]
    assert scores[0] == scores[1] == scores[2]
    assert len(set(scores[0])) > 1  # sampled actions: the games differ from one another
    other = play_games(
        uniform_agent(4), protocol(games=7), game_seeds(7, seed=6), make_env=counter_env
    )
    assert other.scores.tolist() != scores[0]
    assert [game.seed for game in results[0].games] == seeds


def test_sampled_actions_follow_the_softmax_and_greedy_takes_the_argmax():
    logits = np.log([1.0, 1.0, 6.0, 2.0])  # softmax: 0.1, 0.1, 0.6, 0.2

    def agent(observations):
        return np.tile(logits, (len(observations), 1))

    ActionLog.log = []
    play_games(agent, protocol(games=16), game_seeds(16, 0),
               make_env=lambda render_mode=None: ActionLog(episode_length=250, n_actions=4))  # fmt: skip
    counts = np.bincount(ActionLog.log, minlength=4) / len(ActionLog.log)
    assert np.allclose(counts, [0.1, 0.1, 0.6, 0.2], atol=0.03), counts
    greedy = play_games(agent, protocol(games=2, actions="greedy"), [0, 1], make_env=counter_env)
    # always action 2: reward 10 * 2 + t for t = 1..6
    assert greedy.scores.tolist() == [6 * 2 * REWARD_SCALE + 21] * 2


@pytest.mark.parametrize(
    "answer, message",
    [
        (
            lambda obs: np.zeros((len(obs), 3)),
            r"shape \(B, A\) = \(2, 4\).*answered shape \(2, 3\)",
        ),
        (lambda obs: np.zeros(len(obs)), r"answered shape \(2,\)"),
        (lambda obs: np.full((len(obs), 4), np.nan), "not all finite"),
        (lambda obs: np.full((len(obs), 4), np.inf), "not all finite"),
        (lambda obs: "left", "answered str"),
        (lambda obs: [[1, 2, 3, "x"]] * len(obs), "answered list"),
    ],
)
def test_an_answer_that_is_not_logits_is_an_agent_answer_error(answer, message):
    envs = []

    class Closing(CounterEnv):
        closed = False

        def close(self):
            self.closed = True

    def make_env(render_mode=None):
        envs.append(Closing(episode_length=3, n_actions=4))
        return envs[-1]

    with pytest.raises(AgentAnswerError, match=message):
        play_games(answer, protocol(games=2), [0, 1], make_env=make_env)
    assert envs and all(env.closed for env in envs)  # nothing left open


def test_what_the_agent_raises_propagates_and_a_torch_answer_is_accepted():
    def broken(observations):
        raise RuntimeError("my forward pass broke")

    with pytest.raises(RuntimeError, match="my forward pass broke"):
        play_games(broken, protocol(), [0], make_env=counter_env)
    torch_answer = play_games(
        lambda obs: torch.zeros(len(obs), 4), protocol(), [0], make_env=counter_env
    )
    assert torch_answer.games[0].steps == 6


def test_the_agent_sees_observations_only_as_a_fresh_uint8_batch():
    seen = []

    def agent(observations):
        seen.append(observations)
        observations[:] = 0  # scribbling on its input changes nothing of the driver's
        return np.zeros((len(observations), 4))

    result = play_games(agent, protocol(games=3, games_at_once=2), [0, 1, 2], make_env=counter_env)
    assert {batch.shape[0] for batch in seen} == {1, 2}  # 2 side by side, then the third alone
    assert all(batch.dtype == np.uint8 and batch.shape[1:] == (2,) for batch in seen)
    assert result.steps == 18


def test_seeds_are_one_per_game_in_range():
    with pytest.raises(ValueError, match=r"one seed per game, 3, got 2: use game_seeds\(3, seed\)"):
        play_games(uniform_agent(), protocol(games=3), [0, 1], make_env=counter_env)
    with pytest.raises(ValueError, match="seeds"):
        play_games(uniform_agent(), protocol(), [-1], make_env=counter_env)
    assert game_seeds(5, seed=3) == game_seeds(5, seed=3) != game_seeds(5, seed=4)
    drawn = game_seeds(50)
    assert len(set(drawn)) == 50 and all(0 <= seed < 2**31 - 1 for seed in drawn)


def test_the_replay_keeps_the_driver_s_own_frames_of_game_0():
    script = dict(lives=1, game_over_frame=40)
    result = play_games(uniform_agent(), protocol(games=2), [0, 1], replay_steps=4,
                        make_env=lambda render_mode=None: fake_game(render_mode, **script))  # fmt: skip
    assert len(result.replay) == 4
    # FakeAtariEnv's RGB frame holds its frame counter: one agent step = 4 frames apart
    counters = [int(frame[0, 0, 0]) for frame in result.replay]
    assert np.diff(counters).tolist() == [4, 4, 4]


def test_the_protocol_checks_its_settings_and_round_trips_as_plain_data():
    for bad, message in (
        ({"games": 0}, "`games` must be an int >= 1"),
        ({"actions": "argmax"}, "`actions` must be one of 'sampled', 'greedy'"),
        ({"max_agent_steps": 0}, "`max_agent_steps` must be None or an int >= 1"),
        ({"env_id": ""}, "`env_id` must be an ALE id"),
    ):
        with pytest.raises(ValueError, match=message):
            EvaluationProtocol(**bad)
    assert EvaluationProtocol.from_dict(GRADER_PROTOCOL.to_dict()) == GRADER_PROTOCOL
    with pytest.raises(ValueError, match=r"Unknown evaluation setting\(s\) \['seed'\]"):
        EvaluationProtocol.from_dict({"seed": 1})
    assert COURSE_PROTOCOL.max_agent_steps is None and COURSE_PROTOCOL.actions == "sampled"
    assert GRADER_PROTOCOL.max_agent_steps is not None and GRADER_PROTOCOL.actions == "sampled"
    assert "108,000 frames" in COURSE_PROTOCOL.describe()


# ----- real ROMs (a few hundred agent steps) ---------------------------------------------------


@pytest.mark.rom
def test_space_invaders_a_scripted_agent_from_a_fixed_seed_scores_what_it_scored_before():
    """An agent that always fires (greedy), 150 agent steps from seed 7: a known score, game 0
    of the course's Atari stack with raw rewards, and the same whether the games play one by
    one or side by side."""

    def fire(observations):
        logits = np.zeros((len(observations), 6))
        logits[:, 1] = 1.0  # FIRE
        return logits

    capped = EvaluationProtocol(SPACE_INVADERS, games=2, max_agent_steps=150, actions="greedy")
    together = play_games(fire, capped, [7, 8])
    one_by_one = play_games(fire, dataclasses.replace(capped, games_at_once=1), [7, 8])
    assert together.games == one_by_one.games
    assert [(game.steps, game.ended) for game in together.games] == [(150, "step cap")] * 2
    assert together.games[0].score == 75.0  # 5 to 30 points an alien, raw
    assert all(game.score % 5 == 0 and game.score > 0 for game in together.games)


@pytest.fixture
def one_torch_thread():
    """One thread: on 2 loaded cores, two threads make a batch of two 10 times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.rom
def test_space_invaders_the_frame_cap_and_an_untrained_network_s_samples(one_torch_thread):
    """The emulator's frame cap ends a game as 'frame cap'; an untrained network's sampled
    games are reproducible from their seeds."""
    torch.manual_seed(0)
    from solutions.reference import make_model

    agent = model_agent(make_model(6).eval())
    short = EvaluationProtocol(SPACE_INVADERS, games=2, max_game_frames=400)
    first, again = (play_games(agent, short, [11, 12]) for _ in range(2))
    assert first.games == again.games
    for game in first.games:
        # 400 frames minus the FIRE and the 1 to 30 no-op frames of the start, 4 a step
        assert game.ended == "frame cap" and 92 <= game.steps <= 100


@pytest.mark.rom
def test_the_evaluate_command_plays_a_saved_agent_as_the_grader_would(
    tmp_path, capsys, one_torch_thread
):
    """``python -m solutions.evaluate a2c_agent.json --protocol grader`` loads the bundle into
    the reference network and plays the grader's protocol (here shortened to 2 games of 40
    steps); a file that is not a saved agent is refused with what is wrong."""
    import json

    from course_lib.saved_agent import AGENT_FILE, pack_agent
    from solutions import evaluate as evaluate_module
    from solutions.reference import make_model

    torch.manual_seed(0)
    bundle = pack_agent(make_model(6).state_dict(), SPACE_INVADERS, 6, {"score": 1.0})
    (tmp_path / AGENT_FILE).write_text(json.dumps(bundle))
    argv = [
        str(tmp_path / AGENT_FILE),
        "--protocol",
        "grader",
        "--games",
        "2",
        "--max-agent-steps",
        "40",
    ]
    mean = evaluate_module.main(argv)
    out, err = capsys.readouterr()
    assert out.startswith(f"{SPACE_INVADERS}: mean raw score {mean:.1f}")
    assert "over 2 games" in out and "2 games stopped at the cap of 40 agent steps" in out
    assert "evaluation" in err and "2/2" in err  # the bar counted the games as they ended
    evaluate_module.main([*argv, "--no-progress"])
    assert capsys.readouterr().err == ""
    (tmp_path / "bad.json").write_text(json.dumps({**bundle, "format": "other"}))
    with pytest.raises(SystemExit) as exited:
        evaluate_module.main([str(tmp_path / "bad.json")])
    assert exited.value.code == 2 and "the saved agent cannot be read" in capsys.readouterr().err
