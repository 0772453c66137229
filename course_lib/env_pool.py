"""Envs kept between evaluations in one process, so that each emulator is made once.

Making an Atari env loads its ROM (a tenth of a second of CPU, as much as a thousand emulator
frames); an evaluation of 8 games makes 8 of them. A grader plays one evaluation per submission,
hundreds in one process, so :func:`course_lib.evaluation.play_games` can take its envs from an
:class:`EnvPool` and give them back when its games are over, instead of making and closing them.

What makes this safe: every game starts with ``reset(seed=...)``, which restarts the emulator
and every wrapper of the course's stack (a new game: black frames, its own no-ops, counters at
zero), so what one evaluation played is never seen by the next. An evaluation that fails
midway closes its envs instead of giving them back. The pool keeps idle envs only, at most
``keep`` of each kind, and hands each to one caller at a time; it is safe to share between
threads.

>>> pool = EnvPool()
>>> result = play_games(agent, GRADER_PROTOCOL, seeds, pool=pool)  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from .validation import check_int

__all__ = ["EnvPool"]


class EnvPool:
    """Idle envs by kind (a hashable key: the env's settings), at most ``keep`` of each."""

    def __init__(self, keep: int = 16):
        self.keep = check_int("keep", keep, 0, fix="two evaluations of 8 games at once need 16")
        self._lock = threading.Lock()
        self._idle: dict[Hashable, list[Any]] = {}

    def take(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """An idle env of kind ``key``, or a new one from ``make()`` when there is none."""
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
        return make()  # outside the lock: other threads do not wait for a ROM to load

    def give_back(self, key: Hashable, env: Any) -> None:
        """Keep ``env`` for the next :meth:`take` of ``key`` (closed if ``keep`` are idle)."""
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.keep:
                idle.append(env)
                return
        env.close()

    def idle(self, key: Hashable | None = None) -> int:
        """How many envs of kind ``key`` (None: of every kind) wait for a caller."""
        with self._lock:
            if key is None:
                return sum(len(idle) for idle in self._idle.values())
            return len(self._idle.get(key, ()))

    def close(self) -> None:
        """Close every idle env (envs taken and not given back are their caller's)."""
        with self._lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            env.close()
