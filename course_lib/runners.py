"""The runner: plays ``nsteps`` steps in every env of a batch and returns the trajectory.

A2C learns from short rollouts: T = ``nsteps`` steps in each of N envs, then one gradient step.
:class:`EnvRunner` does the playing; what A2C does with the result is up to the *transforms*
(e.g. ``ComputeValueTargets``, then ``MergeTimeBatch``), applied in order to the trajectory.

The trajectory returned by :meth:`EnvRunner.get_next` (T = nsteps, N = number of envs)::

    {
      # every key returned by policy.act(obs), one entry per step t = 0 .. T-1:
      "actions":      [np.int64 (N,)] * T,          # converted from a torch tensor if needed
      "logits":       [torch (N, A)]  * T,          # kept with their autograd graph
      "log_probs":    [torch (N,)]    * T,
      "values":       [torch (N,)]    * T,
      # added by the runner:
      "observations": [uint8 (N, 4, 84, 84)] * T,   # the obs action t was taken in
      "rewards":      [float32 (N,)] * T,           # r_t, received after action t
      "resets":       [bool (N,)]    * T,           # terminated | truncated after action t
      "state": {"latest_observation": uint8 (N, 4, 84, 84),   # obs after the last step
                "env_steps": T},
    }

Alignment: ``rewards[t]`` and ``resets[t]`` are the outcome of ``actions[t]`` taken in
``observations[t]``. When ``resets[t][i]`` is True, env i was auto-reset in the same step, so
``observations[t + 1][i]`` (or ``latest_observation[i]``) is the first obs of a *new* episode:
do not bootstrap through it (that is what the ``(1 - reset_t)`` factor in the value targets is for).

Truncation is treated as termination: ``resets[t]`` is ``terminated | truncated``, so a game cut
by the time limit (108,000 emulator frames, 30 minutes of play) gets no bootstrap either, as if
its last state were worth 0. Strictly, a cut game should bootstrap from the value of its last
observation, which the batch keeps for exactly this case (``infos["final_obs"][i]``, mask
``infos["_final_obs"]``); the course drops the distinction because A2C agents rarely play a
game that long, and the runner does not pass ``final_obs`` on. Add it, with ``truncated`` as its
own key, if your agent survives 27,000 agent steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .episode_stats import EpisodeStats
from .validation import check_int

__all__ = ["EnvRunner"]

Trajectory = dict[str, Any]


def _to_actions(actions: Any, nenvs: int) -> np.ndarray:
    """Turn what ``policy.act`` returned under ``"actions"`` into ``int64 (nenvs,)``."""
    if hasattr(actions, "detach") and hasattr(actions, "cpu"):  # a torch tensor
        actions = actions.detach().cpu().numpy()
    actions = np.asarray(actions)
    if actions.shape != (nenvs,):
        raise ValueError(
            f"policy.act(obs)['actions'] must have shape ({nenvs},) (one action per env), got "
            f"shape {actions.shape}. Pitfalls: a draw of shape (N, 1) (one index per env, without "
            "the extra axis) or the (N, A) probabilities instead of sampled action indices."
        )
    if actions.dtype.kind not in "iu":
        raise TypeError(
            f"policy.act(obs)['actions'] must hold integer action indices, got dtype "
            f"{actions.dtype}. Draw one action index per env from softmax(logits), not the "
            "probabilities themselves."
        )
    return actions.astype(np.int64, copy=False)


class EnvRunner:
    """Collects ``nsteps`` steps from a batch of envs with a policy, then applies transforms.

    Args:
        env: a batch with the gymnasium 1.x vector API (``num_envs``, ``reset()``,
            ``step(actions) -> (obs, rewards, terminated, truncated, infos)``), e.g.
            ``nature_dqn_env(env_id, nenvs=8)``. The first :meth:`get_next` calls ``env.reset()``
            (the batch uses the seed it was made with); later calls continue where the last stopped.
        policy: an object with ``act(obs) -> dict`` that holds at least ``"actions"`` (one
            integer action per env); every key it returns is collected per step.
        nsteps: T, the number of steps per env in each trajectory (the course uses 5).
        transforms: callables applied in order as ``transform(trajectory)``; each changes the
            trajectory in place (a transform that returns a new dict instead is also accepted:
            that dict replaces the trajectory for the next transforms).
        step_var: where the agent-step count starts (default 0), e.g. the step of a checkpoint.

    Attributes:
        step_var: agent steps over all envs so far, an ``int`` (T*N more after every
            :meth:`get_next`); assignable, e.g. ``runner.step_var = 0``.
        episode_stats: an :class:`~course_lib.episode_stats.EpisodeStats` with every full game
            finished so far: raw score, length, and the agent step at which it ended.
        num_envs: N, the number of envs (the batch's ``num_envs``).

    Example::

        runner = EnvRunner(env, policy, nsteps=5, transforms=[ComputeValueTargets(policy),
                                                               MergeTimeBatch()])
        trajectory = runner.get_next()      # 5 steps x 8 envs
        runner.episode_stats.mean_recent()  # mean raw score of the last 100 games
    """

    def __init__(
        self,
        env: Any,
        policy: Any,
        nsteps: int,
        transforms: Iterable[Callable[[Trajectory], Any]] | None = None,
        step_var: int = 0,
    ) -> None:
        nenvs = getattr(env, "num_envs", None)
        if nenvs is None:
            raise TypeError(
                f"`env` must be a batch of envs with a `num_envs` attribute, got {type(env).__name__}. "
                "Make one with nature_dqn_env(env_id, nenvs=8) (nenvs=1 for a single env)."
            )
        if not callable(getattr(policy, "act", None)):
            raise TypeError(
                f"`policy` must have a method act(obs) -> dict, got {type(policy).__name__} "
                "without one. Wrap your model in a Policy class whose act returns "
                "{'actions': ..., 'logits': ..., 'log_probs': ..., 'values': ...}."
            )
        check_int("nsteps", nsteps, 1, fix="try nsteps=5")
        transforms = list(transforms) if transforms is not None else []
        for i, transform in enumerate(transforms):
            if not callable(transform):
                raise TypeError(
                    f"`transforms[{i}]` must be callable as transform(trajectory), got "
                    f"{type(transform).__name__}. Did you pass the class instead of an instance?"
                )
        step_var = check_int("step_var", step_var, 0)
        self.env = env
        self.policy = policy
        self.nsteps = int(nsteps)
        self.num_envs = int(nenvs)
        self.transforms = transforms
        self.step_var = step_var
        self.episode_stats = EpisodeStats()
        self._latest_observation: np.ndarray | None = None

    @property
    def latest_observation(self) -> np.ndarray | None:
        """The obs the next :meth:`get_next` starts from (``None`` before the first call)."""
        return self._latest_observation

    # -- playing ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        """Reset the env batch now; the next :meth:`get_next` starts from the returned obs."""
        obs, _ = self.env.reset()
        self._latest_observation = np.array(obs)
        return self._latest_observation

    def get_next(self) -> Trajectory:
        """Play ``nsteps`` steps in every env and return the transformed trajectory (see the module doc)."""
        if self._latest_observation is None:
            self.reset()
        obs = self._latest_observation
        nenvs = self.num_envs
        trajectory: Trajectory = {}
        observations: list[np.ndarray] = []
        rewards: list[np.ndarray] = []
        resets: list[np.ndarray] = []
        for t in range(self.nsteps):
            out = self.policy.act(obs)
            if not isinstance(out, Mapping) or "actions" not in out:
                keys = list(out) if isinstance(out, Mapping) else type(out).__name__
                raise TypeError(
                    "policy.act(obs) must return a dict with at least the key 'actions' (and "
                    f"'logits', 'log_probs', 'values' for A2C), got {keys}."
                )
            if t == 0:
                for key in out:
                    trajectory[key] = []
            elif out.keys() != trajectory.keys():
                raise ValueError(
                    "policy.act(obs) must return the same keys at every step: got "
                    f"{sorted(out)} after {sorted(trajectory)}."
                )
            for key, value in out.items():
                trajectory[key].append(value)
            actions = _to_actions(out["actions"], nenvs)
            trajectory["actions"][-1] = actions

            next_obs, reward, terminated, truncated, infos = self.env.step(actions)
            self.step_var += nenvs
            observations.append(obs)
            # Copies: some batches write every step into the same output buffers.
            rewards.append(np.array(reward, dtype=np.float32))
            resets.append(np.logical_or(terminated, truncated))
            if "episode" in infos:
                self.episode_stats.add_from_infos(infos, step=self.step_var)
            obs = np.array(next_obs)
        self._latest_observation = obs

        trajectory["observations"] = observations
        trajectory["rewards"] = rewards
        trajectory["resets"] = resets
        trajectory["state"] = {"latest_observation": obs, "env_steps": self.nsteps}
        for transform in self.transforms:
            result = transform(trajectory)
            if result is not None and result is not trajectory:
                if not isinstance(result, dict):
                    raise TypeError(
                        f"transform {transform!r} returned {type(result).__name__}; a transform "
                        "changes the trajectory in place and returns None (or the trajectory dict)."
                    )
                trajectory = result
        return trajectory

    def __repr__(self) -> str:
        return (
            f"EnvRunner(num_envs={self.num_envs}, nsteps={self.nsteps}, step_var={self.step_var}, "
            f"games={len(self.episode_stats)}, transforms={len(self.transforms)})"
        )
