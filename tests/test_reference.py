"""Tests of the reference A2C parts (solutions.reference) on tiny fake models and trajectories.

The maths is checked against independent computations: Stable-Baselines3's
``RolloutBuffer.compute_returns_and_advantage`` for the targets and GAE, and a hand-written
gradient for one A2C update. No ROM is needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer

from solutions.parts import PARTS
from solutions.reference import (
    A2C,
    ComputeGAE,
    ComputeValueTargets,
    MergeTimeBatch,
    Policy,
    make_model,
)

OBS_SHAPE = (4, 3, 3)  # tiny observations: the transforms only pass them to the model


class TinyModel(nn.Module):
    """A linear actor-critic on tiny observations: logits (N, A), values (N,)."""

    def __init__(self, n_actions: int = 3, obs_shape: tuple[int, ...] = OBS_SHAPE) -> None:
        super().__init__()
        size = int(np.prod(obs_shape))
        self.logits = nn.Linear(size, n_actions)
        self.value = nn.Linear(size, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = obs.float().flatten(1) / 255.0
        return self.logits(x), self.value(x).squeeze(-1)


def make_trajectory(
    T: int = 6, N: int = 4, seed: int = 0, reset_prob: float = 0.3
) -> tuple[dict, Policy]:
    """A runner-like trajectory (docs/design.md, section 4) produced by a TinyModel policy."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    policy = Policy(TinyModel())
    trajectory: dict = {k: [] for k in ("actions", "logits", "log_probs", "values", "observations")}
    trajectory.update(rewards=[], resets=[])
    for _ in range(T):
        obs = rng.integers(0, 256, size=(N, *OBS_SHAPE), dtype=np.uint8)
        for key, value in policy.act(obs).items():
            trajectory[key].append(value)
        trajectory["observations"].append(obs)
        trajectory["rewards"].append(rng.normal(size=N).astype(np.float32))
        trajectory["resets"].append(rng.random(N) < reset_prob)
    latest = rng.integers(0, 256, size=(N, *OBS_SHAPE), dtype=np.uint8)
    trajectory["state"] = {"latest_observation": latest, "env_steps": T}
    return trajectory, policy


def sb3_returns_and_advantages(trajectory: dict, policy: Policy, gamma: float, lam: float):
    """SB3's GAE on the same data. Conventions differ by one step:
    SB3 ``episode_starts[t]`` = our ``resets[t - 1]`` and its ``dones`` = our ``resets[T - 1]``."""
    T, N = len(trajectory["rewards"]), len(trajectory["rewards"][0])
    buffer = RolloutBuffer(
        T,
        spaces.Box(0, 255, OBS_SHAPE, np.uint8),
        spaces.Discrete(3),
        device="cpu",
        gae_lambda=lam,
        gamma=gamma,
        n_envs=N,
    )
    resets = np.stack(trajectory["resets"]).astype(np.float32)  # (T, N)
    buffer.rewards[:] = np.stack(trajectory["rewards"])
    buffer.values[:] = torch.stack(trajectory["values"]).detach().numpy()
    buffer.episode_starts[0] = 1.0  # whatever: SB3 never reads episode_starts[0]
    buffer.episode_starts[1:] = resets[:-1]
    with torch.no_grad():
        _, last_values = policy.model(torch.as_tensor(trajectory["state"]["latest_observation"]))
    buffer.compute_returns_and_advantage(last_values=last_values, dones=resets[-1])
    return buffer.returns, buffer.advantages  # (T, N) each


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_value_targets_match_sb3_returns_with_lambda_one(seed):
    """Do the n-step targets equal SB3's returns (GAE with lambda = 1) on data with resets?"""
    trajectory, policy = make_trajectory(seed=seed)
    gamma = 0.9 + 0.09 * seed / 2
    expected_returns, _ = sb3_returns_and_advantages(trajectory, policy, gamma, lam=1.0)
    ComputeValueTargets(policy, gamma=gamma)(trajectory)
    targets = torch.as_tensor(trajectory["value_targets"])
    assert targets.shape == (6, 4)
    np.testing.assert_allclose(targets.numpy(), expected_returns, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.95])
def test_gae_matches_sb3(lam):
    """Do ComputeGAE's advantages and value_targets equal SB3's for lambda in {0, 0.95}?"""
    trajectory, policy = make_trajectory(seed=3, reset_prob=0.4)
    expected_returns, expected_adv = sb3_returns_and_advantages(trajectory, policy, 0.99, lam)
    ComputeGAE(policy, gamma=0.99, lambda_=lam)(trajectory)
    np.testing.assert_allclose(trajectory["advantages"].numpy(), expected_adv, atol=1e-5)
    np.testing.assert_allclose(trajectory["value_targets"].numpy(), expected_returns, atol=1e-5)


