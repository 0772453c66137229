"""course_lib: the ready-made parts of the A2C course kit.

Students import from here: Atari environments with the Nature-DQN preprocessing
(:func:`nature_dqn_env`), env batches, the trajectory runner, finished-game statistics,
training plots, videos and the visible self-checks (``course_lib.checks``).
The package imports nothing from ``solutions`` or ``autograder``, and keeps torch, matplotlib
and imageio out of its import (env worker processes import it and must start fast).
"""

import os as _os

# Idle OpenMP threads (torch's CPU pool) spin by default and starve the emulator threads on a
# 2-core machine (Colab's CPU runtime): training ran up to 10x slower in our measurements
# (benchmarks/train_throughput.py). Takes effect only when set before torch is imported.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .env_batch import EnvBatch, EnvWorkerError, ParallelEnvBatch  # noqa: E402
from .envs import BACKENDS, DEFAULT_BACKEND, nature_dqn_env  # noqa: E402
from .episode_stats import EpisodeStats, rolling_mean  # noqa: E402
from .plots import TrainingDashboard, plot_metrics_file  # noqa: E402
from .runners import EnvRunner, StepCounter  # noqa: E402
from .video import record_video, show_batch, show_video, tile_observations  # noqa: E402

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "EnvBatch",
    "EnvRunner",
    "EnvWorkerError",
    "EpisodeStats",
    "ParallelEnvBatch",
    "StepCounter",
    "TrainingDashboard",
    "nature_dqn_env",
    "plot_metrics_file",
    "record_video",
    "rolling_mean",
    "show_batch",
    "show_video",
    "tile_observations",
]
__version__ = "0.1.0"
