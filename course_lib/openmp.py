"""OpenMP's idle threads sleep instead of spinning: the one place that sets ``OMP_WAIT_POLICY``.

torch's CPU thread pool is OpenMP's, whose idle threads spin by default and starve the emulator
threads on a machine with few cores (Colab's CPU runtime has 2); passive ones sleep
(docs/benchmarks.md measures both). OpenMP reads the variable once, when torch starts it, so
:func:`passive_openmp` must run before ``import torch``: ``import course_lib`` calls it, and so
do the scripts that time or train before they import torch. A value already set (say
``OMP_WAIT_POLICY=ACTIVE`` to compare) is kept. This module imports nothing but ``os``.
"""

import os

__all__ = ["passive_openmp"]


def passive_openmp() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set; call it before torch is imported."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
