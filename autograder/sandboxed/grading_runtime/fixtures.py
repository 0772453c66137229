"""Stand-ins the probes drive one student part with: coded frames, tiny models, batches.

Nothing here answers a graded part: the models are lookup tables or deliberately tiny networks
(not the Nature-DQN network the model part asks for), the policy is
:class:`course_lib.checks.fixtures.ValuePolicy` (logits and values, no sampled action), and the
trajectories are inputs. Their outputs are known or cheap to recompute, so the grader can
compute what a part should give on them.

The frames are :func:`course_lib.checks.fixtures.frames` (one code per frame, which the table
models read) or random pixels (:func:`random_frames`). :func:`nature_weights` draws weights for
the student's Nature-DQN network from a seed: numbers only, no forward pass (the grader's own
forward pass lives in ``autograder/core/judging/parts/model.py``, which the sandbox never sees).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_lib.checks.fixtures import OBS_SHAPE, ValuePolicy, frames, read_codes

__all__ = [
    "OBS_SHAPE",
    "CodeValueModel",
    "ProfileModel",
    "TinySharedNet",
    "TwoHeadModel",
    "ValuePolicy",
    "coded_trajectory",
    "frames",
    "make_fixture_model",
    "merged_batch",
    "nature_weights",
    "random_frames",
    "read_codes",
    "returns_trajectory",
]


#: (weight shape, stride) of the Nature-DQN trunk: conv1..3 and the 3136->512 layer.
NATURE_TRUNK = (((32, 4, 8, 8), 4), ((64, 32, 4, 4), 2), ((64, 64, 3, 3), 1), ((512, 3136), None))


def nature_weights(seed: int, n_actions: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(weight, bias)`` float32 of conv1..3, the hidden layer, the policy and the value head,
    drawn from ``seed`` (He-scaled, so the activations stay of order one on frames / 255).

    The model probe loads them into the student's network; the grader computes what the
    Nature-DQN network gives with the same weights. They are inputs, not an answer.
    """
    rng = np.random.default_rng(seed)
    shapes = [shape for shape, _ in NATURE_TRUNK] + [(n_actions, 512), (1, 512)]
    drawn = []
    for shape in shapes:
        fan_in = int(np.prod(shape[1:]))
        bound = np.sqrt(6.0 / fan_in)
        weight = rng.uniform(-bound, bound, size=shape).astype(np.float32)
        bias = rng.uniform(-0.1, 0.1, size=shape[0]).astype(np.float32)
        drawn.append((weight, bias))
    return drawn


def random_frames(n: int, seed: int) -> np.ndarray:
    """``uint8 (n, 4, 84, 84)`` random pixels, the same for the same seed."""
    return np.random.default_rng(seed).integers(0, 256, (n, *OBS_SHAPE), dtype=np.uint8)


class CodeValueModel(nn.Module):
    """``values[i] = table[code_i]`` (times a weight of 1, for the graph); flat logits."""

    def __init__(self, value_table: Any, n_actions: int = 3) -> None:
        super().__init__()
        self.register_buffer("table", torch.tensor(np.asarray(value_table), dtype=torch.float32))
        self.weight = nn.Parameter(torch.ones(()))
        self.logit_bias = nn.Parameter(torch.zeros(n_actions))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        codes = read_codes(obs).to(self.table.device)
        values = self.weight * self.table[codes]  # (N,)
        logits = self.logit_bias.expand(len(codes), -1) * self.weight  # (N, A)
        return logits, values


class ProfileModel(nn.Module):
    """Two fixed rows of logits: frames with code 0 get ``logits[0]``, code 255 ``logits[1]``.

    The threshold sits at 0.5, so the profile survives a (wrong) division by 255 in a policy.
    """

    def __init__(self, logits: Any, values: Any) -> None:
        super().__init__()
        self.register_buffer("table", torch.tensor(np.asarray(logits), dtype=torch.float32))
        self.register_buffer("value_table", torch.tensor(np.asarray(values), dtype=torch.float32))
        self.logit_bias = nn.Parameter(torch.zeros(self.table.shape[1]))
        self.value_bias = nn.Parameter(torch.zeros(()))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        profile = (torch.as_tensor(obs)[:, 0, 0, 0].float() > 0.5).long().to(self.table.device)
        return self.table[profile] + self.logit_bias, self.value_table[profile] + self.value_bias


