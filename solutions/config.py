"""The configuration of a training run: two dataclasses, one docstring per field.

:class:`A2CConfig` holds what defines a run: the course's hyperparameters (docs/design.md,
section 7) and the settings a checkpoint keeps. :class:`RunOptions` holds what only concerns
one invocation of ``python -m solutions.train`` (output folder, final evaluation, video,
threads, progress bar). Each default is written here once: the command line is generated from
these fields (:mod:`solutions.cli`), and values that follow from them (batch size, number of
updates, the learning rate at a given update) are computed here and nowhere else.

A field's ``metadata`` may name its command-line option (``"option"``, when it differs from the
field name), the smallest integer it accepts (``"min"``, 1 when not given) and, for a flag on by
default, the help of its ``--no-`` option (``"off_help"``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["A2CConfig", "RESUME_MAY_CHANGE", "RunOptions"]


def check_int(*args: Any, **kwargs: Any) -> None:
    """``course_lib.validation.check_int``, imported when a config is made: importing
    ``course_lib`` loads gymnasium and the emulator (about a second), which ``--help`` and the
    parsing of the command line (:mod:`solutions.cli`, built from these fields) do without."""
    from course_lib.validation import check_int as check

    check(*args, **kwargs)


@dataclass
class A2CConfig:
    """Hyperparameters and run settings of one A2C training run."""

    env_id: str = field(default="SpaceInvadersNoFrameskip-v4", metadata={"option": "env"})
    """ALE id without built-in frame skipping; the Nature-DQN wrappers skip frames themselves."""

    nenvs: int = 8
    """Number of environments played in parallel (N): one batch of observations per step."""

    nsteps: int = 5
    """Steps per rollout (T): each update sees T * N transitions and bootstraps after T steps."""

    total_steps: int = field(default=10_000_000, metadata={"option": "steps"})
    """Budget in agent steps over all envs (one agent step = 4 emulator frames)."""

    gamma: float = 0.99
    """Discount factor of the n-step returns."""

    gae_lambda: float | None = None
    """GAE lambda in [0, 1] (not given: the plain n-step targets, the graded version)."""

    lr: float = 7e-4
    """Initial RMSprop learning rate, decayed linearly to 0 over the budget (``--steps``)."""

    rmsprop_alpha: float = 0.99
    """RMSprop smoothing constant of the squared-gradient average."""

    rmsprop_eps: float = 1e-5
    """RMSprop epsilon (torch's default is 1e-8). torch adds it *outside* the square root,
    ``g / (sqrt(v) + eps)``. OpenAI baselines' A2C used TensorFlow's RMSProp, which adds it
    *inside*, ``g / sqrt(v + eps)``, so the same 1e-5 there is a much larger floor (sqrt(1e-5)
    is about 3e-3); Stable-Baselines3 ships ``RMSpropTFLike`` to reproduce that. The course
    keeps torch's RMSprop with eps 1e-5: the same number, not the same optimizer. TensorFlow's
    also starts ``v`` at 1 where torch starts it at 0, so torch's first updates move each
    parameter by about 10 * lr (``1 / sqrt(1 - alpha)``) whatever its gradient; the start fades
    over about ``1 / (1 - alpha)`` = 100 updates."""

    value_loss_coef: float = 0.25
    """Weight of the value loss ``mean((v_target - V)^2)`` in the total loss. Stable-Baselines
    (TensorFlow) and the Atari settings of Stable-Baselines3's RL Zoo use 0.25 too; OpenAI
    baselines and Stable-Baselines3's defaults weight the same mean squared error by 0.5."""

    entropy_coef: float = 0.01
    """Weight of the entropy bonus (subtracted from the loss to keep exploring)."""

    max_grad_norm: float = 0.5
    """Global gradient norm above which gradients are rescaled before the optimizer step."""

    seed: int = field(default=0, metadata={"min": 0})
    """Seed of torch, numpy and the environments (env i gets ``seed + i``)."""

    device: str = "auto"
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``."""

    backend: str = "auto"
    """Env batch backend of ``course_lib.nature_dqn_env`` (``"auto"`` is the fastest)."""

    log_interval: int = 10_000
    """Agent steps between two rows of metrics (rounded to the nearest whole number of updates,
    at least one)."""

    checkpoint_interval: int = 250_000
    """Agent steps between two checkpoints (rounded to whole updates as ``--log-interval`` is); a final
    one is always written."""

    def __post_init__(self) -> None:
        for name in ("nenvs", "nsteps", "total_steps", "log_interval", "checkpoint_interval"):
            check_int(name, getattr(self, name), 1)
        check_int("seed", self.seed, 0)
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(
                f"env_id must be an ALE id such as 'SpaceInvadersNoFrameskip-v4', got {self.env_id!r}."
            )
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma!r} (course: 0.99).")
        if self.gae_lambda is not None and not 0.0 <= self.gae_lambda <= 1.0:
            raise ValueError(
                f"gae_lambda must be None (plain targets) or in [0, 1], got {self.gae_lambda!r}."
            )
        for name in ("lr", "rmsprop_eps", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}.")
        if not 0.0 <= self.rmsprop_alpha < 1.0:
            raise ValueError(f"rmsprop_alpha must be in [0, 1), got {self.rmsprop_alpha!r}.")
        for name in ("value_loss_coef", "entropy_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}.")

    # ----- derived values: computed here only -----
    @property
    def batch_size(self) -> int:
        """Transitions per update: T * N."""
        return self.nenvs * self.nsteps

    @property
    def num_updates(self) -> int:
        """Updates needed to reach ``total_steps`` (the last one may overshoot a little)."""
        return math.ceil(self.total_steps / self.batch_size)

    @property
    def log_every_updates(self) -> int:
        """Updates between two metric rows (at least 1)."""
        return max(1, round(self.log_interval / self.batch_size))

    @property
    def checkpoint_every_updates(self) -> int:
        """Updates between two checkpoints (at least 1)."""
        return max(1, round(self.checkpoint_interval / self.batch_size))

    def lr_at(self, update: int) -> float:
        """Learning rate of update ``update`` (0-based): lr * (1 - update / num_updates)."""
        return self.lr * (1.0 - min(update, self.num_updates) / self.num_updates)

    # ----- (de)serialisation for checkpoints and metrics -----
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of the fields (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> A2CConfig:
        """Inverse of :meth:`to_dict`; unknown keys are a ``ValueError`` naming them."""
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(
                f"Unknown A2CConfig fields {unknown}; valid fields are {sorted(names)}."
            )
        return cls(**values)


#: Fields a resumed run may change; the others define the run and must match the checkpoint.
RESUME_MAY_CHANGE = frozenset(
    {"total_steps", "device", "backend", "log_interval", "checkpoint_interval"}
)


@dataclass
class RunOptions:
    """Settings of one invocation of the training command; the checkpoint does not keep them."""

    out: str = field(default="runs/a2c", metadata={"metavar": "DIR"})
    """Output folder. It holds one run: a new run needs an empty or missing folder."""

    resume: bool = False
    """Continue the run in the output folder from its checkpoint (its configuration is kept)."""

    eval_games: int = field(default=10, metadata={"min": 0})
    """Full games of the final evaluation (0: none)."""

    video_frames: int = field(default=4500, metadata={"min": 0})
    """Cap on the frames of the final video (0: no video)."""

    threads: int | None = None
    """Torch CPU threads (default: all cores)."""

    progress: bool = field(
        default=True, metadata={"off_help": "no progress bar (default: one is shown)"}
    )
    """Show a progress bar (``--no-progress`` hides it)."""

    def __post_init__(self) -> None:
        check_int("eval_games", self.eval_games, 0)
        check_int("video_frames", self.video_frames, 0)
        if self.threads is not None:
            check_int("threads", self.threads, 1)
