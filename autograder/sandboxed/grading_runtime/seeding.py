"""Seeding every random number generator a probe or the student's code may draw from."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["seed_all"]


def seed_all(seed: int) -> None:
    """Seed Python, numpy and torch, so a probe sees the same random numbers every time.

    torch's CPU generator is seeded directly (the same numbers as ``torch.manual_seed``):
    ``torch.manual_seed`` also queues a seeding for every accelerator not started yet and
    formats the whole stack for each, a few milliseconds a call and about a hundred calls a
    grading on each side, for devices that grading never starts. An accelerator that is started
    is seeded as ``torch.manual_seed`` would.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
