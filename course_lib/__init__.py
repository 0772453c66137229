"""course_lib: the ready-made parts of the A2C course kit.

Students import from here: Atari environments with the Nature-DQN preprocessing
(:func:`nature_dqn_env`), env batches, the trajectory runner, training plots and videos.
The package imports nothing from ``solutions`` or ``autograder``.
"""

from .envs import BACKENDS, DEFAULT_BACKEND, nature_dqn_env

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "nature_dqn_env"]
__version__ = "0.1.0"
