"""A corpus of student answers for every graded part: realistic bugs and valid alternatives.

Each :class:`Entry` names the part, a scenario, the student's code (a class, or a
``make_model`` function) and what grading must say about it: the keys of the sub-checks that
must fail (an empty set: a valid alternative that gets full marks) and a piece of the feedback.
``tests/test_autograder_checks.py`` grades every entry with ``grade_part``; later, the same
entries can be pasted into a notebook and graded through nbgrader, with :meth:`Entry.source`
(the candidate's source, its bases from this file included, and the line that gives it the
notebook's name, e.g. ``Policy = PolicyGreedy``).

The code uses only the names of the notebook's imports cell (``np``, ``torch``, ``nn``, ``F``),
so it can run in a notebook as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from autograder.core.judging.parts import PART_NAMES, subchecks


@dataclass(frozen=True)
class Entry:
    """One student answer and the verdict grading must reach."""

    part: str
    scenario: str
    candidate: Any
    fails: frozenset[str] = field(default_factory=frozenset)  #: sub-check keys that must fail
    feedback: str = ""  #: a piece of text the feedback must contain
    seconds: float | None = None  #: a shorter time limit, for answers that never finish

    @property
    def id(self) -> str:
        return f"{self.part}-{self.scenario}"

    def source(self) -> str:
        """Notebook-ready code: the candidate, every helper of this file it uses, its alias."""
        from tests.submissions.course import corpus_source

        return corpus_source(self.candidate, PART_NAMES[self.part])


def _fails(*keys: str) -> frozenset[str]:
    return frozenset(keys)


def _ungated(part: str, *keys: str) -> frozenset[str]:
    """``keys`` and every gated sub-check of ``part``: the part's gate fails, so the property
    checks earn nothing either."""
    return frozenset(keys) | {check.key for check in subchecks(part) if check.gated}


# ----------------------------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------------------------


def make_model_nature_attributes(n_actions):
    """Valid: the Nature-DQN layers as separate attributes, PyTorch's default init, functional
    ReLUs, the value head registered first, ``view`` to flatten, input scaled by a product."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = nn.Linear(512, 1)
            self.conv1 = nn.Conv2d(4, 32, kernel_size=8, stride=4)
            self.conv2 = nn.Conv2d(32, 64, kernel_size=4, stride=2)
            self.conv3 = nn.Conv2d(64, 64, kernel_size=3, stride=1)
            self.hidden = nn.Linear(64 * 7 * 7, 512)
            self.actor = nn.Linear(512, n_actions)

        def forward(self, obs):
            x = obs.to(torch.float32) * (1.0 / 255.0)
            x = F.relu(self.conv3(F.relu(self.conv2(F.relu(self.conv1(x))))))
            h = F.relu(self.hidden(x.view(x.shape[0], -1)))
            return self.actor(h), self.critic(h).view(-1)

    return Net()


def make_model_sequential(n_actions):
    """Not the Nature-DQN network the notebook asks for: a smaller trunk (16 and 32 filters)."""

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(4, 16, 8, stride=4),
                nn.ReLU(),
                nn.Conv2d(16, 32, 4, stride=2),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(32 * 9 * 9, 256),
                nn.ReLU(),
            )
            self.pi = nn.Linear(256, n_actions)
            self.v = nn.Linear(256, 1)

        def forward(self, obs):
            h = self.body(obs.float() / 255.0)
            return self.pi(h), self.v(h)[:, 0]

    return Net()


class _NatureNet(nn.Module):
    """Shared by the buggy models below; each one changes ``forward`` only."""

    def __init__(self, n_actions):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(3136, 512),
            nn.ReLU(),
        )
        self.policy_head = nn.Linear(512, n_actions)
        self.value_head = nn.Linear(512, 1)


class _ValuesNotSqueezed(_NatureNet):
    def forward(self, obs):
        h = self.trunk(obs.float() / 255.0)
        return self.policy_head(h), self.value_head(h)  # (N, 1): bug


class _SqueezeAll(_NatureNet):
    def forward(self, obs):
        h = self.trunk(obs.float() / 255.0)
        return self.policy_head(h), self.value_head(h).squeeze()  # () when N == 1: bug