def test_gae_lambda_one_reproduces_plain_targets():
    """Does GAE with lambda = 1 give exactly the plain n-step targets (advantage = v_t - V_t)?"""
    plain, policy = make_trajectory(seed=4)
    gae, _ = make_trajectory(seed=4)
    gae["values"] = plain["values"]  # same network outputs
    ComputeValueTargets(policy, gamma=0.97)(plain)
    ComputeGAE(policy, gamma=0.97, lambda_=1.0)(gae)
    values = torch.stack(plain["values"]).detach()
    torch.testing.assert_close(gae["value_targets"], plain["value_targets"])
    torch.testing.assert_close(gae["advantages"], plain["value_targets"] - values)


def test_targets_bootstrap_and_cut_at_resets():
    """Is v_{T-1} = r + gamma V(latest) without a reset, and just r where the episode ended?"""
    trajectory, policy = make_trajectory(T=1, N=2, seed=5)
    trajectory["resets"] = [np.array([False, True])]
    ComputeValueTargets(policy, gamma=0.5)(trajectory)
    with torch.no_grad():
        _, v_latest = policy.model(torch.as_tensor(trajectory["state"]["latest_observation"]))
    r = torch.as_tensor(trajectory["rewards"][0])
    expected = torch.stack([r[0] + 0.5 * v_latest[0], r[1]])
    torch.testing.assert_close(torch.as_tensor(trajectory["value_targets"])[0], expected)


@pytest.mark.parametrize("transform_cls", [ComputeValueTargets, ComputeGAE])
def test_targets_carry_no_graph_and_leave_inputs_alone(transform_cls):
    """Are the targets constants (no grad) while the stored values keep their graph?"""
    trajectory, policy = make_trajectory(seed=6)
    transform_cls(policy)(trajectory)
    assert not torch.as_tensor(trajectory["value_targets"]).requires_grad
    assert trajectory["value_targets"].dtype == torch.float32
    assert all(v.requires_grad for v in trajectory["values"])
    if transform_cls is ComputeGAE:
        assert not trajectory["advantages"].requires_grad


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (ComputeValueTargets, {"gamma": 1.5}),
        (ComputeGAE, {"gamma": -0.1}),
        (ComputeGAE, {"lambda_": 2.0}),
    ],
)
def test_bad_hyperparameters_raise_value_error_naming_them(cls, kwargs):
    """Does a discount or lambda outside [0, 1] fail with a message naming the argument?"""
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        cls(Policy(TinyModel()), **kwargs)


@pytest.mark.parametrize("storage", ["list", "tensor"])
def test_merge_time_batch_is_time_major_in_place_and_keeps_types(storage):
    """Does row t*N+i hold step t of env i, for arrays, tensors and both target storages?"""
    trajectory, policy = make_trajectory(T=3, N=2, seed=7)
    ComputeValueTargets(policy)(trajectory)
    targets_tn = trajectory["value_targets"].clone()  # (T, N)
    if storage == "list":
        trajectory["value_targets"] = list(targets_tn)
    state = trajectory["state"]
    before = {k: v for k, v in trajectory.items() if k != "state"}
    result = MergeTimeBatch()(trajectory)
    assert result is None  # in place
    assert trajectory["state"] is state and set(state) == {"latest_observation", "env_steps"}
    for key, per_step in before.items():
        merged = trajectory[key]
        expected_type = torch.Tensor if isinstance(per_step[0], torch.Tensor) else np.ndarray
        assert isinstance(merged, expected_type), key
        assert merged.shape[0] == 6, key
        for t in range(3):
            for i in range(2):
                row = merged[t * 2 + i]
                expected = per_step[t][i]
                if isinstance(row, torch.Tensor):
                    torch.testing.assert_close(row, expected)
                else:
                    np.testing.assert_array_equal(row, expected)
    assert trajectory["observations"].shape == (6, *OBS_SHAPE)
    assert trajectory["actions"].dtype == np.int64
    assert trajectory["log_probs"].requires_grad and trajectory["values"].requires_grad
    torch.testing.assert_close(trajectory["value_targets"], targets_tn.reshape(-1))