class TwoHeadModel(nn.Module):
    """A tiny actor-critic with *disjoint* heads: no parameter is shared by logits and values.

    With it, the value head's gradient comes from the value loss alone, which makes a missing
    ``.detach()`` on the advantages visible.
    """

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        self.policy_head = nn.Linear(4 * 7 * 7, n_actions)
        self.value_head = nn.Linear(4 * 7 * 7, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.as_tensor(obs)[:, :, ::12, ::12].float().flatten(1) / 255.0  # (N, 196)
        return self.policy_head(features), self.value_head(features).squeeze(-1)


class TinySharedNet(nn.Module):
    """A small convolution and a hidden layer shared by both heads (about 5k parameters)."""

    def __init__(self, n_actions: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, kernel_size=12, stride=12)  # (N, 4, 7, 7)
        self.hidden = nn.Linear(4 * 7 * 7, 16)
        self.policy_head = nn.Linear(16, n_actions)
        self.value_head = nn.Linear(16, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.conv(torch.as_tensor(obs).float() / 255.0)).flatten(1)
        h = torch.tanh(self.hidden(x))  # (N, 16), shared by the two heads
        return self.policy_head(h), self.value_head(h).squeeze(-1)


def make_fixture_model(kind: str, n_actions: int, seed: int) -> nn.Module:
    """``"two_heads"`` or ``"shared"`` (:class:`TinySharedNet`), initialised from ``seed``."""
    classes = {"two_heads": TwoHeadModel, "shared": TinySharedNet}
    if kind not in classes:
        raise ValueError(f"kind must be one of {sorted(classes)}, got {kind!r}")
    generator_state = torch.random.get_rng_state()
    torch.default_generator.manual_seed(seed)  # the CPU's: as seed_all, no accelerator queued
    try:
        return classes[kind](n_actions)
    finally:
        torch.random.set_rng_state(generator_state)


def returns_trajectory(case: dict[str, Any]) -> tuple[ValuePolicy, dict[str, Any]]:
    """A runner-shaped trajectory for the value-target parts, and its policy.

    ``case`` holds ``rewards`` and ``resets`` ``(T, N)``, ``obs_codes (T, N)``,
    ``latest_codes (N,)`` and ``value_table (256,)``: V(frame) = value_table[code].
    """
    policy = ValuePolicy(CodeValueModel(case["value_table"]))
    observations = frames(case["obs_codes"])  # (T, N, 4, 84, 84)
    actions = np.random.default_rng(int(case.get("action_seed", 0)))
    trajectory: dict[str, Any] = {}
    for t in range(len(observations)):
        logits, values = policy.model(torch.as_tensor(observations[t]))  # (N, A), (N,)
        taken = actions.integers(0, logits.shape[1], len(values)).astype(np.int64)
        log_probs = F.log_softmax(logits, dim=-1)[torch.arange(len(taken)), torch.from_numpy(taken)]
        step = {"actions": taken, "logits": logits, "log_probs": log_probs, "values": values}
        for key, value in step.items():
            trajectory.setdefault(key, []).append(value)
    trajectory["observations"] = list(observations)
    trajectory["rewards"] = list(np.array(case["rewards"], dtype=np.float32))  # copies: the
    trajectory["resets"] = list(np.array(case["resets"], dtype=bool))  # code may write in place
    trajectory["state"] = {
        "latest_observation": frames(case["latest_codes"]),
        "env_steps": len(observations),
    }
    return policy, trajectory


def coded_trajectory(
    T: int, N: int, targets_as_tensor: bool = False, n_actions: int = 3, salt: int = 0
) -> tuple[dict[str, Any], torch.Tensor]:
    """A runner-shaped trajectory whose entries encode (t, i), and the leaf of its graph.

    Entry (t, i) holds the code ``salt + 100 t + i`` (observations: frame code
    ``(salt + t N + i) mod 256``), so a wrong merge order can be told row by row; every tensor
    hangs off one leaf tensor.
    """
    leaf = torch.zeros((), requires_grad=True)
    code = salt + 100.0 * np.arange(T)[:, None] + np.arange(N)[None, :]  # (T, N)
    trajectory: dict[str, Any] = {
        "actions": [code[t].astype(np.int64) for t in range(T)],
        "logits": [
            torch.as_tensor(code[t, :, None] * 10 + np.arange(n_actions), dtype=torch.float32)
            + leaf
            for t in range(T)
        ],
        "log_probs": [-torch.as_tensor(code[t], dtype=torch.float32) + leaf for t in range(T)],
        "values": [torch.as_tensor(code[t] + 0.5, dtype=torch.float32) + leaf for t in range(T)],
        "observations": list(frames((salt + np.arange(T * N)).reshape(T, N) % 256)),
        "rewards": [(code[t] / 1000).astype(np.float32) for t in range(T)],
        "resets": [((code[t] - salt) % 3 == 0) for t in range(T)],
    }
    targets = torch.as_tensor(code + 0.25, dtype=torch.float32)  # (T, N), no graph
    trajectory["value_targets"] = targets if targets_as_tensor else list(targets)
    trajectory["state"] = {"latest_observation": frames(np.full(N, 255)), "env_steps": T}
    return trajectory, leaf


def merged_batch(model: nn.Module, seed: int, rows: int, n_actions: int) -> dict[str, Any]:
    """What ``MergeTimeBatch`` hands to ``A2C.step``: ``rows`` rows computed by ``model``."""
    rng = np.random.default_rng(seed)
    observations = rng.integers(0, 256, (rows, *OBS_SHAPE), dtype=np.uint8)
    actions = rng.integers(0, n_actions, rows).astype(np.int64)
    logits, values = model(torch.from_numpy(observations))  # (B, A), (B,)
    log_probs = F.log_softmax(logits, dim=-1).gather(1, torch.from_numpy(actions)[:, None])
    return {
        "actions": actions,
        "logits": logits,
        "log_probs": log_probs.squeeze(1),
        "values": values,
        "observations": observations,
        "rewards": rng.uniform(-1, 1, rows).astype(np.float32),
        "resets": rng.random(rows) < 0.2,
        "value_targets": torch.as_tensor(rng.normal(0.0, 1.0, rows), dtype=torch.float32),
        "state": {"latest_observation": observations[-2:].copy(), "env_steps": rows // 2},
    }
