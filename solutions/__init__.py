"""solutions: the reference A2C of the course kit and the tools around it.

* :mod:`solutions.reference`: the graded parts (model, Policy, ComputeValueTargets,
  MergeTimeBatch, A2C, ComputeGAE); each lives in a ``# %% [part: <key>]`` region that the
  notebook builder copies into the solution notebook.
* :mod:`solutions.config`: :class:`~solutions.config.A2CConfig`, the course hyperparameters.
* :mod:`solutions.train`: ``python -m solutions.train --env ENV_ID --steps N``.
* :mod:`solutions.evaluate`: average raw score over full games.
* :mod:`solutions.checkpoint`: save and resume a run.

Submodules are imported on demand, so ``import solutions`` stays cheap.
"""

__all__ = ["checkpoint", "config", "evaluate", "reference", "train"]
