"""Train the reference A2C on an Atari game: ``python -m solutions.train --env ENV_ID --steps N``.

A2C is the synchronous variant of A3C (Mnih et al., 2016, "Asynchronous Methods for Deep
Reinforcement Learning") in the form OpenAI baselines gave it: N envs step together and one
learner updates after every T-step rollout.

Reading map of :func:`train`. It computes what the notebook's training cell computes, with one
difference for speed: the rollout runs under ``torch.no_grad()`` (:class:`NoGradPolicy`), so the
trajectory holds no graph, and the reference ``A2C.step`` recomputes logits and values from the
stored observations in one forward pass over all T*N of them (the notebook keeps the graphs of
the rollout's T forward passes instead). Same losses, same gradients, about 10% faster on CPU::

    envs    = nature_dqn_env(env_id, nenvs=N)                 N games in parallel
    runner  = EnvRunner(envs, NoGradPolicy(policy), nsteps=T,
                        transforms=[ComputeValueTargets, MergeTimeBatch])
    repeat num_updates times (or until Ctrl-C / SIGTERM):
        lr  = lr0 * (1 - update / num_updates)                 linear decay to 0
        trajectory = runner.get_next()                         T*N transitions, merged, no graph
        stats = a2c.step(trajectory)                           forward again, one RMSprop step
        every log_interval steps:  metrics.csv row, progress bar, training.png
        every checkpoint_interval, at the end, and at a stop: checkpoint.pt

Written to ``--out``::

    metrics.csv        one row per log interval: step, lr, loss terms, entropy, grad norm,
                       explained variance, advantage mean/std, mean raw score of the last 100 games
    training.png       raw game score vs agent steps + one panel per debugging series
    dashboard.json     every logged series and finished game (course_lib.plots.plot_metrics_file)
    checkpoint.pt      resume with --resume (same --out); see solutions.checkpoint
    video.mp4          one game of the trained agent (course_lib.video)
    summary.json       config, steps, speed, score of the last 100 games, final evaluation

A resumed run restores the model, optimizer, step count, learning-rate schedule, finished-game
statistics and RNG states, then starts fresh games (emulator states are not saved). The rules
that keep a run whole (one run per folder, a clean stop, metrics in order) are in
:mod:`solutions.run_folder`; the contract is in docs/design.md, section 6.
"""

from __future__ import annotations

import os

# Set before torch starts OpenMP: idle OpenMP workers then sleep instead of spinning, and leave
# the CPU to the emulator threads of the env batch. Measured on the shared 2-core machine with
# 2 torch threads: 45-100 agent steps/s with spinning workers, 490-820 with passive ones.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import csv
import dataclasses
import json
import math
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from course_lib import nature_dqn_env
from course_lib.episode_stats import EpisodeStats
from course_lib.plots import TrainingDashboard
from course_lib.runners import EnvRunner
from course_lib.runtime import flush_denormals, resolve_device, seed_everything, set_torch_threads

from .checkpoint import save_checkpoint, set_rng_state
from .config import (
    A2CConfig,
    add_config_arguments,
    config_from_args,
    non_negative_int,
    positive_int,
)
from .reference import A2C, ComputeGAE, ComputeValueTargets, MergeTimeBatch, Policy, make_model
from .run_folder import (
    CHECKPOINT_NAME,
    BudgetReached,
    StopRequest,
    check_budget,
    open_run_folder,
    resume_command,
    truncate_metrics,
)

__all__ = ["METRIC_COLUMNS", "NoGradPolicy", "TrainResult", "build_parser", "main"]
__all__ += ["make_agent", "train"]