class _NotScaled(_NatureNet):
    def __init__(self, n_actions):
        super().__init__(n_actions)
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                nn.init.orthogonal_(module.weight, gain=np.sqrt(2))  # the heads too
                nn.init.zeros_(module.bias)

    def forward(self, obs):
        h = self.trunk(obs.float())  # bug: no / 255, so the logits are in the hundreds
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class _InPlaceScale(_NatureNet):
    def forward(self, obs):
        x = obs.float()
        x /= 255.0  # bug: changes a float input in place
        h = self.trunk(x)
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class _NoFloat(_NatureNet):
    def forward(self, obs):
        h = self.trunk(obs)  # bug: a uint8 input reaches the float conv weights
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class _LayersInList(nn.Module):
    """Bug: the convolutions live in a plain Python list, so the module does not register them."""

    def __init__(self, n_actions):
        super().__init__()
        self.convs = [
            nn.Conv2d(4, 32, 8, stride=4),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.Conv2d(64, 64, 3, stride=1),
        ]
        self.fc = nn.Linear(3136, 512)
        self.policy_head = nn.Linear(512, n_actions)
        self.value_head = nn.Linear(512, 1)

    def forward(self, obs):
        x = obs.float() / 255.0
        for conv in self.convs:
            x = F.relu(conv(x))
        h = F.relu(self.fc(x.flatten(1)))
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class _WeightAsPlainTensor(_NatureNet):
    """Bug: an extra input scale kept as a plain tensor attribute (requires_grad, not a
    Parameter): trained by nothing, left behind by .to() and missing from state_dict()."""

    def __init__(self, n_actions):
        super().__init__(n_actions)
        self.scale = torch.rand(4, 1, 1, requires_grad=True)

    def forward(self, obs):
        h = self.trunk(obs.float() / 255.0 * self.scale)
        return self.policy_head(h), self.value_head(h).squeeze(-1)


class _ValueRelu(_NatureNet):
    def forward(self, obs):
        h = self.trunk(obs.float() / 255.0)
        return self.policy_head(h), F.relu(self.value_head(h)).squeeze(-1)  # bug: V >= 0


class _ValueSoftplus(_NatureNet):
    def forward(self, obs):
        h = self.trunk(obs.float() / 255.0)
        return self.policy_head(h), F.softplus(self.value_head(h)).squeeze(-1)  # bug: V > 0


def make_model_layers_in_list(n_actions):
    return _LayersInList(n_actions)


def make_model_plain_tensor_weight(n_actions):
    return _WeightAsPlainTensor(n_actions)


def make_model_value_relu(n_actions):
    return _ValueRelu(n_actions)


def make_model_value_softplus(n_actions):
    return _ValueSoftplus(n_actions)


def make_model_values_n1(n_actions):
    return _ValuesNotSqueezed(n_actions)


def make_model_squeeze_all(n_actions):
    return _SqueezeAll(n_actions)


def make_model_not_scaled(n_actions):
    return _NotScaled(n_actions)


def make_model_in_place(n_actions):
    return _InPlaceScale(n_actions)


def make_model_no_float(n_actions):
    return _NoFloat(n_actions)


def make_model_stub(n_actions):
    raise NotImplementedError()


def make_model_loops(n_actions):
    layers = []
    while True:  # bug: the loop never ends
        layers.append(n_actions)


# ----------------------------------------------------------------------------------------------
# policy
# ----------------------------------------------------------------------------------------------


class PolicyCategorical:
    """Valid: torch.distributions.Categorical, input moved to the model's device."""

    def __init__(self, model):
        self.model = model

    def act(self, inputs):
        device = next(self.model.parameters()).device
        logits, values = self.model(torch.as_tensor(inputs, device=device))
        dist = torch.distributions.Categorical(logits=logits)
        actions = dist.sample()
        return {
            "actions": actions.cpu().numpy(),
            "logits": logits,
            "log_probs": dist.log_prob(actions),
            "values": values,
        }


class PolicyLogSoftmaxLogits(PolicyCategorical):
    """Valid: returns log_softmax(logits) as its logits (the same distribution)."""

    def act(self, inputs):
        out = super().act(inputs)
        out["logits"] = F.log_softmax(out["logits"], dim=-1)
        return out


class PolicyShiftedLogits(PolicyCategorical):
    """Valid: logits minus their row maximum (softmax ignores a constant per row)."""

    def act(self, inputs):
        out = super().act(inputs)
        out["logits"] = out["logits"] - out["logits"].max(dim=-1, keepdim=True).values
        return out


class PolicyTensorActions(PolicyCategorical):
    """Valid: actions returned as an int64 torch tensor (the runner converts it)."""

    def act(self, inputs):
        out = super().act(inputs)
        out["actions"] = torch.as_tensor(out["actions"])
        return out


class PolicyInt32TensorActions(PolicyCategorical):
    """Valid: actions as an int32 torch tensor."""

    def act(self, inputs):
        out = super().act(inputs)
        out["actions"] = torch.as_tensor(out["actions"]).to(torch.int32)
        return out


class PolicyInverseCdf:
    """Valid: hand-written sampling with numpy (inverse CDF) and torch gather."""

    def __init__(self, model):
        self.model = model

    def act(self, inputs):
        logits, values = self.model(torch.tensor(np.asarray(inputs)))
        log_pi = F.log_softmax(logits, dim=1)
        probs = log_pi.exp().detach().cpu().numpy().astype(np.float64)
        cdf = np.cumsum(probs, axis=1)
        u = np.random.rand(len(probs), 1) * cdf[:, -1:]
        actions = np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1).astype(np.int64)
        log_probs = log_pi[torch.arange(len(actions)), torch.as_tensor(actions)]
        return {"actions": actions, "logits": logits, "log_probs": log_probs, "values": values}


