"""Tests of the training tools: config, runtime helpers, checkpoints, evaluation, and the CLI.

The CLI test trains on a real ROM for a few hundred agent steps (marked ``rom``); everything
else uses fakes and runs in milliseconds.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from course_lib import runtime
from solutions import evaluate as evaluate_module
from solutions import train as train_module
from solutions.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from solutions.config import A2CConfig
from solutions.train import METRIC_COLUMNS, main

# ----- config ---------------------------------------------------------------------------------


def test_config_defaults_are_the_course_hyperparameters():
    """Do the defaults match docs/design.md, section 7?"""
    c = A2CConfig()
    assert (c.nenvs, c.nsteps, c.gamma, c.lr) == (8, 5, 0.99, 7e-4)
    assert (c.rmsprop_alpha, c.rmsprop_eps) == (0.99, 1e-5)
    assert (c.value_loss_coef, c.entropy_coef, c.max_grad_norm) == (0.25, 0.01, 0.5)
    assert c.env_id == "SpaceInvadersNoFrameskip-v4" and c.gae_lambda is None


def test_config_derived_values_and_linear_lr_decay():
    """Is the update count ceil(total / (N*T)) and the lr linear from lr0 to 0?"""
    c = A2CConfig(total_steps=1000, nenvs=8, nsteps=5, lr=1e-3, log_interval=100)
    assert c.batch_size == 40 and c.num_updates == 25
    assert c.lr_at(0) == pytest.approx(1e-3)
    assert c.lr_at(10) == pytest.approx(1e-3 * 15 / 25)
    assert c.lr_at(c.num_updates) == pytest.approx(0.0)
    assert c.log_every_updates == 2  # 100 steps / 40 per update, rounded
    c2 = A2CConfig(total_steps=1001, nenvs=8, nsteps=5)
    assert c2.num_updates == 26  # the last update overshoots instead of being dropped


@pytest.mark.parametrize(
    "field, value",
    [("nenvs", 0), ("nsteps", 2.5), ("gamma", 1.2), ("lr", 0.0), ("gae_lambda", -0.5),
     ("entropy_coef", -1.0), ("rmsprop_alpha", 1.0), ("env_id", "")],
)  # fmt: skip
def test_config_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        A2CConfig(**{field: value})


def test_config_round_trips_and_rejects_unknown_keys():
    c = A2CConfig(total_steps=123, gae_lambda=0.9, seed=4)
    assert A2CConfig.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    with pytest.raises(ValueError, match="learning_rate"):
        A2CConfig.from_dict({"learning_rate": 1e-3})


def test_step_budget_option_accepts_scientific_notation_and_rejects_fractions():
    import argparse

    from solutions.cli import integer

    positive_int = integer(1)
    assert positive_int("1e6") == 1_000_000 and positive_int("40") == 40
    for bad in ("0", "-3", "1.5", "2.5e0", "ten"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integer"):
            positive_int(bad)


def test_cli_has_one_option_per_config_field_with_the_field_default():
    """Is every A2CConfig and RunOptions field an option, parsed to the field's own default?"""
    import dataclasses

    from solutions.cli import build_parser, config_from_args, run_options, run_options_argv
    from solutions.config import RunOptions

    parser = build_parser()
    args = parser.parse_args([])
    assert config_from_args(args) == A2CConfig() and run_options(args) == RunOptions()
    helps = parser.format_help()
    for field in dataclasses.fields(A2CConfig):
        assert getattr(args, field.name) is None  # "not given": a resume keeps the checkpoint's
        flag = "--" + field.metadata.get("option", field.name).replace("_", "-")
        assert flag in helps, flag
    args = parser.parse_args(["--env", "BreakoutNoFrameskip-v4", "--steps", "2e5", "--gamma",
                              "0.9", "--no-progress", "--eval-games", "0"])  # fmt: skip
    config, run = config_from_args(args), run_options(args)
    assert (config.env_id, config.total_steps, config.gamma) == (
        "BreakoutNoFrameskip-v4",
        200_000,
        0.9,
    )
    assert run_options_argv(run) == ["--eval-games", "0", "--no-progress"]
    assert run_options(parser.parse_args(run_options_argv(run))) == run


