"""The student's network in the sandbox, as an agent the grader's driver plays with (trusted code).

:class:`AgentConversation` is a :data:`~autograder.core.isolation.supervision.Conversation`: the sandbox runs
``agent_server.py``, and this side, in the grader's process, sends it the cells that define
``make_model`` and the checked weights, waits for it to be ready, then plays the protocol's
games with :func:`course_lib.evaluation.play_games`. The driver is this process: it owns the
emulators, draws the seeds and samples every action from the logits the sandbox answers, so no
score, frame or seed comes from the sandbox and none goes to it. Each answer must arrive within
``step_seconds``, all of them within ``agent_seconds``, and be exactly ``float32 (B, A)``
finite logits; anything else stops the games and becomes the student's note. The CPU of the
whole verification, this thread's (the emulators) and the sandbox's run's (measured from its
cgroup, never from what the sandbox says), is capped at ``cpu_seconds``: when it is spent the
games stop, and those finished are the score, with the cap in the note.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.core.agent_play.framing import (
    ASK,
    JOB,
    FrameError,
    FrameTimeout,
    read_frame,
    send,
)
from course_lib.evaluation import (
    AgentAnswerError,
    EvaluationProtocol,
    EvaluationResult,
    GameResult,
    play_games,
)

__all__ = ["DEFAULT_AGENT_LIMITS", "AgentConversation", "AgentLimits"]


@dataclass(frozen=True)
class AgentLimits:
    """Time the sandboxed agent gets (wall-clock seconds), and the CPU of the whole verification.

    Attributes:
        start_seconds: to run the set-up cells, build ``make_model`` and load the weights.
        step_seconds: to answer one batch of observations.
        agent_seconds: to answer all the batches of one grading together.
        cpu_seconds: both sides' CPU together; when it is spent the games stop and the games
            finished so far are the score (none finished: no verified score).
    """

    start_seconds: float = 120.0
    step_seconds: float = 5.0
    agent_seconds: float = 120.0
    #: CPU seconds of the whole verification: the grader's emulators and frames (this thread)
    #: plus the sandbox's agent process, measured from outside (:meth:`AgentConversation.watch`)
    cpu_seconds: float = 20.0


DEFAULT_AGENT_LIMITS = AgentLimits()


class _Stop(Exception):
    """The agent's note: why its games stopped."""


class _CpuSpent(_Stop):
    """The verification's CPU is spent: the finished games are scored."""


