"""The visible checks of ``course_lib.checks``: do they pass on correct code and name typical bugs?

Each buggy variant below changes one thing of the reference, the way students do, and the test
asks whether the check fails with a message that points at that mistake.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib import checks
from course_lib.checks import CheckFailed
from course_lib.checks._a2c import A2C_EXPECTED
from solutions import reference as ref
from tests.buggy_parts import PolicyCategorical


def expect_failure(check, *args, match: str) -> str:
    with pytest.raises(CheckFailed, match=match) as info:
        check(*args)
    return str(info.value)


# ------------------------------------------------------------------ the reference passes
def test_every_check_passes_on_the_reference(capsys):
    """Does every check accept the reference and print OK lines?"""
    checks.check_model(ref.make_model)
    checks.check_policy(ref.Policy, ref.make_model)
    checks.check_compute_value_targets(ref.ComputeValueTargets)
    checks.check_merge_time_batch(ref.MergeTimeBatch)
    checks.check_a2c(ref.A2C, ref.Policy, ref.make_model)
    checks.check_gae(ref.ComputeGAE)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 11 and all(line.startswith("OK ") for line in lines)


class NumpyListTargets:
    """Correct but different: numpy, a list of T tensors, the bootstrap value through policy.act."""

    def __init__(self, policy, gamma=0.99):
        self.policy, self.gamma = policy, gamma

    def __call__(self, trajectory):
        with torch.no_grad():
            v = self.policy.act(trajectory["state"]["latest_observation"])["values"].numpy()
        out = []
        for r, d in zip(
            reversed(trajectory["rewards"]), reversed(trajectory["resets"]), strict=True
        ):
            v = r + self.gamma * (1.0 - d.astype(np.float32)) * v
            out.append(torch.as_tensor(v))
        trajectory["value_targets"] = out[::-1]


def test_correct_but_different_code_passes():
    """Are a numpy list of targets, Categorical sampling and integer tensor actions accepted?

    (The runner converts integer tensor actions, so the visible and hidden checks accept them.)"""
    checks.check_compute_value_targets(NumpyListTargets)
    # A policy sampling with torch.distributions.Categorical (the reference samples with
    # torch.multinomial).
    checks.check_policy(PolicyCategorical, ref.make_model)
    checks.check_policy(TensorActionsPolicy, ref.make_model)


def test_an_exception_in_student_code_names_the_part_and_the_line():
    """Is a crash inside the student's code reported as that part's failure, with its line?"""

    class Crashing(ref.MergeTimeBatch):
        def __call__(self, trajectory):
            raise KeyError("observation")  # the student's bug

    message = expect_failure(checks.check_merge_time_batch, Crashing, match=r"\[MergeTimeBatch\]")
    assert "KeyError" in message and "raise KeyError" in message and "line" in message


# ------------------------------------------------------------------ model
def test_model_values_with_a_trailing_axis_are_named():
    """Does a (N, 1) value head get the squeeze hint?"""

    def make_model(n_actions):
        model = ref.make_model(n_actions)
        forward = model.forward
        model.forward = lambda obs: (forward(obs)[0], forward(obs)[1][:, None])
        return model

    message = expect_failure(checks.check_model, make_model, match="values should have shape")
    assert "output axis of size 1 must go" in message and "(2, 1)" in message


def test_model_that_rejects_uint8_is_told_to_convert():
    """Does a model without .float() get the conversion hint?"""

    class NoConversion(torch.nn.Module):
        def __init__(self, n_actions):
            super().__init__()
            self.inner = ref.make_model(n_actions)

        def forward(self, obs):
            return self.inner.policy_head(self.inner.trunk(obs)), self.inner.value_head(
                self.inner.trunk(obs)
            )

    expect_failure(checks.check_model, NoConversion, match=r"Conv2d refuses uint8")


# ------------------------------------------------------------------ policy
class GreedyPolicy(ref.Policy):
    def act(self, inputs):
        out = super().act(inputs)
        out["actions"] = out["logits"].argmax(-1).numpy()
        return out


class NoGradPolicy(ref.Policy):
    def act(self, inputs):
        with torch.no_grad():
            return super().act(inputs)


class SoftmaxOverBatchPolicy(ref.Policy):
    """The softmax taken over dim 0, the batch axis: every env draws from a flat distribution."""

    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(np.asarray(inputs)))
        probs = F.softmax(logits, dim=0)  # the bug: over the envs, not the actions
        actions = torch.multinomial(probs, 1).squeeze(1)
        log_probs = torch.log(probs.gather(1, actions[:, None]).squeeze(1))
        return {"actions": actions.numpy(), "logits": logits, "log_probs": log_probs,
                "values": values}  # fmt: skip


class TensorActionsPolicy(ref.Policy):
    def act(self, inputs):
        out = super().act(inputs)
        out["actions"] = torch.as_tensor(out["actions"])
        return out


@pytest.mark.parametrize(
    ("policy", "match"),
    [
        (GreedyPolicy, r"instead of taking the most likely one \(the argmax\)"),
        (NoGradPolicy, "keep its autograd graph"),
        (SoftmaxOverBatchPolicy, "taken over the actions \\(the last axis\\)"),
    ],
)
def test_policy_bugs_are_named(policy, match):
    """Do greedy actions, a lost graph and a softmax over the batch axis each get their own
    message (the axis named, not a line of code)?"""
    expect_failure(checks.check_policy, policy, ref.make_model, match=match)


# ------------------------------------------------------------------ value targets
def _targets(bootstrap_obs, mask=True, keep_graph=False):
    class Buggy(ref.ComputeValueTargets):
        def __call__(self, trajectory):
            obs = bootstrap_obs(trajectory)
            with torch.set_grad_enabled(keep_graph):
                v = self.policy.model(torch.as_tensor(obs))[1]
            out = []
            for r, d in zip(
                reversed(trajectory["rewards"]), reversed(trajectory["resets"]), strict=True
            ):
                not_done = 1.0 - torch.as_tensor(d, dtype=torch.float32) if mask else 1.0
                v = torch.as_tensor(r) + self.gamma * not_done * v
                out.append(v)
            trajectory["value_targets"] = out[::-1]

    return Buggy


def latest(trajectory):
    return trajectory["state"]["latest_observation"]


@pytest.mark.parametrize(
    ("buggy", "match"),
    [
        (_targets(latest, mask=False), r"forget \(1 - reset_t\)"),
        (_targets(lambda tr: tr["observations"][-1]), "bootstrapped from observations"),
        (_targets(latest, keep_graph=True), "autograd graph"),
    ],
)
def test_value_target_bugs_are_named(buggy, match):
    """Do a missing reset mask, the wrong bootstrap obs and a kept graph get their hints?"""
    message = expect_failure(checks.check_compute_value_targets, buggy, match=match)
    assert "expected" in message or "graph" in message


def test_value_targets_show_expected_and_actual_values():
    """Does the message print both tables so the student can compare them?"""
    message = expect_failure(
        checks.check_compute_value_targets, _targets(latest, mask=False), match="wrong targets"
    )
    assert "[[1.75, 0.5], [1.5, 1.0], [3.0, 5.0]]" in message  # expected
    assert "[[1.75, 1.75], [1.5, 3.5], [3.0, 5.0]]" in message  # actual


# ------------------------------------------------------------------ merge
class EnvMajorMerge:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
            value = stack(list(value)).swapaxes(0, 1)  # (N, T, ...): the bug
            trajectory[key] = value.reshape(-1, *value.shape[2:])


class NumpyEverything(ref.MergeTimeBatch):
    def __call__(self, trajectory):
        super().__call__(trajectory)
        trajectory["values"] = trajectory["values"].detach().numpy()


def test_merge_bugs_are_named():
    """Are env-major rows and tensors turned into arrays each reported?"""
    expect_failure(checks.check_merge_time_batch, EnvMajorMerge, match="env-major")
    expect_failure(checks.check_merge_time_batch, NumpyEverything, match="should be one torch tensor")


# ------------------------------------------------------------------ a2c
class NoDetach(ref.A2C):
    def loss(self, trajectory):
        terms = super().loss(trajectory)
        advantages = trajectory["value_targets"] - trajectory["values"]  # not detached: the bug
        policy_loss = -(trajectory["log_probs"] * advantages).mean()
        terms["loss"] = terms["loss"] - terms["policy_loss"] + policy_loss
        return terms


class EntropyPlus(ref.A2C):
    def loss(self, trajectory):
        terms = super().loss(trajectory)
        terms["loss"] = terms["loss"] + 2 * self.entropy_coef * terms["entropy"]
        return terms


class NoClip(ref.A2C):
    def step(self, trajectory):
        terms = self.loss(trajectory)
        self.optimizer.zero_grad()
        terms["loss"].backward()
        norm = torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), float("inf"))
        self.optimizer.step()
        return {k: terms[k].item() for k in ("loss", "policy_loss", "value_loss", "entropy")} | {
            "grad_norm": float(norm)
        }


class NoZeroGrad(NoClip):
    def step(self, trajectory):
        self.optimizer.zero_grad = lambda *a, **k: None
        return super().step(trajectory)


class ClippedNoZeroGrad(ref.A2C):
    """The reference's step without zero_grad: the stale gradient is clipped with the rest."""

    def step(self, trajectory):
        self.optimizer.zero_grad = lambda *a, **k: None
        return super().step(trajectory)


