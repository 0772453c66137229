"""Tests of the training tools: config, runtime helpers, checkpoints, evaluation, and the CLI.

The CLI test trains on a real ROM for a few hundred agent steps (marked ``rom``); everything
else uses fakes and runs in milliseconds.
"""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from course_lib import runtime
from solutions import evaluate as evaluate_module
from solutions.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from solutions.config import A2CConfig
from solutions.train import METRIC_COLUMNS, main

# ----- config ---------------------------------------------------------------------------------


def test_config_defaults_are_the_course_hyperparameters():
    """Do the defaults match design.md section 7?"""
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

    from solutions.config import positive_int

    assert positive_int("1e6") == 1_000_000 and positive_int("40") == 40
    for bad in ("0", "-3", "1.5", "2.5e0", "ten"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integer"):
            positive_int(bad)


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


# ----- evaluation (fake env batch) ------------------------------------------------------------


class FixedGamesBatch:
    """Env i plays games of ``2 + 3 * i`` steps worth ``10 * (i + 1)`` raw points each."""

    def __init__(self, nenvs: int) -> None:
        self.num_envs = nenvs
        self.t = np.zeros(nenvs, dtype=np.int64)
        self.length = 2 + 3 * np.arange(nenvs)
        self.closed = False

    def reset(self, seed=None):
        return np.zeros((self.num_envs, 4, 2, 2), np.uint8), {}

    def step(self, actions):
        assert actions.dtype == np.int64 and actions.shape == (self.num_envs,)
        self.t += 1
        done = self.t == self.length
        rewards = np.where(done, 10.0 * (np.arange(self.num_envs) + 1), 0.0)
        infos = {"episode": {"r": rewards.copy(), "l": self.t.copy()}, "_episode": done}
        self.t[done] = 0
        obs = np.zeros((self.num_envs, 4, 2, 2), np.uint8)
        return obs, rewards, done, np.zeros_like(done), infos

    def close(self):
        self.closed = True


class ConstantAgent:
    def act(self, obs):
        return {"actions": np.zeros(len(obs), dtype=np.int64), "logits": torch.zeros(len(obs), 2)}


def test_evaluate_gives_each_env_a_quota_so_short_games_are_not_favoured(monkeypatch):
    """5 games on 2 envs: env 0 (short games, 10 points) plays 3, env 1 (20 points) plays 2."""
    batches = []

    def fake_env(env_id, nenvs, seed, clip_reward, backend):
        assert clip_reward is False  # evaluation must see raw scores
        batches.append(FixedGamesBatch(nenvs))
        return batches[-1]

    monkeypatch.setattr(evaluate_module, "nature_dqn_env", fake_env)
    scores = evaluate_module.evaluate_scores(ConstantAgent(), "Fake", games=5, nenvs=2)
    assert sorted(scores.tolist()) == [10.0, 10.0, 10.0, 20.0, 20.0]
    assert evaluate_module.evaluate(ConstantAgent(), "Fake", games=5, nenvs=2) == 14.0
    assert all(batch.closed for batch in batches)
    with pytest.warns(UserWarning, match="without ending"):
        cut = evaluate_module.evaluate_scores(
            ConstantAgent(), "Fake", games=2, nenvs=2, max_steps_per_game=3
        )
    assert sorted(cut.tolist()) == [0.0, 10.0]  # env 1's game was cut at 3 of its 5 steps
    with pytest.raises(ValueError, match="games"):
        evaluate_module.evaluate(ConstantAgent(), "Fake", games=0)
    with pytest.raises(TypeError, match="agent must be"):
        evaluate_module.evaluate(object(), "Fake", games=1)


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
    assert summary["steps"] == 120 and summary["eval_games"] == 1
    assert summary["eval_score"] >= 0
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