def test_make_model_shapes_dtypes_and_scaling():
    """Does the Nature-DQN model give (N, A) logits and (N,) values, same for uint8 and float?"""
    torch.manual_seed(0)
    model = make_model(5)
    obs = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    logits, values = model(obs)
    assert logits.shape == (3, 5) and values.shape == (3,)
    logits_f, values_f = model(obs.float())
    torch.testing.assert_close(logits, logits_f)
    torch.testing.assert_close(values, values_f)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (32, (8, 8), (4, 4)),
        (64, (4, 4), (2, 2)),
        (64, (3, 3), (1, 1)),
    ]
    n_params = sum(p.numel() for p in model.parameters())
    # convs + fc 3136 -> 512 + heads 512 -> 5 and 512 -> 1
    expected = (4 * 64 + 1) * 32 + (32 * 16 + 1) * 64 + (64 * 9 + 1) * 64
    expected += (3136 + 1) * 512 + 513 * 5 + 513
    assert n_params == expected


def test_make_model_orthogonal_init_with_head_gains():
    """Are weights orthogonal with gain sqrt(2) (trunk), 0.01 (policy), 1 (value), biases 0?"""
    torch.manual_seed(1)
    model = make_model(4)
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    assert len(layers) == 6
    for layer in layers:
        w = layer.weight.detach().flatten(1)  # (out, in): rows orthonormal times the gain
        assert torch.count_nonzero(layer.bias) == 0
        # by output size: the policy head has 4 outputs, the value head 1, the trunk >= 32
        gain = {4: 0.01, 1: 1.0}.get(w.shape[0], np.sqrt(2))
        gram = w @ w.T
        torch.testing.assert_close(gram, gain**2 * torch.eye(w.shape[0]), atol=1e-4, rtol=1e-3)


def test_policy_act_outputs_types_shapes_graph_and_log_probs():
    """Does act() return int64 numpy actions and (N,A)/(N,) tensors with graph, log_probs right?"""
    torch.manual_seed(2)
    policy = Policy(make_model(6))
    obs = np.random.default_rng(0).integers(0, 256, (5, 4, 84, 84), dtype=np.uint8)
    out = policy.act(obs)
    assert set(out) >= {"actions", "logits", "log_probs", "values"}
    actions = out["actions"]
    assert isinstance(actions, np.ndarray) and actions.dtype == np.int64 and actions.shape == (5,)
    assert ((0 <= actions) & (actions < 6)).all()
    assert out["logits"].shape == (5, 6) and out["log_probs"].shape == (5,)
    assert out["values"].shape == (5,)
    for key in ("logits", "log_probs", "values"):
        assert out[key].requires_grad and out[key].grad_fn is not None, key
    expected = F.log_softmax(out["logits"], -1)[torch.arange(5), torch.from_numpy(actions)]
    torch.testing.assert_close(out["log_probs"], expected)


def test_policy_samples_from_softmax_of_logits():
    """Do sampled action frequencies follow softmax(logits) (not argmax, not uniform)?"""
    model = TinyModel(n_actions=3)
    with torch.no_grad():
        model.logits.weight.zero_()
        model.logits.bias.copy_(torch.log(torch.tensor([0.6, 0.3, 0.1])))
    torch.manual_seed(3)
    obs = np.zeros((20_000, *OBS_SHAPE), dtype=np.uint8)
    actions = Policy(model).act(obs)["actions"]
    freq = np.bincount(actions, minlength=3) / actions.size
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.015)  # ~4 standard deviations


class TableModel(nn.Module):
    """Parameters ARE the outputs: logits (B, A) and values (B,), so gradients are easy by hand."""

    def __init__(self, logits: np.ndarray, values: np.ndarray) -> None:
        super().__init__()
        self.table_logits = nn.Parameter(torch.tensor(logits, dtype=torch.float64))
        self.table_values = nn.Parameter(torch.tensor(values, dtype=torch.float64))


def a2c_batch(model: TableModel, actions: np.ndarray, targets: np.ndarray) -> dict:
    log_pi = F.log_softmax(model.table_logits, -1)
    return {
        "actions": actions,
        "logits": model.table_logits,
        "log_probs": log_pi[torch.arange(len(actions)), torch.from_numpy(actions)],
        "values": model.table_values,
        "value_targets": torch.tensor(targets, dtype=torch.float64),
    }