class PolicyGreedy(PolicyCategorical):
    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(inputs))
        actions = logits.argmax(dim=1)  # bug: greedy, never explores
        log_probs = F.log_softmax(logits, dim=1).gather(1, actions[:, None])[:, 0]
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }


class PolicyUniform(PolicyCategorical):
    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(inputs))
        actions = torch.randint(0, logits.shape[1], (len(logits),))  # bug: ignores the logits
        log_probs = F.log_softmax(logits, dim=1).gather(1, actions[:, None])[:, 0]
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }


class PolicyProbsNotLog(PolicyCategorical):
    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(inputs))
        probs = F.softmax(logits, dim=1)
        actions = torch.multinomial(probs, 1)[:, 0]
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": probs.gather(1, actions[:, None])[:, 0],  # bug: no log
            "values": values,
        }


class PolicyNoGrad(PolicyCategorical):
    def act(self, inputs):
        with torch.no_grad():  # bug: A2C cannot backpropagate through these
            return super().act(inputs)


class PolicySharedSample(PolicyCategorical):
    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(inputs))
        first = torch.distributions.Categorical(logits=logits[0]).sample()
        actions = first.repeat(len(logits))  # bug: one action for every env
        log_probs = F.log_softmax(logits, dim=1).gather(1, actions[:, None])[:, 0]
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }


class PolicySqueezeAll(PolicyCategorical):
    def act(self, inputs):
        logits, values = self.model(torch.as_tensor(inputs))
        actions = torch.multinomial(F.softmax(logits, dim=1), 1).squeeze()  # () when N == 1
        log_probs = F.log_softmax(logits, dim=1).gather(1, actions.reshape(-1, 1)).squeeze()
        return {
            "actions": actions.numpy(),
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }


class PolicyScalesInput(PolicyCategorical):
    def act(self, inputs):
        return super().act(np.asarray(inputs, dtype=np.float32) / 255.0)  # bug: model scales


class PolicyDetachedValues(PolicyCategorical):
    def act(self, inputs):
        out = super().act(inputs)
        out["values"] = out["values"].detach()  # bug: the critic never learns from the trajectory
        return out


class PolicyStub(PolicyCategorical):
    def act(self, inputs):
        raise NotImplementedError()


# ----------------------------------------------------------------------------------------------
# compute_value_targets
# ----------------------------------------------------------------------------------------------


class TargetsNumpy:
    """Valid: numpy loop, a list of T (N,) float32 tensors; bootstrap through policy.act."""

    def __init__(self, policy, gamma=0.99):
        self.policy = policy
        self.gamma = gamma

    def bootstrap(self, trajectory):
        with torch.no_grad():
            values = self.policy.act(trajectory["state"]["latest_observation"])["values"]
        return values.cpu().numpy().astype(np.float64)

    def not_done(self, trajectory):
        return [1.0 - np.asarray(d, dtype=np.float64) for d in trajectory["resets"]]

    def __call__(self, trajectory):
        rewards = [np.asarray(r, dtype=np.float64) for r in trajectory["rewards"]]
        not_done = self.not_done(trajectory)
        following = self.bootstrap(trajectory)
        targets = [None] * len(rewards)
        for t in reversed(range(len(rewards))):
            following = rewards[t] + self.gamma * not_done[t] * following
            targets[t] = torch.tensor(following, dtype=torch.float32)
        trajectory["value_targets"] = targets


class TargetsTensor:
    """Valid: one (T, N) tensor, bootstrap with policy.model under no_grad."""

    def __init__(self, policy, gamma=0.99):
        self.policy = policy
        self.gamma = gamma

    def __call__(self, trajectory):
        with torch.no_grad():
            latest = torch.as_tensor(trajectory["state"]["latest_observation"])
            following = self.policy.model(latest)[1]
        rewards = torch.as_tensor(np.array(trajectory["rewards"]))
        dones = torch.as_tensor(np.array(trajectory["resets"])).float()
        targets = torch.zeros_like(rewards)
        for t in range(len(rewards) - 1, -1, -1):
            following = rewards[t] + self.gamma * (1 - dones[t]) * following
            targets[t] = following
        trajectory["value_targets"] = targets


class TargetsIgnoreResets(TargetsNumpy):
    def not_done(self, trajectory):
        return [np.ones(len(d)) for d in trajectory["resets"]]  # bug


class TargetsNoBootstrap(TargetsNumpy):
    def bootstrap(self, trajectory):
        return np.zeros(len(trajectory["rewards"][0]))  # bug: v_T = 0


class TargetsLastObservation(TargetsNumpy):
    def bootstrap(self, trajectory):
        with torch.no_grad():  # bug: the obs the last action was taken in
            values = self.policy.act(trajectory["observations"][-1])["values"]
        return values.numpy().astype(np.float64)


