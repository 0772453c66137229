"""The ``"sequential"`` backend: N copies of an env in this process, stepped one after the other.

:class:`EnvBatch` is slow, but a breakpoint or ``print`` inside an env just works: use it to
debug. It has the contract of every batch of :func:`course_lib.nature_dqn_env` (gymnasium 1.x
vector API); the ``"subprocess"`` backend is :mod:`course_lib.batches.parallel`, the
``"native"`` one :mod:`course_lib.batches.native`::

    make_one = functools.partial(make_atari_env, "PongNoFrameskip-v4")
    with EnvBatch([make_one] * 8, seed=0) as batch:               # N = 8
        obs, infos = batch.reset()                                # obs: uint8 (8, 4, 84, 84)
        actions = np.random.randint(batch.single_action_space.n, size=batch.num_envs)
        obs, rewards, terminated, truncated, infos = batch.step(actions)  # rewards: (8,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import (
    AUTORESET_CONTRACT,
    BatchBase,
    EnvFn,
    EnvStep,
    check_env_fns,
    check_seed,
    naming_env,
    step_with_autoreset,
)

__all__ = ["EnvBatch"]


class EnvBatch(BatchBase):
    """N envs in this process, stepped one after the other (the debugging batch).

    ``step`` returns ``obs (N, *obs_shape)`` with the single observation dtype,
    ``rewards float32 (N,)``, ``terminated``/``truncated`` ``bool (N,)`` and merged ``infos``.
    An exception in an env propagates unchanged (with a note naming the env), so a debugger
    stops right inside the env's code; as some envs may have moved and others not, ``step``
    then refuses to run until ``reset()``, as after a ``KeyboardInterrupt``.
    """

    __doc__ = (__doc__ or "") + AUTORESET_CONTRACT

    def __init__(self, env_fns: Sequence[EnvFn], seed: int | None = None) -> None:
        self.envs: list[Any] = []
        env_fns = check_env_fns(env_fns)
        seed = check_seed(seed)
        try:
            self.envs = [fn() for fn in env_fns]
            self._setup(
                len(self.envs),
                [env.observation_space for env in self.envs],
                [env.action_space for env in self.envs],
                seed,
            )
        except BaseException:
            self.close()
            raise

    def _reset_envs(
        self, seeds: list[int | None], options: dict[str, Any] | None
    ) -> list[tuple[Any, dict[str, Any]]]:
        results = []
        for i, (env, seed) in enumerate(zip(self.envs, seeds, strict=True)):
            with naming_env(i):
                obs, info = env.reset(seed=seed, options=options)
            results.append((obs, dict(info)))
        return results

    def _step_envs(self, actions: list[Any]) -> list[EnvStep]:
        results = []
        for i, (env, action) in enumerate(zip(self.envs, actions, strict=True)):
            with naming_env(i):
                results.append(step_with_autoreset(env, action))
        return results

    def close_extras(self, **kwargs: Any) -> None:
        """Close every env that was made."""
        for env in self.envs:
            env.close()