def hand_a2c(logits, values, actions, targets, cv, ce):
    """Loss terms and gradients of A2C computed with numpy, independently of torch autograd."""
    B, A = logits.shape
    z = logits - logits.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)  # (B, A)
    logp = np.log(p)
    adv = targets - values  # (B,)
    ent_b = -(p * logp).sum(1)  # (B,)
    terms = {
        "policy_loss": -np.mean(logp[np.arange(B), actions] * adv),
        "value_loss": np.mean(adv**2),
        "entropy": ent_b.mean(),
    }
    terms["loss"] = terms["policy_loss"] + cv * terms["value_loss"] - ce * terms["entropy"]
    onehot = np.eye(A)[actions]
    grad_logits = -(adv[:, None] / B) * (onehot - p)  # policy term (advantages are constants)
    grad_logits += ce / B * p * (logp + ent_b[:, None])  # -ce * d(mean entropy)
    grad_values = cv * 2.0 * (values - targets) / B
    return terms, grad_logits, grad_values


@pytest.mark.parametrize("max_grad_norm", [100.0, 0.05])
def test_a2c_step_matches_hand_computed_losses_and_sgd_update(max_grad_norm):
    """Do loss terms, grad_norm and the SGD step equal the hand computation (with clipping)?"""
    rng = np.random.default_rng(8)
    B, A, lr, cv, ce = 6, 3, 0.1, 0.25, 0.01
    logits, values = rng.normal(size=(B, A)), rng.normal(size=B)
    actions, targets = rng.integers(0, A, size=B), rng.normal(size=B)
    model = TableModel(logits, values)
    a2c = A2C(Policy(model), torch.optim.SGD(model.parameters(), lr=lr), cv, ce, max_grad_norm)
    stats = a2c.step(a2c_batch(model, actions, targets))

    terms, g_logits, g_values = hand_a2c(logits, values, actions, targets, cv, ce)
    for key, value in terms.items():
        assert stats[key] == pytest.approx(value, rel=1e-5), key
        assert isinstance(stats[key], float)
    norm = np.sqrt((g_logits**2).sum() + (g_values**2).sum())
    assert stats["grad_norm"] == pytest.approx(norm, rel=1e-5)  # the norm before clipping
    scale = min(1.0, max_grad_norm / norm)
    assert (scale < 1.0) == (max_grad_norm < 1.0)  # the small limit really clips
    np.testing.assert_allclose(
        model.table_logits.detach().numpy(), logits - lr * scale * g_logits, rtol=1e-4
    )
    np.testing.assert_allclose(
        model.table_values.detach().numpy(), values - lr * scale * g_values, rtol=1e-4
    )
    assert set(stats) == {"loss", "policy_loss", "value_loss", "entropy", "grad_norm"}


def test_critic_stats_of_the_training_loop_match_numpy():
    """Are the explained variance and the advantage mean/std that solutions.train logs
    1 - Var(v - V) / Var(v) and the moments of v - V on the merged batch?"""
    from solutions.train import critic_stats

    rng = np.random.default_rng(10)
    values, targets = rng.normal(size=6), rng.normal(size=6)
    model = TableModel(rng.normal(size=(6, 3)), values)
    stats = critic_stats(a2c_batch(model, rng.integers(0, 3, size=6), targets))
    ev = 1 - np.var(targets - values) / np.var(targets)
    assert stats["explained_variance"] == pytest.approx(ev, rel=1e-5)
    assert stats["advantage_mean"] == pytest.approx((targets - values).mean(), rel=1e-5)
    assert stats["advantage_std"] == pytest.approx((targets - values).std(), rel=1e-5)
    flat = critic_stats({"values": torch.zeros(4), "value_targets": torch.ones(4)})
    assert np.isnan(flat["explained_variance"])  # targets that do not vary explain nothing


def test_a2c_policy_loss_does_not_train_the_critic():
    """With value_loss_coef = 0 and no entropy, do the values get zero gradient (detach)?"""
    rng = np.random.default_rng(9)
    model = TableModel(rng.normal(size=(4, 2)), rng.normal(size=4))
    a2c = A2C(Policy(model), torch.optim.SGD(model.parameters(), lr=1.0), 0.0, 0.0, 1e6)
    batch = a2c_batch(model, rng.integers(0, 2, size=4), rng.normal(size=4))
    terms = a2c.loss(batch)
    terms["loss"].backward()
    assert torch.count_nonzero(model.table_values.grad) == 0
    assert torch.count_nonzero(model.table_logits.grad) > 0