class TargetsResetOffByOne(TargetsNumpy):
    def not_done(self, trajectory):
        shifted = list(trajectory["resets"][1:]) + [np.zeros_like(trajectory["resets"][0])]
        return [1.0 - np.asarray(d, dtype=np.float64) for d in shifted]  # bug: resets[t+1]


class TargetsForward(TargetsNumpy):
    def __call__(self, trajectory):
        rewards = [np.asarray(r, dtype=np.float64) for r in trajectory["rewards"]]
        not_done = self.not_done(trajectory)
        running = self.bootstrap(trajectory)
        targets = []
        for t in range(len(rewards)):  # bug: forward in time
            running = rewards[t] + self.gamma * not_done[t] * running
            targets.append(torch.tensor(running, dtype=torch.float32))
        trajectory["value_targets"] = targets


class TargetsNotReversed(TargetsNumpy):
    def __call__(self, trajectory):
        rewards = [np.asarray(r, dtype=np.float64) for r in trajectory["rewards"]]
        not_done = self.not_done(trajectory)
        following = self.bootstrap(trajectory)
        targets = []
        for t in reversed(range(len(rewards))):
            following = rewards[t] + self.gamma * not_done[t] * following
            targets.append(torch.tensor(following, dtype=torch.float32))
        trajectory["value_targets"] = targets  # bug: still in order T-1, ..., 0


class TargetsWithGraph(TargetsTensor):
    def __call__(self, trajectory):
        latest = torch.as_tensor(trajectory["state"]["latest_observation"])
        following = self.policy.model(latest)[1]  # bug: no torch.no_grad()
        targets = []
        for t in reversed(range(len(trajectory["rewards"]))):
            not_done = 1.0 - torch.as_tensor(trajectory["resets"][t]).float()
            reward = torch.as_tensor(trajectory["rewards"][t])
            following = reward + self.gamma * not_done * following
            targets.insert(0, following)
        trajectory["value_targets"] = targets


class TargetsFixedGamma(TargetsNumpy):
    def __init__(self, policy, gamma=0.99):
        super().__init__(policy, gamma)
        self.gamma = 0.99  # bug: ignores the argument


class TargetsInPlaceRewards(TargetsNumpy):
    def __call__(self, trajectory):
        rewards = trajectory["rewards"]
        not_done = self.not_done(trajectory)
        following = self.bootstrap(trajectory)
        for t in reversed(range(len(rewards))):
            rewards[t] += self.gamma * not_done[t] * following  # bug: overwrites the rewards
            following = rewards[t].astype(np.float64)
        trajectory["value_targets"] = [torch.tensor(r) for r in rewards]


class TargetsLoops(TargetsNumpy):
    def __call__(self, trajectory):
        t = len(trajectory["rewards"]) - 1
        while t >= 0:  # bug: t is never decremented
            trajectory["value_targets"] = t


class TargetsStub(TargetsNumpy):
    def __call__(self, trajectory):
        raise NotImplementedError()


# ----------------------------------------------------------------------------------------------
# merge_time_batch
# ----------------------------------------------------------------------------------------------


class MergeConcatenate:
    """Valid: torch.cat / np.concatenate over the per-step list, (T, N) tensors reshaped."""

    def __call__(self, trajectory):
        for key, value in trajectory.items():
            if key == "state":
                continue
            if isinstance(value, list):
                if isinstance(value[0], torch.Tensor):
                    trajectory[key] = torch.cat(list(value), dim=0)
                else:
                    trajectory[key] = np.concatenate(value, axis=0)
            elif value.ndim == 2:
                trajectory[key] = value.reshape(-1)


class MergeEnvMajor:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            if isinstance(value, list):
                stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
                value = stack(value)
            # bug: env-major rows (transpose before flattening)
            if isinstance(value, torch.Tensor):
                value = value.transpose(0, 1)
            else:
                value = value.swapaxes(0, 1)
            trajectory[key] = value.reshape(-1, *value.shape[2:])


class MergeInconsistent:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            if isinstance(value, list) and isinstance(value[0], torch.Tensor):
                trajectory[key] = torch.cat(value)  # time-major
            elif isinstance(value, list):
                stacked = np.stack(value, axis=1)  # bug: env-major for the arrays only
                trajectory[key] = stacked.reshape(-1, *stacked.shape[2:])
            else:
                trajectory[key] = value.reshape(-1)


class MergeThroughNumpy:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            if isinstance(value, list):
                value = np.stack([np.asarray(torch.as_tensor(v).detach()) for v in value])
            value = np.asarray(value)  # bug: tensors lose their graph (and become arrays)
            trajectory[key] = value.reshape(-1, *value.shape[2:])


