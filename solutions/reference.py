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
    """Build the Nature-DQN actor-critic network: a shared conv trunk and two heads.

    Architecture (shapes for a batch of N observations)::

        obs   (N, 4, 84, 84) uint8 or float in [0, 255]   -> scale by 1/255 inside forward
        conv 32 filters 8x8 stride 4 + ReLU   -> (N, 32, 20, 20)
        conv 64 filters 4x4 stride 2 + ReLU   -> (N, 64, 9, 9)
        conv 64 filters 3x3 stride 1 + ReLU   -> (N, 64, 7, 7)
        flatten                               -> (N, 3136)
        linear 3136 -> 512 + ReLU             -> (N, 512)       the shared features
        policy head: linear 512 -> n_actions  -> logits (N, A)  (no softmax: the loss wants logits)
        value head:  linear 512 -> 1          -> values (N, 1), squeezed to (N,)

    Initialisation: orthogonal weights (``nn.init.orthogonal_``) with gain sqrt(2) for the
    ReLU layers, 0.01 for the policy head (so the first policy is almost uniform) and 1 for the
    value head; all biases zero.

    Pitfalls: ``nn.Conv2d`` refuses uint8 tensors ("Input type (unsigned char) and bias type
    (float) should be the same"): the input must become float, scaled by 1/255 (inputs of order 1
    keep the first activations and gradients sane); return values of shape (N,), not (N, 1), or
    ``targets - values`` broadcasts to (N, N) without an error.

    Args:
        n_actions: number of discrete actions A (``env.single_action_space.n``).

    Returns:
        an ``nn.Module`` whose ``forward(obs)`` returns ``(logits (N, A), values (N,))``.
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
    """Turns the network into an agent the runner can call: ``act(observations) -> dict``.

    ``act`` receives the numpy observations of the N envs, ``uint8 (N, 4, 84, 84)``, and returns::

        "actions":   int64 (N,)      sampled from softmax(logits), one per env: a numpy array
                                     or an integer torch tensor (the runner converts it)
        "logits":    torch (N, A)    with autograd graph
        "log_probs": torch (N,)      log pi(a_i | s_i) of the sampled actions, with graph
        "values":    torch (N,)      V(s_i), with graph

    The tensors keep their autograd graph: A2C backpropagates through them after T steps.

    Pitfalls: the model's parameters may live on a GPU, the observations are numpy arrays on the
    CPU; ``log_softmax`` is numerically safer than ``log(softmax)``.
    """

    def __init__(self, model):
        self.model = model

    def act(self, inputs):
        ### BEGIN SOLUTION
        # (python -m solutions.train calls act under torch.no_grad() and A2C.loss recomputes the
        # graph in one batch; the notebook keeps the graph from here.)
        device = next(self.model.parameters()).device
        inputs = np.asarray(inputs)
        if not inputs.flags.writeable:  # torch warns on read-only arrays: copy those only
            inputs = inputs.copy()
        obs = torch.from_numpy(inputs).to(device)  # (N, 4, 84, 84) uint8, no copy on CPU
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
    """Adds ``trajectory["value_targets"]``: the n-step returns the critic regresses on.

    For a trajectory of T steps of N envs (rewards r_t and resets d_t, each (N,)), work
    backwards from a bootstrap value::

        v_T = V(latest_observation)                       (N,)  no gradient
        v_t = r_t + gamma * (1 - d_t) * v_{t+1}           (N,)  for t = T-1, ..., 0

    ``d_t = resets[t]`` is True when the episode of env i ended at step t: then the return of
    step t must not include anything after it, and ``(1 - d_t)`` cuts the sum there.

    The result is ``value_targets``: one ``(T, N)`` float tensor (or a list of T ``(N,)``
    tensors), on the model's device, **without autograd graph** (targets are constants; a graph
    here would let the value loss push the bootstrap value around).

    Pitfalls: ``resets`` are numpy bool arrays, and ``1 - d`` works on those (it gives int64),
    but a torch bool tensor refuses it ("Subtraction, the ``-`` operator, with a bool tensor is
    not supported"): convert bool tensors to float before ``1 - d``; bootstrap from the
    observation *after* the last step (``trajectory["state"]["latest_observation"]``), not from
    the last observation in ``trajectory["observations"]``.
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
    """Merges time and env axes, in place: every per-step list becomes one ``(T*N, ...)`` batch.

    The runner stores T steps as lists of per-step arrays: ``observations`` T x ``(N, 4, 84, 84)``,
    ``log_probs`` T x ``(N,)``, and so on. ``value_targets`` may be a list of T ``(N,)`` or one
    ``(T, N)`` tensor, and so may ``advantages`` (with the GAE bonus, part 6). After this
    transform each of them is a single array of B = T * N rows, numpy stays numpy and torch stays
    torch (with its graph), in **time-major** order::

        row t * N + i  =  step t, env i

    e.g. T = 3, N = 2, rewards ``[[1, 0], [0, 1], [2, 3]]`` (T arrays (N,)) -> ``[1, 0, 0, 1, 2, 3]``
    (env-major order would give ``[1, 0, 2, 0, 1, 3]``). Every key uses the same order, so that
    row b of ``log_probs`` meets row b of the targets. ``trajectory["state"]`` is left untouched.
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
    """One A2C update from a merged trajectory (``MergeTimeBatch`` already applied).

    With B = T * N rows, all ``(B,)`` except ``logits (B, A)``; pi = softmax(logits),
    log pi(a_t | s_t) = ``log_probs``, V(s_t) = ``values``, v_t = ``value_targets``::

        advantages   A_t = v_t - V(s_t)                   a constant weight: no gradient flows
                                                          through it into V
        policy_loss  = -mean_t( log pi(a_t | s_t) * A_t )
        value_loss   =  mean_t( (v_t - V(s_t)) ** 2 )
        entropy      =  mean_t( -sum_a pi(a | s_t) log pi(a | s_t) )
        loss         =  policy_loss + value_loss_coef * value_loss - entropy_coef * entropy

    If the trajectory holds ``advantages`` (from :class:`ComputeGAE`), they replace v_t - V(s_t).
    The rollout's ``log_probs``, ``values`` and ``logits`` carry their autograd graph.

    ``step(trajectory)`` makes one optimizer step on ``loss`` with fresh gradients whose global
    L2 norm (over all parameters) is clipped to ``max_grad_norm``, and returns a dict of Python
    floats with at least ``loss``, ``policy_loss``, ``value_loss``, ``entropy`` and
    ``grad_norm`` (the norm *before* clipping). The reference adds ``explained_variance`` =
    1 - Var(v - V) / Var(v) (1: a perfect critic, <= 0: no better than a constant) and the mean
    and std of the advantages, for the training dashboard.
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
        with torch.no_grad():  # statistics of this batch, before the parameters change
            values = terms.pop("values").detach()
            targets = torch.as_tensor(trajectory["value_targets"], device=values.device)
            target_var = targets.var(unbiased=False)
            explained_variance = 1.0 - (targets - values).var(unbiased=False) / target_var
            advantages = terms.pop("advantages")
            stats = {key: terms[key].detach() for key in ("loss", "policy_loss", "value_loss")}
            stats["entropy"] = terms["entropy"].detach()
            stats["grad_norm"] = grad_norm.detach().to(values.device)  # before clipping
            stats["explained_variance"] = explained_variance
            stats["advantage_mean"] = advantages.mean()
            stats["advantage_std"] = advantages.std(unbiased=False)
            numbers = torch.stack(list(stats.values())).tolist()  # one device-to-host copy
        self.optimizer.step()
        return dict(zip(stats, numbers, strict=True))

    def loss(self, trajectory):
        """The loss terms as tensors: loss, policy_loss, value_loss, entropy, advantages, values."""
        logits, log_probs, values = (trajectory[k] for k in ("logits", "log_probs", "values"))
        if not values.requires_grad:  # rollout without graph: recompute in one batch of B
            device = next(self.policy.model.parameters()).device
            observations = torch.as_tensor(trajectory["observations"], device=device)
            actions = torch.as_tensor(trajectory["actions"], device=device)  # (B,)
            logits, values = self.policy.model(observations)  # (B, A), (B,)
            log_probs = F.log_softmax(logits, dim=-1).gather(1, actions[:, None]).squeeze(1)
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
            "advantages": advantages,
            "values": values,
        }
        ### END SOLUTION


# %% [end part: a2c]


# %% [part: gae]
class ComputeGAE:
    """Bonus: Generalized Advantage Estimation, adds ``advantages`` and ``value_targets``.

    With V_t = ``values[t]`` (detached), V_T = V(latest_observation), resets d_t::

        delta_t = r_t + gamma * (1 - d_t) * V_{t+1} - V_t                  (N,)
        A_T     = 0
        A_t     = delta_t + gamma * lambda_ * (1 - d_t) * A_{t+1}          (N,)
        value_targets_t = A_t + V_t

    lambda_ trades bias for variance: ``lambda_ = 0`` gives the one-step TD error, ``lambda_ = 1``
    gives exactly the n-step targets of :class:`ComputeValueTargets` (A_t = v_t - V_t).
    Both results are ``(T, N)`` tensors on the model's device, without autograd graph; A2C uses
    the stored ``advantages`` when they are present.
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
