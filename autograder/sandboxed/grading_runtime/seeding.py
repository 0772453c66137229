"""Seeding every random number generator a probe or the student's code may draw from."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["seed_all"]


def seed_all(seed: int) -> None:
    """Seed Python, numpy and torch, so a probe sees the same random numbers every time."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
