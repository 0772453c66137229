"""Where the code runs: quick mode for grading and CI, the torch device, CPU threads, seeding.

* :func:`quick_mode` is True under nbgrader (``NBGRADER_EXECUTION`` is set) and when
  ``A2C_KIT_QUICK=1``: notebooks then shrink their training to a few seconds.
* :func:`resolve_device` turns ``"auto"``/``"cpu"``/``"cuda"``/``"cuda:1"``/``"mps"`` into a
  ``torch.device``, with an error that says what is available when the request cannot be met.
* :func:`set_torch_threads` caps torch's intra-op threads (on a small CPU, one thread per core
  and none more is fastest; oversubscription with env workers slows everything down).
* :func:`flush_denormals` makes CPU float math flush denormal numbers to zero: in long CPU
  training runs RMSprop's running squares sink into them, and x86 CPUs compute more slowly
  there (how much that costs a run is for ``benchmarks/denormals.py`` to measure).
* :func:`seed_everything` seeds Python, numpy and torch in one call.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .validation import check_int

__all__ = [
    "flush_denormals",
    "quick_mode",
    "resolve_device",
    "seed_everything",
    "set_torch_threads",
]

_QUICK_VAR = "A2C_KIT_QUICK"
_NBGRADER_VAR = "NBGRADER_EXECUTION"


def quick_mode() -> bool:
    """True when long computations should be skipped (grading, CI).

    That is when ``NBGRADER_EXECUTION`` is set (nbgrader sets it while it executes a notebook)
    or when ``A2C_KIT_QUICK`` is ``"1"`` (or ``"true"``/``"yes"``, any case).
    """
    if os.environ.get(_NBGRADER_VAR):
        return True
    return os.environ.get(_QUICK_VAR, "").strip().lower() in {"1", "true", "yes"}


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The ``torch.device`` for ``device``; ``"auto"`` picks CUDA, then MPS, then CPU.

    Raises:
        TypeError: ``device`` is neither a string nor a ``torch.device``.
        ValueError: an unknown name, or a device this machine does not have (the message lists
            what is available, and on Colab how to get a GPU).
    """
    if isinstance(device, torch.device):
        name = str(device)
    elif isinstance(device, str):
        name = device.strip().lower()
    else:
        raise TypeError(
            f"device must be a string such as 'auto', 'cpu' or 'cuda', got {type(device).__name__}."
        )
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if _mps_available() else "cpu")
    try:
        resolved = torch.device(name)
    except RuntimeError as error:
        raise ValueError(
            f"Unknown device {device!r}: use 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'."
        ) from error
    available = "cpu" + (
        f", cuda (x{torch.cuda.device_count()})" if torch.cuda.is_available() else ""
    )
    available += ", mps" if _mps_available() else ""
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} but CUDA is not available here (available: {available}). "
                "Use device='auto' or 'cpu'; on Colab pick Runtime > Change runtime type > GPU."
            )
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) exist; "
                f"use an index below {torch.cuda.device_count()}."
            )
    elif resolved.type == "mps" and not _mps_available():
        raise ValueError(f"device={device!r} but MPS is not available (available: {available}).")
    elif resolved.type not in {"cpu", "cuda", "mps"}:
        raise ValueError(
            f"Unsupported device {device!r}: use 'auto', 'cpu', 'cuda' or 'mps' "
            f"(available: {available})."
        )
    return resolved


def set_torch_threads(num_threads: int | None = None) -> int:
    """Set torch's intra-op CPU threads; ``None`` uses the number of usable CPU cores.

    Returns the number of threads now in use.
    """
    if num_threads is None:
        try:
            num_threads = len(os.sched_getaffinity(0))
        except AttributeError:  # macOS and Windows
            num_threads = os.cpu_count() or 1
    num_threads = check_int("num_threads", num_threads, 1, fix="or None for every core")
    torch.set_num_threads(num_threads)
    return torch.get_num_threads()


def flush_denormals() -> bool:
    """Make CPU float arithmetic flush denormal numbers to zero; returns False where unsupported.

    Why: a weight whose gradient is exactly 0 (an input that a dead ReLU unit never feeds)
    keeps RMSprop's running average of squared gradients decaying, ``v <- 0.99 v``, update
    after update. ``v`` sinks into the denormal range (below ~1.2e-38 for float32), where
    x86 CPUs compute more slowly, and stays there: 0.99 times one of the smallest denormals
    rounds back to itself. ``benchmarks/denormals.py`` measures the effect on a long run.
    Flushed to zero they change no update (RMSprop divides by ``sqrt(v) + eps``, eps = 1e-5).

    Pitfall: the setting belongs to each CPU thread, and torch's worker threads copy it from the
    thread that starts them, at torch's first parallel operation. Call this before any torch
    computation (first thing in a script, or in a notebook's first cells) so that they all
    inherit it; called later it covers the calling thread only. GPUs are not affected.
    """
    return bool(torch.set_flush_denormal(True))


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global RNG and torch (CPU and CUDA)."""
    seed = check_int("seed", seed, 0)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