class MergeToTensors:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if key == "state":
                continue
            if isinstance(value, list):
                value = torch.stack([torch.as_tensor(v) for v in value])  # bug: arrays -> tensors
            trajectory[key] = value.reshape(-1, *value.shape[2:])


class MergeListsOnly:
    def __call__(self, trajectory):
        for key, value in list(trajectory.items()):
            if isinstance(value, list):  # bug: a (T, N) value_targets tensor stays (T, N)
                stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
                value = stack(value)
                trajectory[key] = value.reshape(-1, *value.shape[2:])


class MergeReturnsNew:
    def __call__(self, trajectory):
        merged = {}
        for key, value in trajectory.items():
            if isinstance(value, list):
                stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
                value = stack(value)
                value = value.reshape(-1, *value.shape[2:])
            merged[key] = value
        return merged  # bug: the trajectory itself is not changed


# ----------------------------------------------------------------------------------------------
# a2c
# ----------------------------------------------------------------------------------------------


class A2CStored:
    """Valid: stored log-probs, Categorical entropy, clip over the optimizer's parameters."""

    def __init__(
        self, policy, optimizer, value_loss_coef=0.25, entropy_coef=0.01, max_grad_norm=0.5
    ):
        self.policy = policy
        self.optimizer = optimizer
        self.value_loss_coef = value_loss_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm

    def log_probs(self, trajectory):
        return trajectory["log_probs"]

    def losses(self, trajectory):
        values = trajectory["values"]
        targets = torch.as_tensor(trajectory["value_targets"]).to(values)
        advantages = (targets - values).detach()
        policy_loss = -(self.log_probs(trajectory) * advantages).mean()
        value_loss = ((targets - values) ** 2).mean()
        entropy = torch.distributions.Categorical(logits=trajectory["logits"]).entropy().mean()
        loss = policy_loss + self.value_loss_coef * value_loss - self.entropy_coef * entropy
        return loss, policy_loss, value_loss, entropy

    def clip(self):
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        return nn.utils.clip_grad_norm_(params, self.max_grad_norm)

    def step(self, trajectory):
        loss, policy_loss, value_loss, entropy = self.losses(trajectory)
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = self.clip()
        self.optimizer.step()
        return {
            "loss": loss.item(),
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
            "grad_norm": float(grad_norm),
        }


class A2CRecomputed(A2CStored):
    """Valid: recomputes the log-probs from the observations with policy.model."""

    def log_probs(self, trajectory):
        logits, _ = self.policy.model(torch.as_tensor(trajectory["observations"]))
        actions = torch.as_tensor(trajectory["actions"]).long()
        return F.log_softmax(logits, dim=-1).gather(1, actions[:, None]).squeeze(1)


class A2CUndetached(A2CStored):
    def losses(self, trajectory):
        values = trajectory["values"]
        targets = torch.as_tensor(trajectory["value_targets"])
        advantages = targets - values  # bug: no .detach()
        policy_loss = -(trajectory["log_probs"] * advantages).mean()
        value_loss = advantages.pow(2).mean()
        entropy = torch.distributions.Categorical(logits=trajectory["logits"]).entropy().mean()
        loss = policy_loss + self.value_loss_coef * value_loss - self.entropy_coef * entropy
        return loss, policy_loss, value_loss, entropy


class A2CPolicySign(A2CStored):
    def losses(self, trajectory):
        loss, policy_loss, value_loss, entropy = super().losses(trajectory)
        # bug: gradient ascent on -objective: the policy loss has the wrong sign
        return loss - 2 * policy_loss, -policy_loss, value_loss, entropy


class A2CEntropySign(A2CStored):
    def losses(self, trajectory):
        loss, policy_loss, value_loss, entropy = super().losses(trajectory)
        return loss + 2 * self.entropy_coef * entropy, policy_loss, value_loss, entropy  # bug


class A2CHalfValueLoss(A2CStored):
    def losses(self, trajectory):
        loss, policy_loss, value_loss, entropy = super().losses(trajectory)
        half = 0.5 * value_loss  # bug: an extra factor 1/2
        return loss - self.value_loss_coef * half, policy_loss, half, entropy


class A2CNoClip(A2CStored):
    def clip(self):
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        return torch.norm(torch.stack([p.grad.norm() for p in params]))  # bug: never clips


class A2CNormAfterClip(A2CStored):
    def clip(self):
        super().clip()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        return torch.norm(torch.stack([p.grad.norm() for p in params]))  # bug: after clipping


class A2CNoZeroGrad(A2CStored):
    def step(self, trajectory):
        loss, policy_loss, value_loss, entropy = self.losses(trajectory)
        loss.backward()  # bug: gradients of the previous step are still there
        grad_norm = self.clip()
        self.optimizer.step()
        return {
            "loss": loss.item(),
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
            "grad_norm": float(grad_norm),
        }