class TensorStats(ref.A2C):
    def step(self, trajectory):
        return {k: torch.tensor(v) for k, v in super().step(trajectory).items()}


@pytest.mark.parametrize(
    ("buggy", "match"),
    [
        (NoDetach, r"no gradient may flow through the advantages"),
        (EntropyPlus, "the entropy is a bonus"),
        (NoClip, "after backward"),
        (NoZeroGrad, "stale gradient of 5.0"),
        (ClippedNoZeroGrad, r"stale gradient of 5.0(.|\n)*piles up"),
        (TensorStats, r"return Python numbers"),
    ],
)
def test_a2c_bugs_are_named(buggy, match):
    """Do a missing detach, a wrong entropy sign, no clipping, no zero_grad and tensor stats fail clearly?"""
    expect_failure(checks.check_a2c, buggy, match=match)


# ------------------------------------------------------------------ gae
class NoLambdaGAE(ref.ComputeGAE):
    def __init__(self, policy, gamma=0.99, lambda_=0.95):
        super().__init__(policy, gamma=gamma, lambda_=1.0)


def test_gae_without_lambda_is_named():
    """Does a GAE that ignores lambda_ get the lambda hint?"""
    expect_failure(checks.check_gae, NoLambdaGAE, match="lambda_ is missing")


