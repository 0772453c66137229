"""Probe of the saved agent: the student's ``make_model`` with the weights the notebook saved.

The grader plays a saved agent in its own copy of the course's network, never in the student's
code (:mod:`autograder.core.agent_play`); the student's ``make_model`` earns that replay by
computing, with those weights, what the grader's network computes. :func:`saved_agent_outputs`
builds ``make_model(n_actions)``, loads the saved weights into it
(:func:`course_lib.saved_agent.load_tensors`, by the student's own names; the grader checked
and unpacked them) and reports its
outputs on frames drawn for this grading. It reports, never decides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from course_lib.checks.properties import capture
from course_lib.saved_agent import load_tensors

from .. import fixtures
from ..record import Observation

__all__ = ["saved_agent_outputs"]


def saved_agent_outputs(make_model: Callable[[int], Any], case: dict[str, Any]) -> Observation:
    """``make_model(case["n_actions"])`` with the saved weights (``case["tensors"]``, by the
    names they were saved under) loaded, in eval mode, on ``case["n"]`` uint8 frames drawn from
    ``case["obs_seed"]``: its ``(logits, values)``."""
    model = load_tensors(make_model(int(case["n_actions"])), case["tensors"])
    if hasattr(model, "eval"):
        model.eval()
    obs = torch.from_numpy(fixtures.random_frames(int(case["n"]), int(case["obs_seed"])))
    with torch.no_grad():
        return {"output": capture(model(obs))}
