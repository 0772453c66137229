"""How a trained agent is scored: the evaluation protocol, and the driver that plays its games.

One protocol serves the notebook, ``python -m solutions.evaluate`` and the grader, so a score
means the same thing wherever it was measured. An :class:`EvaluationProtocol` says:

* which game, and how many **full games** (all lives) are played, each scored by its **raw**
  score (the game's own points, not the clipped learning reward), as the course's Atari stack
  reports it (:func:`course_lib.atari_env.make_atari_env`, ``info["episode"]["r"]``);
* how each game starts: 1 to ``noop_max`` random no-op frames (after one FIRE where the game
  has it), so that no two games start alike and a memorised sequence of moves does not work;
* when a game stops: the emulator's cap of ``max_game_frames`` = 108,000 frames (30 minutes of
  play, 27,000 agent steps), and, if ``max_agent_steps`` is set, after that many agent steps: a
  game cut there counts with its score so far and is reported as **capped** (its score is then
  a lower bound). The grader sets such a cap so that grading a class stays affordable;
* how actions are chosen from the network's logits: ``"sampled"`` from softmax(logits), as the
  agent played while it learned, or ``"greedy"`` (the argmax). The course evaluates with
  sampled actions: A2C learns a stochastic policy, and its greedy version can get stuck
  (a Space Invaders agent that never fires, a Breakout agent that never serves) and score far
  below what it learned.

Who does what. :func:`play_games` is the **driver**: it owns the emulators and every random
number (each game's start and each sampled action come from the seed the caller drew for that
game), and it adds up the scores. The **agent** only answers: it is a callable that maps a
batch of observations ``uint8 (B, 4, 84, 84)`` to logits ``(B, A)``, one row per game still
running. It sees frames, never a seed, a score or an action it did not pick. In the notebook
the agent is the student's network (:func:`model_agent`); in the grader it is the same network
behind a pipe, in a sandbox, while the driver runs in the grader's own process. Logits, not
actions, cross that line so that the sampling, and thus every random number of the evaluation,
stays the driver's.

Each game's result depends only on its seed and on the agent's answers, not on how many games
are played side by side or in which order they end: game ``k`` always starts from ``seeds[k]``
and draws its actions from its own generator.

>>> result = evaluate_agent(model, GRADER_PROTOCOL, seed=0)  # doctest: +SKIP
>>> print(result.describe())                                  # doctest: +SKIP
mean raw score 289.5 (std 120.3, standard error 45.5) over 8 games of SpaceInvaders, ...

which is ``play_games(model_agent(model), protocol, game_seeds(protocol.games, seed))``.

Why one module: the protocol, the driver that plays it and the result it returns are one
contract (what a score means); split, a reader would have to hold three files to check that
the grader and the notebook score alike.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .env_pool import EnvPool
from .validation import check_int

__all__ = [
    "ACTION_CHOICES",
    "COURSE_PROTOCOL",
    "GRADER_PROTOCOL",
    "AgentAnswerError",
    "EvaluationProtocol",
    "EvaluationResult",
    "GameResult",
    "evaluate_agent",
    "game_seeds",
    "model_agent",
    "play_games",
]

#: How actions are chosen from the logits: ``"sampled"`` (the course's) or ``"greedy"``.
ACTION_CHOICES = ("sampled", "greedy")
#: Seeds are drawn below this (an ALE seed is a C int).
SEED_LIMIT = 2**31 - 1

#: An agent: observations ``uint8 (B, 4, 84, 84)`` -> logits ``(B, A)`` (numpy or torch).
Agent = Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class EvaluationProtocol:
    """What an evaluation plays and how it scores it (see the module docstring).

    Attributes:
        env_id: the ALE id of the game, e.g. ``"SpaceInvadersNoFrameskip-v4"``.
        games: how many full games are played, and averaged.
        noop_max: each game starts with 1 to ``noop_max`` random no-op frames.
        max_game_frames: the emulator cuts a game after this many frames (108,000 = 30 minutes).
        max_agent_steps: if set, a game still running after this many agent steps is stopped
            and counts with its score so far, reported as capped; ``None``: no such cap.
        actions: ``"sampled"`` from softmax(logits), as in training, or ``"greedy"`` (argmax).
        games_at_once: how many games run side by side: the batch size the agent answers.
    """

    env_id: str = "SpaceInvadersNoFrameskip-v4"
    games: int = 10
    noop_max: int = 30
    max_game_frames: int = 108_000
    max_agent_steps: int | None = None
    actions: str = "sampled"
    games_at_once: int = 8

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(
                f"`env_id` must be an ALE id such as 'SpaceInvadersNoFrameskip-v4', "
                f"got {self.env_id!r}."
            )
        check_int("games", self.games, 1, fix="the course plays 10")
        check_int("noop_max", self.noop_max, 0, fix="the course uses 30; 0 turns no-ops off")
        check_int("max_game_frames", self.max_game_frames, 1, fix="the usual cap is 108_000")
        check_int("max_agent_steps", self.max_agent_steps, 1, allow_none=True,
                  fix="None plays every game to its end")  # fmt: skip
        check_int("games_at_once", self.games_at_once, 1, fix="try 8")
        if self.actions not in ACTION_CHOICES:
            raise ValueError(
                f"`actions` must be one of {', '.join(map(repr, ACTION_CHOICES))}, "
                f"got {self.actions!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON, settings files and reports)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationProtocol:
        """The protocol :meth:`to_dict` wrote; unknown keys are an error that names them."""
        fields = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(
                f"Unknown evaluation setting(s) {unknown}: expected some of {sorted(fields)}."
            )
        return cls(**dict(data))

    def describe(self) -> str:
        """One sentence: what is played and how it is scored."""
        game = self.env_id.replace("NoFrameskip-v4", "")
        cap = f"{self.max_game_frames:,} frames"
        if self.max_agent_steps is not None:
            cap += f" or {self.max_agent_steps:,} agent steps (a game cut there is 'capped')"
        return (
            f"{self.games} full games of {game}, each from 1 to {self.noop_max} random no-op "
            f"frames and stopped at {cap}; actions {self.actions} from the policy's logits; "
            "the score is the mean raw game score"
        )


#: Full games to the emulator's cap: ``python -m solutions.evaluate`` and the end of training.
COURSE_PROTOCOL = EvaluationProtocol()
#: The grader's default: fewer games, each capped, so that a class of 300 grades in minutes of
#: CPU per core (docs/benchmarks.md). The notebook plays it too, so a student sees beforehand
#: what the grader will measure (on other games).
GRADER_PROTOCOL = EvaluationProtocol(games=8, max_agent_steps=1_000)


@dataclass(frozen=True)
class GameResult:
    """One game: its seed, raw score, agent steps, and how it ended.

    ``ended`` is ``"game over"`` (all lives lost), ``"frame cap"`` (the emulator cut it at
    ``max_game_frames``) or ``"step cap"`` (stopped at ``max_agent_steps``: ``capped``).
    """

    seed: int
    score: float
    steps: int
    ended: str

    @property
    def capped(self) -> bool:
        """Stopped by the protocol's ``max_agent_steps``: the score is what it had by then."""
        return self.ended == "step cap"


