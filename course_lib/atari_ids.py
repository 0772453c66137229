"""Check an Atari env id before anything is built, and say what to type instead when it is wrong.

The course wrappers (:mod:`course_lib.atari_wrappers`) skip 4 frames themselves and take the max
over the last two frames of each skip. They therefore need an emulator that advances **one**
frame per ``step`` and has **no sticky actions**: gymnasium's ``XxxNoFrameskip-v4`` ids, e.g.
``"SpaceInvadersNoFrameskip-v4"``. Those are the only ids :func:`resolve_env_id` accepts.

Why not the other ids that ale-py registers?

=====================================  ==========================================================
id                                      what it would do under the course wrappers
=====================================  ==========================================================
``SpaceInvaders-v4``                    the emulator already skips 2 to 4 frames at random:
                                        every agent step would last 8 to 16 frames
``SpaceInvadersDeterministic-v4``       the emulator already skips 4 frames: 16 frames per step
``ALE/SpaceInvaders-v5``                skips 4 frames and repeats the previous action with
                                        probability 0.25 (sticky actions, Machado et al. 2018)
``SpaceInvadersNoFrameskip-v0``         no frame skip, but sticky actions with probability 0.25
=====================================  ==========================================================

``gym.make("ALE/SpaceInvaders-v5", frameskip=1, repeat_action_probability=0.0)`` would give the
same emulator as the ``NoFrameskip-v4`` id, but the course keeps a single spelling so that the
single env, the subprocess batch and ale-py's native vector env are built from the same id.
ale-py ships more ROMs than it registers ``-v4`` ids for (e.g. Tetris); those are reported as
not supported, with the list of games that are.

Example::

    >>> resolve_env_id("SpaceInvadersNoFrameskip-v4")
    AtariGame(env_id='SpaceInvadersNoFrameskip-v4', game='space_invaders', name='SpaceInvaders')
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass

import ale_py
import gymnasium as gym

__all__ = ["AtariGame", "resolve_env_id", "supported_games"]

# Importing ale_py registers its ids; gym.register_envs makes that import explicit (and keeps
# linters from removing it). It runs once, when this module is first imported.
gym.register_envs(ale_py)

_SUFFIX = "NoFrameskip-v4"
# "ALE/" prefix (optional), game name, variant (NoFrameskip, Deterministic or none), version.
_ID_PATTERN = re.compile(
    r"^(?P<prefix>ALE/)?(?P<name>\s*[A-Za-z][\w\- ]*?)(?P<variant>(?i:NoFrameskip|Deterministic))?"
    r"(?:-v(?P<version>\d+))?$"
)


@dataclass(frozen=True)
class AtariGame:
    """A validated Atari game.

    Attributes:
        env_id: the gymnasium id to pass to ``gym.make``, e.g. ``"SpaceInvadersNoFrameskip-v4"``.
        game: ale-py's ROM name, e.g. ``"space_invaders"`` (what
            ``ale_py.vector_env.AtariVectorEnv(game=...)`` expects).
        name: the game's name in CamelCase, e.g. ``"SpaceInvaders"`` (handy for titles and files).
    """

    env_id: str
    game: str
    name: str


@functools.cache
def _games_by_name() -> dict[str, str]:
    """CamelCase name -> ROM name, for every game that has a ``NoFrameskip-v4`` id."""
    games: dict[str, str] = {}
    for env_id, spec in gym.registry.items():
        if env_id.endswith(_SUFFIX) and "/" not in env_id:
            games[env_id[: -len(_SUFFIX)]] = spec.kwargs["game"]
    assert games, "ale-py registered no NoFrameskip-v4 ids"
    return games


def supported_games() -> list[str]:
    """Every env id the course accepts, sorted, e.g. ``[..., "SpaceInvadersNoFrameskip-v4", ...]``."""
    return sorted(name + _SUFFIX for name in _games_by_name())


def _normalise(name: str) -> str:
    """``"Space_Invaders"``, ``"space invaders"``, ``"SPACEINVADERS"`` -> ``"spaceinvaders"``."""
    return re.sub(r"[\s_\-]", "", name).lower()


def _rom_without_v4_id(name: str) -> str | None:
    """The ROM name if ale-py ships ``name`` but registers no ``-v4`` id for it, else None."""
    for rom in ale_py.roms.get_all_rom_ids():
        if _normalise(rom) == _normalise(name) and rom not in _games_by_name().values():
            return rom
    return None


def _did_you_mean(name: str) -> list[str]:
    """Up to three supported env ids whose game name is closest to ``name``."""
    by_key = {_normalise(n): n for n in _games_by_name()}
    if _normalise(name) in by_key:  # only the case, spaces or underscores are wrong
        return [by_key[_normalise(name)] + _SUFFIX]
    close = difflib.get_close_matches(_normalise(name), list(by_key), n=3, cutoff=0.6)
    return [by_key[key] + _SUFFIX for key in close]


def _unknown_game_error(env_id: str, name: str) -> ValueError:
    rom = _rom_without_v4_id(name)
    if rom is not None:
        return ValueError(
            f"Atari game {name!r} (ROM {rom!r}) ships with ale-py but has no "
            f"'{_SUFFIX}' id, so the course wrappers cannot use it (got env_id={env_id!r}). "
            f"Pick one of the {len(_games_by_name())} classic games, e.g. "
            f"'SpaceInvaders{_SUFFIX}'; course_lib.atari_ids.supported_games() lists them all."
        )
    suggestions = _did_you_mean(name)
    hint = (
        "did you mean " + " or ".join(map(repr, suggestions)) + "?"
        if suggestions
        else "course_lib.atari_ids.supported_games() lists the accepted ids."
    )
    return ValueError(f"Unknown Atari game {name!r} in env_id={env_id!r}: {hint}")


def resolve_env_id(env_id: str) -> AtariGame:
    """Validate an Atari env id and return the game it names.

    Args:
        env_id: a gymnasium id of the form ``"<Game>NoFrameskip-v4"``, e.g.
            ``"SpaceInvadersNoFrameskip-v4"``, ``"BreakoutNoFrameskip-v4"``, ``"PongNoFrameskip-v4"``.

    Returns:
        the :class:`AtariGame` with the id to make and ale-py's ROM name.

    Raises:
        TypeError: ``env_id`` is not a ``str``.
        ValueError: an unknown game (the message suggests the closest ids), a game without a
            ``NoFrameskip-v4`` id, or an id that would skip frames twice or use sticky actions
            (the message gives the id to use instead).
    """
    if not isinstance(env_id, str):
        raise TypeError(
            f"env_id must be a str such as 'SpaceInvadersNoFrameskip-v4', "
            f"got {env_id!r} of type {type(env_id).__name__}."
        )
    match = _ID_PATTERN.match(env_id)
    if match is None:
        raise ValueError(
            f"Cannot read env_id={env_id!r}: expected '<Game>{_SUFFIX}', "
            f"e.g. 'SpaceInvaders{_SUFFIX}'."
        )
    name = match["name"]
    games = _games_by_name()
    if name not in games:
        # A wrong spelling of a known game ("spaceinvaders", "Space_Invaders") or an unknown one.
        raise _unknown_game_error(env_id, name)
    good_id = name + _SUFFIX
    if env_id == good_id:
        assert good_id in gym.registry, good_id
        return AtariGame(env_id=good_id, game=games[name], name=name)

    prefix, variant, version = match["prefix"], match["variant"], match["version"]
    if variant not in (None, "NoFrameskip", "Deterministic"):
        problem = "is not a registered Atari id (ids are case-sensitive)"
    elif variant == "Deterministic" or (variant is None and version is not None):
        # SpaceInvaders-v0/-v4 (random skip of 2 to 4 frames), XxxDeterministic-v4 (skip 4),
        # ALE/SpaceInvaders-v5 (skip 4 and sticky actions).
        problem = "already skips frames; the course wrappers skip 4 frames themselves"
    elif variant == "NoFrameskip" and not prefix and version == "0":
        problem = (
            "uses sticky actions (the previous action is repeated with probability 0.25); "
            "the course uses the deterministic v4 emulator"
        )
    else:
        problem = "is not a registered Atari id"
    raise ValueError(f"env_id={env_id!r} {problem}: use {good_id!r}.")
