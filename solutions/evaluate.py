"""Evaluate an agent by its average RAW score over full games.

Training rewards are clipped to {-1, 0, 1} and every life loss ends a learning episode, so
neither says how well the agent plays. :func:`evaluate` plays ``games`` complete games (all
lives) with rewards unclipped and reports the mean game score, the number the course's
targets are stated in.

Unbiased with several envs: if we simply kept the first ``games`` games to finish, short
(usually bad) games would be over-represented. Instead each env is given a fixed quota of
games up front, and only its first ``quota`` games count.

Usable from the notebook (``evaluate(policy, "SpaceInvadersNoFrameskip-v4", games=5)``) and
from the command line: ``python -m solutions.evaluate CHECKPOINT --games 10``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
# Before torch starts OpenMP (when run as a script): course_lib.openmp.
from course_lib.openmp import passive_openmp

passive_openmp()

import argparse
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from course_lib import nature_dqn_env
from course_lib.validation import check_int

from .reference import Policy

__all__ = ["describe_scores", "described_evaluation", "evaluate", "evaluate_scores", "main"]

#: 108,000 emulator frames (30 minutes of play) = 27,000 agent steps: the usual Atari cap.
MAX_STEPS_PER_GAME = 27_000


def _as_policy(agent: Any) -> Any:
    if callable(getattr(agent, "act", None)):
        return agent
    if isinstance(agent, torch.nn.Module):
        return Policy(agent)
    raise TypeError(
        f"agent must be a Policy (an object with act(obs) -> dict) or the nn.Module of "
        f"make_model, got {type(agent).__name__}."
    )


def evaluate_scores(
    agent: Any,
    env_id: str,
    games: int = 10,
    seed: int | None = None,
    nenvs: int | None = None,
    greedy: bool = False,
    max_steps_per_game: int = MAX_STEPS_PER_GAME,
    backend: str = "auto",
    progress: bool = False,
) -> np.ndarray:
    """Raw scores of ``games`` full games played by ``agent``, ``float64 (games,)``.

    Args:
        agent: a policy with ``act(obs) -> dict`` (``"actions"``, and ``"logits"`` if
            ``greedy``) or the ``nn.Module`` of ``make_model`` (wrapped in ``Policy``).
        env_id: ALE id, e.g. ``"SpaceInvadersNoFrameskip-v4"``.
        games: number of complete games (all lives lost, or the time cap) to play.
        seed: seed of the env batch (env i gets seed + i); ``None`` for a random one.
        nenvs: games played in parallel; default ``min(games, 8)``.
        greedy: play argmax(logits) instead of sampling (sampling is what the agent learned
            with and usually scores better for A2C).
        max_steps_per_game: a game still running after this many agent steps is cut there and
            counts with its score so far (with a warning): guards against agents that never
            lose, e.g. by never pressing FIRE.
        backend: env batch backend (see ``course_lib.nature_dqn_env``).
        progress: show a progress bar of the games counted so far (a game of a trained agent
            lasts thousands of agent steps: an evaluation takes a minute or more on a CPU).
    """
    check_int("games", games, 1)
    check_int("max_steps_per_game", max_steps_per_game, 1)
    if nenvs is None:
        nenvs = min(games, 8)
    check_int("nenvs", nenvs, 1, maximum=games, fix="at most one env per game")
    policy = _as_policy(agent)
    quota = np.full(nenvs, games // nenvs) + (np.arange(nenvs) < games % nenvs)  # (nenvs,)
    scores: list[list[float]] = [[] for _ in range(nenvs)]
    running = np.zeros(nenvs)  # raw score of each env's current game
    game_steps = np.zeros(nenvs, dtype=np.int64)

    env = nature_dqn_env(env_id, nenvs=nenvs, seed=seed, clip_reward=False, backend=backend)
    bar = tqdm(total=games, desc="evaluation", unit="game", dynamic_ncols=True,
               disable=not progress)  # fmt: skip
    try:
        obs, _ = env.reset(seed=seed)
        while any(len(s) < q for s, q in zip(scores, quota, strict=True)):
            with torch.no_grad():
                out = policy.act(obs)
            actions = out["logits"].argmax(-1).cpu().numpy() if greedy else out["actions"]
            obs, rewards, _, _, infos = env.step(np.asarray(actions, dtype=np.int64))
            running += rewards  # raw rewards: clip_reward=False
            game_steps += 1
            finished = np.asarray(infos.get("_episode", np.zeros(nenvs, bool)), dtype=bool)
            too_long = game_steps >= max_steps_per_game
            for i in np.flatnonzero(finished | too_long):
                if len(scores[i]) < quota[i]:
                    score = infos["episode"]["r"][i] if finished[i] else running[i]
                    scores[i].append(float(score))
                    bar.update(1)
                    if not finished[i]:
                        warnings.warn(
                            f"evaluate: a game of env {i} ran {max_steps_per_game} agent steps "
                            f"without ending; counted with its score so far ({running[i]:.0f}).",
                            stacklevel=2,
                        )
            running[finished | too_long] = 0.0
            game_steps[finished | too_long] = 0
    finally:
        bar.close()
        env.close()
    return np.array([score for env_scores in scores for score in env_scores])


def evaluate(
    agent: Any, env_id: str, games: int = 10, seed: int | None = None, **kwargs: Any
) -> float:
    """Average raw score over ``games`` full games (see :func:`evaluate_scores` for the options)."""
    return float(np.mean(evaluate_scores(agent, env_id, games=games, seed=seed, **kwargs)))


def described_evaluation(
    agent: Any, env_id: str, games: int, seed: int, progress: bool = False
) -> dict[str, Any]:
    """The evaluation at the end of a training run, with what it measured (for summary.json
    and the end-of-run message): mean and std of the raw scores of ``games`` full games played
    with actions sampled from the policy, as in training (not greedy); ``progress`` shows a bar."""
    scores = evaluate_scores(agent, env_id, games=games, seed=seed, greedy=False, progress=progress)
    return {
        "score": float(np.mean(scores)),
        "std": float(np.std(scores)),
        "games": games,
        "actions": "sampled from the policy (not greedy), as in training",
        "game": env_id,
        "env_seed": seed,
        "policy": "final weights",
    }


def describe_scores(result: Any) -> str:
    """The end-of-run lines of a training run (a ``solutions.train.TrainResult``): what each of
    its two scores measures, and why they can differ."""
    eval_info = result.evaluation
    recent = min(100, result.games)
    if recent:
        lines = [
            f"training score: {result.mean_raw_score_100:.1f} = mean raw score of the last "
            f"{recent} full games played during training (sampled actions; the policy kept "
            "changing while they were played)"
        ]
    else:  # a short run: no game reached its end, so there is no score to average
        lines = [
            "training score: none yet = no full game ended during training (an Atari game "
            "lasts hundreds to thousands of agent steps); train for more steps"
        ]
    if eval_info is not None:
        lines.append(
            f"evaluation score: {eval_info['score']:.1f} (std {eval_info['std']:.1f}) = mean raw "
            f"score of {eval_info['games']} new full games of {eval_info['game']} played by the "
            f"final policy, actions {eval_info['actions']}. It can differ from the training "
            f"score: it measures the final policy only, on other games, and {eval_info['games']} "
            "games are a small sample (standard error about std / sqrt(games))."
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> float:
    """CLI: ``python -m solutions.evaluate CHECKPOINT [--games 10] [--seed 12345] [--greedy]
    [--no-progress]``."""
    from course_lib.runtime import resolve_device

    from .checkpoint import load_checkpoint
    from .cli import integer
    from .reference import make_model

    parser = argparse.ArgumentParser(
        prog="python -m solutions.evaluate",
        description="Average raw score of a trained A2C checkpoint over full games.",
    )
    parser.add_argument("checkpoint", help="a checkpoint.pt written by python -m solutions.train")
    parser.add_argument(
        "--games", type=integer(1), default=10, help="full games to play, >= 1 (default 10)"
    )
    parser.add_argument(
        "--seed", type=integer(0), default=12345, help="env seed, >= 0 (default 12345)"
    )
    parser.add_argument("--env", default=None, help="ALE id (default: the checkpoint's)")
    parser.add_argument("--greedy", action="store_true", help="argmax actions instead of sampling")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ... (default auto)")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar (default: one is shown)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        ckpt = load_checkpoint(args.checkpoint, map_location=device)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    config = ckpt["config"]
    env_id = args.env or config.env_id
    n_actions = ckpt["extra"]["n_actions"]
    model = make_model(n_actions).to(device)
    model.load_state_dict(ckpt["model"])
    model.eval()
    try:
        scores = evaluate_scores(
            model, env_id, games=args.games, seed=args.seed, greedy=args.greedy,
            progress=args.progress,
        )  # fmt: skip
    except ValueError as error:
        parser.error(str(error))
    mean = float(np.mean(scores))
    std = float(np.std(scores)) if scores.size > 1 else math.nan
    print(f"{env_id}: mean raw score {mean:.1f} (std {std:.1f}) over {scores.size} games")
    return mean


if __name__ == "__main__":
    main()
