"""One entry point for every Atari environment the course uses: :func:`nature_dqn_env`.

It picks the Nature-DQN preprocessing (see :mod:`course_lib.atari_wrappers`) and, when asked
for several environments, a batch backend:

* ``"native"``: ale-py's C++ :class:`~ale_py.vector_env.AtariVectorEnv` behind an adapter
  (:mod:`course_lib.batches.native`) that restores the course semantics (raw scores, clipped
  rewards, life loss ends an episode, same-step autoreset);
* ``"subprocess"``: :class:`~course_lib.batches.parallel.ParallelEnvBatch`, one worker process per env;
* ``"sequential"``: :class:`~course_lib.batches.sequential.EnvBatch`, all envs in this process.

All three return the same observations, rewards, flags and statistics; they differ in speed
and in how easy they are to debug (``"sequential"`` runs every env in this process, where a
breakpoint works). Naming: the keyword is ``nenvs`` (the course's), the batch's attribute is
``num_envs`` (gymnasium's).
"""

from __future__ import annotations

import functools

from .atari_env import SeedFirstReset, make_atari_env
from .atari_ids import resolve_env_id
from .validation import check_int

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "nature_dqn_env"]

BACKENDS = ("native", "subprocess", "sequential")
#: Chosen by measurement: see ``benchmarks/env_throughput.py`` and the README.
DEFAULT_BACKEND = "native"


def nature_dqn_env(
    env_id: str,
    nenvs: int | None = None,
    seed: int | None = None,
    game_stats: bool = True,
    clip_reward: bool = True,
    backend: str = "auto",
):
    """Make one Atari env, or a batch of ``nenvs``, with the Nature-DQN preprocessing.

    Args:
        env_id: an ALE id without built-in frame skipping, e.g. ``"SpaceInvadersNoFrameskip-v4"``
            (the wrappers skip frames themselves).
        nenvs: ``None`` for a single gymnasium ``Env`` with observations ``uint8 (4, 84, 84)``;
            an integer ``N >= 1`` for a batch with the gymnasium 1.x vector API and
            observations ``uint8 (N, 4, 84, 84)``.
        seed: seed of the first ``reset()``; env ``i`` of a batch gets ``seed + i``.
        game_stats: report every finished full game (all lives lost, or truncation) in
            ``infos["episode"]`` (``"r"``: raw unclipped score, ``"l"``: length in agent steps)
            with the mask ``infos["_episode"]``.
        clip_reward: clip the learning reward to {-1, 0, 1} (the raw score stays in the game statistics).
        backend: ``"native"``, ``"subprocess"``, ``"sequential"`` or ``"auto"`` (the fastest
            one, :data:`DEFAULT_BACKEND`). Ignored when ``nenvs`` is ``None``.

    Raises:
        ValueError: for an unknown game, an id that would skip frames twice, a bad ``nenvs``
            or an unknown ``backend``; the message says what to use instead.
    """
    game = resolve_env_id(env_id)
    if backend == "auto":
        backend = DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ValueError(
            f"Unknown backend {backend!r}: expected one of {', '.join(map(repr, BACKENDS))} "
            f"or 'auto' (= {DEFAULT_BACKEND!r})."
        )
    make_one = functools.partial(
        make_atari_env, game.env_id, clip_reward=clip_reward, game_stats=game_stats
    )
    if nenvs is None:
        env = make_one()
        if seed is not None:
            # No hidden reset here: the user's first reset() is the seeded one, later resets
            # continue the RNG (as with gymnasium's reset(seed=...)).
            env = SeedFirstReset(env, seed)
        return env
    check_int("nenvs", nenvs, 1, allow_none=True, fix="None for one env, e.g. 8 for a batch")
    if backend == "native":
        from .batches.native import NativeAtariBatch

        return NativeAtariBatch(
            game.env_id, nenvs, seed=seed, clip_reward=clip_reward, game_stats=game_stats
        )
    from .batches.parallel import ParallelEnvBatch
    from .batches.sequential import EnvBatch

    batch_cls = ParallelEnvBatch if backend == "subprocess" else EnvBatch
    return batch_cls([make_one] * nenvs, seed=seed)