class AgentConversation:
    """Plays ``protocol`` on ``seeds`` with the network the sandbox builds from ``job``.

    After the call, ``result`` holds the games (:class:`EvaluationResult`) or ``failure`` says,
    in course words, why there are none; ``answer_seconds`` is the time spent waiting for the
    agent's answers.
    """

    def __init__(
        self,
        job: dict[str, Any],
        protocol: EvaluationProtocol,
        seeds: Sequence[int],
        limits: AgentLimits = DEFAULT_AGENT_LIMITS,
        replay_steps: int = 0,
    ) -> None:
        self.job, self.protocol, self.seeds = job, protocol, list(seeds)
        self.limits, self.replay_steps = limits, replay_steps
        self.result: EvaluationResult | None = None
        self.failure: str = ""
        self.answer_seconds = 0.0
        #: ``"capped at N s of CPU ..."`` when the CPU cap stopped the games, else ``""``
        self.cpu_capped = ""
        #: CPU seconds used: the grader's thread and the sandbox's run, as last measured
        self.grader_cpu = self.sandbox_cpu = 0.0
        self._sandbox_cpu: Callable[[], float | None] = lambda: None
        self._finished: list[GameResult] = []

    def watch(self, sandbox_cpu: Callable[[], float | None]) -> None:
        """Called by the sandbox's supervisor before the conversation: ``sandbox_cpu()`` is the
        run's CPU seconds so far, read from outside it (its cgroup; ``None`` where there is
        none: then the agent's process caps itself with ``RLIMIT_CPU``, set by the grader's
        ``agent_server.py`` before any of the student's code runs)."""
        self._sandbox_cpu = sandbox_cpu

    def _cpu_spent(self, started: float) -> float:
        self.grader_cpu = time.thread_time() - started
        self.sandbox_cpu = self._sandbox_cpu() or 0.0
        return self.grader_cpu + self.sandbox_cpu

    def __call__(self, requests: int, answers: int) -> None:
        try:
            self._play(requests, answers)
        except _CpuSpent as stop:
            self.cpu_capped = str(stop)
            self._score_finished()
        except _Stop as stop:
            self.failure = str(stop)
        except AgentAnswerError as error:
            self.failure = f"the agent's answer was refused: {error}"
        except BrokenPipeError:
            self.failure = (
                "the agent's process ended before the games did (it crashed or exited, or used "
                f"up its {self.limits.cpu_seconds:g} s of CPU)"
            )
        finally:
            try:
                send(requests, ASK, b"", time.monotonic() + 1.0)  # "no more": it exits
            except (OSError, FrameTimeout):
                pass
            os.close(requests)
            os.close(answers)

    def _score_finished(self) -> None:
        """The games finished before the CPU cap, in the order of their seeds, as the result."""
        order = {seed: index for index, seed in enumerate(self.seeds)}
        games = tuple(sorted(self._finished, key=lambda game: order.get(game.seed, 0)))
        if games:
            self.result = EvaluationResult(self.protocol, games)
        else:
            self.failure = f"{self.cpu_capped}, before any game finished"

    def _play(self, requests: int, answers: int) -> None:
        limits = self.limits
        cpu_start = time.thread_time()
        start = time.monotonic() + limits.start_seconds
        send(requests, JOB, json.dumps(self.job).encode(), start)
        try:
            ready = json.loads(read_frame(answers, 4096, start))
        except FrameTimeout:
            raise _Stop(
                f"make_model and the saved weights were not ready within {limits.start_seconds:g} s"
            ) from None
        except (FrameError, ValueError) as error:
            raise _Stop(f"the agent's process did not start: {error}") from None
        if not isinstance(ready, dict) or ready.get("ready") is not True:
            error = ready.get("error") if isinstance(ready, dict) else None
            raise _Stop(f"the agent could not be built: {str(error)[:500]}")

        def agent(observations: np.ndarray) -> np.ndarray:
            batch = len(observations)
            n_actions = self._n_actions
            if self._cpu_spent(cpu_start) >= limits.cpu_seconds:
                raise _CpuSpent(
                    f"capped at {limits.cpu_seconds:g} s of CPU (the grader's games "
                    f"{self.grader_cpu:.1f} s, the agent's process {self.sandbox_cpu:.1f} s): "
                    f"{len(self._finished)} of {self.protocol.games} games finished"
                )
            left = limits.agent_seconds - self.answer_seconds
            if left <= 0:
                raise _Stop(f"the agent used up its {limits.agent_seconds:g} s of answers")
            asked = time.monotonic()
            deadline = asked + min(limits.step_seconds, left)
            try:
                send(requests, ASK, np.asarray(observations, dtype=np.uint8).tobytes(), deadline)
                payload = read_frame(answers, batch * n_actions * 4, deadline)
            except FrameTimeout:
                raise _Stop(
                    f"the agent did not answer a batch of {batch} observations within "
                    f"{min(limits.step_seconds, left):g} s"
                ) from None
            except FrameError as error:
                raise _Stop(f"the agent's answer was refused: {error}") from None
            finally:
                self.answer_seconds += time.monotonic() - asked
            if len(payload) != batch * n_actions * 4:
                raise AgentAnswerError(
                    f"expected float32 logits of shape ({batch}, {n_actions}), got "
                    f"{len(payload):,} bytes"
                )
            return np.frombuffer(payload, dtype="<f4").reshape(batch, n_actions)

        self.result = play_games(
            agent, self.protocol, self.seeds, replay_steps=self.replay_steps,
            on_game_end=self._finished.append,
        )  # fmt: skip
        self._cpu_spent(cpu_start)

    @property
    def _n_actions(self) -> int:
        return int(self.job["bundle"]["n_actions"])
