"""Score a trained agent by its mean RAW score over full games, with the course's protocol.

Training rewards are clipped to {-1, 0, 1} and every life loss ends a learning episode, so
neither says how well the agent plays. The evaluation plays complete games (all lives) with
the game's own points; what it plays and how is one protocol, written once in
:mod:`course_lib.evaluation` and shared with the notebook and the grader:
``COURSE_PROTOCOL`` (10 full games, actions sampled from the policy, up to the emulator's
108,000-frame cap) by default, ``GRADER_PROTOCOL`` (the grader's default: fewer games, each
capped) with ``--protocol grader``.

Command line::

    python -m solutions.evaluate CHECKPOINT_OR_AGENT [--games 10] [--seed 12345] [--greedy]
                                 [--max-agent-steps N] [--protocol course|grader]
                                 [--no-progress]

``CHECKPOINT_OR_AGENT`` is a ``checkpoint.pt`` of ``python -m solutions.train`` (loaded with
``weights_only=True``: tensors and plain data, never code; :mod:`solutions.checkpoint`) or the
``a2c_agent.json`` a notebook saved (:mod:`course_lib.saved_agent`), loaded into the
reference network. A student's network is the course's under other names: its tensors are
read into the reference network by their shapes, as the grader reads them
(:mod:`course_lib.network_layout`), and played there; where they read more than one way (one
head of ``n_actions + 1`` outputs), only the student's ``make_model`` tells which is meant, so
the command refuses with the grader's (``python -m autograder grade NOTEBOOK.ipynb``). A
notebook or any other file given by mistake is refused with what to give instead.
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
# Before torch starts OpenMP (when run as a script): course_lib.openmp.
from course_lib.openmp import passive_openmp

passive_openmp()

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from course_lib.evaluation import (
    COURSE_PROTOCOL,
    GRADER_PROTOCOL,
    evaluate_agent,
)

__all__ = ["PROTOCOLS", "describe_scores", "described_evaluation", "main"]

#: The protocols ``--protocol`` names.
PROTOCOLS = {"course": COURSE_PROTOCOL, "grader": GRADER_PROTOCOL}


def described_evaluation(
    model: torch.nn.Module, env_id: str, games: int, seed: int, progress: bool = False
) -> dict[str, Any]:
    """The evaluation at the end of a training run, with what it measured (for summary.json
    and the end-of-run message): ``games`` full games of the course's protocol, actions sampled
    from the policy as in training (not greedy); ``progress`` shows a bar of the games."""
    protocol = dataclasses.replace(COURSE_PROTOCOL, env_id=env_id, games=games)
    result = evaluate_agent(model, protocol, seed, progress=progress)
    return {
        "score": result.mean,
        "std": result.std,
        "games": games,
        "steps": result.steps,
        "actions": "sampled from the policy (not greedy), as in training",
        "game": env_id,
        "seed": seed,
        "policy": "final weights",
        "protocol": protocol.to_dict(),
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


def _load_model(path: Path, device: torch.device) -> tuple[torch.nn.Module, str]:
    """The reference network with the weights of a checkpoint or a saved agent; its game."""
    from course_lib.saved_agent import AGENT_FILE, load_agent, load_weights

    from .checkpoint import load_checkpoint
    from .reference import make_model

    if path.suffix == ".ipynb":
        raise ValueError(
            f"{path} is a notebook, not an agent: give the {AGENT_FILE} its save cell wrote "
            f"beside it (python -m solutions.evaluate {path.with_name(AGENT_FILE)}), or let "
            f"the grader play it: python -m autograder grade {path}"
        )
    if path.suffix == ".json":
        weights = load_agent(path)
        try:
            model = load_weights(make_model(weights.n_actions), weights)
        except ValueError:  # a student's network: the course's, under other names
            model = _as_reference_network(path, weights, make_model(weights.n_actions))
        return model.to(device), weights.env_id
    ckpt = load_checkpoint(path, map_location=device)
    model = make_model(ckpt["extra"]["n_actions"]).to(device)
    model.load_state_dict(ckpt["model"])
    return model, ckpt["config"].env_id


def _as_reference_network(path: Path, weights: Any, model: torch.nn.Module) -> torch.nn.Module:
    """A saved agent whose layers carry other names than the reference's (a student's
    ``make_model``), read into the reference network by its tensors' shapes, the way the grader
    reads it (:mod:`course_lib.network_layout`): plain numbers, no code of the student's."""
    from course_lib.network_layout import LayoutError, network_layouts

    grader = (
        "A student's agent is scored by the grader, with the student's notebook: python -m "
        "autograder grade NOTEBOOK.ipynb (its verified agent score line)."
    )
    try:
        layouts = network_layouts(weights.tensors, weights.n_actions)
    except LayoutError as error:
        raise ValueError(f"{path}: {error} {grader}") from None
    if len(layouts) != 1:
        raise ValueError(
            f"{path}: these weights read as the course's network in {len(layouts)} ways "
            "(one head of n_actions + 1 outputs, or biases the names do not pair): which one is "
            f"meant only the student's own make_model tells. {grader}"
        )
    layers = [m for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        for module, (weight, bias) in zip(layers, layouts[0].layers(weights.tensors), strict=True):
            module.weight.copy_(torch.from_numpy(weight).reshape(module.weight.shape))
            module.bias.copy_(torch.from_numpy(bias))
    print(f"{path}: read as the course's network ({layouts[0].describe()})", file=sys.stderr)
    return model


def main(argv: Sequence[str] | None = None) -> float:
    """CLI (see the module docstring); prints what was measured and returns the mean score."""
    from course_lib.runtime import resolve_device

    from .cli import integer

    parser = argparse.ArgumentParser(
        prog="python -m solutions.evaluate",
        description="Mean raw score of a trained A2C agent over full games, with the course's "
        "evaluation protocol (course_lib.evaluation).",
    )
    parser.add_argument(
        "agent",
        help="a checkpoint.pt written by python -m solutions.train, or the a2c_agent.json a "
        "notebook saved",
    )
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default="course",
        help="course: 10 full games (the default); grader: the grader's default, "
        f"{GRADER_PROTOCOL.games} games capped at {GRADER_PROTOCOL.max_agent_steps:,} agent steps",
    )
    parser.add_argument(
        "--games",
        type=integer(1),
        default=None,
        help=f"full games to play, >= 1 (default {COURSE_PROTOCOL.games}, or the protocol's)",
    )
    parser.add_argument(
        "--seed",
        type=integer(0),
        default=12345,
        help="seed of the games' seeds, >= 0 (default 12345)",
    )
    parser.add_argument(
        "--max-agent-steps",
        type=integer(1),
        default=None,
        help="stop a game after this many agent steps and count it as capped (default: the "
        "protocol's)",
    )
    parser.add_argument("--env", default=None, help="ALE id (default: the agent's own game)")
    parser.add_argument("--greedy", action="store_true", help="argmax actions instead of sampling")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ... (default auto)")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar (default: one is shown)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        model, env_id = _load_model(Path(args.agent), device)
        protocol = dataclasses.replace(PROTOCOLS[args.protocol], env_id=args.env or env_id)
        if args.games is not None:
            protocol = dataclasses.replace(protocol, games=args.games)
        if args.max_agent_steps is not None:
            protocol = dataclasses.replace(protocol, max_agent_steps=args.max_agent_steps)
        if args.greedy:
            protocol = dataclasses.replace(protocol, actions="greedy")
        model.eval()
        result = evaluate_agent(model, protocol, args.seed, progress=args.progress)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    print(f"{protocol.env_id}: {result.describe()}")
    return result.mean


if __name__ == "__main__":
    main()
