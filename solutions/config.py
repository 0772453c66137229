"""The training configuration of the reference A2C: one dataclass, one docstring per field.

Defaults are the course's hyperparameters (docs/design.md, section 7). Values that follow from the
fields (batch size, number of updates, the learning rate at a given update) are computed here
and nowhere else, so the CLI, the benchmarks and the notebook agree. The command-line form of
the configuration (options, and what a resumed run may change) lives here too.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from course_lib.validation import check_int

__all__ = [
    "A2CConfig",
    "CLI_OPTIONS",
    "RESUME_MAY_CHANGE",
    "add_config_arguments",
    "config_from_args",
    "non_negative_int",
    "positive_int",
]


@dataclass
class A2CConfig:
    """Hyperparameters and run settings of one A2C training run."""

    env_id: str = "SpaceInvadersNoFrameskip-v4"
    """ALE id without built-in frame skipping; the Nature-DQN wrappers skip frames themselves."""

    nenvs: int = 8
    """Number of environments played in parallel (N): one batch of observations per step."""

    nsteps: int = 5
    """Steps per rollout (T): each update sees T * N transitions and bootstraps after T steps."""

    total_steps: int = 10_000_000
    """Budget in agent steps over all envs (one agent step = 4 emulator frames)."""

    gamma: float = 0.99
    """Discount factor of the n-step returns."""

    gae_lambda: float | None = None
    """GAE lambda in [0, 1]; ``None`` uses the plain n-step targets (the graded version)."""

    lr: float = 7e-4
    """Initial RMSprop learning rate, decayed linearly to 0 at ``total_steps``."""

    rmsprop_alpha: float = 0.99
    """RMSprop smoothing constant of the squared-gradient average."""

    rmsprop_eps: float = 1e-5
    """RMSprop epsilon (torch's default is 1e-8). torch adds it *outside* the square root,
    ``g / (sqrt(v) + eps)``. OpenAI baselines' A2C used TensorFlow's RMSProp, which adds it
    *inside*, ``g / sqrt(v + eps)``, so the same 1e-5 there is a much larger floor (sqrt(1e-5)
    is about 3e-3); Stable-Baselines3 ships ``RMSpropTFLike`` to reproduce that. The course
    keeps torch's RMSprop with eps 1e-5: the same number, not the same optimizer."""

    value_loss_coef: float = 0.25
    """Weight of the value loss ``mean((v_target - V)^2)`` in the total loss. OpenAI baselines
    and Stable-Baselines3 weight the same mean squared error by 0.5, twice the course's 0.25."""

    entropy_coef: float = 0.01
    """Weight of the entropy bonus (subtracted from the loss to keep exploring)."""

    max_grad_norm: float = 0.5
    """Global gradient norm above which gradients are rescaled before the optimizer step."""

    seed: int = 0
    """Seed of torch, numpy and the environments (env i gets ``seed + i``)."""

    device: str = "auto"
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``."""

    backend: str = "auto"
    """Env batch backend of ``course_lib.nature_dqn_env`` (``"auto"`` is the fastest)."""

    log_interval: int = 10_000
    """Agent steps between two rows of metrics (rounded up to whole updates)."""

    checkpoint_interval: int = 250_000
    """Agent steps between two checkpoints; a final one is always written."""

    def __post_init__(self) -> None:
        for name in ("nenvs", "nsteps", "total_steps", "log_interval", "checkpoint_interval"):
            check_int(name, getattr(self, name), 1)
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
        return self.lr * self.lr_factor(update)

    def lr_factor(self, update: int) -> float:
        """The multiplier of ``lr`` at ``update``, for ``torch.optim.lr_scheduler.LambdaLR``."""
        return 1.0 - min(update, self.num_updates) / self.num_updates

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


# ----- command-line form ----------------------------------------------------------------------
#: CLI option (argparse dest) -> A2CConfig field.
CLI_OPTIONS = {
    "env": "env_id",
    "steps": "total_steps",
    "nenvs": "nenvs",
    "nsteps": "nsteps",
    "seed": "seed",
    "device": "device",
    "backend": "backend",
    "lr": "lr",
    "entropy_coef": "entropy_coef",
    "gae_lambda": "gae_lambda",
    "log_interval": "log_interval",
    "checkpoint_interval": "checkpoint_interval",
}
#: Fields a resumed run may change; the others define the run and must match the checkpoint.
RESUME_MAY_CHANGE = frozenset(
    {"total_steps", "device", "backend", "log_interval", "checkpoint_interval"}
)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1; accepts ``1e6`` style for step budgets."""
    try:
        value = float(text) if "e" in text.lower() else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(value)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one option per :data:`CLI_OPTIONS` field; all default to None (= "not given")."""
    d = A2CConfig()
    add = parser.add_argument
    add("--env", help=f"ALE id (default {d.env_id})")
    add(
        "--steps",
        type=positive_int,
        help=f"agent steps, e.g. 1000000 or 1e7 (default {d.total_steps:.0e})",
    )
    add("--nenvs", type=positive_int, help=f"parallel envs (default {d.nenvs})")
    add("--nsteps", type=positive_int, help=f"rollout length (default {d.nsteps})")
    add("--seed", type=non_negative_int, help=f"seed (default {d.seed})")
    add("--device", help="auto, cpu, cuda, cuda:1, mps (default auto)")
    add("--backend", help="env batch: auto, native, subprocess, sequential (default auto)")
    add("--lr", type=float, help=f"initial learning rate (default {d.lr})")
    add("--entropy-coef", type=float, help=f"entropy bonus weight (default {d.entropy_coef})")
    add("--gae-lambda", type=float, help="use GAE with this lambda (default: plain targets)")
    add("--log-interval", type=positive_int, help=f"steps between metric rows ({d.log_interval})")
    add(
        "--checkpoint-interval",
        type=positive_int,
        help=f"steps between checkpoints ({d.checkpoint_interval})",
    )


def config_from_args(args: argparse.Namespace, saved: A2CConfig | None = None) -> A2CConfig:
    """The config of parsed ``args``: defaults + given options, or ``saved`` (a checkpoint's
    config, when resuming) + the given options of :data:`RESUME_MAY_CHANGE`.

    Raises:
        ValueError: a bad value, or an option that differs from ``saved`` and may not change.
    """
    given = {f: getattr(args, o) for o, f in CLI_OPTIONS.items() if getattr(args, o) is not None}
    if saved is None:
        return A2CConfig(**given)
    for field, value in given.items():
        if field not in RESUME_MAY_CHANGE and value != getattr(saved, field):
            option = next(o for o, f in CLI_OPTIONS.items() if f == field).replace("_", "-")
            raise ValueError(
                f"--{option} {value!r} differs from the checkpoint's {getattr(saved, field)!r}; "
                f"a resumed run may only change {', '.join(sorted(RESUME_MAY_CHANGE))}. "
                "Drop the option or use another --out."
            )
    return dataclasses.replace(saved, **{k: v for k, v in given.items() if k in RESUME_MAY_CHANGE})