class A2CZeroGradLate(A2CStored):
    def step(self, trajectory):
        loss, policy_loss, value_loss, entropy = self.losses(trajectory)
        loss.backward()
        grad_norm = self.clip()
        self.optimizer.zero_grad()  # bug: wipes the gradient before the step
        self.optimizer.step()
        return {
            "loss": loss.item(),
            "policy_loss": policy_loss.item(),
            "value_loss": value_loss.item(),
            "entropy": entropy.item(),
            "grad_norm": float(grad_norm),
        }


class A2CFixedCoefs(A2CStored):
    def __init__(
        self, policy, optimizer, value_loss_coef=0.25, entropy_coef=0.01, max_grad_norm=0.5
    ):
        super().__init__(policy, optimizer, 0.25, 0.01, max_grad_norm)  # bug: ignores them


class A2CTensorStats(A2CStored):
    def step(self, trajectory):
        stats = super().step(trajectory)
        return {key: torch.tensor(value) for key, value in stats.items()}  # bug: not floats


class A2CStub(A2CStored):
    def step(self, trajectory):
        raise NotImplementedError()


# ----------------------------------------------------------------------------------------------
# gae
# ----------------------------------------------------------------------------------------------


class GAENumpy:
    """Valid: numpy loop, lists of T (N,) tensors, values recomputed with policy.model."""

    def __init__(self, policy, gamma=0.99, lambda_=0.95):
        self.policy = policy
        self.gamma = gamma
        self.lambda_ = lambda_

    def trace(self, not_done):
        return self.gamma * self.lambda_ * not_done

    def __call__(self, trajectory):
        with torch.no_grad():
            values = [
                self.policy.model(torch.as_tensor(obs))[1].numpy().astype(np.float64)
                for obs in trajectory["observations"]
            ]
            latest = torch.as_tensor(trajectory["state"]["latest_observation"])
            next_value = self.policy.model(latest)[1].numpy().astype(np.float64)
        T = len(values)
        advantages = [None] * T
        next_advantage = np.zeros_like(next_value)
        for t in reversed(range(T)):
            not_done = 1.0 - np.asarray(trajectory["resets"][t], dtype=np.float64)
            reward = np.asarray(trajectory["rewards"][t], dtype=np.float64)
            delta = reward + self.gamma * not_done * next_value - values[t]
            next_advantage = delta + self.trace(not_done) * next_advantage
            advantages[t] = next_advantage
            next_value = values[t]
        trajectory["advantages"] = [torch.tensor(a, dtype=torch.float32) for a in advantages]
        trajectory["value_targets"] = [
            torch.tensor(a + v, dtype=torch.float32)
            for a, v in zip(advantages, values, strict=True)
        ]


class GAENoLambda(GAENumpy):
    def trace(self, not_done):
        return self.gamma * not_done  # bug: lambda_ forgotten


class GAETraceIgnoresResets(GAENumpy):
    def trace(self, not_done):
        return self.gamma * self.lambda_ * np.ones_like(not_done)  # bug: A_{t+1} leaks across


class GAETargetsAreAdvantages(GAENumpy):
    def __call__(self, trajectory):
        super().__call__(trajectory)
        trajectory["value_targets"] = trajectory["advantages"]  # bug: + values forgotten


class GAEWithGraph(GAENumpy):
    def __call__(self, trajectory):
        super().__call__(trajectory)
        values = trajectory["values"]  # bug: adds the values with their graph
        trajectory["value_targets"] = [
            a + v for a, v in zip(trajectory["advantages"], values, strict=True)
        ]


# ----------------------------------------------------------------------------------------------
# the corpus
# ----------------------------------------------------------------------------------------------

_MODEL_BROKEN = (
    "uint8",
    "float",
    "batch_of_one",
    "n_actions",
    "gradients",
    "not_saturated",
    "registered",
)
_ALL = {
    "model": ("module", "size", "negative_values", *_MODEL_BROKEN),
    "policy": ("types", "outputs", "log_probs", "graph", "sampling", "independent", "batch_of_one"),
    "compute_value_targets": (
        "discounted_sum",
        "resets",
        "bootstrap",
        "together",
        "gamma",
        "no_graph",
        "inputs_unchanged",
    ),
    "a2c": (
        "stats",
        "policy_loss",
        "value_loss",
        "entropy",
        "loss",
        "grad_norm",
        "sgd_step",
        "detached",
        "coefficients",
        "optimizer",
        "clipping",
        "zero_grad",
    ),
}
_TARGETS_WRONG = ("together", "gamma")

