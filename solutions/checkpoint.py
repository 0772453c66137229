"""Checkpoints of a training run: everything needed to continue it where it stopped.

A checkpoint is one ``torch.save`` file holding tensors and plain data only (dicts, lists,
tuples, strings, numbers), so that it loads with ``torch.load(..., weights_only=True)``, which
runs no code from the file (a checkpoint may come from someone else: a classmate, a download)::

    "format":      CHECKPOINT_FORMAT (bumped if the layout changes)
    "config":      A2CConfig.to_dict()
    "model":       model.state_dict()
    "optimizer":   optimizer.state_dict()      RMSprop's running squares matter for resuming
    "update":      updates done so far          the learning-rate schedule restarts from here
    "step":        agent steps done so far
    "rng":         Python's, numpy's (its MT19937 key as a tensor) and torch's (CPU, CUDA)
                   generator states
    "extra":       anything else (finished games, logged series) as plain Python objects
                   (numpy numbers and arrays are stored as Python numbers and lists)

What is *not* saved: the emulators' state. A resumed run starts fresh games (see
``solutions.train``), so it continues the same learning curve but not the same frames.

Files are written to a temporary name and renamed, so a crash while saving never leaves a
truncated checkpoint behind. A checkpoint of the kit's first format (numpy's generator state
pickled as an array) still loads, still with ``weights_only=True``: only numpy's array and
number types are allowed besides torch's own, so it can be resumed and evaluated.
"""

from __future__ import annotations

import os
import pickle
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .config import A2CConfig

__all__ = [
    "CHECKPOINT_FORMAT",
    "NotACheckpoint",
    "load_checkpoint",
    "plain",
    "rng_state",
    "save_checkpoint",
    "set_rng_state",
]

CHECKPOINT_FORMAT = 2
#: The formats :func:`load_checkpoint` reads (1: numpy's generator state pickled as an array).
READABLE_FORMATS = (1, 2)


class NotACheckpoint(ValueError):
    """A file that is not a checkpoint of this kit's training command."""


def plain(value: Any) -> Any:
    """``value`` with numpy numbers as Python numbers and numpy arrays as lists (recursively
    through dicts, lists and tuples): what ``torch.load(weights_only=True)`` reads back."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def rng_state() -> dict[str, Any]:
    """The states of Python's, numpy's and torch's global generators."""
    _, key, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "key": torch.from_numpy(key.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned (the CUDA part only where CUDA is available)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy_state = state["numpy"]
    if isinstance(numpy_state, dict):
        key = np.asarray(numpy_state["key"], dtype=np.uint32)
        numpy_state = ("MT19937", key, numpy_state["pos"], numpy_state["has_gauss"],
                       numpy_state["cached_gaussian"])  # fmt: skip
    np.random.set_state(numpy_state)
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
        "extra": plain(extra or {}),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def _numpy_globals() -> list[Any]:
    """The numpy types a first-format checkpoint pickled (an array, its dtype, numbers)."""
    core = getattr(np, "_core", None) or np.core
    dtypes = [type(np.dtype(name)) for name in ("uint32", "float64", "float32", "int64", "int32")]
    return [core.multiarray._reconstruct, core.multiarray.scalar, np.ndarray, np.dtype, *dtypes]


def _torch_load(path: Path, map_location: Any) -> Any:
    """``torch.load`` with ``weights_only=True``: tensors and plain data, numpy's array and
    number types for the first format; nothing that runs code.

    Raises:
        NotACheckpoint: the file is not a ``torch.save`` file of this kit's kind.
    """
    with path.open("rb") as handle:
        head = handle.read(64).lstrip()
    if head.startswith((b"{", b"[")):
        kind = "a notebook" if path.suffix == ".ipynb" else "a JSON file"
        raise NotACheckpoint(
            f"{str(path)!r} is {kind}, not a checkpoint: give the checkpoint.pt that "
            "python -m solutions.train wrote (in its --out folder), or a saved agent "
            "(a2c_agent.json)."
        )
    try:
        with torch.serialization.safe_globals(_numpy_globals()):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        if "GLOBAL" not in str(error):  # not a pickle of objects at all
            raise NotACheckpoint(
                f"{str(path)!r} is not a checkpoint of python -m solutions.train (not a "
                "torch.save file)."
            ) from None
        blocked = [line for line in str(error).splitlines() if "GLOBAL" in line][:1]
        raise NotACheckpoint(
            f"{str(path)!r} holds more than tensors and plain data, so it is not loaded (loading "
            "it could run code from the file); a checkpoint of python -m solutions.train holds "
            f"only those. ({' '.join(blocked)[:200]})"
        ) from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile) as error:
        raise NotACheckpoint(
            f"{str(path)!r} is not a checkpoint of python -m solutions.train (not a torch.save "
            f"file: {str(error).splitlines()[0][:200]})."
        ) from None


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (this format or the first), with
    ``torch.load(weights_only=True)``.

    Returns the payload dict with ``"config"`` turned back into an :class:`A2CConfig`.
    Restore with ``model.load_state_dict(ckpt["model"])``,
    ``optimizer.load_state_dict(ckpt["optimizer"])`` and ``set_rng_state(ckpt["rng"])``.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: the file is not a checkpoint of this kit (:class:`NotACheckpoint`: a
            notebook, any other file, one that holds more than tensors and plain data), or of
            another format version.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint at {str(path)!r}.")
    payload = _torch_load(path, map_location)
    if not isinstance(payload, dict) or payload.get("format") not in READABLE_FORMATS:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise NotACheckpoint(
            f"{str(path)!r} is not an A2C kit checkpoint of format {CHECKPOINT_FORMAT} "
            f"(found {found!r}); start a new run in another --out directory."
        )
    payload["config"] = A2CConfig.from_dict(payload["config"])
    return payload
