"""Tests of the runner (course_lib.runners) and the finished-game statistics (course_lib.episode_stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from course_lib.episode_stats import EpisodeStats, rolling_mean
from course_lib.runners import EnvRunner

N_ACTIONS = 3


class CounterBatch:
    """A tiny vector env with same-step autoreset whose obs say where each env is.

    ``obs[i, 0]`` = i, ``obs[i, 1]`` = steps taken in env i's current episode, ``obs[i, 2]`` =
    its episode index. The reward of a step is the step count of the obs the action was taken in
    plus 100 * action, so rewards can be checked against observations and actions.
    Env i's episode lasts ``lengths[i]`` steps; its "raw game score" is ``1000 * (i + 1) + episode``.
    Masked-off entries of ``infos["episode"]`` hold junk (-7) to catch readers that ignore the mask.
    """

    def __init__(self, lengths=(3, 4), shape=(4, 84, 84)):
        self.num_envs = len(lengths)
        self.lengths = np.asarray(lengths)
        self.shape = shape
        self.count = np.zeros(self.num_envs, dtype=np.int64)
        self.episode = np.zeros(self.num_envs, dtype=np.int64)
        self.reset_calls = 0
        self.seeds = []
        self.buffer = np.zeros((self.num_envs, *shape), dtype=np.uint8)

    def _obs(self):
        # Written into one reused buffer, like batches that avoid allocations.
        self.buffer[:, 0] = np.arange(self.num_envs)[:, None, None]
        self.buffer[:, 1] = self.count[:, None, None]
        self.buffer[:, 2] = self.episode[:, None, None]
        return self.buffer

    def reset(self, seed=None):
        self.reset_calls += 1
        self.seeds.append(seed)
        self.count[:] = 0
        return self._obs(), {}

    def step(self, actions):
        actions = np.asarray(actions)
        assert actions.shape == (self.num_envs,) and actions.dtype == np.int64
        rewards = (self.count + 100 * actions).astype(np.float32)
        self.count += 1
        terminated = self.count >= self.lengths
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos = {}
        if terminated.any():
            score = np.where(
                terminated, 1000.0 * (np.arange(self.num_envs) + 1) + self.episode, -7.0
            )
            length = np.where(terminated, self.count, -7)
            infos = {"episode": {"r": score, "l": length}, "_episode": terminated.copy()}
            self.episode[terminated] += 1
            self.count[terminated] = 0
        return self._obs(), rewards, terminated, truncated, infos


class FakePolicy:
    """Acts with action = (step count in obs) % 3; returns the four contract keys with a graph."""

    def __init__(self, torch_actions=False):
        self.weight = torch.nn.Parameter(torch.ones(N_ACTIONS))
        self.seen = []
        self.torch_actions = torch_actions

    def act(self, obs):
        self.seen.append(obs.copy())
        counts = torch.as_tensor(obs[:, 1, 0, 0].astype(np.float32))
        logits = counts[:, None] * self.weight  # (N, A), requires grad
        actions = obs[:, 1, 0, 0].astype(np.int64) % N_ACTIONS
        log_probs = torch.log_softmax(logits, dim=-1)[torch.arange(len(obs)), actions]
        values = logits.sum(-1)
        if self.torch_actions:
            actions = torch.as_tensor(actions)
        return {"actions": actions, "logits": logits, "log_probs": log_probs, "values": values}


def test_trajectory_keys_types_shapes_and_lengths():
    """Does get_next return every contract key, with T entries of the right type and shape?"""
    env, policy = CounterBatch(), FakePolicy()
    trajectory = EnvRunner(env, policy, nsteps=5).get_next()
    assert set(trajectory) == {
        "actions", "logits", "log_probs", "values", "observations", "rewards", "resets", "state",
    }  # fmt: skip
    for key in ("actions", "logits", "log_probs", "values", "observations", "rewards", "resets"):
        assert isinstance(trajectory[key], list) and len(trajectory[key]) == 5, key
    for t in range(5):
        a = trajectory["actions"][t]
        assert isinstance(a, np.ndarray) and a.dtype == np.int64 and a.shape == (2,)
        assert trajectory["logits"][t].shape == (2, N_ACTIONS)
        assert trajectory["log_probs"][t].shape == (2,) and trajectory["log_probs"][t].requires_grad
        assert trajectory["values"][t].shape == (2,) and trajectory["values"][t].grad_fn is not None
        o = trajectory["observations"][t]
        assert o.dtype == np.uint8 and o.shape == (2, 4, 84, 84)
        assert trajectory["rewards"][t].dtype == np.float32 and trajectory["rewards"][t].shape == (
            2,
        )
        assert trajectory["resets"][t].dtype == bool and trajectory["resets"][t].shape == (2,)
    state = trajectory["state"]
    assert set(state) == {"latest_observation", "env_steps"} and state["env_steps"] == 5
    # The graph is kept: a loss over all steps back-propagates into the policy's parameter.
    torch.stack(trajectory["values"]).sum().backward()
    assert policy.weight.grad is not None and policy.weight.grad.abs().sum() > 0


def test_observations_are_the_ones_actions_were_taken_in():
    """Is observations[t] the obs the policy saw at step t, even when the env reuses its buffer?"""
    env, policy = CounterBatch(lengths=(3, 4)), FakePolicy()
    trajectory = EnvRunner(env, policy, nsteps=6).get_next()
    for t in range(6):
        np.testing.assert_array_equal(trajectory["observations"][t], policy.seen[t])
    counts = np.stack([o[:, 1, 0, 0] for o in trajectory["observations"]])  # (T, N)
    # Env 0 ends episodes every 3 steps, env 1 every 4: same-step autoreset restarts the count.
    np.testing.assert_array_equal(counts[:, 0], [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(counts[:, 1], [0, 1, 2, 3, 0, 1])
    # reward_t = count in observations[t] + 100 * actions[t]: rewards align with obs and actions.
    for t in range(6):
        expected = counts[t] + 100 * trajectory["actions"][t]
        np.testing.assert_array_equal(trajectory["rewards"][t], expected.astype(np.float32))


def test_resets_align_with_rewards_and_state_continues():
    """Is resets[t] the end of the episode whose last reward is rewards[t], and does the next call continue?"""
    env, policy = CounterBatch(lengths=(3, 4)), FakePolicy()
    runner = EnvRunner(env, policy, nsteps=4)
    first = runner.get_next()
    resets = np.stack(first["resets"])
    np.testing.assert_array_equal(resets[:, 0], [False, False, True, False])
    np.testing.assert_array_equal(resets[:, 1], [False, False, False, True])
    # The final reward of an episode comes from the obs with count length - 1.
    assert first["observations"][2][0, 1, 0, 0] == 2 and first["rewards"][2][0] % 100 == 2
    latest = first["state"]["latest_observation"]
    np.testing.assert_array_equal(latest[:, 1, 0, 0], [1, 0])  # env 1 was just auto-reset
    second = runner.get_next()
    np.testing.assert_array_equal(second["observations"][0], latest)
    assert env.reset_calls == 1 and env.seeds == [None]  # only the first call resets
    assert runner.latest_observation is second["state"]["latest_observation"]


def test_transforms_applied_in_order_in_place():
    """Are transforms called in order on the same dict, and can one return a replacement dict?"""
    calls = []

    def first(trajectory):
        calls.append("first")
        trajectory["order"] = ["first"]

    def second(trajectory):
        calls.append("second")
        trajectory["order"].append("second")
        return trajectory  # returning the same dict is fine

    def third(trajectory):
        new = dict(trajectory)
        new["replaced"] = True
        return new

    runner = EnvRunner(CounterBatch(), FakePolicy(), nsteps=2, transforms=[first, second, third])
    trajectory = runner.get_next()
    assert calls == ["first", "second"] and trajectory["order"] == ["first", "second"]
    assert trajectory["replaced"] is True

    def bad(trajectory):
        return 42

    with pytest.raises(TypeError, match="in place"):
        EnvRunner(CounterBatch(), FakePolicy(), nsteps=2, transforms=[bad]).get_next()


def test_step_var_counts_agent_steps_from_its_start():
    """Does step_var grow by T*N per call, from the given start, and stay assignable?"""
    runner = EnvRunner(CounterBatch(lengths=(3, 4, 5)), FakePolicy(), nsteps=5, step_var=10)
    assert runner.step_var == 10
    runner.get_next()
    runner.get_next()
    assert runner.step_var == 10 + 2 * 5 * 3
    runner.step_var = 0
    assert runner.step_var == 0
    assert not hasattr(runner, "step_counter")  # one name: step_var


def test_episode_stats_use_the_mask_and_record_end_steps():
    """Are games read only where infos["_episode"] is True, with the agent step at which they ended?"""
    runner = EnvRunner(CounterBatch(lengths=(3, 4)), FakePolicy(), nsteps=4)
    runner.get_next()  # env 0 ends at t=2 (agent step 6), env 1 at t=3 (agent step 8)
    stats = runner.episode_stats
    assert len(stats) == 2
    np.testing.assert_array_equal(stats.scores, [1000.0, 2000.0])  # never the -7 junk
    np.testing.assert_array_equal(stats.lengths, [3, 4])
    np.testing.assert_array_equal(stats.steps, [6, 8])
    np.testing.assert_array_equal(stats.env_indices, [0, 1])
    runner.get_next()  # env 0 ends again at t=1 (agent step 8 + 2*2), env 1 at t=3 (8 + 4*2)
    np.testing.assert_array_equal(stats.scores, [1000.0, 2000.0, 1001.0, 2001.0])
    np.testing.assert_array_equal(stats.steps, [6, 8, 12, 16])
    np.testing.assert_array_equal(stats.env_indices, [0, 1, 0, 1])
    assert stats.mean_recent(2) == pytest.approx((1001.0 + 2001.0) / 2)


def test_torch_actions_are_converted():
    """Does a policy that returns a torch tensor of actions still give int64 numpy actions?"""
    trajectory = EnvRunner(CounterBatch(), FakePolicy(torch_actions=True), nsteps=2).get_next()
    assert all(isinstance(a, np.ndarray) and a.dtype == np.int64 for a in trajectory["actions"])


class _Returns:
    def __init__(self, out):
        self.out = out

    def act(self, obs):
        return self.out


@pytest.mark.parametrize(
    ("out", "error", "match"),
    [
        ({"logits": 0}, TypeError, "'actions'"),
        ([1, 2], TypeError, "'actions'"),
        ({"actions": np.zeros((2, 1), dtype=np.int64)}, ValueError, r"shape \(2,\).*\(2, 1\)"),
        ({"actions": np.zeros(3, dtype=np.int64)}, ValueError, r"shape \(2,\)"),
        ({"actions": np.zeros(2, dtype=np.float32)}, TypeError, "integer"),
    ],
)
def test_bad_policy_outputs_give_clear_errors(out, error, match):
    """Does a policy that forgets 'actions' or returns the wrong shape or dtype get a clear message?"""
    with pytest.raises(error, match=match):
        EnvRunner(CounterBatch(), _Returns(out), nsteps=2).get_next()


def test_bad_arguments_give_clear_errors():
    """Are bad constructor arguments rejected with a message that names them?"""
    with pytest.raises(ValueError, match="nsteps"):
        EnvRunner(CounterBatch(), FakePolicy(), nsteps=0)
    with pytest.raises(TypeError, match="num_envs"):
        EnvRunner(object(), FakePolicy(), nsteps=5)
    with pytest.raises(TypeError, match="act"):
        EnvRunner(CounterBatch(), object(), nsteps=5)
    with pytest.raises(TypeError, match=r"transforms\[0\]"):
        EnvRunner(CounterBatch(), FakePolicy(), nsteps=5, transforms=[1])
    with pytest.raises(ValueError, match=r"`step_var` must be an int >= 0, got '0'"):
        EnvRunner(CounterBatch(), FakePolicy(), nsteps=5, step_var="0")
    with pytest.raises(ValueError, match="step_var"):
        EnvRunner(CounterBatch(), FakePolicy(), nsteps=5, step_var=True)


def test_rolling_mean_numbers():
    """Is the smoothed curve the mean of the last `window` values, over fewer at the start?"""
    np.testing.assert_allclose(rolling_mean([1, 2, 3, 4, 5], 3), [1, 1.5, 2, 3, 4])
    np.testing.assert_allclose(rolling_mean([4.0], 100), [4.0])
    assert rolling_mean([], 5).size == 0
    x = np.random.default_rng(0).normal(size=250)
    expected = [x[max(0, i - 99) : i + 1].mean() for i in range(250)]
    np.testing.assert_allclose(rolling_mean(x, 100), expected)
    with pytest.raises(ValueError, match="window"):
        rolling_mean([1.0], 0)


def test_episode_stats_helpers():
    """Do mean_recent, a single-env info without mask and the dict round trip behave?"""
    stats = EpisodeStats()
    assert math.isnan(stats.mean_recent())
    for i in range(150):
        stats.add(score=i, length=10, step=100 * i, env_index=i % 4)
    assert stats.mean_recent(100) == pytest.approx(np.mean(np.arange(50, 150)))
    assert stats.mean_recent(10, what="lengths") == 10
    assert stats.add_from_infos({"episode": {"r": 5.0, "l": 7}}, step=99) == 1
    assert stats.scores[-1] == 5.0 and stats.env_indices[-1] == 0
    assert stats.add_from_infos({}, step=1) == 0
    copy = EpisodeStats.from_dict(stats.to_dict())
    np.testing.assert_array_equal(copy.scores, stats.scores)
    np.testing.assert_array_equal(copy.steps, stats.steps)
    with pytest.raises(ValueError, match="k"):
        stats.mean_recent(0)


@pytest.mark.rom
def test_runner_on_real_atari_batch():
    """Does the runner drive a real two-env Atari batch for a short rollout?"""
    from course_lib import nature_dqn_env

    class RandomPolicy:
        def __init__(self, n):
            self.n, self.rng = n, np.random.default_rng(0)

        def act(self, obs):
            return {"actions": self.rng.integers(self.n, size=len(obs))}

    env = nature_dqn_env("PongNoFrameskip-v4", nenvs=2, seed=0)
    try:
        runner = EnvRunner(env, RandomPolicy(int(env.single_action_space.n)), nsteps=50)
        trajectory = runner.get_next()
    finally:
        env.close()
    assert len(trajectory["observations"]) == 50
    assert trajectory["observations"][0].shape == (2, 4, 84, 84)
    assert trajectory["observations"][0].dtype == np.uint8
    assert set(np.unique(np.concatenate(trajectory["rewards"]))) <= {-1.0, 0.0, 1.0}
    assert runner.step_var == 100


def test_runner_with_env_batch_counts_games_from_infos():
    """With the course's EnvBatch, is every finished game recorded once, from the masked infos?"""
    import functools

    from course_lib.batches.sequential import EnvBatch
    from tests.fake_envs import CounterEnv

    class Zeros:
        def act(self, obs):
            return {"actions": np.zeros(len(obs), dtype=np.int64)}

    env = EnvBatch([functools.partial(CounterEnv, 3), functools.partial(CounterEnv, 4)], seed=0)
    try:
        runner = EnvRunner(env, Zeros(), nsteps=12)
        trajectory = runner.get_next()
    finally:
        env.close()
    resets = np.stack(trajectory["resets"])  # (T, N)
    assert resets[:, 0].sum() == 4 and resets[:, 1].sum() == 3
    stats = runner.episode_stats
    np.testing.assert_array_equal(np.sort(stats.lengths), [3, 3, 3, 3, 4, 4, 4])
    np.testing.assert_array_equal(np.bincount(stats.env_indices), [4, 3])
    # Each game ends at the agent step of the step where that env's reset flag is set.
    t, i = np.nonzero(resets)
    expected = sorted(zip(((t + 1) * 2).tolist(), i.tolist(), strict=True))
    assert sorted(zip(stats.steps.tolist(), stats.env_indices.tolist(), strict=True)) == expected
