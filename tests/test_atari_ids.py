"""Tests of env-id validation: good ids, suggestions for typos, ids that would skip frames twice."""

from __future__ import annotations

import gymnasium as gym
import pytest

from course_lib.atari_ids import AtariGame, resolve_env_id, supported_games


@pytest.mark.parametrize(
    ("env_id", "game", "name"),
    [
        ("SpaceInvadersNoFrameskip-v4", "space_invaders", "SpaceInvaders"),
        ("BreakoutNoFrameskip-v4", "breakout", "Breakout"),
        ("PongNoFrameskip-v4", "pong", "Pong"),
        ("MontezumaRevengeNoFrameskip-v4", "montezuma_revenge", "MontezumaRevenge"),
    ],
)
def test_good_ids_resolve_to_the_rom_name(env_id, game, name):
    assert resolve_env_id(env_id) == AtariGame(env_id=env_id, game=game, name=name)


def test_every_supported_id_is_registered_without_frame_skip_or_sticky_actions():
    ids = supported_games()
    assert len(ids) >= 50 and "SpaceInvadersNoFrameskip-v4" in ids
    for env_id in ids:
        kwargs = gym.spec(env_id).kwargs
        assert kwargs["frameskip"] == 1 and kwargs["repeat_action_probability"] == 0.0
        assert resolve_env_id(env_id).game == kwargs["game"]


def test_atari_game_is_frozen():
    game = resolve_env_id("PongNoFrameskip-v4")
    with pytest.raises(AttributeError):
        game.env_id = "BreakoutNoFrameskip-v4"


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("SpaceInvader", "SpaceInvadersNoFrameskip-v4"),
        ("SpaceInvaderNoFrameskip-v4", "SpaceInvadersNoFrameskip-v4"),
        ("spaceinvadersnoframeskip-v4", "SpaceInvadersNoFrameskip-v4"),
        ("space_invaders", "SpaceInvadersNoFrameskip-v4"),
        ("BrekoutNoFrameskip-v4", "BreakoutNoFrameskip-v4"),
        (" PongNoFrameskip-v4", "PongNoFrameskip-v4"),
        ("MsPackmanNoFrameskip-v4", "MsPacmanNoFrameskip-v4"),
    ],
)
def test_typos_get_the_closest_game_as_a_suggestion(typo, suggestion):
    with pytest.raises(ValueError, match=r"Unknown Atari game .* did you mean") as error:
        resolve_env_id(typo)
    assert f"'{suggestion}'" in str(error.value)
    assert repr(typo) in str(error.value)


def test_a_name_far_from_every_game_points_to_the_list():
    with pytest.raises(ValueError, match=r"Unknown Atari game 'Xyzzy'.*supported_games\(\)"):
        resolve_env_id("XyzzyNoFrameskip-v4")


@pytest.mark.parametrize(
    "env_id",
    [
        "SpaceInvaders-v4",
        "SpaceInvaders-v0",
        "SpaceInvadersDeterministic-v4",
        "SpaceInvadersDeterministic-v0",
        "ALE/SpaceInvaders-v5",
    ],
)
def test_ids_that_already_skip_frames_are_refused_with_the_right_id(env_id):
    with pytest.raises(
        ValueError,
        match=r"already skips frames; the course wrappers skip 4 frames themselves: "
        r"use 'SpaceInvadersNoFrameskip-v4'",
    ):
        resolve_env_id(env_id)


def test_sticky_action_id_is_refused_with_the_right_id():
    with pytest.raises(ValueError, match=r"sticky actions.*use 'PongNoFrameskip-v4'"):
        resolve_env_id("PongNoFrameskip-v0")


@pytest.mark.parametrize("env_id", ["Pong", "ALE/PongNoFrameskip-v4", "Pongnoframeskip-v4"])
def test_incomplete_or_misspelt_ids_of_a_known_game_get_the_right_id(env_id):
    with pytest.raises(ValueError, match=r"not a registered Atari id.*use 'PongNoFrameskip-v4'"):
        resolve_env_id(env_id)


@pytest.mark.parametrize("env_id", ["ALE/Tetris-v5", "TetrisNoFrameskip-v4"])
def test_a_rom_without_a_v4_id_is_explained(env_id):
    with pytest.raises(ValueError, match=r"'Tetris' \(ROM 'tetris'\) ships with ale-py but has no"):
        resolve_env_id(env_id)


@pytest.mark.parametrize("env_id", ["", "Pong!!", "-v4"])
def test_unreadable_ids_show_the_expected_form(env_id):
    with pytest.raises(ValueError, match=r"expected '<Game>NoFrameskip-v4'"):
        resolve_env_id(env_id)


@pytest.mark.parametrize("env_id", [None, 3, b"PongNoFrameskip-v4"])
def test_a_non_str_id_is_a_type_error_naming_the_form(env_id):
    with pytest.raises(TypeError, match=r"env_id must be a str such as 'SpaceInvadersNoFrameskip"):
        resolve_env_id(env_id)
