"""Reference A2C: the solution of every graded part of the course notebook, in one module.

ONE SOURCE OF TRUTH. Each graded part sits between the lines ``# %% [part: <key>]`` and
``# %% [end part: <key>]``; the notebook builder copies each region verbatim into the solution
cell whose ``grade_id`` is ``<key>``, and nbgrader replaces every ``### BEGIN SOLUTION`` ...
``### END SOLUTION`` span with a stub in the student release. So a region holds exactly what a
student sees (signatures, docstrings, the maths) plus the solution, and uses only the names
imported in the ``imports`` region and the names defined in earlier regions.

The pieces, in the order a trajectory flows through them (design.md sections 4 and 5)::

    obs uint8 (N, 4, 84, 84) --make_model--> logits (N, A), values (N,)
    Policy.act(obs)           -> actions, logits, log_probs, values   (one runner step)
    ComputeValueTargets / ComputeGAE (T steps of N envs) -> value_targets (T, N) [advantages (T, N)]
    MergeTimeBatch            -> every per-step list becomes one (T*N, ...) batch, time-major
    A2C.step                  -> one optimizer step, returns the loss terms as floats
"""

# ruff: noqa: E266
# (E266: the nbgrader markers ``### BEGIN SOLUTION`` start with three hashes on purpose.)

# %% [part: imports]
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# %% [end part: imports]
__all__ = [
    "A2C",
    "ComputeGAE",
    "ComputeValueTargets",
    "MergeTimeBatch",
    "Policy",
    "make_model",
]


# %% [part: model]
def make_model(n_actions):
    """Part 1: the actor-critic network, a Nature-DQN conv trunk shared by two linear heads.

    Args:
        n_actions: A, the number of discrete actions (``env.single_action_space.n``).

    Returns:
        an ``nn.Module`` whose ``forward(obs)`` maps ``obs`` uint8 or float ``(N, 4, 84, 84)``
        with values in [0, 255] to ``(logits (N, A), values (N,))``.
    """

    ### BEGIN SOLUTION
    class ActorCritic(nn.Module):
        def __init__(self, n_actions):
            super().__init__()
            self.trunk = nn.Sequential(
                nn.Conv2d(4, 32, kernel_size=8, stride=4),
                nn.ReLU(),
                nn.Conv2d(32, 64, kernel_size=4, stride=2),
                nn.ReLU(),
                nn.Conv2d(64, 64, kernel_size=3, stride=1),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(64 * 7 * 7, 512),
                nn.ReLU(),
            )
            self.policy_head = nn.Linear(512, n_actions)
            self.value_head = nn.Linear(512, 1)
            for module in self.trunk:
                if isinstance(module, (nn.Conv2d, nn.Linear)):
                    nn.init.orthogonal_(module.weight, gain=np.sqrt(2))
                    nn.init.zeros_(module.bias)
            nn.init.orthogonal_(self.policy_head.weight, gain=0.01)
            nn.init.zeros_(self.policy_head.bias)
            nn.init.orthogonal_(self.value_head.weight, gain=1.0)
            nn.init.zeros_(self.value_head.bias)

        def forward(self, obs):
            features = self.trunk(obs.float() / 255.0)  # (N, 512)
            logits = self.policy_head(features)  # (N, A)
            values = self.value_head(features).squeeze(-1)  # (N,)
            return logits, values

    return ActorCritic(n_actions)
    ### END SOLUTION


# %% [end part: model]


# %% [part: policy]
class Policy:
    """Part 2: the agent the runner plays with, ``Policy(model).act(inputs) -> dict``.

    ``act(inputs)``: ``inputs`` numpy uint8 ``(N, 4, 84, 84)``; returns ``"actions"`` int64
    ``(N,)`` (numpy, or an integer torch tensor), ``"logits"`` torch ``(N, A)``, ``"log_probs"``
    torch ``(N,)`` and ``"values"`` torch ``(N,)``, the last three with their autograd graph.
    """

    def __init__(self, model):
        self.model = model

    def act(self, inputs):
        ### BEGIN SOLUTION
        device = next(self.model.parameters()).device
        obs = torch.tensor(np.asarray(inputs), device=device)  # (N, 4, 84, 84) uint8
        logits, values = self.model(obs)  # (N, A), (N,)
        all_log_probs = F.log_softmax(logits, dim=-1)  # (N, A)
        with torch.no_grad():
            actions = torch.multinomial(all_log_probs.exp(), num_samples=1)  # (N, 1)
        log_probs = all_log_probs.gather(1, actions).squeeze(1)  # (N,)
        return {
            "actions": actions.squeeze(1).cpu().numpy(),  # (N,) int64
            "logits": logits,
            "log_probs": log_probs,
            "values": values,
        }
        ### END SOLUTION