def test_help_says_what_the_options_do(capsys):
    """Does --no-progress say it hides the bar, --lr name the --steps option, and does
    evaluate's CLI refuse 0 games and a negative seed before loading anything?"""
    from solutions.cli import build_parser

    helps = " ".join(build_parser().format_help().split())
    assert "--no-progress no progress bar" in helps and "turn off: show" not in helps
    assert "0 over the budget (--steps)" in helps and "total_steps" not in helps
    for argv, said in (
        (["missing.pt", "--games", "0"], "argument --games: expected a positive integer, got '0'"),
        (["missing.pt", "--games", "ten"], "argument --games: expected a positive integer"),
        (["missing.pt", "--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    ):
        with pytest.raises(SystemExit) as exited:
            evaluate_module.main(argv)
        assert exited.value.code == 2
        assert said in capsys.readouterr().err
    with pytest.raises(SystemExit):
        evaluate_module.main(["--help"])
    evaluate_help = " ".join(capsys.readouterr().out.split())
    assert "(default 12345)" in evaluate_help and "(default 10, or the protocol's)" in evaluate_help
    grader = evaluate_module.GRADER_PROTOCOL
    assert (
        f"grader: the grader's default, {grader.games} games capped at "
        f"{grader.max_agent_steps:,} agent steps" in evaluate_help
    )


# ----- runtime --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env, expected",
    [({}, False), ({"A2C_KIT_QUICK": "1"}, True), ({"A2C_KIT_QUICK": "0"}, False),
     ({"NBGRADER_EXECUTION": "autograde"}, True)],
)  # fmt: skip
def test_quick_mode_follows_environment_variables(monkeypatch, env, expected):
    monkeypatch.delenv("A2C_KIT_QUICK", raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert runtime.quick_mode() is expected


def test_resolve_device_auto_cpu_and_clear_errors():
    assert runtime.resolve_device("cpu") == torch.device("cpu")
    assert runtime.resolve_device("auto").type in {"cpu", "cuda", "mps"}
    with pytest.raises(ValueError, match="Unknown device 'gpu0'"):
        runtime.resolve_device("gpu0")
    with pytest.raises(TypeError, match="device must be a string"):
        runtime.resolve_device(3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            runtime.resolve_device("cuda")


_DENORMAL_PRODUCT = """
import torch
from course_lib.runtime import flush_denormals
supported = flush_denormals() if {flush} else None
torch.set_num_threads(2)
# 20 * 2**-149, one of the smallest denormals: where RMSprop's running squares get stuck.
smallest = torch.tensor([20], dtype=torch.int32).view(torch.float32)
v = smallest.expand(1_000_000).clone()  # big enough to be split between torch's 2 threads
bits = v.mul(0.99).view(torch.int32)  # RMSprop's decay, v <- 0.99 v, where the gradient is 0
print(supported, int((bits != 0).sum()))
"""


@pytest.mark.slow
@pytest.mark.parametrize("flush", [False, True])
def test_flush_denormals_zeroes_stuck_denormals_in_every_torch_thread(flush):
    """Without flushing, 0.99 x a tiny denormal rounds back to itself (RMSprop's state stays
    there for good); after flush_denormals(), called before torch computes anything, the product
    is 0 in the main thread and in torch's worker thread alike."""
    code = _DENORMAL_PRODUCT.format(flush=flush)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    supported, nonzero = done.stdout.split()
    if flush and supported == "False":
        pytest.skip("this CPU has no flush-to-zero mode (torch.set_flush_denormal returned False)")
    assert int(nonzero) == (0 if flush else 1_000_000)


def test_set_torch_threads_sets_and_validates():
    before = torch.get_num_threads()
    try:
        assert runtime.set_torch_threads(1) == 1
        with pytest.raises(ValueError, match="num_threads"):
            runtime.set_torch_threads(0)
    finally:
        torch.set_num_threads(before)


# ----- checkpoints ----------------------------------------------------------------------------


@pytest.mark.slow
def test_checkpoint_restores_model_optimizer_and_rng(tmp_path):
    """After save -> perturb -> load, are weights, RMSprop state and random draws identical?"""
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, eps=1e-5)
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
    config = A2CConfig(total_steps=500)
    path = save_checkpoint(
        tmp_path / "c.pt", model=model, optimizer=opt, config=config, update=7, step=280,
        extra={"n_actions": 2},
    )  # fmt: skip
    draws = (random.random(), np.random.rand(), torch.rand(1).item())
    with torch.no_grad():
        model.weight.add_(1.0)
    ckpt = load_checkpoint(path)
    assert ckpt["config"] == config and (ckpt["update"], ckpt["step"]) == (7, 280)
    model.load_state_dict(ckpt["model"])
    fresh = torch.optim.RMSprop(model.parameters(), lr=1e-3, eps=1e-5)
    fresh.load_state_dict(ckpt["optimizer"])
    torch.testing.assert_close(
        fresh.state_dict()["state"][0]["square_avg"], opt.state_dict()["state"][0]["square_avg"]
    )
    set_rng_state(ckpt["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == draws
    assert set(rng_state()) >= {"python", "numpy", "torch"}


def test_load_checkpoint_rejects_foreign_files(tmp_path):
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not an A2C kit checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")


# ----- CLI ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "-5"], "positive integer"),
        (["--env", "NotAGameNoFrameskip-v4"], "NotAGame"),
        (["--device", "gpu0"], "Unknown device"),
        (["--gae-lambda", "1.5"], "gae_lambda"),
    ],
)
def test_cli_rejects_bad_arguments_with_a_message(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--out", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def read_metrics(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def keep_torch_threads():
    """The CLI's --threads sets torch's global thread count: restore it for the next tests."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
@pytest.mark.rom
@pytest.mark.timeout(180)
def test_cli_trains_writes_outputs_and_resumes(tmp_path, capsys, keep_torch_threads):
    """A tiny run writes metrics, plots, checkpoint, video and summary; --resume continues it."""
    out = tmp_path / "run"
    common = ["--env", "SpaceInvadersNoFrameskip-v4", "--nenvs", "2", "--out", str(out),
              "--log-interval", "40", "--checkpoint-interval", "80", "--no-progress",
              "--threads", "1"]  # fmt: skip
    assert main([*common, "--steps", "120", "--eval-games", "1", "--video-frames", "40"]) == 0
    for name in ("metrics.csv", "training.png", "dashboard.json", "checkpoint.pt", "summary.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    video = out / "video.mp4" if (out / "video.mp4").exists() else out / "video.gif"
    assert video.stat().st_size > 1000
    rows = read_metrics(out / "metrics.csv")
    assert tuple(rows[0]) == METRIC_COLUMNS
    assert [int(r["step"]) for r in rows] == [40, 80, 120]
    config = A2CConfig(total_steps=120, nenvs=2)
    for row in rows:  # the logged lr is the linear schedule at that row's last update
        assert float(row["lr"]) == pytest.approx(config.lr_at(int(row["update"]) - 1))
        assert np.isfinite(float(row["loss"])) and float(row["grad_norm"]) > 0
        assert 0.0 < float(row["entropy"]) <= np.log(6) + 1e-4  # 6 SpaceInvaders actions
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 120 and summary["eval"]["games"] == 1
    assert summary["eval"]["score"] >= 0 and summary["eval"]["actions"].startswith("sampled")
    assert "evaluation score" in capsys.readouterr().err
    first = load_checkpoint(out / "checkpoint.pt")
    assert (first["step"], first["update"]) == (120, 12)

    # Without --resume the run is protected; a changed hyperparameter on resume is refused.
    with pytest.raises(SystemExit):
        main([*common, "--steps", "200"])
    with pytest.raises(SystemExit):
        main([*common, "--steps", "200", "--resume", "--seed", "3"])
    assert "differs from the checkpoint" in capsys.readouterr().err

    assert main([*common, "--steps", "200", "--resume", "--eval-games", "0",
                 "--video-frames", "0"]) == 0  # fmt: skip
    rows = read_metrics(out / "metrics.csv")
    assert [int(r["step"]) for r in rows] == [40, 80, 120, 160, 200]
    resumed = load_checkpoint(out / "checkpoint.pt")
    assert (resumed["step"], resumed["update"]) == (200, 20)
    assert resumed["config"].total_steps == 200
    # The optimizer state was restored, not restarted: RMSprop counted all 20 updates.
    assert int(resumed["optimizer"]["state"][0]["step"]) == 20
    assert len(json.loads((out / "dashboard.json").read_text())["scalars"]["loss"]["step"]) == 5


# ----- CLI: a run stays whole (fake Atari batch, no ROM) -------------------------------------


class FakeAtariBatch:
    """A batch with the shapes of ``nature_dqn_env(..., nenvs=N)``: 6 actions, games of 7 steps.

    ``act_at`` maps an agent step of the batch (counted from this batch's first step) to what
    happens there: a signal number is sent to this process, an exception is raised.
    """

    def __init__(self, nenvs, act_at=None):
        self.num_envs = nenvs
        self.single_action_space = gym.spaces.Discrete(6)
        self.single_observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        self.act_at = dict(act_at or {})
        self.t = np.zeros(nenvs, dtype=np.int64)
        self.steps = 0

    def reset(self, seed=None):
        return np.zeros((self.num_envs, 4, 84, 84), np.uint8), {}

    def step(self, actions):
        self.steps += self.num_envs
        event = self.act_at.pop(self.steps, None)
        if isinstance(event, BaseException):
            raise event
        if event is not None:
            os.kill(os.getpid(), event)
        self.t += 1
        done = self.t == 7
        infos = {"episode": {"r": np.where(done, 5.0, 0.0), "l": self.t.copy()}, "_episode": done}
        self.t[done] = 0
        obs = np.full((self.num_envs, 4, 84, 84), self.steps % 255, np.uint8)
        return obs, np.ones(self.num_envs, np.float32), done, np.zeros_like(done), infos

    def close(self):
        pass


@pytest.fixture
def fake_atari(monkeypatch, keep_torch_threads):
    """Make ``solutions.train`` play a FakeAtariBatch; returns ``schedule(act_at)`` for the
    next batch made (each resume makes a new batch)."""
    plans = []

    def make(env_id, nenvs, seed, backend):
        return FakeAtariBatch(nenvs, plans.pop(0) if plans else None)

    monkeypatch.setattr(train_module, "nature_dqn_env", make)
    return plans.append


FAST = ["--nenvs", "2", "--log-interval", "40", "--checkpoint-interval", "80", "--no-progress",
        "--threads", "1", "--eval-games", "0", "--video-frames", "0"]  # fmt: skip


def run_cli(out, *argv):
    return main([*FAST, "--out", str(out), *argv])


def metric_steps(out):
    return [int(r["step"]) for r in read_metrics(out / "metrics.csv")]


def snapshot(out):
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_a_checkpoint_at_the_current_update_and_prints_the_resume_command(
    tmp_path, capsys, fake_atari, signum
):
    """Ctrl-C or SIGTERM at step 110 of 200: is there a checkpoint at that update, a metrics
    row for it, the exact command to resume, and does that command finish the run cleanly?"""
    out = tmp_path / "run"
    fake_atari({110: signum})
    assert run_cli(out, "--steps", "200") == 128 + signum
    err = capsys.readouterr().err
    ckpt = load_checkpoint(out / "checkpoint.pt")
    assert (ckpt["step"], ckpt["update"]) == (110, 11)  # the update during which it came
    assert metric_steps(out) == [40, 80, 110]
    assert not (out / "summary.json").exists()  # not finished
    command = err.split("Resume with:")[1].strip().splitlines()[0]
    assert command.startswith("python -m solutions.train --resume --out ")
    argv = shlex.split(command)[3:]
    assert main(argv) == 0
    assert metric_steps(out) == [40, 80, 110, 120, 160, 200]
    assert json.loads((out / "summary.json").read_text())["steps"] == 200
    resumed = load_checkpoint(out / "checkpoint.pt")
    assert int(resumed["optimizer"]["state"][0]["step"]) == 20  # 11 + 9 updates, none repeated


@pytest.mark.slow
def test_a_signal_during_the_last_update_keeps_the_finished_run_and_skips_the_evaluation(
    tmp_path, capsys, fake_atari
):
    """Ctrl-C during the last of 12 updates: is the run complete (summary, checkpoint at 120,
    exit 0) rather than "stopped", with the evaluation skipped instead of started?"""
    out = tmp_path / "run"
    fake_atari({120: signal.SIGINT})
    assert run_cli(out, "--steps", "120", "--eval-games", "1") == 0
    assert "evaluation and video skipped" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 120 and summary["eval"] is None
    assert load_checkpoint(out / "checkpoint.pt")["update"] == 12


def stopped_run(out, step, fake_atari, capsys):
    """A 200-step run in ``out`` stopped by Ctrl-C at ``step``; its files' bytes."""
    fake_atari({step: signal.SIGINT})
    assert run_cli(out, "--steps", "200") == 130
    capsys.readouterr()
    return snapshot(out)


@pytest.mark.slow
def test_a_folder_with_an_unfinished_run_is_refused_without_resume(tmp_path, capsys, fake_atari):
    """After a stop at step 60, does a new run in the same folder fail, leaving every file
    as it was, and say how to resume?"""
    out = tmp_path / "run"
    before = stopped_run(out, 60, fake_atari, capsys)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(out, "--steps", "200")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unfinished run (stopped at 60 of 200 agent steps)" in err
    assert "--resume --out" in err
    assert snapshot(out) == before


@pytest.mark.slow
def test_a_folder_with_files_but_no_checkpoint_is_refused_with_or_without_resume(
    tmp_path, capsys, fake_atari
):
    """A run that crashed before its first checkpoint left metrics.csv: is a new run there
    refused (no rows appended), and does --resume say there is nothing to resume?"""
    out = tmp_path / "run"
    fake_atari({60: RuntimeError("emulator crashed")})
    with pytest.raises(RuntimeError, match="emulator crashed"):
        run_cli(out, "--steps", "200", "--checkpoint-interval", "1000")
    assert metric_steps(out) == [40] and not (out / "checkpoint.pt").exists()
    for resume in ([], ["--resume"]):
        with pytest.raises(SystemExit):
            run_cli(out, "--steps", "200", *resume)
        assert "stopped before its first checkpoint" in capsys.readouterr().err
    assert metric_steps(out) == [40]


@pytest.mark.slow
def test_resume_drops_metric_rows_logged_after_the_checkpoint(tmp_path, fake_atari):
    """A crash at step 150 (checkpoint at 80, rows up to 120): does the resumed run replay
    120 without writing it twice?"""
    out = tmp_path / "run"
    fake_atari({150: RuntimeError("killed")})
    with pytest.raises(RuntimeError):
        run_cli(out, "--steps", "200")
    assert metric_steps(out) == [40, 80, 120]
    assert load_checkpoint(out / "checkpoint.pt")["step"] == 80
    assert run_cli(out, "--steps", "200", "--resume") == 0
    assert metric_steps(out) == [40, 80, 120, 160, 200]


@pytest.mark.slow
@pytest.mark.parametrize("budget", ["100", "120"])
def test_resume_with_a_budget_already_reached_says_so_and_changes_nothing(
    tmp_path, capsys, fake_atari, budget
):
    """A finished 120-step run resumed with --steps 100 or 120: exit 0, a message, and not one
    byte of summary.json, checkpoint.pt or metrics.csv rewritten (no "0 steps/s")."""
    out = tmp_path / "run"
    assert run_cli(out, "--steps", "120") == 0
    before = snapshot(out)
    capsys.readouterr()
    assert run_cli(out, "--steps", budget, "--resume") == 0
    err = capsys.readouterr().err
    assert "nothing to train, no file changed" in err and "steps/s" not in err
    assert snapshot(out) == before
    with pytest.raises(SystemExit):  # and without --resume: a finished run, refused
        run_cli(out, "--steps", "200")
    assert "a finished run (120 agent steps)" in capsys.readouterr().err
    assert snapshot(out) == before


@pytest.mark.slow
@pytest.mark.rom
@pytest.mark.timeout(240)
def test_ctrl_c_stops_the_quick_start_run_in_a_subprocess_and_it_resumes(tmp_path, capsys):
    """The README's quick-start run (200k steps) on a real ROM, sent SIGINT as a terminal's
    Ctrl-C would: exit 130 with a checkpoint at the last metrics row; a lower budget is refused,
    and the printed command continues the run (stopped again after two more rows, to keep the
    test short)."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "solutions.train", "--steps", "200000", "--nenvs", "2",
           "--log-interval", "20", "--no-progress", "--threads", "1", "--out", str(out)]  # fmt: skip
    returncode, err = interrupt_after_rows(cmd, out, rows=3)
    assert returncode == 130, err
    ckpt = load_checkpoint(out / "checkpoint.pt")
    assert 0 < ckpt["step"] < 200_000 and metric_steps(out)[-1] == ckpt["step"]
    command = shlex.split(err.split("Resume with:")[1].strip().splitlines()[0])
    with pytest.raises(SystemExit) as lower:  # in this process: refused before any set-up
        main([*command[3:], "--steps", str(ckpt["step"] + 40)])
    assert lower.value.code == 2
    assert "below this run's budget of 200000" in capsys.readouterr().err
    returncode, err = interrupt_after_rows([sys.executable, *command[1:]], out, rows=2)
    assert returncode == 130, err
    resumed = load_checkpoint(out / "checkpoint.pt")
    assert resumed["step"] > ckpt["step"] and resumed["config"].total_steps == 200_000
    steps = metric_steps(out)
    assert steps == sorted(set(steps)) and steps[-1] == resumed["step"]


def interrupt_after_rows(cmd, out, rows):
    """Run ``cmd``, send it SIGINT once ``rows`` more metrics rows are written to ``out``;
    its exit status and standard error."""
    start = len(metric_lines(out)) if (out / "metrics.csv").is_file() else 1
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 150
        while not (out / "metrics.csv").is_file() or len(metric_lines(out)) < start + rows:
            assert proc.poll() is None and time.monotonic() < deadline, "no metrics in time"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def metric_lines(out):
    return (out / "metrics.csv").read_text().splitlines()


def test_a_run_in_which_no_game_ended_says_so_instead_of_nan():
    from types import SimpleNamespace

    from solutions.evaluate import describe_scores

    short = SimpleNamespace(games=0, mean_raw_score_100=float("nan"), evaluation=None)
    text = describe_scores(short)
    assert "nan" not in text and "no full game ended during training" in text
    played = SimpleNamespace(games=3, mean_raw_score_100=155.0, evaluation=None)
    assert describe_scores(played).startswith("training score: 155.0 = mean raw score of the last 3")


# ----- start-up, budget changes on resume, TensorBoard ----------------------------------------


def test_help_is_printed_before_torch_is_imported():
    """``python -m solutions.train --help`` (and a mistyped option) must not wait for torch and
    the emulator to load: does the command answer with neither imported?"""
    for argv, status in ((["--help"], 0), (["--steps", "-5"], 2)):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "solutions.train", *argv],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == status, done.stderr
        imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
        assert "solutions.cli" in imported
        assert not {"torch", "gymnasium", "ale_py"} & imported, sorted(imported)
    assert "--resume" in done.stderr or "usage" in done.stderr


@pytest.mark.slow
def test_resume_with_a_lower_budget_is_refused_and_a_higher_one_says_what_the_lr_does(
    tmp_path, capsys, fake_atari
):
    """Stopped at step 80 of 200: is --steps 120 refused (the learning rate would jump from
    7e-4 * 0.6 to 7e-4 * 0.33), with no file changed, and does --steps 240 say where the
    learning rate goes and then follow the new schedule?"""
    out = tmp_path / "run"
    before = stopped_run(out, 80, fake_atari, capsys)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(out, "--steps", "120", "--resume")
    assert exit_info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--steps 120 is below this run's budget of 200" in err
    assert "jump from 0.00042 to 0.000233" in err and "Ctrl-C" in err
    assert snapshot(out) == before
    assert run_cli(out, "--steps", "240", "--resume") == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "budget raised from 200 to 240 agent steps" in err
    assert "from 0.00042 to 0.000467 at step 80" in err
    rows = read_metrics(out / "metrics.csv")
    config = A2CConfig(total_steps=240, nenvs=2)
    resumed = [row for row in rows if int(row["step"]) > 80]
    assert [int(row["step"]) for row in resumed] == [120, 160, 200, 240]
    for row in resumed:
        assert float(row["lr"]) == pytest.approx(config.lr_at(int(row["update"]) - 1))


def read_events(out):
    """Every scalar of the TensorBoard files in ``out``, as TensorBoard reads them."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out), size_guidance={"scalars": 0})
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


@pytest.mark.slow
def test_tensorboard_shows_the_series_of_metrics_csv_at_the_same_steps_across_a_resume(
    tmp_path, fake_atari
):
    """A crash at step 150 (checkpoint at 80, rows up to 120), then --resume: does TensorBoard
    read every column of metrics.csv at the same steps, each step once, the replayed 120 with
    its new value, as metrics.csv holds it?"""
    out = tmp_path / "run"
    fake_atari({150: RuntimeError("killed")})
    with pytest.raises(RuntimeError):
        run_cli(out, "--steps", "200")
    first = read_metrics(out / "metrics.csv")
    assert read_events(out)["loss"] == [
        (int(r["step"]), pytest.approx(float(r["loss"]))) for r in first
    ]
    assert run_cli(out, "--steps", "200", "--resume") == 0
    assert len(list(out.glob("events.out.tfevents.*"))) == 2  # one file per session
    rows = read_metrics(out / "metrics.csv")
    assert [int(r["step"]) for r in rows] == [40, 80, 120, 160, 200]
    assert float(rows[2]["loss"]) != float(first[2]["loss"])  # step 120 played again
    scalars = read_events(out)
    assert sorted(scalars) == sorted(c for c in METRIC_COLUMNS if c != "step")
    for tag, points in scalars.items():
        expected = [(int(r["step"]), float(r[tag])) for r in rows if np.isfinite(float(r[tag]))]
        assert [step for step, _ in points] == [step for step, _ in expected], tag
        assert [value for _, value in points] == pytest.approx([v for _, v in expected]), tag
    assert len(scalars["mean_raw_score_100"]) == 5  # the fake's games end every 7 steps


# ----- checkpoints load with weights_only=True; evaluate on what users hand it ----------------


def _first_format(path):
    """Rewrite the checkpoint at ``path`` as the kit's first format wrote it: numpy's generator
    state pickled as a numpy array, numpy numbers among the finished games."""
    payload = torch.load(path, weights_only=True)
    payload["format"] = 1
    payload["rng"]["numpy"] = np.random.get_state()
    payload["extra"]["games"]["score"] = [np.float64(s) for s in payload["extra"]["games"]["score"]]
    payload["config"] = dict(payload["config"])
    torch.save(payload, path)


@pytest.mark.slow
def test_a_first_format_checkpoint_still_resumes_with_weights_only(tmp_path, capsys, fake_atari):
    """A run stopped by Ctrl-C under the first checkpoint format (numpy objects pickled) is
    resumed by the command the stop printed, reading the file with weights_only=True."""
    out = tmp_path / "run"
    fake_atari({110: signal.SIGINT})
    assert run_cli(out, "--steps", "200") == 130
    command = capsys.readouterr().err.split("Resume with:")[1].strip().splitlines()[0]
    _first_format(out / "checkpoint.pt")
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(out / "checkpoint.pt", weights_only=True)  # numpy's types are not torch's
    assert load_checkpoint(out / "checkpoint.pt")["format"] == 1
    assert main(shlex.split(command)[3:]) == 0
    resumed = load_checkpoint(out / "checkpoint.pt")
    assert (resumed["format"], resumed["step"]) == (2, 200)
    torch.load(out / "checkpoint.pt", weights_only=True)  # the new file: tensors, plain data


class _Payload:
    """What a hostile 'checkpoint' pickles: code that runs when the file is unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.makedirs, (self.marker,))


def test_checkpoints_run_no_code_from_the_file_and_name_a_wrong_file(tmp_path):
    hostile = tmp_path / "checkpoint.pt"
    marker = tmp_path / "marker"
    torch.save({"format": 2, "model": _Payload(str(marker))}, hostile)
    with pytest.raises(ValueError, match="could run code from the file"):
        load_checkpoint(hostile)
    assert not marker.exists()
    notebook = tmp_path / "a2c.pt"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4}')
    with pytest.raises(ValueError, match="is a JSON file, not a checkpoint"):
        load_checkpoint(notebook)
    (tmp_path / "noise.pt").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ValueError, match="not a checkpoint of python -m solutions.train"):
        load_checkpoint(tmp_path / "noise.pt")


def test_evaluate_refuses_a_notebook_and_reads_a_students_network_as_the_grader_does(
    tmp_path, capsys
):
    from course_lib.saved_agent import save_agent
    from solutions.evaluate import main as evaluate

    notebook = tmp_path / "a2c.ipynb"
    notebook.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    with pytest.raises(SystemExit) as stopped:
        evaluate([str(notebook), "--no-progress"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "is a notebook, not an agent" in err
    assert f"python -m autograder grade {notebook}" in err and "a2c_agent.json" in err

    from types import SimpleNamespace

    from course_lib.episode_stats import EpisodeStats
    from solutions.reference import make_model

    runner = SimpleNamespace(  # what save_agent reads of the notebook's EnvRunner
        episode_stats=EpisodeStats(), step_var=1000,
        env=SimpleNamespace(single_action_space=gym.spaces.Discrete(6)),
    )  # fmt: skip
    reference = make_model(6)
    trunk = [m for m in reference.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]

    class Renamed(torch.nn.Module):  # a student's network: the course's, its layers named otherwise
        def __init__(self):
            super().__init__()
            self.features = torch.nn.ModuleList(trunk[:4])
            self.pi, self.v = trunk[4], trunk[5]

    saved = save_agent(Renamed(), runner, "SpaceInvadersNoFrameskip-v4", path=tmp_path / "a.json")
    args = [str(saved.path), "--games", "1", "--max-agent-steps", "20", "--no-progress"]
    assert evaluate(args) == evaluate(args) >= 0  # read as the reference network: it plays
    assert "read as the course's network (conv1=features.0.weight+features.0.bias" in (
        capsys.readouterr().err
    )

    class OneHead(torch.nn.Module):  # both heads in one layer: two readings of the rows
        def __init__(self):
            super().__init__()
            self.features = torch.nn.ModuleList(trunk[:4])
            self.heads = torch.nn.Linear(512, 7)

    saved = save_agent(OneHead(), runner, "SpaceInvadersNoFrameskip-v4", path=tmp_path / "b.json")
    with pytest.raises(SystemExit) as stopped:
        evaluate([str(saved.path), "--no-progress"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "read as the course's network in 2 ways" in err
    assert "python -m autograder grade NOTEBOOK.ipynb" in err