@dataclass(frozen=True)
class EvaluationResult:
    """The games of one evaluation, in the order of their seeds, and what they add up to."""

    protocol: EvaluationProtocol
    games: tuple[GameResult, ...]
    #: RGB frames of game 0 (one per agent step), when :func:`play_games` was asked for them.
    replay: tuple[np.ndarray, ...] = dataclasses.field(default=(), repr=False)

    @property
    def scores(self) -> np.ndarray:
        """Raw game scores, ``float64 (games,)``."""
        return np.array([game.score for game in self.games], dtype=np.float64)

    @property
    def mean(self) -> float:
        """Mean raw score: the evaluation's score."""
        return float(self.scores.mean())

    @property
    def std(self) -> float:
        """Spread of the game scores (population standard deviation; 0 for one game)."""
        return float(self.scores.std())

    @property
    def stderr(self) -> float:
        """Standard error of the mean: the sample std (``ddof=1``) over ``sqrt(games)``; NaN
        for one game."""
        n = len(self.games)
        return float(self.scores.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan

    @property
    def steps(self) -> int:
        """Agent steps played over all games."""
        return sum(game.steps for game in self.games)

    @property
    def capped(self) -> int:
        """How many games were stopped at ``max_agent_steps``."""
        return sum(game.capped for game in self.games)

    def summary(self) -> dict[str, Any]:
        """Plain data for reports: score, spread, games, steps, capped games, the protocol."""
        return {
            "score": self.mean,
            "std": self.std,
            "stderr": None if math.isnan(self.stderr) else self.stderr,
            "games": len(self.games),
            "steps": self.steps,
            "capped": self.capped,
            "scores": self.scores.tolist(),
            "protocol": self.protocol.to_dict(),
        }

    def describe(self) -> str:
        """What was measured, in one or two sentences."""
        n = len(self.games)
        game = self.protocol.env_id.replace("NoFrameskip-v4", "")
        spread = f"std {self.std:.1f}" + (f", standard error {self.stderr:.1f}" if n > 1 else "")
        text = (
            f"mean raw score {self.mean:.1f} ({spread}) over {n} game{'s' * (n != 1)} of "
            f"{game}, {self.steps:,} agent steps, actions {self.protocol.actions}"
        )
        if self.capped:
            text += (
                f"; {self.capped} game{'s' * (self.capped != 1)} stopped at the cap of "
                f"{self.protocol.max_agent_steps:,} agent steps (capped: counted with the "
                "score so far)"
            )
        return text


class AgentAnswerError(ValueError):
    """The agent's answer to a batch of observations was not logits of the expected shape."""


def game_seeds(games: int, seed: int | None = None) -> list[int]:
    """One seed per game: derived from ``seed`` (reproducible), or drawn with :mod:`secrets`
    when ``seed`` is ``None`` (what the grader does: nobody can know them in advance)."""
    games = check_int("games", games, 1)
    if seed is None:
        return [secrets.randbelow(SEED_LIMIT) for _ in range(games)]
    check_int("seed", seed, 0, fix="or None for seeds nobody can predict")
    state = np.random.SeedSequence(seed).generate_state(games, dtype=np.uint64)
    return [int(value % SEED_LIMIT) for value in state]


def model_agent(model: Any, device: Any = None) -> Agent:
    """The agent of a network from ``make_model``: observations -> its logits, without autograd.

    ``device`` defaults to the device of the model's first parameter. The network is used as it
    is (call ``model.eval()`` first if it has layers that behave differently in training).
    """
    import torch

    if not callable(model):
        raise TypeError(f"`model` must be the nn.Module of make_model, got {type(model).__name__}.")
    if device is None:
        first = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
        device = first.device if first is not None else "cpu"

    def answer(observations: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = model(torch.as_tensor(observations, device=device))
        logits = out[0] if isinstance(out, tuple | list) else out
        return logits.detach().float().cpu().numpy()

    return answer


def _atari_env(protocol: EvaluationProtocol, render_mode: str | None = None) -> Any:
    """One env of the course's Atari stack, as the protocol sets it (raw rewards), made lean
    for playing with the same games: every game starts with a seeded reset, which restores the
    emulator instead of loading the ROM again where that gives the same game, and the frames
    a step skips are not fetched (:mod:`course_lib.atari_env`)."""
    from .atari_env import make_atari_env

    return make_atari_env(protocol.env_id, clip_reward=False, noop_max=protocol.noop_max,
                          max_game_frames=protocol.max_game_frames, render_mode=render_mode,
                          restore_on_seed=True, fetch_skipped_frames=False)  # fmt: skip


def _logits_of(answer: Any, batch: int, n_actions: int) -> np.ndarray:
    """The answer as ``float64 (batch, n_actions)`` finite logits, or :class:`AgentAnswerError`."""
    if hasattr(answer, "detach"):  # a torch tensor
        answer = answer.detach().cpu().numpy()
    try:
        logits = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise AgentAnswerError(
            f"the agent must answer a batch of observations with logits, an array of numbers "
            f"of shape (B, A) = ({batch}, {n_actions}); it answered {type(answer).__name__} "
            f"({error})."
        ) from None
    if logits.shape != (batch, n_actions):
        raise AgentAnswerError(
            f"the agent must answer with logits of shape (B, A) = ({batch}, {n_actions}), one "
            f"row per observation and one column per action; it answered shape {logits.shape}."
        )
    if not np.isfinite(logits).all():
        raise AgentAnswerError(
            "the agent answered logits that are not all finite (NaN or infinity): a network "
            "whose weights blew up, or a division by zero in its forward pass."
        )
    return logits


def _choose(logits: np.ndarray, rng: np.random.Generator, how: str) -> int:
    """One action from one row of logits: the argmax, or a draw from softmax(logits)."""
    if how == "greedy":
        return int(np.argmax(logits))
    probs = np.exp(logits - logits.max())  # float64: no overflow, the largest term is 1
    cumulative = np.cumsum(probs)
    draw = rng.random() * cumulative[-1]
    return int(min(np.searchsorted(cumulative, draw, side="right"), len(probs) - 1))


class _Lender:
    """Where :func:`play_games` gets its envs (``make_env``, or ``pool``) and where they go
    when their games are over (closed, or back to ``pool``); ``render_mode``: every env is
    made so (one kind of env, whichever mode is asked for)."""

    def __init__(
        self,
        make_env: Callable[..., Any],
        kind: tuple[Any, ...],
        pool: Any,
        render_mode: str | None = None,
    ) -> None:
        self.make_env, self.kind, self.pool = make_env, kind, pool
        self.render_mode = render_mode

    def take(self, render_mode: str | None) -> Any:
        render_mode = self.render_mode or render_mode
        if self.pool is None:
            return self.make_env(render_mode=render_mode)
        make = functools.partial(self.make_env, render_mode=render_mode)
        return self.pool.take((*self.kind, render_mode), make)

    def give_back(self, render_mode: str | None, env: Any) -> None:
        render_mode = self.render_mode or render_mode
        if self.pool is None:
            env.close()
        else:
            self.pool.give_back((*self.kind, render_mode), env)


class _Game:
    """A game in progress in one env: its index, seed, generator, observation and score."""

    def __init__(self, index: int, seed: int, env: Any) -> None:
        self.index, self.seed, self.env = index, seed, env
        # Actions draw from a stream of their own, apart from the emulator's (seeded by `seed`).
        self.rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
        self.obs, _ = env.reset(seed=seed)
        self.score = 0.0
        self.steps = 0

    def step(self, action: int, max_agent_steps: int | None) -> str | None:
        """Play one agent step; how the game ended (:attr:`GameResult.ended`), or None."""
        self.obs, reward, terminated, truncated, info = self.env.step(action)
        self.score += float(reward)
        self.steps += 1
        if "episode" in info:  # the whole game is over: its raw score, all lives
            self.score = float(np.asarray(info["episode"]["r"]).reshape(-1)[0])
            return "frame cap" if truncated and not terminated else "game over"
        if max_agent_steps is not None and self.steps >= max_agent_steps:
            return "step cap"
        if terminated or truncated:  # a lost life: the same game goes on
            self.obs, _ = self.env.reset()
        return None


def play_games(
    agent: Agent,
    protocol: EvaluationProtocol,
    seeds: Sequence[int],
    *,
    make_env: Callable[..., Any] | None = None,
    replay_steps: int = 0,
    on_game_end: Callable[[GameResult], None] | None = None,
    pool: EnvPool | None = None,
) -> EvaluationResult:
    """Play the protocol's games with ``agent`` and return their raw scores.

    Args:
        agent: observations ``uint8 (B, 4, 84, 84)`` -> logits ``(B, A)`` (numpy or torch), one
            row per game still running (:func:`model_agent` makes one from a network).
        protocol: what to play and how (:class:`EvaluationProtocol`).
        seeds: one seed per game (``protocol.games`` of them, integers in ``[0, 2**31 - 1)``):
            game ``k`` starts from ``seeds[k]`` and samples its actions from a generator seeded
            by it. :func:`game_seeds` draws them.
        make_env: ``make_env(render_mode=None)`` -> one env with the course's single-env
            semantics (a lost life is ``terminated`` and ``reset()`` continues the game; a
            finished game reports ``info["episode"]["r"]``, its raw score). Default: the
            course's Atari stack with raw rewards, as the protocol sets it. The tests pass
            fake envs.
        replay_steps: keep up to this many RGB frames of game 0 (``env.render()`` after each
            agent step) in ``result.replay``, for a replay made from the driver's own frames.
        on_game_end: called with each game's :class:`GameResult` as it ends (a progress bar);
            games end in any order.
        pool: take the envs from this :class:`~course_lib.env_pool.EnvPool` and give them back
            when the games are over (closed instead if the evaluation fails), so that a
            process that plays many evaluations makes its emulators once. Every game starts
            with a seeded reset, so an env from the pool plays as a new one would.

    Raises:
        AgentAnswerError: the agent answered something that is not finite logits of shape
            ``(B, A)``. Whatever the agent itself raises propagates unchanged.
        ValueError: a bad seed list or argument.
    """
    if not isinstance(protocol, EvaluationProtocol):
        raise TypeError(f"`protocol` must be an EvaluationProtocol, got {type(protocol).__name__}.")
    seeds = [check_int("seeds[k]", seed, 0, maximum=SEED_LIMIT - 1) for seed in seeds]
    if len(seeds) != protocol.games:
        raise ValueError(
            f"`seeds` must hold one seed per game, {protocol.games}, got {len(seeds)}: "
            f"use game_seeds({protocol.games}, seed)."
        )
    check_int("replay_steps", replay_steps, 0)
    # The kind of env, for the pool: the protocol's emulator settings, or the caller's maker.
    if make_env is None:
        # ale-py renders only when asked: every env of the course's stack can render the replay
        kind = (protocol.env_id, protocol.noop_max, protocol.max_game_frames)
        lender = _Lender(functools.partial(_atari_env, protocol), kind, pool, "rgb_array")
    else:
        lender = _Lender(make_env, (make_env,), pool)
    results: dict[int, GameResult] = {}
    replay: list[np.ndarray] = []
    free_envs: list[Any] = []
    running: list[_Game] = []
    next_game = 0
    n_actions: int | None = None
    try:
        while next_game < protocol.games or running:
            # Start games in the free places, in the order of their seeds.
            while next_game < protocol.games and len(running) < protocol.games_at_once:
                if next_game == 0 and replay_steps:
                    env = lender.take("rgb_array")
                else:
                    env = free_envs.pop() if free_envs else lender.take(None)
                if n_actions is None:
                    n_actions = int(env.action_space.n)
                try:
                    running.append(_Game(next_game, seeds[next_game], env))
                except BaseException:
                    env.close()
                    raise
                next_game += 1
            observations = np.stack([game.obs for game in running])  # (B, 4, 84, 84), a copy
            logits = _logits_of(agent(observations), len(running), n_actions)
            still_running = []
            for game, row in zip(running, logits, strict=True):
                ended = game.step(
                    _choose(row, game.rng, protocol.actions), protocol.max_agent_steps
                )
                if game.index == 0 and len(replay) < replay_steps:
                    replay.append(np.asarray(game.env.render()).copy())
                if ended is None:
                    still_running.append(game)
                    continue
                results[game.index] = GameResult(game.seed, game.score, game.steps, ended)
                if on_game_end is not None:
                    on_game_end(results[game.index])
                if game.index == 0 and replay_steps:
                    lender.give_back("rgb_array", game.env)  # it plays game 0 only
                else:
                    free_envs.append(game.env)
            running = still_running
    except BaseException:
        for env in free_envs + [game.env for game in running]:
            env.close()
        raise
    for env in free_envs:
        lender.give_back(None, env)
    games = tuple(results[index] for index in range(protocol.games))
    return EvaluationResult(protocol, games, tuple(replay))


def evaluate_agent(
    model: Any,
    protocol: EvaluationProtocol = COURSE_PROTOCOL,
    seed: int | None = None,
    progress: bool = False,
) -> EvaluationResult:
    """Play ``protocol``'s games with the network ``model`` (``make_model``'s module), the game
    seeds drawn from ``seed`` (:func:`game_seeds`; ``None``: seeds nobody can predict).

    ``progress`` shows a bar that counts the games as they end: a trained agent's full game
    lasts thousands of agent steps, so an evaluation takes a minute or more on a CPU.
    """
    from tqdm.auto import tqdm

    bar = tqdm(total=protocol.games, desc="evaluation", unit="game", dynamic_ncols=True,
               disable=not progress)  # fmt: skip
    try:
        return play_games(
            model_agent(model), protocol, game_seeds(protocol.games, seed),
            on_game_end=lambda _: bar.update(1),
        )  # fmt: skip
    finally:
        bar.close()
