"""Train the reference A2C on an Atari game: ``python -m solutions.train --env ENV_ID --steps N``.

A2C is the synchronous variant of A3C (Mnih et al., 2016, "Asynchronous Methods for Deep
Reinforcement Learning") in the form OpenAI baselines gave it: N envs step together and one
learner updates after every T-step rollout. :func:`train` holds the whole algorithm, top to
bottom::

    config                   A2CConfig: the course's hyperparameters (solutions/config.py)
    envs                     nature_dqn_env(env_id, nenvs=N): N Atari games, Nature-DQN preprocessing
    model                    make_model, Policy, RMSprop, A2C (solutions/reference.py, the graded parts)
    rollout                  EnvRunner plays T steps in each env under torch.no_grad()
    targets                  ComputeValueTargets (or ComputeGAE), then MergeTimeBatch: B = T*N rows
    update                   lr decayed linearly to 0; A2C.step: one clipped RMSprop step
    logging                  metrics.csv, progress bar, training.png; explained variance

The rollout differs from the notebook's part 7 in one way: it runs under ``torch.no_grad()``
(:class:`NoGradPolicy`), so the trajectory holds no graph and the update (:class:`BatchedA2C`,
the reference's ``A2C``) recomputes logits and values from the stored observations in one
forward pass of B rows, instead of
backpropagating through the graphs of T forward passes of N rows. Same losses, same gradients;
one batched pass is faster on a CPU (docs/benchmarks.md).

Run management sits beside this file, one job per module: :mod:`solutions.cli` (the options,
generated from the config dataclasses), :mod:`solutions.run_folder` (one run per folder),
:mod:`solutions.checkpoint` (save and resume), :mod:`solutions.stop_request` (Ctrl-C and SIGTERM
stop cleanly), :mod:`solutions.metrics_log` (metrics.csv), :mod:`solutions.tensorboard_log` (the
same rows for TensorBoard), :mod:`solutions.evaluate` (the final score on new games). Written to
``--out``::

    metrics.csv        one row per log interval: step, lr, loss terms, entropy, grad norm,
                       explained variance, advantage mean/std, mean raw score of the last 100 games
    events.out.tfevents.*  the same series at the same steps, for TensorBoard
                       (tensorboard --logdir runs; solutions.tensorboard_log)
    training.png       raw game score vs agent steps + one panel per logged series
    dashboard.json     every logged series and finished game (course_lib.plots.plot_metrics_file)
    checkpoint.pt      resume with --resume (same --out); see solutions.checkpoint
    video.mp4          one game of the trained agent (course_lib.video)
    summary.json       config, steps, speed, score of the last 100 games, final evaluation

A resumed run restores the model, optimizer, step count, learning-rate schedule, finished-game
statistics and RNG states, then starts fresh games (emulator states are not saved). Its budget
(``--steps``) may be raised, not lowered (:func:`~solutions.run_folder.check_budget_change`).
The contract is in docs/design.md, section 6.

Why one module: it is the whole algorithm, read top to bottom (the outline above); the
run folder, checkpoint, config and logging it calls are in modules of their own.
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
if __name__ == "__main__":
    # The command line is read before torch and the emulator load (seconds): `--help` and a
    # mistyped option are answered at once. main() reads it again, with what needs torch.
    from solutions.cli import build_parser

    build_parser().parse_args()

# Before torch starts OpenMP: idle OpenMP workers then sleep instead of spinning, and leave the
# CPU to the emulator threads of the env batch (course_lib.openmp, docs/benchmarks.md).
from course_lib.openmp import passive_openmp

passive_openmp()

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
import torch.nn.functional as F
from tqdm.auto import tqdm

from course_lib import nature_dqn_env
from course_lib.episode_stats import EpisodeStats
from course_lib.plots import TrainingDashboard
from course_lib.runners import EnvRunner
from course_lib.runtime import flush_denormals, resolve_device, seed_everything, set_torch_threads

from .checkpoint import save_checkpoint, set_rng_state
from .cli import build_parser, config_from_args, run_options, run_options_argv
from .config import A2CConfig, RunOptions
from .evaluate import describe_scores, described_evaluation
from .metrics_log import MetricsLog
from .reference import A2C, ComputeGAE, ComputeValueTargets, MergeTimeBatch, Policy, make_model
from .run_folder import (
    BudgetReached,
    budget_change_note,
    check_budget,
    check_budget_change,
    open_run_folder,
    resume_command,
)
from .stop_request import StopRequest
from .tensorboard_log import TensorBoardLog

__all__ = ["METRIC_COLUMNS", "BatchedA2C", "NoGradPolicy", "TrainResult", "critic_stats", "main"]
__all__ += ["make_agent", "train", "value_targets"]

#: The floats returned by A2C.step (its contract), then those of critic_stats.
STAT_KEYS = ("loss", "policy_loss", "value_loss", "entropy", "grad_norm")
STAT_KEYS += ("explained_variance", "advantage_mean", "advantage_std")
#: Columns of metrics.csv, in order; the statistics are means over the log interval.
METRIC_COLUMNS = ("step", "update", "lr", *STAT_KEYS, "mean_raw_score_100", "games", "steps_per_s")


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns: where the files are and the final numbers."""

    out_dir: Path
    steps: int
    mean_raw_score_100: float
    """Mean raw score of the last 100 games played during training (NaN if none finished)."""
    steps_per_s: float
    games: int
    """Full games finished during training (all sessions)."""
    stopped_by: str | None = None
    """``"SIGINT"`` or ``"SIGTERM"`` when a signal stopped the run early (checkpoint written)."""
    evaluation: dict[str, Any] | None = None
    """What the final evaluation measured: score, std, games, actions, game, env seed."""
    video: Path | None = None

    @property
    def eval_score(self) -> float | None:
        """Mean raw score of the final evaluation (None when there was none)."""
        return None if self.evaluation is None else self.evaluation["score"]


