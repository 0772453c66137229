"""Checkpoints of a training run: everything needed to continue it where it stopped.

A checkpoint is one ``torch.save`` file holding::

    "format":      CHECKPOINT_FORMAT (bumped if the layout changes)
    "config":      A2CConfig.to_dict()
    "model":       model.state_dict()
    "optimizer":   optimizer.state_dict()      RMSprop's running squares matter for resuming
    "update":      updates done so far          the learning-rate schedule restarts from here
    "step":        agent steps done so far
    "rng":         Python, numpy and torch (CPU, CUDA) generator states
    "extra":       anything else (finished games, logged series) as plain Python objects

What is *not* saved: the emulators' state. A resumed run starts fresh games (see
``solutions.train``), so it continues the same learning curve but not the same frames.

Files are written to a temporary name and renamed, so a crash while saving never leaves a
truncated checkpoint behind.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .config import A2CConfig

__all__ = ["CHECKPOINT_FORMAT", "load_checkpoint", "rng_state", "save_checkpoint", "set_rng_state"]

CHECKPOINT_FORMAT = 1


def rng_state() -> dict[str, Any]:
    """The states of Python's, numpy's and torch's global generators."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned (the CUDA part only where CUDA is available)."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        cuda_states = state["cuda"][: torch.cuda.device_count()]
        torch.cuda.set_rng_state_all(cuda_states)


def save_checkpoint(
    path: str | Path,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    config: A2CConfig,
    update: int,
    step: int,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint atomically to ``path`` and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "config": config.to_dict(),
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "update": int(update),
        "step": int(step),
        "rng": rng_state(),
        "extra": extra or {},
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Returns the payload dict with ``"config"`` turned back into an :class:`A2CConfig`.
    Restore with ``model.load_state_dict(ckpt["model"])``,
    ``optimizer.load_state_dict(ckpt["optimizer"])`` and ``set_rng_state(ckpt["rng"])``.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a checkpoint of this kit, or of another format version.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint at {str(path)!r}.")
    # weights_only=False: the payload holds numpy RNG states; only load your own files.
    payload = torch.load(path, map_location=map_location, weights_only=False)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise ValueError(
            f"{str(path)!r} is not an A2C kit checkpoint of format {CHECKPOINT_FORMAT} "
            f"(found {found!r}); start a new run in another --out directory."
        )
    payload["config"] = A2CConfig.from_dict(payload["config"])
    return payload
