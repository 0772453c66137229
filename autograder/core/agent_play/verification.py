"""The verified score: the grader plays the saved weights in its own copy of the course's network.

The trained weights travel with the submission as plain data (:mod:`course_lib.saved_agent`);
no student code runs while they are played, and no sandbox is started for it:

1. :func:`~.handed_in.handed_in` finds the saved agent (the bundle in the notebook's output, else
   ``a2c_agent.json`` beside it), checks it as bounded plain data
   (:func:`course_lib.saved_agent.unpack_agent`: sizes before decompressing, finite weights,
   the course's game) and reads it as the course's network: which tensor is which layer, by
   their shapes (:func:`course_lib.network_layout.network_layouts`);
2. the student's ``make_model`` earns the replay in the parts' sandbox the grading already has
   (:mod:`.model_check`): loaded with those weights, it must compute what the grader's network
   computes with them, on frames drawn for this grading;
3. :func:`play_agent` plays the course's evaluation protocol in this process, with the seeds
   drawn from :mod:`secrets` for this grading alone: the grader's emulators, the grader's
   network (the Nature-DQN forward pass of the judges,
   :class:`autograder.core.judging.parts.model.NatureDQN`, in float32, one thread, denormal
   numbers flushed to zero) and the grader's sampling of every action. Its CPU (this thread's:
   the emulators and the network) is capped by the course's ``agent.cpu_seconds``
   (:class:`~autograder.core.course.limits.AgentLimits`, the instructor's ``--agent-cpu-seconds``);
   the games finished by then are the score. The emulators are the process's
   (:data:`EMULATORS`): made by the first play that needs them and kept for the next
   submission's, each game starting from a seeded reset that leaves nothing of the games
   played before (:mod:`course_lib.env_pool`).

:func:`verify_agent` puts them together into an :class:`AgentReport`: the verified score beside
the score the notebook claims, or a note saying why there is none. Never raises for the
submission's sake: a missing, refused or unearned agent is that student's note.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from autograder.core.agent_play.fingerprint import weights_fingerprint
from autograder.core.agent_play.handed_in import HandedIn
from autograder.core.agent_play.model_check import judge_check
from autograder.core.course.limits import AgentLimits
from autograder.core.judging.parts.model import NatureDQN
from autograder.core.judging.torch_threads import one_torch_thread
from course_lib.env_pool import EnvPool
from course_lib.evaluation import (
    GRADER_PROTOCOL,
    AgentAnswerError,
    EvaluationProtocol,
    EvaluationResult,
    GameResult,
    game_seeds,
    play_games,
)

__all__ = [
    "AgentLimits",
    "AgentReport",
    "Played",
    "claim_gap",
    "play_agent",
    "verify_agent",
]

#: The grader's emulators, kept between plays in this process (two plays at once: 16 of a kind).
EMULATORS = EnvPool(keep=16)

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
        digest: SHA-256 of the weights: the same file in two submissions has the same digest.
        replay: RGB frames of the grader's first game, when asked for.
        seconds: wall time of the whole verification (the play).
        cpu_seconds: CPU seconds of the play (this thread: the emulators and the network).
        seeds: the games' seeds (drawn here), to replay a game.
        cpu_capped: ``"capped at N s of CPU ..."``: the CPU cap stopped the games (the
            finished ones count).
        claim_flag: the notebook's own evaluation is above the verified score beyond noise
            (:func:`claim_gap`).
        layout: which tensor of the bundle was which layer of the course's network.
        fingerprint: the weights' fingerprint with the class's key, to find copies
            (:mod:`.fingerprint`), or None.
        kept: the verified score is the one recorded for the same weights and protocol at an
            earlier grading (no new draw).
    """

    verified: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None
    notebook_evaluation: dict[str, Any] | None = None
    note: str = ""
    digest: str = ""
    replay: tuple[Any, ...] = field(default=(), repr=False)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    seeds: list[int] = field(default_factory=list)
    cpu_capped: str = ""
    claim_flag: str = ""
    layout: str = ""
    fingerprint: dict[str, Any] | None = None
    kept: bool = False
    kept_replay_png: str = ""


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


@dataclass
class Played:
    """What :func:`play_agent` played: the games (``result``, None when none finished), why
    they stopped early (``capped``: the CPU cap; ``failure``: the network's outputs were not
    finite), the CPU seconds and the seeds."""

    result: EvaluationResult | None
    capped: str = ""
    failure: str = ""
    cpu_seconds: float = 0.0
    seeds: list[int] = field(default_factory=list)


class _CpuSpent(Exception):
    """The play's CPU is spent: the finished games are scored."""


@contextlib.contextmanager
def _playing_thread() -> Iterator[None]:
    """One torch thread and denormal numbers flushed to zero in the calling thread while it
    plays (both are set per thread): the CPU this thread measures is all the play's, and
    weights that drive activations into denormals cannot slow it."""
    with one_torch_thread():
        torch.set_flush_denormal(True)
        try:
            yield
        finally:
            torch.set_flush_denormal(False)