def test_a2c_uses_stored_advantages_when_present():
    """Does a stored `advantages` entry replace value_targets - values in the policy loss?"""
    rng = np.random.default_rng(10)
    model = TableModel(rng.normal(size=(5, 3)), rng.normal(size=5))
    a2c = A2C(Policy(model), torch.optim.SGD(model.parameters(), lr=0.0))
    batch = a2c_batch(model, rng.integers(0, 3, size=5), rng.normal(size=5))
    stored = torch.tensor(rng.normal(size=5))
    batch["advantages"] = stored
    terms = a2c.loss(batch)
    expected = -(batch["log_probs"] * stored).mean()
    torch.testing.assert_close(terms["policy_loss"], expected)


def test_a2c_end_to_end_on_runner_like_trajectory_reduces_value_loss():
    """Targets -> merge -> repeated A2C steps on one batch: does the value loss go down?"""
    trajectory, policy = make_trajectory(T=5, N=4, seed=11)
    ComputeValueTargets(policy)(trajectory)
    MergeTimeBatch()(trajectory)
    observations = torch.as_tensor(trajectory["observations"])
    a2c = A2C(policy, torch.optim.Adam(policy.model.parameters(), lr=0.05), 1.0, 0.0, 10.0)
    losses = []
    for _ in range(30):
        logits, values = policy.model(observations)
        log_probs = F.log_softmax(logits, -1)[
            torch.arange(20), torch.as_tensor(trajectory["actions"])
        ]
        batch = dict(trajectory, logits=logits, values=values, log_probs=log_probs)
        losses.append(a2c.step(batch)["value_loss"])
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize(
    "kwargs", [{"value_loss_coef": -1.0}, {"entropy_coef": -0.1}, {"max_grad_norm": 0.0}]
)
def test_a2c_rejects_bad_coefficients(kwargs):
    model = TinyModel()
    with pytest.raises(ValueError, match="A2C needs"):
        A2C(Policy(model), torch.optim.SGD(model.parameters(), lr=0.1), **kwargs)


def test_part_regions_are_well_formed():
    """Does every part key have exactly one region with BEGIN/END SOLUTION markers inside?"""
    source = Path(__file__).resolve().parents[1].joinpath("solutions", "reference.py").read_text()
    for key in ("imports", *PARTS):
        starts = re.findall(rf"^# %% \[part: {key}\]$", source, flags=re.M)
        ends = re.findall(rf"^# %% \[end part: {key}\]$", source, flags=re.M)
        assert len(starts) == 1 and len(ends) == 1, key
        body = source.split(f"# %% [part: {key}]\n")[1].split(f"# %% [end part: {key}]")[0]
        if key != "imports":
            assert body.count("### BEGIN SOLUTION") == body.count("### END SOLUTION") >= 1, key
            compile(body, key, "exec")  # each region is valid Python on its own
            # ... and so is the student stub nbgrader makes of it
            stub = re.sub(
                r"^( *)### BEGIN SOLUTION$.*?^ *### END SOLUTION$",
                r"\1# YOUR CODE HERE\n\1raise NotImplementedError()",
                body,
                flags=re.M | re.S,
            )
            assert "BEGIN SOLUTION" not in stub
            compile(stub, key + " (student stub)", "exec")


def test_training_a2c_recomputes_outputs_when_the_rollout_had_no_graph():
    """Stored graphs (the reference's A2C) vs a no_grad rollout (the training script's
    BatchedA2C recomputes from observations): the same update?"""
    from solutions.train import BatchedA2C

    stored, policy = make_trajectory(T=4, N=3, seed=12)
    with torch.no_grad():  # the same rollout, without graph (as solutions.train plays)
        detached = {k: (list(v) if isinstance(v, list) else v) for k, v in stored.items()}
        for key in ("logits", "log_probs", "values"):
            detached[key] = [v.detach() for v in stored[key]]
    results = []
    for trajectory, update in ((stored, A2C), (detached, BatchedA2C)):
        ComputeValueTargets(policy)(trajectory)
        MergeTimeBatch()(trajectory)
        a2c = update(policy, torch.optim.SGD(policy.model.parameters(), lr=0.0))
        stats = a2c.step(trajectory)
        grads = [p.grad.clone() for p in policy.model.parameters()]
        results.append((stats, grads))
    assert not detached["values"].requires_grad
    (stats_a, grads_a), (stats_b, grads_b) = results
    assert stats_a == pytest.approx(stats_b, rel=1e-5, abs=1e-7)
    for grad_a, grad_b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(grad_a, grad_b)