# %% [end part: policy]


# %% [part: compute_value_targets]
class ComputeValueTargets:
    """Part 3: ``ComputeValueTargets(policy, gamma=0.99)(trajectory)`` adds the n-step targets.

    Reads ``trajectory["rewards"]`` (list of T float32 ``(N,)``), ``trajectory["resets"]`` (list
    of T bool ``(N,)``) and ``trajectory["state"]["latest_observation"]`` (uint8
    ``(N, 4, 84, 84)``), and leaves them as they are. Adds, in place,
    ``trajectory["value_targets"]``: one ``(T, N)`` float tensor or a list of T ``(N,)``
    tensors, on the model's device, without autograd graph.
    """

    def __init__(self, policy, gamma=0.99):
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma!r}; the course uses 0.99.")
        self.policy = policy
        self.gamma = gamma

    def __call__(self, trajectory):
        ### BEGIN SOLUTION
        model = self.policy.model
        device = next(model.parameters()).device
        latest = np.asarray(trajectory["state"]["latest_observation"])
        with torch.no_grad():
            _, next_values = model(torch.as_tensor(latest, device=device))  # (N,)
        rewards = torch.as_tensor(np.stack(trajectory["rewards"]), device=device)  # (T, N)
        resets = torch.as_tensor(np.stack(trajectory["resets"]), device=device)  # (T, N) bool
        not_done = 1.0 - resets.to(rewards.dtype)  # (T, N)
        value_targets = torch.empty_like(rewards)  # (T, N)
        for t in reversed(range(rewards.shape[0])):
            next_values = rewards[t] + self.gamma * not_done[t] * next_values
            value_targets[t] = next_values
        trajectory["value_targets"] = value_targets
        ### END SOLUTION


# %% [end part: compute_value_targets]


# %% [part: merge_time_batch]
class MergeTimeBatch:
    """Part 4: ``MergeTimeBatch()(trajectory)`` merges the time and env axes, in place.

    Every per-step list (T arrays or tensors of ``(N, ...)``), and ``value_targets`` or
    ``advantages`` given as one ``(T, N)`` tensor, becomes one ``(T*N, ...)`` array or tensor
    with row ``t * N + i`` = step t, env i. numpy stays numpy (dtype kept), torch stays torch
    (graph kept); ``trajectory["state"]`` is left as it is.
    """

    def __call__(self, trajectory):
        ### BEGIN SOLUTION
        n_steps = len(trajectory["actions"])  # T
        n_envs = len(trajectory["actions"][0])  # N
        for key, value in trajectory.items():
            if key == "state":
                continue
            if isinstance(value, (list, tuple)):
                stack = torch.stack if isinstance(value[0], torch.Tensor) else np.stack
                value = stack(value)  # (T, N, ...)
            if value.ndim >= 2 and tuple(value.shape[:2]) == (n_steps, n_envs):
                trajectory[key] = value.reshape(n_steps * n_envs, *value.shape[2:])
        ### END SOLUTION


# %% [end part: merge_time_batch]