#: The floats returned by A2C.step, averaged over each log interval.
STAT_KEYS = ("loss", "policy_loss", "value_loss", "entropy", "grad_norm")
STAT_KEYS += ("explained_variance", "advantage_mean", "advantage_std")
#: Columns of metrics.csv, in order.
METRIC_COLUMNS = ("step", "update", "lr", *STAT_KEYS, "mean_raw_score_100", "games", "steps_per_s")


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns: where the files are and the final numbers."""

    out_dir: Path
    steps: int
    mean_raw_score_100: float
    """Mean raw score of the last 100 games played during training (NaN if none finished)."""
    eval_score: float | None
    """Mean raw score of the final evaluation (None when ``eval_games=0``)."""
    steps_per_s: float
    checkpoint: Path
    video: Path | None
    games: int = 0
    """Full games finished during training (all sessions)."""
    stopped_by: str | None = None
    """``"SIGINT"`` or ``"SIGTERM"`` when a signal stopped the run early (checkpoint written)."""
    evaluation: dict[str, Any] | None = None
    """What the final evaluation measured: score, std, games, actions, game, env seed."""


class NoGradPolicy:
    """Rollout policy of the training loop: ``Policy.act`` under ``torch.no_grad()``.

    The returned tensors carry no graph, so :class:`~solutions.reference.A2C` recomputes the
    log-probs and values in one batch of T*N: on a CPU this backpropagates faster than through
    T graphs of N (measured: ~31 ms vs ~37 ms for the forward+backward of an update).
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.model = policy.model

    def act(self, inputs: np.ndarray) -> dict[str, Any]:
        with torch.no_grad():
            return self.policy.act(inputs)


def make_agent(config: A2CConfig, n_actions: int, device: torch.device):
    """``(model, policy, rollout_policy, optimizer, a2c)`` for ``config``.

    ``policy`` is the plain :class:`~solutions.reference.Policy` (for evaluation and videos);
    ``rollout_policy`` the :class:`NoGradPolicy` the runner plays with.
    """
    model = make_model(n_actions).to(device)
    policy = Policy(model)
    optimizer = torch.optim.RMSprop(
        model.parameters(), lr=config.lr, alpha=config.rmsprop_alpha, eps=config.rmsprop_eps
    )
    a2c = A2C(policy, optimizer, config.value_loss_coef, config.entropy_coef, config.max_grad_norm)
    return model, policy, NoGradPolicy(policy), optimizer, a2c


def _value_targets(config: A2CConfig, policy: Policy):
    if config.gae_lambda is None:
        return ComputeValueTargets(policy, gamma=config.gamma)
    return ComputeGAE(policy, gamma=config.gamma, lambda_=config.gae_lambda)


