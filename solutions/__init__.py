"""solutions: the reference A2C of the course kit and the tools around it.

* :mod:`solutions.reference`: the graded parts (model, Policy, ComputeValueTargets,
  MergeTimeBatch, A2C, ComputeGAE); each lives in a ``# %% [part: <key>]`` region that the
  notebook builder copies into the solution notebook.
* :mod:`solutions.config`: :class:`~solutions.config.A2CConfig`, the course hyperparameters, and
  :class:`~solutions.config.RunOptions`, the settings of one training command.
* :mod:`solutions.train`: ``python -m solutions.train --env ENV_ID --steps N``, the whole
  algorithm in one function; beside it, one job each: :mod:`~solutions.cli` (options generated
  from the config), :mod:`~solutions.run_folder`, :mod:`~solutions.checkpoint`,
  :mod:`~solutions.stop_request`, :mod:`~solutions.metrics_log`,
  :mod:`~solutions.tensorboard_log`.
* :mod:`solutions.evaluate`: average raw score over full games.

Submodules are imported on demand, so ``import solutions`` stays cheap.
"""

__all__ = ["checkpoint", "cli", "config", "evaluate", "metrics_log", "reference", "run_folder"]
__all__ += ["stop_request", "tensorboard_log", "train"]