# %% [part: a2c]
class A2C:
    """Part 5: ``A2C(policy, optimizer, value_loss_coef, entropy_coef, max_grad_norm)``.

    ``step(trajectory)`` takes a merged trajectory of B = T*N rows (``log_probs``, ``values``,
    ``value_targets`` ``(B,)``, ``logits`` ``(B, A)``, and ``advantages`` ``(B,)`` when part 6
    added them), makes one optimizer step on the A2C loss and returns a dict of Python floats:
    ``loss``, ``policy_loss``, ``value_loss``, ``entropy`` and ``grad_norm`` (before clipping).
    """

    def __init__(
        self, policy, optimizer, value_loss_coef=0.25, entropy_coef=0.01, max_grad_norm=0.5
    ):
        if value_loss_coef < 0 or entropy_coef < 0 or not max_grad_norm > 0:
            raise ValueError(
                "A2C needs value_loss_coef >= 0, entropy_coef >= 0 and max_grad_norm > 0, got "
                f"{value_loss_coef!r}, {entropy_coef!r}, {max_grad_norm!r} (course: 0.25, 0.01, 0.5)."
            )
        self.policy = policy
        self.optimizer = optimizer
        self.value_loss_coef = value_loss_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm

    def step(self, trajectory):
        """One clipped gradient step on the A2C loss; returns a dict of floats (see above)."""
        ### BEGIN SOLUTION
        # The loss terms are computed by the helper method `loss` below (the students' release
        # has `step` only: this whole span, `loss` included, becomes its stub).
        terms = self.loss(trajectory)
        self.optimizer.zero_grad(set_to_none=True)
        terms["loss"].backward()
        grad_norm = nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.max_grad_norm)
        stats = {key: value.item() for key, value in terms.items()}
        stats["grad_norm"] = grad_norm.item()  # the norm before clipping
        self.optimizer.step()
        return stats

    def loss(self, trajectory):
        """The loss terms as tensors: loss, policy_loss, value_loss, entropy."""
        logits, log_probs, values = (trajectory[k] for k in ("logits", "log_probs", "values"))
        value_targets = torch.as_tensor(trajectory["value_targets"], device=values.device)  # (B,)
        value_targets = value_targets.detach()
        if "advantages" in trajectory:
            advantages = torch.as_tensor(trajectory["advantages"], device=values.device)
        else:
            advantages = value_targets - values  # (B,)
        advantages = advantages.detach()
        policy_loss = -(log_probs * advantages).mean()
        value_loss = (value_targets - values).pow(2).mean()
        log_pi = F.log_softmax(logits, dim=-1)  # (B, A)
        entropy = -(log_pi.exp() * log_pi).sum(dim=-1).mean()
        loss = policy_loss + self.value_loss_coef * value_loss - self.entropy_coef * entropy
        return {
            "loss": loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
        }
        ### END SOLUTION


# %% [end part: a2c]


# %% [part: gae]
class ComputeGAE:
    """Part 6 (bonus): ``ComputeGAE(policy, gamma=0.99, lambda_=0.95)(trajectory)``.

    Reads what part 3 reads, plus ``trajectory["values"]`` (list of T torch ``(N,)``). Adds, in
    place, ``advantages`` and ``value_targets``: each a ``(T, N)`` tensor on the model's device,
    without autograd graph.
    """

    def __init__(self, policy, gamma=0.99, lambda_=0.95):
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma!r}; the course uses 0.99.")
        if not 0.0 <= lambda_ <= 1.0:
            raise ValueError(f"lambda_ must be in [0, 1], got {lambda_!r}; a common value is 0.95.")
        self.policy = policy
        self.gamma = gamma
        self.lambda_ = lambda_

    def __call__(self, trajectory):
        ### BEGIN SOLUTION
        model = self.policy.model
        device = next(model.parameters()).device
        latest = np.asarray(trajectory["state"]["latest_observation"])
        with torch.no_grad():
            _, next_values = model(torch.as_tensor(latest, device=device))  # (N,)
            values = torch.stack([v.detach() for v in trajectory["values"]]).to(device)  # (T, N)
        rewards = torch.as_tensor(np.stack(trajectory["rewards"]), device=device)  # (T, N)
        resets = torch.as_tensor(np.stack(trajectory["resets"]), device=device)  # (T, N)
        not_done = 1.0 - resets.to(rewards.dtype)  # (T, N)
        advantages = torch.empty_like(rewards)  # (T, N)
        next_advantage = torch.zeros_like(next_values)  # A_T = 0, (N,)
        for t in reversed(range(rewards.shape[0])):
            delta = rewards[t] + self.gamma * not_done[t] * next_values - values[t]
            next_advantage = delta + self.gamma * self.lambda_ * not_done[t] * next_advantage
            advantages[t] = next_advantage
            next_values = values[t]
        trajectory["advantages"] = advantages
        trajectory["value_targets"] = advantages + values
        ### END SOLUTION


# %% [end part: gae]
