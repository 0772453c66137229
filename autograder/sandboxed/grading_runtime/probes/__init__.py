"""Probes: run one student part on given inputs and report, as plain data, what came back.

A probe never judges. It builds the part's inputs from a *case* (plain data: sizes, seeds,
small arrays drawn by the grader for this grading), calls the student's code once or a few
times and returns an observation: the outputs (:func:`course_lib.checks.properties.capture`),
and facts only the running code can see (which parameters a gradient reached, which inputs
were changed in place, which layers the model's forward pass used). One module per part,
mirroring the judges (:mod:`autograder.core.judging.parts`); :mod:`.saved_agent` reports the
student's ``make_model`` with the saved agent's weights (judged in
:mod:`autograder.core.agent_play.model_check`).
Exceptions from the student's code propagate to the caller (:mod:`.harness`).

The grader runs the same probes on the reference in its own process, on the same case, and
compares; for the model, the probe loads weights drawn from the case into the student's layers
and the grader computes what the Nature-DQN network gives with those weights.

``PROBES`` maps a probe's name to its function ``probe(candidate, case) -> dict``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..record import Observation
from .a2c import a2c_run
from .compute_value_targets import value_targets
from .gae import gae
from .merge_time_batch import merge
from .model import model_negative_values, model_net, model_outputs
from .policy import policy_act, policy_samples
from .saved_agent import saved_agent_outputs

__all__ = ["PROBES", "run_probe"]


PROBES: dict[str, Callable[[Any, dict[str, Any]], Observation]] = {
    "model_net": model_net,
    "model_outputs": model_outputs,
    "model_negative_values": model_negative_values,
    "policy_act": policy_act,
    "policy_samples": policy_samples,
    "value_targets": value_targets,
    "gae": gae,
    "merge": merge,
    "a2c_run": a2c_run,
    "saved_agent_outputs": saved_agent_outputs,
}


def run_probe(name: str, candidate: Any, case: dict[str, Any]) -> Observation:
    """Run the probe ``name`` (a key of :data:`PROBES`) on ``candidate``."""
    if name not in PROBES:
        raise ValueError(f"unknown probe {name!r}: expected one of {sorted(PROBES)}")
    return PROBES[name](candidate, case)