def train(
    config: A2CConfig,
    out_dir: str | Path,
    *,
    resume: bool = False,
    eval_games: int = 10,
    video_frames: int = 4500,
    progress: bool = True,
) -> TrainResult:
    """Train the reference A2C with ``config``, writing everything to ``out_dir``.

    Ctrl-C (``SIGINT``) or ``SIGTERM`` stops after the current update with a checkpoint there:
    the result then has ``stopped_by`` set and no evaluation or video.

    Args:
        config: hyperparameters and run settings.
        out_dir: output folder (created). It must not hold a run unless ``resume``.
        resume: continue from ``out_dir/checkpoint.pt`` (its config is used as given here:
            call :func:`main` or load the checkpoint's config yourself).
        eval_games: full games of the final evaluation (0: none).
        video_frames: cap on the frames of the final video (0: no video).
        progress: show a tqdm progress bar.

    Raises:
        FileExistsError, FileNotFoundError: ``out_dir`` does not fit ``resume``
            (see :func:`solutions.run_folder.open_run_folder`).
        BudgetReached: ``resume`` and the checkpoint already reached ``config.total_steps``.
    """
    flush_denormals()  # long CPU runs: RMSprop state in denormals (see course_lib.runtime)
    out_dir = Path(out_dir)
    ckpt_path = out_dir / CHECKPOINT_NAME
    device = resolve_device(config.device)
    ckpt = open_run_folder(out_dir, resume, map_location=device)
    if ckpt:
        check_budget(ckpt, config.num_updates, config.total_steps)
    out_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(config.seed)
    start_update = ckpt["update"] if ckpt else 0
    start_step = ckpt["step"] if ckpt else 0
    with StopRequest() as stop:  # from here on, Ctrl-C or SIGTERM ends with a checkpoint
        # A resumed run plays new games: a different env seed than the first run used.
        env_seed = config.seed + start_step
        env = nature_dqn_env(
            config.env_id, nenvs=config.nenvs, seed=env_seed, backend=config.backend
        )
        n_actions = int(env.single_action_space.n)
        model, policy, rollout_policy, optimizer, a2c = make_agent(config, n_actions, device)
        runner = EnvRunner(
            env,
            rollout_policy,
            config.nsteps,
            transforms=[_value_targets(config, policy), MergeTimeBatch()],
            step_var=start_step,
        )
        dashboard_series: dict[str, Any] = {}
        if ckpt:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            set_rng_state(ckpt["rng"])
            runner.episode_stats = EpisodeStats.from_dict(ckpt["extra"]["games"])
            dashboard_series = ckpt["extra"]["series"]
        dashboard = TrainingDashboard(
            runner.episode_stats, save_path=out_dir / "training.png", min_interval=60.0
        )
        dashboard.series = {k: (list(s), list(v)) for k, (s, v) in dashboard_series.items()}

        metrics_path = out_dir / "metrics.csv"
        if ckpt:
            truncate_metrics(metrics_path, start_step, METRIC_COLUMNS)
        new_file = not metrics_path.is_file()
        metrics_file = metrics_path.open("a", newline="")
        writer = csv.DictWriter(metrics_file, fieldnames=METRIC_COLUMNS)
        if new_file:
            writer.writeheader()

        def checkpoint(update: int) -> None:
            extra = {
                "n_actions": n_actions,
                "games": runner.episode_stats.to_dict(),
                "series": dashboard.series,
            }
            save_checkpoint(
                ckpt_path,
                model=model,
                optimizer=optimizer,
                config=config,
                update=update,
                step=runner.step_var,
                extra=extra,
            )

        bar = tqdm(
            total=config.num_updates * config.batch_size,
            initial=start_step,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not progress,
            desc=config.env_id.replace("NoFrameskip-v4", ""),
        )
        window: list[dict[str, float]] = []
        t_start = t_log = time.perf_counter()
        step_log = start_step
        update = start_update
        try:
            while update < config.num_updates and not stop.requested:
                lr = config.lr_at(update)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                trajectory = runner.get_next()
                window.append(a2c.step(trajectory))
                update += 1
                bar.update(config.batch_size)
                done = update == config.num_updates
                # A stop logs the partial interval too: its row is the checkpoint's last one.
                if update % config.log_every_updates == 0 or done or stop.requested:
                    now, step = time.perf_counter(), runner.step_var
                    means = {k: float(np.nanmean([w[k] for w in window])) for k in STAT_KEYS}
                    score = runner.episode_stats.mean_recent(100)
                    row = {"step": step, "update": update, "lr": lr, **means}
                    row["mean_raw_score_100"] = score
                    row["games"] = len(runner.episode_stats)
                    row["steps_per_s"] = (step - step_log) / max(now - t_log, 1e-9)
                    writer.writerow(row)
                    metrics_file.flush()
                    dashboard.log(step, lr=lr, **means)
                    dashboard.update()
                    bar.set_postfix(score100=f"{score:.1f}", games=row["games"], refresh=False)
                    window, t_log, step_log = [], now, step
                if update % config.checkpoint_every_updates == 0 or done or stop.requested:
                    checkpoint(update)
            if stop.requested and update == start_update:
                checkpoint(update)  # stopped during the set-up: the checkpoint marks the run
        finally:
            bar.close()
            metrics_file.close()
            env.close()
        elapsed = time.perf_counter() - t_start
        steps_done = runner.step_var - start_step
        dashboard.save(out_dir / "training.png")
        dashboard.save_metrics(out_dir / "dashboard.json")
    result = TrainResult(
        out_dir=out_dir,
        steps=runner.step_var,
        mean_raw_score_100=runner.episode_stats.mean_recent(100),
        eval_score=None,
        steps_per_s=steps_done / elapsed if elapsed > 0 and steps_done > 0 else math.nan,
        checkpoint=ckpt_path,
        video=None,
        games=len(runner.episode_stats),
        # A signal that comes after the last update stops nothing: the run is complete.
        stopped_by=stop.signal_name if update < config.num_updates else None,
    )
    if result.stopped_by:
        return result
    summary = {
        "config": config.to_dict(),
        "steps": result.steps,
        "games": len(runner.episode_stats),
        "mean_raw_score_100": result.mean_raw_score_100,
        "eval": None,
        "steps_per_s_this_session": result.steps_per_s,
    }
    _write_summary(out_dir, summary)  # the run is complete even if the evaluation is cut short
    if stop.requested:  # the signal came during the last update: stop before the evaluation
        print(f"{stop.signal_name}: training was complete; evaluation and video skipped.",
              file=sys.stderr)  # fmt: skip
        return result
    model.eval()
    try:
        if eval_games > 0:
            from .evaluate import described_evaluation

            seed = config.seed + 1_000_000  # games the training never played
            result.evaluation = described_evaluation(policy, config.env_id, eval_games, seed)
            result.eval_score = result.evaluation["score"]
            summary["eval"] = result.evaluation
            _write_summary(out_dir, summary)
        if video_frames > 0:
            from course_lib.video import record_video

            result.video = record_video(
                config.env_id, policy, out_dir / "video.mp4", max_frames=video_frames,
                seed=config.seed,
            ).path  # fmt: skip
    except KeyboardInterrupt:
        print("Interrupted after training: the checkpoint and summary.json are complete; "
              "evaluation or video skipped.", file=sys.stderr)  # fmt: skip
    return result