class NoGradPolicy:
    """The rollout policy: ``Policy.act`` under ``torch.no_grad()``, so the trajectory holds no
    graph and :class:`BatchedA2C` recomputes log-probs and values in one batch."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.model = policy.model

    def act(self, inputs: np.ndarray) -> dict[str, Any]:
        with torch.no_grad():
            return self.policy.act(inputs)


class BatchedA2C(A2C):
    """The reference's A2C update on a rollout played without graph (:class:`NoGradPolicy`).

    The logits, log-probabilities and values come from one forward pass of the model over the
    B = T*N stored observations, with graph, instead of the T rollout passes of N rows: the same
    losses and gradients (the model is the same between the rollout and the update), and one
    batched pass is faster on a CPU than backpropagating through T small ones.
    """

    def loss(self, trajectory: dict[str, Any]) -> dict[str, torch.Tensor]:
        device = next(self.policy.model.parameters()).device
        observations = torch.as_tensor(trajectory["observations"], device=device)  # (B, 4, 84, 84)
        actions = torch.as_tensor(trajectory["actions"], device=device)  # (B,)
        logits, values = self.policy.model(observations)  # (B, A), (B,)
        log_probs = F.log_softmax(logits, dim=-1).gather(1, actions[:, None]).squeeze(1)
        batch = {**trajectory, "logits": logits, "log_probs": log_probs, "values": values}
        return super().loss(batch)


def make_agent(config: A2CConfig, n_actions: int, device: torch.device):
    """``(model, policy, optimizer, a2c)``: the network, the agent that samples from it, RMSprop
    and the A2C update, with the hyperparameters of ``config``."""
    model = make_model(n_actions).to(device)  # Nature-DQN trunk, policy and value heads
    policy = Policy(model)
    # torch's RMSprop adds eps outside the square root: g / (sqrt(v) + eps) (see A2CConfig).
    optimizer = torch.optim.RMSprop(
        model.parameters(), lr=config.lr, alpha=config.rmsprop_alpha, eps=config.rmsprop_eps
    )
    a2c = BatchedA2C(
        policy, optimizer, config.value_loss_coef, config.entropy_coef, config.max_grad_norm
    )
    return model, policy, optimizer, a2c


def value_targets(config: A2CConfig, policy: Policy):
    """The targets transform: n-step returns (the graded part), or GAE with ``gae_lambda``."""
    if config.gae_lambda is None:
        return ComputeValueTargets(policy, gamma=config.gamma)
    return ComputeGAE(policy, gamma=config.gamma, lambda_=config.gae_lambda)


def critic_stats(trajectory: dict[str, Any]) -> dict[str, float]:
    """How well the critic predicted a merged trajectory's targets, before the update.

    ``explained_variance`` = 1 - Var(v - V) / Var(v) over the B rows (1: a perfect critic,
    0: no better than predicting the batch mean, below 0: worse), and the mean and std of the
    advantages A2C weighted the policy gradient with (NaN when the targets do not vary).
    """
    values = torch.as_tensor(trajectory["values"]).detach().float()  # (B,)
    targets = torch.as_tensor(trajectory["value_targets"], device=values.device).float()  # (B,)
    advantages = trajectory.get("advantages", targets - values)  # GAE stores its own
    advantages = torch.as_tensor(advantages, device=values.device).float()
    target_var = targets.var(unbiased=False)
    explained = 1.0 - (targets - values).var(unbiased=False) / target_var
    numbers = torch.stack([explained, advantages.mean(), advantages.std(unbiased=False)]).tolist()
    if not target_var > 0:
        numbers[0] = math.nan
    return dict(
        zip(("explained_variance", "advantage_mean", "advantage_std"), numbers, strict=True)
    )


def train(config: A2CConfig, run: RunOptions, ckpt: dict[str, Any] | None = None) -> TrainResult:
    """Train the reference A2C with ``config``, writing everything to ``run.out``.

    Ctrl-C (``SIGINT``) or ``SIGTERM`` stops after the current update with a checkpoint there:
    the result then has ``stopped_by`` set and no evaluation or video.

    Args:
        config: hyperparameters and run settings (when resuming: the checkpoint's, with the
            changes :data:`~solutions.config.RESUME_MAY_CHANGE` allows).
        run: output folder, resume, final evaluation and video, progress bar.
        ckpt: the checkpoint :func:`~solutions.run_folder.open_run_folder` returned for
            ``run.out``, if the caller has read it already (it is read once).

    Raises:
        FileExistsError, FileNotFoundError: ``run.out`` does not fit ``run.resume``.
        BudgetReached: ``run.resume`` and the checkpoint already reached ``config.total_steps``.
    """
    out_dir = Path(run.out)
    if ckpt is None:
        ckpt = open_run_folder(out_dir, run.resume)
    if ckpt is not None:
        check_budget(ckpt, config.num_updates, config.total_steps)
        check_budget_change(ckpt, config)
        note = budget_change_note(ckpt, config)
        if note:
            print(note, file=sys.stderr)
    flush_denormals()  # long CPU runs: RMSprop state in denormals (see course_lib.runtime)
    device = resolve_device(config.device)
    out_dir.mkdir(parents=True, exist_ok=True)
    seed_everything(config.seed)
    start_update = ckpt["update"] if ckpt else 0
    start_step = ckpt["step"] if ckpt else 0

    with StopRequest() as stop:  # from here on, Ctrl-C or SIGTERM ends with a checkpoint
        # ----- envs: N games in parallel; a resumed run plays new games (another seed)
        env = nature_dqn_env(
            config.env_id, nenvs=config.nenvs, seed=config.seed + start_step, backend=config.backend
        )
        n_actions = int(env.single_action_space.n)

        # ----- model, policy, optimizer, A2C update
        model, policy, optimizer, a2c = make_agent(config, n_actions, device)

        # ----- rollout -> targets -> one batch: T steps of N envs become B = T*N rows
        runner = EnvRunner(
            env,
            NoGradPolicy(policy),
            config.nsteps,
            transforms=[value_targets(config, policy), MergeTimeBatch()],
            step_var=start_step,
        )
        if ckpt:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            set_rng_state(ckpt["rng"])
            runner.episode_stats = EpisodeStats.from_dict(ckpt["extra"]["games"])
        dashboard = TrainingDashboard(runner, save_path=out_dir / "training.png", min_interval=60,
                                      grad_clip=config.max_grad_norm)  # fmt: skip
        if ckpt:
            series = ckpt["extra"]["series"]
            dashboard.series = {k: (list(s), list(v)) for k, (s, v) in series.items()}

        def save(update: int) -> None:
            extra = {"n_actions": n_actions, "games": runner.episode_stats.to_dict(),
                     "series": dashboard.series}  # fmt: skip
            save_checkpoint(out_dir / "checkpoint.pt", model=model, optimizer=optimizer,
                            config=config, update=update, step=runner.step_var, extra=extra)  # fmt: skip

        metrics = MetricsLog(out_dir / "metrics.csv", METRIC_COLUMNS, start_step if ckpt else None)
        events = TensorBoardLog(out_dir, METRIC_COLUMNS, start_step if ckpt else None)
        bar = tqdm(total=config.num_updates * config.batch_size, initial=start_step, unit="step",
                   unit_scale=True, dynamic_ncols=True, disable=not run.progress,
                   desc=config.env_id.replace("NoFrameskip-v4", ""))  # fmt: skip
        window: list[dict[str, float]] = []  # the stats of the updates since the last row
        t_start = t_log = time.perf_counter()
        step_log, update = start_step, start_update
        try:
            while update < config.num_updates and not stop.requested:
                # ----- learning rate: lr0 * (1 - update / num_updates), linear decay to 0
                lr = config.lr_at(update)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                # ----- rollout: T steps of N envs, value targets, merged into B = T*N rows
                trajectory = runner.get_next()
                # ----- update: one clipped RMSprop step on
                #       policy_loss + value_loss_coef * value_loss - entropy_coef * entropy
                stats = a2c.step(trajectory)
                window.append({**stats, **critic_stats(trajectory)})
                update += 1
                bar.update(config.batch_size)

                # ----- logging: means over the interval; a stop logs its partial interval too
                done = update == config.num_updates
                if update % config.log_every_updates == 0 or done or stop.requested:
                    now, step = time.perf_counter(), runner.step_var
                    means = {k: float(np.nanmean([w[k] for w in window])) for k in STAT_KEYS}
                    games = runner.episode_stats
                    row = {"step": step, "update": update, "lr": lr, **means,
                           "mean_raw_score_100": games.mean_recent(100), "games": len(games),
                           "steps_per_s": (step - step_log) / max(now - t_log, 1e-9)}  # fmt: skip
                    metrics.write(row)
                    events.write(row)
                    dashboard.log(step, lr=lr, **means)
                    dashboard.update()
                    bar.set_postfix(score100=f"{games.mean_recent(100):.1f}", games=len(games),
                                    refresh=False)  # fmt: skip
                    window, t_log, step_log = [], now, step
                if update % config.checkpoint_every_updates == 0 or done or stop.requested:
                    save(update)
            if stop.requested and update == start_update:
                save(update)  # stopped during the set-up: the checkpoint marks the run
        finally:
            bar.close()
            metrics.close()
            events.close()
            env.close()
        elapsed = time.perf_counter() - t_start
        dashboard.save(out_dir / "training.png")
        dashboard.save_metrics(out_dir / "dashboard.json")

    steps_done = runner.step_var - start_step
    result = TrainResult(
        out_dir=out_dir,
        steps=runner.step_var,
        mean_raw_score_100=runner.episode_stats.mean_recent(100),
        steps_per_s=steps_done / elapsed if elapsed > 0 and steps_done > 0 else math.nan,
        games=len(runner.episode_stats),
        # A signal that comes after the last update stops nothing: the run is complete.
        stopped_by=stop.signal_name if update < config.num_updates else None,
    )
    if not result.stopped_by:
        _finish(config, run, policy, result, late_signal=stop.signal_name)
    return result


def _finish(
    config: A2CConfig, run: RunOptions, policy: Policy, result: TrainResult, late_signal: str | None
) -> None:
    """summary.json, then the evaluation on new games and the video (skipped after a signal)."""
    summary = {"config": config.to_dict(), "steps": result.steps, "games": result.games,
               "mean_raw_score_100": result.mean_raw_score_100, "eval": None,
               "steps_per_s_this_session": result.steps_per_s}  # fmt: skip
    path = result.out_dir / "summary.json"
    path.write_text(json.dumps(summary, indent=2).replace("NaN", "null"))  # the run is complete
    if late_signal:  # the signal came during the last update: stop before the evaluation
        print(f"{late_signal}: training was complete; evaluation and video skipped.",
              file=sys.stderr)  # fmt: skip
        return
    policy.model.eval()
    try:
        if run.eval_games > 0:
            seed = config.seed + 1_000_000  # games the training never played
            result.evaluation = described_evaluation(
                policy.model, config.env_id, run.eval_games, seed, progress=run.progress
            )
            summary["eval"] = result.evaluation
            path.write_text(json.dumps(summary, indent=2).replace("NaN", "null"))
        if run.video_frames > 0:
            from course_lib.video import record_video

            video = record_video(config.env_id, policy, result.out_dir / "video.mp4",
                                 max_frames=run.video_frames, seed=config.seed)  # fmt: skip
            result.video = video.path
    except KeyboardInterrupt:
        print("Interrupted after training: the checkpoint and summary.json are complete; "
              "evaluation or video skipped.", file=sys.stderr)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, train, print a summary; returns the exit status.

    0: trained to the budget, or ``--resume`` found the budget reached (nothing changed);
    2: bad arguments or a folder that does not fit ``--resume``; 128 + signal number: stopped
    by Ctrl-C or SIGTERM, with a checkpoint and the command to resume printed.
    """
    flush_denormals()  # before torch starts its threads, so that they all inherit it
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        run = run_options(args)
        ckpt = open_run_folder(Path(run.out), run.resume)  # the one read of the checkpoint
        config = config_from_args(args, ckpt["config"] if ckpt else None)
        if ckpt:
            check_budget(ckpt, config.num_updates, config.total_steps)
            check_budget_change(ckpt, config)
        from course_lib.atari_ids import resolve_env_id

        resolve_env_id(config.env_id)  # an unknown game fails now, not after the set-up
        resolve_device(config.device)
    except BudgetReached as reached:
        print(f"{args.out}: {reached}", file=sys.stderr)
        return 0
    except (ValueError, TypeError, FileNotFoundError, FileExistsError) as error:
        parser.error(str(error))
    if run.threads is not None:
        set_torch_threads(run.threads)
    result = train(config, run, ckpt)
    if result.stopped_by:
        command = resume_command(run.out, run_options_argv(run))
        print(f"stopped by {result.stopped_by} at {result.steps:,} of {config.total_steps:,} "
              f"agent steps; checkpoint saved. Resume with:\n  {command}", file=sys.stderr)  # fmt: skip
        return 128 + int(getattr(signal, result.stopped_by))
    print(f"done: {result.steps:,} agent steps ({result.steps_per_s:.0f} steps/s this session); "
          f"files in {result.out_dir}\n{describe_scores(result)}", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
