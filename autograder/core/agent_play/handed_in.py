"""The saved agent a submission hands in, read as bounded plain data and as the course's network.

:func:`handed_in` finds the bundle (the notebook's output, else ``a2c_agent.json`` beside it:
:func:`find_agent`), checks it before anything runs (:func:`course_lib.saved_agent.unpack_agent`:
sizes before decompressing, finite weights; the course's game) and reads it as the course's
network, which tensor is which layer by their shapes
(:func:`course_lib.network_layout.network_layouts`). The result, :class:`HandedIn`, is what the
make_model check (:mod:`.model_check`) and the play (:mod:`.verification`) take; a missing,
refused or unreadable agent is its note, never an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.core.intake.submission_file import read_bytes
from course_lib.evaluation import GRADER_PROTOCOL, EvaluationProtocol
from course_lib.network_layout import LayoutError, NetworkLayout, network_layouts
from course_lib.saved_agent import (
    AGENT_FILE,
    AGENT_MIME,
    AgentBundleError,
    AgentWeights,
    unpack_agent,
)

__all__ = ["HandedIn", "find_agent", "handed_in"]


@dataclass
class HandedIn:
    """The saved agent of a submission, read and checked as plain data (:func:`handed_in`).

    Attributes:
        bundle: the bundle as handed in (JSON data), or None.
        weights: its weights, checked (:func:`course_lib.saved_agent.unpack_agent`), or None.
        layouts: the ways to read them as the course's network, the likeliest first.
        note: why it cannot be played (no agent, refused, another game, not the course's
            network); ``""`` when it can.
    """

    bundle: Any = None
    weights: AgentWeights | None = None
    layouts: list[NetworkLayout] = field(default_factory=list)
    note: str = ""

    @property
    def playable(self) -> bool:
        return self.weights is not None and bool(self.layouts) and not self.note


def find_agent(
    nb: Any, folder: Path | None = None, agent_file: bytes | None = None
) -> tuple[Any, str]:
    """The saved agent's bundle (untrusted JSON data) and where it was found, or ``(None, "")``:
    the last output of the notebook that carries :data:`AGENT_MIME`, else ``agent_file`` (the
    bytes of the ``AGENT_FILE`` handed in beside it), else ``AGENT_FILE`` in ``folder`` (read
    within the notebook size cap)."""
    for cell in reversed(nb.cells):
        for output in reversed(cell.get("outputs", []) if cell.cell_type == "code" else []):
            data = output.get("data", {}) if isinstance(output, dict) else {}
            if AGENT_MIME in data:
                bundle = data[AGENT_MIME]
                if isinstance(bundle, str):  # a front end that kept the JSON as text
                    try:
                        bundle = json.loads(bundle)
                    except (ValueError, RecursionError):
                        return None, "the notebook's output (not JSON)"
                return bundle, "the notebook's output"
    if agent_file is not None:
        try:
            return json.loads(agent_file), AGENT_FILE
        except (ValueError, RecursionError) as error:
            return None, f"{AGENT_FILE} ({type(error).__name__})"
    if folder is not None and (Path(folder) / AGENT_FILE).is_file():
        try:
            return json.loads(read_bytes(Path(folder) / AGENT_FILE)), AGENT_FILE
        except (OSError, ValueError, RecursionError) as error:
            return None, f"{AGENT_FILE} ({type(error).__name__})"
    return None, ""


def handed_in(
    nb: Any,
    folder: Path | None = None,
    agent_file: bytes | None = None,
    protocol: EvaluationProtocol = GRADER_PROTOCOL,
) -> HandedIn:
    """The submission's saved agent, checked as bounded plain data before anything runs, and
    read as the course's network (see the module docstring); never raises."""
    found = HandedIn()
    try:
        bundle, where = find_agent(nb, folder, agent_file)
        if bundle is None:
            found.note = (
                f"no saved agent: {where} could not be read" if where else
                "no saved agent: run the locked cell that calls save_agent after training, keep "
                "its output, and hand in a2c_agent.json where your platform takes files"
            )  # fmt: skip
            return found
        try:
            weights = unpack_agent(bundle)
        except AgentBundleError as error:
            found.note = f"the saved agent was refused: {error}"
            return found
        found.bundle, found.weights = bundle, weights
        if weights.env_id != protocol.env_id:
            found.note = (
                f"the saved agent plays {weights.env_id}, the course's game is {protocol.env_id}"
            )
            return found
        try:
            found.layouts = network_layouts(weights.tensors, weights.n_actions)
        except LayoutError as error:
            found.note = f"the saved agent is not the course's network: {error}"[:1500]
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        found.note = f"the grader could not read the saved agent ({type(error).__name__})"
    return found