def play_agent(
    layers: list[tuple[np.ndarray, np.ndarray]],
    protocol: EvaluationProtocol = GRADER_PROTOCOL,
    limits: AgentLimits | None = None,
    replay_steps: int = 0,
    seeds: list[int] | None = None,
    make_env: Any = None,
) -> Played:
    """Play ``protocol`` in this thread with the course's network of ``layers`` (``(weight,
    bias)`` float32 of conv1..3, fc, the policy and the value heads) on seeds drawn here (or
    ``seeds``, for tests that must know them): the grader's emulators (:data:`EMULATORS`;
    ``make_env``: tests' fake games, made for this play), network and sampling; ``limits``:
    the course's (default: the declared ones)."""
    limits = limits or AgentLimits()
    seeds = game_seeds(protocol.games) if seeds is None else list(seeds)
    finished: list[GameResult] = []
    played = Played(None, seeds=seeds)
    start = time.thread_time()
    course_network = NatureDQN(layers, dtype=torch.float32)

    def network(observations: np.ndarray) -> np.ndarray:
        used = time.thread_time() - start
        if used >= limits.cpu_seconds:
            raise _CpuSpent(
                f"capped at {limits.cpu_seconds:g} s of CPU: {len(finished)} of "
                f"{protocol.games} games finished"
            )
        return course_network(observations, values=False)[0]

    try:
        with _playing_thread():
            played.result = play_games(
                network, protocol, seeds, make_env=make_env, replay_steps=replay_steps,
                on_game_end=finished.append, pool=EMULATORS if make_env is None else None,
            )  # fmt: skip
    except _CpuSpent as stop:
        played.capped = str(stop)
        order = {seed: index for index, seed in enumerate(seeds)}
        games = tuple(sorted(finished, key=lambda game: order.get(game.seed, 0)))
        if games:
            played.result = EvaluationResult(protocol, games)
        else:
            played.failure = f"{played.capped}, before any game finished"
    except AgentAnswerError as error:
        played.failure = (
            "the saved weights make the course's network give logits that are not finite (they "
            "overflow float32): train again with the course's learning rate"
            if "not all finite" in str(error)
            else f"the course's network with the saved weights: {error}"
        )
    played.cpu_seconds = time.thread_time() - start
    return played


def _kept(
    previous: Mapping[str, Any] | None, digest: str, protocol: EvaluationProtocol
) -> Mapping[str, Any] | None:
    """``previous`` when it holds a verified score of the weights ``digest`` on ``protocol``."""
    if not isinstance(previous, Mapping) or previous.get("digest") != digest:
        return None
    verified = previous.get("verified")
    if not isinstance(verified, Mapping) or verified.get("protocol") != protocol.to_dict():
        return None
    return previous


def verify_agent(
    agent: HandedIn,
    check: Mapping[str, Any] | None,
    case: Mapping[str, Any] | None,
    protocol: EvaluationProtocol = GRADER_PROTOCOL,
    limits: AgentLimits | None = None,
    replay_steps: int = 0,
    seeds: list[int] | None = None,
    key: bytes | None = None,
    previous: Mapping[str, Any] | None = None,
) -> AgentReport:
    """The :class:`AgentReport` of a handed-in agent: ``check`` is the make_model check's
    records from the parts' run (:mod:`.model_check`; None: it was not run) and ``case`` its
    case; when it passed, the agent is played (:func:`play_agent`), unless ``previous`` (the
    outcome recorded for this student at an earlier grading) holds a verified score of the same
    weights on the same protocol, which is kept: a student's unchanged agent keeps its score,
    whatever else is graded again, and no resubmission draws it anew. With the class's ``key``,
    the weights' fingerprint is kept to find copies (:mod:`.fingerprint`). Never raises."""
    start = time.monotonic()
    report = AgentReport(note=agent.note)
    try:
        if agent.weights is not None:
            report.claimed = agent.weights.claimed
            report.notebook_evaluation = agent.weights.evaluation
            report.digest = agent.weights.digest
        if not agent.playable:
            return report
        assert agent.weights is not None  # playable
        tensors = agent.weights.tensors
        if key:
            report.fingerprint = weights_fingerprint(agent.layouts[0].layers(tensors), key)
        if check is None or case is None:
            report.note = "make_model was not checked with the saved weights"
            return report
        layout, why = judge_check(check, case, agent.weights.tensors, agent.layouts)
        if layout is None:
            report.note = why
            return report
        report.layout = layout.describe()
        earlier = _kept(previous, agent.weights.digest, protocol)
        if earlier is not None:
            report.verified, report.kept = earlier["verified"], True
            report.seeds = list(earlier.get("seeds") or [])
            report.kept_replay_png = str(earlier.get("replay_png") or "")
            report.claim_flag = claim_gap(report.verified, agent.weights.evaluation)
            report.note = report.claim_flag
            return report
        played = play_agent(
            layout.layers(agent.weights.tensors), protocol, limits, replay_steps, seeds
        )
        report.cpu_seconds, report.seeds, report.cpu_capped = (
            played.cpu_seconds, played.seeds, played.capped
        )  # fmt: skip
        if played.result is None:
            report.note = played.failure
            return report
        report.verified = played.result.summary()
        report.replay = played.result.replay
        report.claim_flag = claim_gap(report.verified, agent.weights.evaluation)
        report.note = "; ".join(filter(None, [played.capped, report.claim_flag]))
        return report
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        report.note = f"the grader could not play the agent ({type(error).__name__}: {error})"[:500]
        return report
    finally:
        report.seconds = time.monotonic() - start
