"""The verified score: the grader plays new games with the agent a submission hands in.

:func:`verify_agent` finds the saved agent (the bundle in the notebook's output, else
``a2c_agent.json`` beside it; :mod:`course_lib.saved_agent`), checks it here before anything
runs, starts ``agent_server.py`` in the sandbox with the notebook's set-up cells and the cells
that define ``make_model``, and plays the course's evaluation protocol against it with seeds
drawn from :mod:`secrets` for this grading alone (:class:`AgentConversation`). The result is an
:class:`AgentReport`: the verified score (mean, spread, games, steps, capped games) beside the
score the notebook claims, or a note saying why there is none. Never raises for the
submission's sake: a missing, broken, slow or hostile agent is that student's note.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbformat import NotebookNode

from autograder.core.agent_play.sandboxed_agent import (
    DEFAULT_AGENT_LIMITS,
    AgentConversation,
    AgentLimits,
)
from autograder.core.grading_job import job_cells
from autograder.core.intake.submission_file import read_bytes
from autograder.core.isolation import DEFAULT_LIMITS, SandboxLimits, run_isolated
from autograder.core.isolation.python_layout import PYTHON, PYTHON_BIN
from course_lib.evaluation import GRADER_PROTOCOL, EvaluationProtocol, game_seeds
from course_lib.saved_agent import AGENT_FILE, AGENT_MIME, AgentBundleError, unpack_agent

__all__ = ["AgentReport", "claim_gap", "find_agent", "play_in_sandbox", "verify_agent"]

_GRADER_DIR = "/grader"
#: Two evaluations of one agent on the same protocol differ by more than this many standard
#: errors (of their difference) about once in 300 honest submissions.
NOISE_ERRORS = 3.0


@dataclass
class AgentReport:
    """What the grader found of a submission's agent.

    Attributes:
        verified: the grader's own games (:meth:`EvaluationResult.summary`), or None.
        claimed: the score the notebook claims (``score``, ``games``, ``steps``), or None.
        notebook_evaluation: the notebook's own evaluation on the same protocol, or None.
        note: why there is no verified score, or what is odd about it (a claim far above it).
        digest: SHA-256 of the weights: the same agent in two submissions has the same digest.
        replay: RGB frames of the grader's first game, when asked for.
        seconds: wall time of the whole verification; ``answer_seconds``: the agent's answers.
        log: the end of what the agent's process printed (its traceback, if it crashed).
        seeds: the games' seeds (drawn here, never sent to the sandbox), to replay a game.
    """

    verified: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None
    notebook_evaluation: dict[str, Any] | None = None
    note: str = ""
    digest: str = ""
    replay: tuple[Any, ...] = field(default=(), repr=False)
    seconds: float = 0.0
    answer_seconds: float = 0.0
    log: str = ""
    seeds: list[int] = field(default_factory=list)
    #: CPU seconds of the agent's run: its cgroup's figure where there is one, else what its
    #: process printed at its end (a cost, never a grade)
    sandbox_cpu: float = 0.0
    #: ``"capped at N s of CPU ..."``: the CPU cap stopped the games (the finished ones count)
    cpu_capped: str = ""
    #: the notebook's own evaluation is above the verified score beyond noise (:func:`claim_gap`)
    claim_flag: str = ""


def find_agent(
    nb: NotebookNode, folder: Path | None = None, agent_file: bytes | None = None
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
                    except ValueError:
                        return None, "the notebook's output (not JSON)"
                return bundle, "the notebook's output"
    if agent_file is not None:
        try:
            return json.loads(agent_file), AGENT_FILE
        except ValueError as error:
            return None, f"{AGENT_FILE} ({type(error).__name__})"
    if folder is not None and (Path(folder) / AGENT_FILE).is_file():
        try:
            return json.loads(read_bytes(Path(folder) / AGENT_FILE)), AGENT_FILE
        except (OSError, ValueError) as error:
            return None, f"{AGENT_FILE} ({type(error).__name__})"
    return None, ""


def claim_gap(verified: dict[str, Any], notebook: dict[str, Any] | None) -> str:
    """A note when the notebook's own evaluation (same protocol, other games) is above the
    grader's by more than the games' randomness explains, else ``""``."""
    if not notebook or notebook.get("protocol") is None:
        return ""
    if notebook["protocol"].to_dict() != verified["protocol"]:
        return ""
    errors = [
        (entry["std"] / math.sqrt(max(entry["games"] - 1, 1))) ** 2
        for entry in (verified, notebook)
    ]
    noise = NOISE_ERRORS * math.sqrt(sum(errors))
    gap = notebook["score"] - verified["score"]
    if gap > max(noise, 1.0):
        return (
            f"the notebook's own evaluation ({notebook['score']:.1f}) is {gap:.1f} above the "
            f"grader's ({verified['score']:.1f}), more than the games' randomness explains "
            f"({noise:.1f}): check that the saved agent is the one that was evaluated"
        )
    return ""


def play_in_sandbox(
    job: dict[str, Any],
    protocol: EvaluationProtocol,
    bin_dir: Path,
    lib_dir: Path,
    limits: AgentLimits = DEFAULT_AGENT_LIMITS,
    sandbox_limits: SandboxLimits = DEFAULT_LIMITS,
    isolate: bool = True,
    replay_steps: int = 0,
    seeds: list[int] | None = None,
) -> tuple[AgentConversation, Any]:
    """Start ``agent_server.py`` in the sandbox with ``job`` (``{"cells", "bundle", "threads"}``,
    the bundle already checked) and play ``protocol`` against it on seeds drawn here (or
    ``seeds``, for tests that must know them); the
    conversation (``result`` or ``failure``) and the sandbox's run (its log, how it ended)."""
    seeds = game_seeds(protocol.games) if seeds is None else seeds  # tests fix them
    conversation = AgentConversation(job, protocol, seeds, limits, replay_steps)
    env = {
        "PATH": f"{PYTHON_BIN}:/usr/bin:/bin",
        "HOME": "/submission/home",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{_GRADER_DIR}/lib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "A2C_KIT_QUICK": "1",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    ran = run_isolated(
        [PYTHON, f"{_GRADER_DIR}/bin/agent_server.py"],
        {f"{_GRADER_DIR}/bin": bin_dir, f"{_GRADER_DIR}/lib": lib_dir},
        env,
        conversation,
        limits.start_seconds + limits.agent_seconds + 60.0,
        limits=sandbox_limits,
        isolate=isolate,
    )
    return conversation, ran


def verify_agent(
    nb: NotebookNode,
    bin_dir: Path,
    lib_dir: Path,
    folder: Path | None = None,
    protocol: EvaluationProtocol = GRADER_PROTOCOL,
    limits: AgentLimits = DEFAULT_AGENT_LIMITS,
    sandbox_limits: SandboxLimits = DEFAULT_LIMITS,
    isolate: bool = True,
    replay_steps: int = 0,
    agent_file: bytes | None = None,
) -> AgentReport:
    """Play ``protocol`` with the agent of ``nb`` in the sandbox; see the module docstring.

    Args:
        nb: the submission (repaired: its set-up cells as released).
        bin_dir, lib_dir: the sandbox's scripts and ``course_lib`` snapshot, as the
            :class:`~autograder.core.assessor.Assessor` prepares them (its ``_bin``, ``lib``).
        folder: the submission's folder, for ``a2c_agent.json`` when the output has none.
        protocol: what is played (the course's game); the seeds are drawn here, per call.
        limits: time for the agent's start, each answer, all answers.
        isolate: ``False`` only for debugging (a plain process).
        replay_steps: frames of the first game to keep in ``report.replay``.
        agent_file: the bytes of the ``a2c_agent.json`` handed in beside the notebook, used
            when its output holds no agent.
    """
    start = time.monotonic()
    report = AgentReport()
    try:
        bundle, where = find_agent(nb, folder, agent_file)
        if bundle is None:
            report.note = (
                f"no saved agent: {where} could not be read" if where else
                "no saved agent: run the locked cell that calls save_agent after training, keep "
                "its output, and hand in a2c_agent.json where your platform takes files"
            )  # fmt: skip
            return report
        try:
            weights = unpack_agent(bundle)
        except AgentBundleError as error:
            report.note = f"the saved agent was refused: {error}"
            return report
        report.claimed = weights.claimed
        report.notebook_evaluation = weights.evaluation
        report.digest = weights.digest
        if weights.env_id != protocol.env_id:
            report.note = (
                f"the saved agent plays {weights.env_id}, the course's game is {protocol.env_id}"
            )
            return report
        cells = [cell["source"] for cell in job_cells(nb, {"model": "make_model"})]
        job = {"cells": [source for source in cells if source is not None], "bundle": bundle,
               "threads": 1, "cpu_seconds": limits.cpu_seconds}  # fmt: skip
        conversation, ran = play_in_sandbox(
            job, protocol, bin_dir, lib_dir, limits, sandbox_limits, isolate, replay_steps
        )
        report.answer_seconds = conversation.answer_seconds
        report.log = ran.output[-2000:]
        reported = re.findall(r"agent_server: ([0-9]{1,6}\.[0-9]{2}) s CPU", report.log)
        report.sandbox_cpu = conversation.sandbox_cpu or (float(reported[-1]) if reported else 0.0)
        report.cpu_capped = conversation.cpu_capped
        if conversation.result is None:
            report.note = conversation.failure or (
                "the agent's run ended without games" + (" (killed at the time limit)"
                                                         if ran.timed_out else "")
            )  # fmt: skip
            return report
        report.verified = conversation.result.summary()
        report.replay = conversation.result.replay
        report.seeds = [game.seed for game in conversation.result.games]
        report.claim_flag = claim_gap(report.verified, weights.evaluation)
        report.note = "; ".join(filter(None, [report.cpu_capped, report.claim_flag]))
        return report
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        report.note = f"the grader could not play the agent ({type(error).__name__}: {error})"[:500]
        return report
    finally:
        report.seconds = time.monotonic() - start
