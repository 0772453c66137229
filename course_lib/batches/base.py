"""What every env batch shares: argument checks, same-step autoreset, and merging per-env infos.

:class:`~course_lib.batches.sequential.EnvBatch` (one process) and
:class:`~course_lib.batches.parallel.ParallelEnvBatch` (one process per env) differ only in *where*
each env runs. Everything else lives here, so the two cannot drift apart:

* :func:`step_with_autoreset` steps ONE env and, if its episode ended, resets it at once
  (the same function runs in the parent for ``EnvBatch`` and in each worker process for
  ``ParallelEnvBatch``);
* :class:`BatchBase` checks ``env_fns``, ``seed`` and the actions, stacks the per-env results
  into arrays, and merges the per-env ``info`` dicts into gymnasium's vector ``infos``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from ..validation import check_int

__all__ = [
    "AUTORESET_CONTRACT",
    "check_discrete_actions",
    "ClosingVectorEnv",
    "BatchBase",
    "EnvStep",
    "check_env_fns",
    "check_seed",
    "naming_env",
    "step_with_autoreset",
]

#: What every batch's docstring says of autoreset, seeding and actions (the course's contract).
AUTORESET_CONTRACT = """
    Autoreset contract (gymnasium's ``SAME_STEP`` mode, ``metadata["autoreset_mode"]``):
    when env ``i`` ends in ``step`` (``terminated[i]`` or ``truncated[i]``), the batch resets
    it in that same call, so

    * ``obs[i]`` is already the FIRST observation of env ``i``'s next episode: act on it;
    * ``infos["final_obs"][i]`` is the last observation of the finished episode and
      ``infos["final_info"]`` holds that step's info (masks ``infos["_final_obs"][i]``,
      ``infos["_final_info"][i]``); ``final_obs`` is needed only to bootstrap the value
      of a truncated episode;
    * the info of the finishing step stays at the TOP level of ``infos`` (it is not replaced
      by the reset's info, which is dropped): a finished game's statistics are in
      ``infos["episode"]["r"][i]`` (score, float), ``["l"][i]`` (length, int) and
      ``["t"][i]`` (float), valid where the mask ``infos["_episode"][i]`` is True.

    Every per-env info key ``k`` becomes an array ``infos[k]`` of length N with a boolean
    mask ``infos["_k"]`` (nested dicts are merged the same way), as gymnasium does.

    Seeding: ``seed`` (constructor) is used by the first ``reset()`` called without a seed;
    ``reset(seed=k)`` seeds env ``i`` with ``k + i``; later ``reset()`` calls and autoresets
    continue each env's own random generator, so one seed makes a whole run reproducible.

    Actions: an int array (or list) of shape ``(N,)`` with values in ``[0, n)`` for a
    ``Discrete(n)`` action space; anything else raises ``ValueError`` before any env moves.
"""


EnvFn = Callable[[], gym.Env]


class EnvStep(NamedTuple):
    """What one env returns for one batch step, after the same-step autoreset.

    ``obs`` is the observation to act on next: when the episode ended (``terminated`` or
    ``truncated``) it is already the first observation of the NEXT episode, and the last
    observation of the finished one is in ``final_obs`` (``None`` when the episode goes on).
    ``info`` is the info of the step itself (with ``info["episode"]`` when a game ended),
    never the info of the reset that followed.
    """

    obs: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    final_obs: Any | None


def step_with_autoreset(env: gym.Env, action: Any) -> EnvStep:
    """Step ``env`` with ``action``; if the episode ended, reset it in the same call.

    The reset continues the env's own random generator (no seed), so a batch seeded once
    stays reproducible. The reset's info is dropped on purpose: the step's info holds the
    statistics of the finished game, and those must reach the learner.
    """
    obs, reward, terminated, truncated, info = env.step(action)
    final_obs = None
    if terminated or truncated:
        final_obs = obs
        obs, _reset_info = env.reset()
    return EnvStep(obs, float(reward), bool(terminated), bool(truncated), dict(info), final_obs)


def check_env_fns(env_fns: Any) -> list[EnvFn]:
    """Return ``env_fns`` as a list after checking it is a non-empty sequence of callables."""
    if isinstance(env_fns, (str, bytes)) or not isinstance(env_fns, Sequence):
        raise TypeError(
            f"`env_fns` must be a list of zero-argument functions that each make one env, "
            f"got {type(env_fns).__name__}: {env_fns!r}. "
            f"Example: [functools.partial(make_atari_env, env_id)] * 8."
        )
    if len(env_fns) == 0:
        raise ValueError("`env_fns` is empty: pass at least one function that makes an env.")
    for i, fn in enumerate(env_fns):
        if not callable(fn):
            raise TypeError(
                f"`env_fns[{i}]` must be callable (a function that returns a new env), got "
                f"{fn!r}. Pass the function itself, e.g. `make_env`, not `make_env()`."
            )
    return list(env_fns)


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """Return ``seed`` if it is ``None`` or a non-negative int, else raise ``ValueError``."""
    return check_int(name, seed, 0, allow_none=True, fix="env i of the batch gets seed + i")


def _normalise_episode(info: dict[str, Any]) -> dict[str, Any]:
    """Give ``info["episode"]`` fixed types (r, t: float; l: int) so the batched arrays do too.

    ``VectorEnv._add_info`` makes each array with the type of the FIRST value it sees: a score
    that happens to be the int ``0`` would make ``infos["episode"]["r"]`` an int array and
    truncate every later score.
    """
    episode = info.get("episode")
    if not isinstance(episode, dict):
        return info
    fixed = dict(episode)
    for key, kind in (("r", float), ("l", int), ("t", float)):
        if key in fixed:
            fixed[key] = kind(fixed[key])
    return {**info, "episode": fixed}


@contextlib.contextmanager
def naming_env(index: int) -> Iterator[None]:
    """Add the note "raised by env ``index``" to an exception that passes through."""
    try:
        yield
    except Exception as exc:
        if hasattr(exc, "add_note"):  # Python 3.11+
            exc.add_note(f"(raised by env {index} of the batch)")
        raise


def check_discrete_actions(actions: Any, n: int, low: int, high: int) -> np.ndarray:
    """Check a batch of ``Discrete`` actions BEFORE any env moves; return them as an int array.

    ``actions`` must be ``n`` integers in ``[low, high)`` (a list, a numpy array or anything
    numpy reads as one); the ``ValueError`` says what was expected and what came instead.
    """
    expected = f"an int array of shape ({n},) with values in [{low}, {high})"
    try:
        arr = np.asarray(actions)
    except (TypeError, ValueError) as exc:  # ragged lists, GPU tensors
        raise ValueError(
            f"`actions` must be {expected}, got {type(actions).__name__} that numpy cannot "
            f"read ({exc}). Pass a flat list or a CPU array (tensor.cpu().numpy())."
        ) from exc
    if arr.shape != (n,):
        raise ValueError(
            f"`actions` must be {expected}: one action per env. Got shape {arr.shape}"
            f" ({type(actions).__name__}). Pass actions for all {n} envs as a flat array."
        )
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"`actions` must be {expected}. Got dtype {arr.dtype}: {arr!r}. "
            f"Sample integer action indices, one per env, each drawn from the softmax of "
            f"that env's logits: the indices, not the probabilities or the logits."
        )
    bad = (arr < low) | (arr >= high)
    if bad.any():
        raise ValueError(
            f"`actions` must be {expected}. Got {arr.tolist()}: env(s) "
            f"{np.flatnonzero(bad).tolist()} got an action outside [{low}, {high})."
        )
    return arr


class ClosingVectorEnv(VectorEnv):
    """A ``VectorEnv`` usable as a context manager, closed on garbage collection too.

    Every course batch derives from it, so that ``with nature_dqn_env(...) as env:`` works and
    a forgotten batch does not leave worker processes or C++ threads behind.
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # A failed constructor has already closed the batch (or never set `closed`);
        # subclasses set up what close_extras() needs before anything can fail.
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - never raise from a finaliser
                pass


class BatchBase(ClosingVectorEnv):
    """Shared part of the env batches: spaces, checks, seeding, stacking and info merging.

    Subclasses implement three hooks that talk to the envs, wherever they run:
    ``_reset_envs(seeds, options) -> list of (obs, info)``,
    ``_step_envs(actions) -> list[EnvStep]`` and ``close_extras()``.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def _setup(
        self,
        num_envs: int,
        observation_spaces: Sequence[gym.Space],
        action_spaces: Sequence[gym.Space],
        seed: int | None,
    ) -> None:
        """Check that all envs agree on their spaces, then set the vector attributes."""
        self.num_envs = num_envs
        for i in range(1, num_envs):
            for kind, spaces in (("observation", observation_spaces), ("action", action_spaces)):
                if spaces[i] != spaces[0]:
                    raise ValueError(
                        f"All envs of a batch must have the same {kind} space, but env 0 has "
                        f"{spaces[0]} and env {i} has {spaces[i]}. "
                        f"Make every env with the same function and arguments."
                    )
        self.single_observation_space = observation_spaces[0]
        self.single_action_space = action_spaces[0]
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._first_seed = seed
        self._needs_reset_reason: str | None = "reset() has not been called yet."

    # ------------------------------------------------------------------ public API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env; returns ``(obs (N, *obs_shape), infos)``.

        ``seed=k`` seeds env ``i`` with ``k + i``. Without a seed the first reset uses the
        constructor's ``seed`` (if any) and later resets continue each env's generator.
        """
        self._check_open()
        seed = check_seed(seed)
        if seed is None:
            seed, self._first_seed = self._first_seed, None
        else:
            self._first_seed = None
        seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        try:
            results = self._reset_envs(seeds, options)
        except BaseException as exc:  # e.g. KeyboardInterrupt: some envs were reset, some not
            self._needs_reset_reason = f"the previous reset() stopped half-way ({exc!r})."
            raise
        self._needs_reset_reason = None
        infos: dict[str, Any] = {}
        for i, (_, info) in enumerate(results):
            infos = self._add_info(infos, _normalise_episode(info), i)
        return self._stack([obs for obs, _ in results]), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with ``actions[i]``; returns ``(obs, rewards, terminated, truncated, infos)``.

        Shapes: ``obs (N, *obs_shape)``, ``rewards float32 (N,)``, ``terminated``/``truncated``
        ``bool (N,)``. Finished envs are reset in this same call (see the class docstring).
        """
        self._check_open()
        if self._needs_reset_reason is not None:
            raise RuntimeError(
                f"{type(self).__name__}.step() cannot continue: {self._needs_reset_reason} "
                f"Call reset() to start fresh episodes (or close() the batch)."
            )
        actions = self._check_actions(actions)
        try:
            results = self._step_envs(actions)
        except BaseException as exc:  # e.g. KeyboardInterrupt, or an env that raised
            self._needs_reset_reason = (
                f"the previous step() stopped half-way ({exc!r}) after some envs had already "
                f"moved, so the observations you hold no longer match the envs."
            )
            raise
        infos: dict[str, Any] = {}
        for i, res in enumerate(results):
            info = _normalise_episode(res.info)
            if res.final_obs is not None:
                infos = self._add_info(infos, {"final_obs": res.final_obs, "final_info": info}, i)
            infos = self._add_info(infos, info, i)
        obs = self._stack([res.obs for res in results])
        rewards = np.array([res.reward for res in results], dtype=np.float32)
        terminated = np.array([res.terminated for res in results], dtype=np.bool_)
        truncated = np.array([res.truncated for res in results], dtype=np.bool_)
        return obs, rewards, terminated, truncated, infos

    # ------------------------------------------------------------------ hooks
    def _reset_envs(
        self, seeds: list[int | None], options: dict[str, Any] | None
    ) -> list[tuple[Any, dict[str, Any]]]:
        raise NotImplementedError

    def _step_envs(self, actions: list[Any]) -> list[EnvStep]:
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(
                f"This {type(self).__name__} is closed: make a new batch to keep playing."
            )

    def _stack(self, observations: list[Any]) -> Any:
        """Stack N single observations into one fresh array ``(N, *obs_shape)``."""
        out = create_empty_array(self.single_observation_space, self.num_envs, fn=np.empty)
        return concatenate(self.single_observation_space, observations, out)

    def _check_actions(self, actions: Any) -> list[Any]:
        """Check the actions BEFORE any env moves; return one Python action per env."""
        n = self.num_envs
        space = self.single_action_space
        if not isinstance(space, gym.spaces.Discrete):
            # Other spaces: only the length is ours to check; each env checks its own action.
            if len(actions) != n:
                raise ValueError(
                    f"`actions` must hold {n} actions (one per env), got {len(actions)}."
                )
            return list(actions)
        arr = check_discrete_actions(actions, n, int(space.start), int(space.start + space.n))
        return [int(a) for a in arr]
