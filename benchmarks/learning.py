"""Does the reference A2C learn? Train for a budget and compare the raw score with the target.

    python benchmarks/learning.py [--env SpaceInvadersNoFrameskip-v4] [--steps 1000000]
                                  [--device auto] [--seed 0] [--out DIR] [--resume]

The score is the course's measure: the average RAW game score of the last 100 full games
played during training (``runner.episode_stats.mean_recent(100)``). Known targets:

==============================  ===========  ======  =========================
game                            agent steps  target  where
==============================  ===========  ======  =========================
SpaceInvadersNoFrameskip-v4     1,000,000    >= 250  CPU
SpaceInvadersNoFrameskip-v4     10,000,000   >= 600  GPU or CPU
==============================  ===========  ======  =========================

The target of the largest listed budget not above ``--steps`` applies; with a smaller budget
(e.g. a smoke run of a few thousand steps) the score is reported without a verdict. The exit
status is 1 when a target applies and is missed, so CI can run it. Everything the training
CLI writes (metrics, plots, checkpoint: ``--resume`` works) goes to ``--out``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
# Before torch starts OpenMP: course_lib.openmp.
from course_lib.openmp import passive_openmp

passive_openmp()

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course_lib.runtime import flush_denormals
from solutions.config import A2CConfig, RunOptions
from solutions.run_folder import BudgetReached, open_run_folder
from solutions.train import train

#: (env_id, agent steps) -> minimum average raw score of the last 100 games.
TARGETS: dict[tuple[str, int], float] = {
    ("SpaceInvadersNoFrameskip-v4", 1_000_000): 250.0,
    ("SpaceInvadersNoFrameskip-v4", 10_000_000): 600.0,
}


def target_for(env_id: str, steps: int) -> tuple[int, float] | None:
    """``(budget, target)`` of the largest listed budget <= ``steps`` for ``env_id``, or None."""
    known = [(budget, score) for (env, budget), score in TARGETS.items() if env == env_id]
    eligible = [(budget, score) for budget, score in known if budget <= steps]
    return max(eligible) if eligible else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="SpaceInvadersNoFrameskip-v4")
    parser.add_argument("--steps", type=int, default=1_000_000, help="agent steps")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="default: runs/learning-<game>-<steps>")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--eval-games", type=int, default=0, help="extra final evaluation games")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    flush_denormals()  # before torch starts its threads (see course_lib.runtime)
    if args.steps < 1:
        parser.error(f"--steps must be a positive integer, got {args.steps}")
    game = args.env.replace("NoFrameskip-v4", "")
    out = Path(args.out or f"runs/learning-{game}-{args.steps}")
    try:
        ckpt = open_run_folder(out, args.resume)  # read once, passed on to train()
        if ckpt:
            config = ckpt["config"]
            config.total_steps, config.device = args.steps, args.device
        else:
            config = A2CConfig(
                env_id=args.env,
                total_steps=args.steps,
                seed=args.seed,
                device=args.device,
                log_interval=max(1_000, min(20_000, args.steps // 100)),
                checkpoint_interval=max(10_000, min(250_000, args.steps // 10)),
            )
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        parser.error(str(error))

    start = time.perf_counter()
    try:
        run = RunOptions(out=str(out), resume=args.resume, eval_games=args.eval_games,
                         video_frames=0, progress=not args.no_progress)  # fmt: skip
        result = train(config, run, ckpt)
    except BudgetReached as reached:
        print(f"{out}: {reached}")
        return 0
    minutes = (time.perf_counter() - start) / 60
    if result.stopped_by:
        print(f"stopped by {result.stopped_by} at {result.steps:,} steps; continue with --resume")
        return 1
    score = result.mean_raw_score_100
    target = target_for(config.env_id, result.steps)
    report = {
        "env_id": config.env_id,
        "steps": result.steps,
        "device": config.device,
        "minutes": round(minutes, 1),
        "steps_per_s": round(result.steps_per_s, 1),
        "mean_raw_score_last_100_games": None if math.isnan(score) else round(score, 1),
        "eval_score": result.eval_score,
        "target": None if target is None else {"budget": target[0], "min_score": target[1]},
    }
    if target is None:
        verdict, status = "no target for this budget (smoke run)", 0
    elif not math.isnan(score) and score >= target[1]:
        verdict, status = f"PASS (>= {target[1]:g} after {target[0]:,} steps)", 0
    else:
        verdict, status = f"FAIL (< {target[1]:g} after {target[0]:,} steps)", 1
    report["verdict"] = verdict
    print(json.dumps(report))
    print(f"{config.env_id}: mean raw score of the last 100 games {score:.1f} -> {verdict}")
    return status


if __name__ == "__main__":
    sys.exit(main())