CORPUS = (
    # model
    Entry("model", "valid_nature_attributes", make_model_nature_attributes),
    Entry("model", "not_nature_dqn", make_model_sequential, _fails(*_ALL["model"]), "Nature-DQN"),
    Entry(
        "model",
        "values_n_by_1",
        make_model_values_n1,
        _fails(*_ALL["model"]),
        "output axis of size 1 must go",
    ),
    Entry(
        "model",
        "squeeze_all",
        make_model_squeeze_all,
        _fails("batch_of_one"),
        "also removed the batch axis",
    ),
    Entry(
        "model",
        "not_scaled",
        make_model_not_scaled,
        _fails(*_ALL["model"]),
        "divides its input by 255",
    ),
    Entry("model", "in_place_scale", make_model_in_place, _fails("float"), "in place"),
    Entry("model", "no_float", make_model_no_float, _fails(*_ALL["model"]), "raised"),
    Entry("model", "stub", make_model_stub, _fails(*_ALL["model"]), "not implemented yet"),
    Entry("model", "loops", make_model_loops, _fails(*_ALL["model"]), "did not finish", 0.5),
    Entry(
        "model",
        "layers_in_list",
        make_model_layers_in_list,
        _fails("registered", "size"),
        "not among the module's parameters",
    ),
    Entry(
        "model",
        "plain_tensor_weight",
        make_model_plain_tensor_weight,
        _fails(*_ALL["model"]),
        "not among the module's parameters",
    ),
    # A ReLU on the value: the gate fails (the test weights are also loaded with the value head
    # negated, so some values are negative), so no property earns; only the batch of one passes
    # on this seed, whose one frame gets a positive value.
    Entry(
        "model",
        "value_relu",
        make_model_value_relu,
        _fails(*(k for k in _ALL["model"] if k != "batch_of_one")),
        "passed through a ReLU",
    ),
    Entry("model", "value_softplus", make_model_value_softplus, _fails(*_ALL["model"]), "softplus"),
    # policy (the first entries of a part are also graded through the sandbox)
    Entry("policy", "valid_categorical", PolicyCategorical),
    Entry(
        "policy",
        "detached_values",
        PolicyDetachedValues,
        _fails("graph"),
        "the critic learns from them",
    ),
    Entry("policy", "valid_log_softmax_logits", PolicyLogSoftmaxLogits),
    Entry("policy", "valid_shifted_logits", PolicyShiftedLogits),
    Entry("policy", "valid_tensor_actions", PolicyTensorActions),
    Entry("policy", "valid_int32_tensor_actions", PolicyInt32TensorActions),
    Entry("policy", "valid_inverse_cdf", PolicyInverseCdf),
    Entry(
        "policy", "greedy", PolicyGreedy, _ungated("policy", "sampling", "independent"), "argmax"
    ),
    Entry(
        "policy",
        "uniform",
        PolicyUniform,
        _ungated("policy", "sampling", "independent"),
        "chi-square",
    ),
    Entry(
        "policy",
        "probs_not_log",
        PolicyProbsNotLog,
        _ungated("policy", "log_probs"),
        "You returned probabilities",
    ),
    Entry("policy", "no_grad", PolicyNoGrad, _ungated("policy", "log_probs"), "no autograd graph"),
    Entry(
        "policy",
        "one_sample_for_all",
        PolicySharedSample,
        _ungated("policy", "sampling", "independent"),
        "one independent action per env",
    ),
    Entry("policy", "squeeze_all", PolicySqueezeAll, _fails("batch_of_one"), "shape (N,)"),
    Entry(
        "policy",
        "scales_input",
        PolicyScalesInput,
        _ungated("policy", "outputs", "log_probs", "batch_of_one"),
        "scales them itself",
    ),
    Entry("policy", "stub", PolicyStub, _fails(*_ALL["policy"]), "NotImplementedError"),
    # compute_value_targets
    Entry("compute_value_targets", "valid_numpy_list", TargetsNumpy),
    Entry("compute_value_targets", "valid_tensor", TargetsTensor),
    Entry(
        "compute_value_targets",
        "ignores_resets",
        TargetsIgnoreResets,
        _fails("resets", *_TARGETS_WRONG),
        "ignore the resets",
    ),
    Entry(
        "compute_value_targets",
        "no_bootstrap",
        TargetsNoBootstrap,
        _fails("bootstrap", *_TARGETS_WRONG),
        "there is no bootstrap",
    ),
    Entry(
        "compute_value_targets",
        "bootstrap_from_last_observation",
        TargetsLastObservation,
        _fails("bootstrap", *_TARGETS_WRONG),
        "observations[-1]",
    ),
    Entry(
        "compute_value_targets",
        "reset_off_by_one",
        TargetsResetOffByOne,
        _fails("resets", *_TARGETS_WRONG),
        "off by one",
    ),
    Entry(
        "compute_value_targets",
        "forward_accumulation",
        TargetsForward,
        _ungated("compute_value_targets", "discounted_sum", "resets", "bootstrap", *_TARGETS_WRONG),
        "failing input: T=2, N=1",
    ),
    Entry(
        "compute_value_targets",
        "not_reversed",
        TargetsNotReversed,
        _ungated("compute_value_targets", "discounted_sum", "resets", "bootstrap", *_TARGETS_WRONG),
        "reverse time order",
    ),
    Entry(
        "compute_value_targets",
        "graph",
        TargetsWithGraph,
        _fails("no_graph"),
        "without recording a graph",
    ),
    Entry(
        "compute_value_targets",
        "fixed_gamma",
        TargetsFixedGamma,
        _fails("gamma"),
        "use the gamma passed to __init__",
    ),
    Entry(
        "compute_value_targets",
        "overwrites_rewards",
        TargetsInPlaceRewards,
        _fails("inputs_unchanged"),
        "['rewards']",
    ),
    Entry(
        "compute_value_targets",
        "loops",
        TargetsLoops,
        _fails(*_ALL["compute_value_targets"]),
        "not run",
        0.3,
    ),
    Entry(
        "compute_value_targets",
        "stub",
        TargetsStub,
        _fails(*_ALL["compute_value_targets"]),
        "not implemented yet",
    ),
    # merge_time_batch
    Entry("merge_time_batch", "valid_concatenate", MergeConcatenate),
    Entry(
        "merge_time_batch",
        "env_major",
        MergeEnvMajor,
        _ungated("merge_time_batch", "time_major", "tensor_targets"),
        "holds step t=1, env i=0",
    ),
    Entry(
        "merge_time_batch",
        "inconsistent_order",
        MergeInconsistent,
        _ungated("merge_time_batch", "time_major"),
        "row 1",
    ),
    Entry(
        "merge_time_batch",
        "through_numpy",
        MergeThroughNumpy,
        _fails("graph"),
        "keep torch tensors",
    ),
    Entry(
        "merge_time_batch", "arrays_to_tensors", MergeToTensors, _fails("arrays"), "stay a numpy"
    ),
    Entry(
        "merge_time_batch",
        "lists_only",
        MergeListsOnly,
        _fails("tensor_targets"),
        "value_targets",
    ),
    Entry(
        "merge_time_batch",
        "returns_new_dict",
        MergeReturnsNew,
        _fails("shapes", "time_major", "graph", "arrays", "tensor_targets", "state", "edges"),
        "returns a new dict",
    ),
    # a2c
    Entry("a2c", "valid_stored_log_probs", A2CStored),
    Entry("a2c", "valid_recomputed_log_probs", A2CRecomputed),
    Entry(
        "a2c",
        "undetached_advantages",
        A2CUndetached,
        _ungated("a2c", "sgd_step", "coefficients"),
        "Detach the advantages",
    ),
    Entry(
        "a2c",
        "policy_loss_sign",
        A2CPolicySign,
        _ungated("a2c", "policy_loss", "loss", "sgd_step", "coefficients"),
        "opposite sign",
    ),
    Entry(
        "a2c",
        "entropy_sign",
        A2CEntropySign,
        _ungated("a2c", "loss", "sgd_step", "coefficients"),
        "must be subtracted",
    ),
    Entry(
        "a2c",
        "half_value_loss",
        A2CHalfValueLoss,
        _ungated("a2c", "value_loss", "loss", "sgd_step", "coefficients"),
        "factor 1/2",
    ),
    Entry("a2c", "no_clipping", A2CNoClip, _fails("clipping"), "scaled down"),
    Entry("a2c", "norm_after_clipping", A2CNormAfterClip, _fails("grad_norm"), "after clipping"),
    Entry("a2c", "no_zero_grad", A2CNoZeroGrad, _fails("zero_grad"), "zero the gradients"),
    Entry(
        "a2c",
        "zero_grad_before_step",
        A2CZeroGradLate,
        _ungated("a2c", "sgd_step", "coefficients"),
        "did not change",
    ),
    Entry(
        "a2c",
        "ignores_coefficients",
        A2CFixedCoefs,
        _fails("loss", "detached", "coefficients"),
        "default coefficients",
    ),
    Entry("a2c", "tensor_stats", A2CTensorStats, _fails("stats"), "plain numbers"),
    Entry("a2c", "stub", A2CStub, _fails(*_ALL["a2c"]), "not implemented yet"),
    # gae
    Entry("gae", "valid_numpy", GAENumpy),
    Entry(
        "gae",
        "lambda_forgotten",
        GAENoLambda,
        _fails("lambda_zero", "no_resets", "resets"),
        "lambda_=0",
    ),
    Entry(
        "gae",
        "trace_ignores_resets",
        GAETraceIgnoresResets,
        _ungated("gae", "lambda_one", "resets"),
        "(1 - d_t)",
    ),
    Entry(
        "gae",
        "targets_are_advantages",
        GAETargetsAreAdvantages,
        _ungated("gae", "lambda_one", "lambda_zero", "no_resets", "resets"),
        "value_targets = advantages + values",
    ),
    Entry("gae", "graph", GAEWithGraph, _fails("no_graph"), "autograd graph"),
)

#: The reference implementations' names, for the full-marks test.
__all__ = ["CORPUS", "Entry", "PART_NAMES"]