def _write_summary(out_dir: Path, summary: dict[str, Any]) -> None:
    text = json.dumps(summary, indent=2).replace("NaN", "null")
    (out_dir / "summary.json").write_text(text)


def describe_scores(result: TrainResult) -> str:
    """The end-of-run lines that say what each score measures and why they can differ."""
    eval_info = result.evaluation
    recent = min(100, result.games)
    lines = [
        f"training score: {result.mean_raw_score_100:.1f} = mean raw score of the last {recent} "
        "full games played during training (sampled actions; the policy kept changing while "
        "they were played)"
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


# ----- command line ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m solutions.train``."""
    p = argparse.ArgumentParser(
        prog="python -m solutions.train",
        usage="python -m solutions.train [--env ENV_ID] [--steps N] [--out DIR] [--resume] [options]",
        description="Train the reference A2C on an Atari game (course hyperparameters by default).",
    )
    add_config_arguments(p)
    p.add_argument("--out", default="runs/a2c", help="output folder (default runs/a2c)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument(
        "--eval-games",
        type=non_negative_int,
        default=10,
        help="final evaluation games (default 10)",
    )
    p.add_argument(
        "--video-frames",
        type=non_negative_int,
        default=4500,
        help="cap on video frames, 0: no video (default 4500)",
    )
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (default: all cores)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def _resume_extra(args: argparse.Namespace) -> list[str]:
    """The options of ``args`` that the checkpoint does not keep, to repeat on resume."""
    extra = []
    if args.eval_games != 10:
        extra += ["--eval-games", str(args.eval_games)]
    if args.video_frames != 4500:
        extra += ["--video-frames", str(args.video_frames)]
    if args.threads is not None:
        extra += ["--threads", str(args.threads)]
    if args.no_progress:
        extra.append("--no-progress")
    return extra


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, train, print a summary; returns the exit status.

    0: trained to the budget, or ``--resume`` found the budget reached (nothing changed);
    2: bad arguments or a folder that does not fit ``--resume``; 128 + signal number: stopped
    by Ctrl-C or SIGTERM, with a checkpoint and the command to resume printed.
    """
    flush_denormals()  # before torch starts its threads, so that they all inherit it
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        ckpt = open_run_folder(out, args.resume)
        config = config_from_args(args, ckpt["config"] if ckpt else None)
        if ckpt:
            check_budget(ckpt, config.num_updates, config.total_steps)
        from course_lib.atari_ids import resolve_env_id

        resolve_env_id(config.env_id)  # an unknown game fails now, not after the setup
        resolve_device(config.device)
    except BudgetReached as reached:
        print(f"{out}: {reached}", file=sys.stderr)
        return 0
    except (ValueError, TypeError, FileNotFoundError, FileExistsError) as error:
        parser.error(str(error))
    del ckpt  # train() reads it again, onto the chosen device
    if args.threads is not None:
        set_torch_threads(args.threads)
    result = train(
        config,
        out,
        resume=args.resume,
        eval_games=args.eval_games,
        video_frames=args.video_frames,
        progress=not args.no_progress,
    )
    if result.stopped_by:
        print(
            f"stopped by {result.stopped_by} at {result.steps:,} of {config.total_steps:,} agent "
            f"steps; checkpoint saved. Resume with:\n  {resume_command(out, _resume_extra(args))}",
            file=sys.stderr,
        )
        return 128 + int(getattr(signal, result.stopped_by))
    print(
        f"done: {result.steps:,} agent steps ({result.steps_per_s:.0f} steps/s this session); "
        f"files in {result.out_dir}\n{describe_scores(result)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
