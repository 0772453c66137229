"""Finished-game statistics: the raw scores the course judges an agent by.

The learning signal of an Atari agent is clipped to {-1, 0, 1} and cut at every life loss, so
the rewards in a trajectory say little about how well the agent *plays*. The env batches report
every finished **full game** (all lives lost, or truncation) in ``infos`` with gymnasium's vector
convention::

    infos["episode"]["r"][i]   raw, unclipped game score of env i
    infos["episode"]["l"][i]   its length in agent steps
    infos["_episode"][i]       True only where env i finished a game at this step

:class:`EpisodeStats` collects those games (score, length, and the agent step at which each
ended) so that plots and progress bars can show "mean raw score of the last 100 games", the
number the course's target is stated in. :func:`rolling_mean` is the smoothing used for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .validation import check_int

__all__ = ["EpisodeStats", "rolling_mean"]


def rolling_mean(values: Any, window: int) -> np.ndarray:
    """Mean of the last ``window`` values at every position: ``out[i] = mean(values[i-window+1 : i+1])``.

    At the start, where fewer than ``window`` values exist, the mean is over those there are
    (``out[0] = values[0]``), so the curve starts at the first point instead of being empty.
    Computed with one cumulative sum: O(n) whatever the window.

    >>> rolling_mean([1, 2, 3, 4], window=2).tolist()
    [1.0, 1.5, 2.5, 3.5]
    """
    window = check_int("window", window, 1, fix="try window=100")
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return x
    csum = np.concatenate(([0.0], np.cumsum(x)))
    idx = np.arange(1, x.size + 1)
    start = np.maximum(idx - window, 0)
    return (csum[idx] - csum[start]) / (idx - start)


class EpisodeStats:
    """Scores, lengths and end steps of every finished full game, in the order they ended.

    Fill it from the ``infos`` of a vector env step with :meth:`add_from_infos` (the
    :class:`~course_lib.runners.EnvRunner` does this for you: ``runner.episode_stats``), or
    directly with :meth:`add`. Read it with the array properties (:attr:`scores`,
    :attr:`lengths`, :attr:`steps`, :attr:`env_indices`) and :meth:`mean_recent`.

    Only envs whose mask ``infos["_episode"][i]`` is True are read: the other entries of
    ``infos["episode"]["r"]`` are placeholders (zeros) and would drag the mean down.
    """

    def __init__(self) -> None:
        self._scores: list[float] = []
        self._lengths: list[int] = []
        self._steps: list[int] = []
        self._env_indices: list[int] = []

    # -- filling ---------------------------------------------------------------------------
    def add(self, score: float, length: int, step: int, env_index: int = -1) -> None:
        """Record one finished game: raw ``score``, ``length`` in agent steps, the agent ``step``
        (over all envs) at which it ended, and the ``env_index`` it was played in (-1: unknown)."""
        self._scores.append(float(score))
        self._lengths.append(int(length))
        self._steps.append(int(step))
        self._env_indices.append(int(env_index))

    def add_from_infos(self, infos: Mapping[str, Any], step: int) -> int:
        """Record the games that ended at this step of a vector env; returns how many.

        ``infos`` is the dict returned by ``step``; ``step`` is the agent step count (over all
        envs) at the end of that step. Infos without an ``"episode"`` key add nothing. A single
        (non-vector) env's ``info["episode"] = {"r": score, "l": length}`` without a mask is
        accepted too and counts as env 0.
        """
        episode = infos.get("episode")
        if episode is None:
            return 0
        scores = np.atleast_1d(np.asarray(episode["r"], dtype=np.float64))
        lengths = np.atleast_1d(np.asarray(episode["l"]))
        mask = infos.get("_episode")
        if mask is None:
            mask = np.ones(scores.shape, dtype=bool)
        done = np.flatnonzero(np.asarray(mask, dtype=bool))
        if done.size == 0:
            return 0
        self._scores.extend(scores[done].tolist())
        self._lengths.extend(lengths[done].astype(np.int64).tolist())
        self._steps.extend([int(step)] * done.size)
        self._env_indices.extend(done.tolist())
        return int(done.size)

    def clear(self) -> None:
        """Forget every recorded game."""
        self.__init__()

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._scores)

    @property
    def scores(self) -> np.ndarray:
        """Raw game scores, ``float64 (n_games,)``, oldest first."""
        return np.asarray(self._scores, dtype=np.float64)

    @property
    def lengths(self) -> np.ndarray:
        """Game lengths in agent steps, ``int64 (n_games,)``."""
        return np.asarray(self._lengths, dtype=np.int64)

    @property
    def steps(self) -> np.ndarray:
        """Agent step (over all envs) at which each game ended, ``int64 (n_games,)``."""
        return np.asarray(self._steps, dtype=np.int64)

    @property
    def env_indices(self) -> np.ndarray:
        """Index of the env each game was played in, ``int64 (n_games,)`` (-1: unknown)."""
        return np.asarray(self._env_indices, dtype=np.int64)

    def mean_recent(self, k: int = 100, what: str = "scores") -> float:
        """Mean of the last ``k`` games' ``what`` (``"scores"`` or ``"lengths"``); NaN before any game."""
        k = check_int("k", k, 1, fix="try k=100")
        if what not in ("scores", "lengths"):
            raise ValueError(f"`what` must be 'scores' or 'lengths', got {what!r}.")
        values = self._scores if what == "scores" else self._lengths
        if not values:
            return math.nan
        recent = values[-k:]
        return float(sum(recent) / len(recent))

    def smoothed_scores(self, window: int = 100) -> np.ndarray:
        """:func:`rolling_mean` of the scores: the curve plotted as "mean of the last 100 games"."""
        return rolling_mean(self._scores, window)

    def to_dict(self) -> dict[str, list]:
        """Plain lists, ready for ``json.dump``: ``{"score", "length", "step", "env"}``."""
        return {
            "score": list(self._scores),
            "length": list(self._lengths),
            "step": list(self._steps),
            "env": list(self._env_indices),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeStats:
        """Rebuild from :meth:`to_dict` output (``"env"`` may be missing)."""
        stats = cls()
        scores, lengths, steps = data["score"], data["length"], data["step"]
        envs = data.get("env", [-1] * len(scores))
        if not len(scores) == len(lengths) == len(steps) == len(envs):
            raise ValueError(
                "`data` lists must have equal lengths, got "
                f"score={len(scores)}, length={len(lengths)}, step={len(steps)}, env={len(envs)}."
            )
        for s, n, t, e in zip(scores, lengths, steps, envs, strict=True):
            stats.add(s, n, t, e)
        return stats

    def __repr__(self) -> str:
        if not self._scores:
            return "EpisodeStats(0 games)"
        return (
            f"EpisodeStats({len(self)} games, mean of last 100 scores = "
            f"{self.mean_recent(100):.1f}, last game ended at step {self._steps[-1]})"
        )
