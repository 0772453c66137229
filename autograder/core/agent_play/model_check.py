"""Whether the student's ``make_model`` earns the replay of its saved weights (trusted code).

The grader plays a saved agent in its own copy of the course's network, never in the student's
code (:mod:`.verification`); what ties the weights to the student's work is that their own
``make_model``, loaded with them, computes what the grader's network computes. That runs where
the student's code already runs, the parts' sandbox, at no cost of a sandbox of its own:

* :func:`add_check` adds one probe step to the grading's plan, under the pseudo-part
  :data:`CHECK_PART`, and places it in the job right after the ``model`` part's probes: the
  student's ``make_model`` as that part defines it, the saved weights loaded into it by the
  student's own names (:mod:`autograder.sandboxed.grading_runtime.probes.saved_agent`), its
  outputs on :data:`CHECK_FRAMES` frames drawn for this grading;
* :func:`judge_check` compares what came back (untrusted, decoded by the channel) with the
  grader's Nature-DQN network (:func:`autograder.core.judging.parts.model.nature_dqn`, never
  shown to the sandbox) with the same weights, read as each way the bundle can be the course's
  network (:func:`course_lib.network_layout.network_layouts`): the first way the student's
  outputs match, within float32 rounding, is the one the grader plays; none is a note saying
  why, and no verified score.

The check earns no points by itself: it decides whether the verified score is given.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from autograder.core.judging.parts.model import output_mismatch
from autograder.core.judging.parts.subcheck import array_of
from autograder.sandboxed.grading_runtime import fixtures
from course_lib.checks.layers import NATURE_TEXT
from course_lib.checks.properties import output_pair_problem
from course_lib.network_layout import NetworkLayout
from course_lib.saved_agent import AgentWeights

__all__ = ["CHECK_FRAMES", "CHECK_PART", "CHECK_SECONDS", "add_check", "judge_check"]

CHECK_PART = "saved_agent"  #: the check's key in the plan, the job and the channel
CHECK_FRAMES = 16  #: frames the student's network answers, drawn for each grading
CHECK_SECONDS = 20.0  #: CPU seconds of its probe step (times the time scale), as the model's
_MODEL_NAME = "make_model"


def add_check(
    plan: dict[str, Any], cells: list[dict[str, Any]], weights: AgentWeights
) -> dict[str, Any]:
    """The plan with the check's step (``weights``: the saved agent's, checked already: they
    go to the sandbox as the plan's arrays, by the names they were saved under), and ``cells``
    (the job's, :func:`autograder.core.grading_job.job_cells`) with the step placed after the
    ``model`` part's probes, in place; the step's case. Nothing is added to a job without a
    ``model`` part (the check would have no ``make_model`` to take)."""
    at = next((i for i, cell in enumerate(cells) if cell.get("part") == "model"), None)
    case = {"tensors": dict(weights.tensors), "n_actions": weights.n_actions,
            "n": CHECK_FRAMES, "obs_seed": secrets.randbelow(2**31)}  # fmt: skip
    if at is None:
        return case
    step = {"key": "outputs", "probe": "saved_agent_outputs", "case": case,
            "seconds": CHECK_SECONDS}  # fmt: skip
    plan["parts"][CHECK_PART] = [step]
    cells.insert(at + 1, {"index": cells[at]["index"], "source": None, "part": CHECK_PART,
                          "name": _MODEL_NAME})  # fmt: skip
    return case


def judge_check(
    records: Mapping[str, Any],
    case: Mapping[str, Any],
    tensors: Mapping[str, np.ndarray],
    layouts: Sequence[NetworkLayout],
) -> tuple[NetworkLayout | None, str]:
    """``(the layout to play, "")`` when the student's ``make_model`` with the saved weights
    computed what the grader's network computes with them read that way, else ``(None, why)``
    in course words. ``records``: the check's records from the channel (``{}``: never run)."""
    record = records.get("outputs")
    if record is None:
        return None, (
            "make_model was not checked with the saved weights (the notebook's run ended before "
            "its check)"
        )
    if not record.get("ok"):
        error = str(record.get("error", ""))[:400]
        return None, f"make_model could not be loaded with the saved weights: {error}"
    output = record["observation"].get("output")
    n = int(case["n"])
    first = layouts[0].layers(tensors)
    n_actions = first[4][0].shape[0]
    problem = output_pair_problem(output, n, n_actions) if isinstance(output, dict) else (
        "make_model's network gave no (logits, values) pair"
    )  # fmt: skip
    if problem:
        return None, f"make_model, loaded with the saved weights: {problem}"
    got = tuple(array_of(item) for item in output["items"])
    frames = fixtures.random_frames(n, int(case["obs_seed"]))
    for layout in layouts:
        if not output_mismatch(got, layout.layers(tensors), frames)[0]:
            return layout, ""
    wrong, hint = output_mismatch(got, first, frames)
    return None, (
        f"make_model, loaded with the saved weights, gives other {' and '.join(wrong)} than the "
        f"course's network ({NATURE_TEXT}) with those weights, on frames drawn for this grading: "
        f"the grader plays the saved weights in the course's network, so it gives a verified "
        f"score only to a make_model that computes that network.{hint}"
    )
