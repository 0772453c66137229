"""course_lib: the ready-made parts of the A2C course kit.

Students import from here: ``from course_lib import nature_dqn_env, EnvRunner, ...``.
The package imports nothing from ``solutions`` or ``autograder``, and keeps torch, matplotlib
and imageio out of its import (env worker processes import it and must start fast).

Map: which module to read for what (the design behind it: docs/design.md)::

    read to learn the course material
      atari_wrappers.py   the Nature-DQN preprocessing, one wrapper per idea, in stacking order
      atari_env.py        one preprocessed env: the wrappers stacked on an emulator
      nature_dqn.py       nature_dqn_env(env_id, nenvs=N): the one way to make envs; backends
      runners.py          EnvRunner: plays T steps in N envs, returns the trajectory (its contract)
      episode_stats.py    raw scores of finished full games, mean of the last 100
    tools a notebook uses
      plots.py            TrainingDashboard: live plots of scores and training scalars
      video.py            record_video, show_batch: watch an agent, look at observations
      runtime.py          quick_mode, resolve_device, seed_everything, flush_denormals
      evaluation.py       the evaluation protocol: play_games, evaluate_agent (raw full-game scores)
      saved_agent.py      save_agent: the trained agent, handed in with the notebook
      network_layout.py   which saved tensor is which layer of the course's network (by shape)
      checks/             the visible self-checks of each graded part
    engineering behind nature_dqn_env (read the contract in nature_dqn.py, not the code)
      batches/            the env batches behind nature_dqn_env, one backend a module:
        base.py           what the Python batches share: autoreset, argument checks, infos
        sequential.py     the "sequential" backend (EnvBatch): every env in this process
        parallel.py       the "subprocess" backend (ParallelEnvBatch): a worker process per env
        worker.py         the loop inside each ParallelEnvBatch worker process
        native.py         the "native" backend: ale-py's C++ vector env, course semantics
      atari_ids.py        which env ids are valid, and what to use instead
      env_pool.py         EnvPool: envs kept between evaluations in one process (the grader's)
      validation.py       check_int, check_number: one message format for bad arguments
      openmp.py           passive_openmp: idle torch CPU threads sleep (called before torch loads)
"""

from .openmp import passive_openmp as _passive_openmp

# Before anything imports torch: idle OpenMP threads sleep instead of spinning (course_lib.openmp).
_passive_openmp()

from .batches import EnvBatch, EnvWorkerError, ParallelEnvBatch  # noqa: E402
from .episode_stats import EpisodeStats, rolling_mean  # noqa: E402
from .nature_dqn import BACKENDS, DEFAULT_BACKEND, nature_dqn_env  # noqa: E402
from .plots import TrainingDashboard, plot_metrics_file  # noqa: E402
from .runners import EnvRunner  # noqa: E402
from .video import record_video, show_batch, show_video, tile_observations  # noqa: E402

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "EnvBatch",
    "EnvRunner",
    "EnvWorkerError",
    "EpisodeStats",
    "ParallelEnvBatch",
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