# ------------------------------------------------------------------ stubs
class Stub:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, trajectory):
        raise NotImplementedError()


def test_require_implemented_fails_only_on_stubs(capsys):
    """Does the graded-cell guard raise for a stub, and stay quiet for wrong-but-written code?"""
    with pytest.raises(NotImplementedError, match="still the stub"):
        checks.require_implemented(checks.check_compute_value_targets, Stub)
    checks.require_implemented(checks.check_compute_value_targets, _targets(latest, mask=False))
    checks.require_implemented(checks.check_compute_value_targets, ref.ComputeValueTargets)
    assert capsys.readouterr().out == ""


def test_log_softmax_helper_agrees_with_the_hand_numbers():
    """Are the hand-computed A2C numbers of course_lib/checks/_a2c.py right (a guard on the fixture itself)?"""
    logits = torch.zeros(4, 2)
    log_pi = F.log_softmax(logits, -1)[torch.arange(4), torch.tensor([0, 1, 1, 0])]
    adv = torch.tensor([2.0, 2.0, 0.0, 1.0]) - torch.tensor([1.0, 2.0, 0.5, 0.0])
    assert float(-(log_pi * adv).mean()) == pytest.approx(A2C_EXPECTED["policy_loss"])
    assert float(adv.pow(2).mean()) == pytest.approx(A2C_EXPECTED["value_loss"])


# ------------------------------------------------------------------ hints
def _hints_of_the_shared_helpers() -> list[str]:
    """Every hint the shared property helpers, the runner and the env batch give, each on the
    input that triggers it."""
    from course_lib.batches.base import check_discrete_actions
    from course_lib.checks.properties import (
        actions_problem,
        capture,
        log_probs_problem,
        output_pair_problem,
    )
    from course_lib.runners import _to_actions

    logits = np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])
    log_pi = F.log_softmax(torch.tensor(logits), -1).numpy()
    actions = np.array([2, 1])
    rows = np.arange(2)
    pair = (torch.zeros(2, 3), torch.zeros(2, 1))
    one = (torch.zeros(1, 3), torch.zeros(()))
    found = [
        output_pair_problem(capture(pair), 2, 3),
        output_pair_problem(capture(one), 1, 3),
        actions_problem(capture(np.array([0.5, 0.5])), 2, 3),
        actions_problem(capture(np.zeros((2, 1), np.int64)), 2, 3),
        log_probs_problem(np.exp(log_pi[rows, actions]), logits, actions),
        log_probs_problem(logits[rows, actions], logits, actions),
        log_probs_problem(log_pi[:, 0], logits, actions),
    ]
    for bad in (np.zeros((2, 1), np.int64), np.array([0.5, 0.5])):
        with pytest.raises((ValueError, TypeError)) as error:
            _to_actions(bad, 2)
        found.append(str(error.value))
    with pytest.raises(ValueError) as error:
        check_discrete_actions(np.array([0.2, 0.8]), 2, 0, 3)
    found.append(str(error.value))
    return found


def test_hints_name_the_idea_not_the_line():
    """Does every hint of the shared helpers say what is wrong and why, quoting no line of a
    working answer (no `.squeeze(-1)`, no `F.log_softmax(logits, dim=-1)`)?"""
    from tests.answer_lines import answer_lines_in

    hints = _hints_of_the_shared_helpers()
    assert all(hints), hints
    for hint in hints:
        assert answer_lines_in(hint) == [], hint
