"""The trained agent handed in with the notebook (course_lib.saved_agent): what it writes, and
how strictly a bundle is read back (the grader reads bundles students wrote)."""

from __future__ import annotations

import base64
import copy
import json
import os
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from course_lib.episode_stats import EpisodeStats
from course_lib.saved_agent import (
    AGENT_FILE,
    AGENT_MIME,
    AgentBundleError,
    load_agent,
    load_weights,
    pack_agent,
    save_agent,
    unpack_agent,
)
from solutions.reference import make_model

SPACE_INVADERS = "SpaceInvadersNoFrameskip-v4"


@pytest.fixture(scope="module")
def network():
    torch.manual_seed(0)
    return make_model(6)


@pytest.fixture(scope="module")
def bundle(network):
    claimed = {"score": 289.3, "games": 100, "steps": 1_000_000}
    return pack_agent(network.state_dict(), SPACE_INVADERS, 6, claimed)


def fake_runner(scores, steps=4000, n_actions=6):
    stats = EpisodeStats()
    for index, score in enumerate(scores):
        stats.add(score, length=100, step=index)
    env = SimpleNamespace(single_action_space=SimpleNamespace(n=n_actions))
    return SimpleNamespace(episode_stats=stats, step_var=steps, env=env)


def test_the_weights_come_back_as_float16_and_play_like_the_trained_network(network, bundle):
    """Does a bundle, through JSON, load into a fresh network whose action probabilities are
    the trained network's within float16's rounding, with the claimed score kept?"""
    weights = unpack_agent(json.loads(json.dumps(bundle)))
    assert weights.parameters == sum(p.numel() for p in network.parameters())
    assert (weights.env_id, weights.n_actions) == (SPACE_INVADERS, 6)
    assert weights.claimed == {"score": 289.3, "games": 100, "steps": 1_000_000}
    assert {array.dtype for array in weights.tensors.values()} == {np.dtype("float16")}
    loaded = load_weights(make_model(6), weights)
    frames = torch.randint(0, 256, (16, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        (logits, values), (logits2, values2) = network(frames), loaded(frames)
    assert torch.allclose(logits.softmax(-1), logits2.softmax(-1), atol=1e-4)
    assert torch.allclose(values, values2, atol=1e-2)
    assert len(bundle["data"]) < 5_000_000  # the Nature-DQN: about 4.5 MB of base64


def test_the_digest_tells_the_same_weights_from_others(network, bundle):
    same = unpack_agent(pack_agent(network.state_dict(), SPACE_INVADERS, 6, {"score": 1.0}))
    assert same.digest == unpack_agent(bundle).digest  # claims differ, weights do not
    torch.manual_seed(1)
    other = unpack_agent(pack_agent(make_model(6).state_dict(), SPACE_INVADERS, 6, {}))
    assert other.digest != same.digest


def test_save_agent_writes_the_file_and_puts_the_bundle_in_the_output(network, tmp_path):
    runner = fake_runner([100.0] * 50 + [300.0] * 100, steps=1_000_000)
    saved = save_agent(network, runner, SPACE_INVADERS, path=tmp_path / AGENT_FILE)
    on_disk = load_agent(tmp_path / AGENT_FILE)
    assert on_disk.claimed == {"score": 300.0, "games": 100, "steps": 1_000_000}
    output = saved._repr_mimebundle_()
    assert output[AGENT_MIME] == json.loads((tmp_path / AGENT_FILE).read_text())
    text = output["text/plain"]
    assert "claimed score 300.0 (mean raw score of the last 100 training games" in text
    assert "Keep this output when you submit" in text and "a2c_agent.json" in text
    assert not list(tmp_path.glob("*.tmp"))
    early = save_agent(network, fake_runner([]), SPACE_INVADERS, path=tmp_path / "early.json")
    assert load_agent(early.path).claimed["score"] is None
    assert "no game ended while training" in repr(early)


def test_save_agent_refuses_a_network_the_grader_cannot_read_and_says_what_it_needs(tmp_path):
    """The grader plays the weights in its own copy of the course's network, finding each layer
    by its shape: a network with a layer too many, or without the value head, is refused
    before anything is written, with the shapes it needs; the course's network laid out
    otherwise (other names, no biases, one head of n_actions + 1 outputs) is saved."""
    import torch.nn as nn

    class Laid(nn.Module):
        def __init__(self, extra: bool = False, value: bool = True):
            super().__init__()
            self.a = nn.Conv2d(4, 32, 8, 4, bias=False)
            self.b = nn.Conv2d(32, 64, 4, 2, bias=False)
            self.c = nn.Conv2d(64, 64, 3, 1, bias=False)
            self.d = nn.Linear(3136, 512)
            self.heads = nn.Linear(512, 7 if value else 6)
            if extra:
                self.e = nn.Linear(512, 512)

    runner = fake_runner([10.0] * 3)
    path = tmp_path / AGENT_FILE
    for wrong, named in ((Laid(extra=True), "no layer has the shape of e.weight (512, 512)"),
                         (Laid(value=False), "the value head 512->1 (1, 512)")):  # fmt: skip
        with pytest.raises(ValueError, match="cannot be saved for grading") as refused:
            save_agent(wrong, runner, SPACE_INVADERS, path=path)
        assert named in str(refused.value) and "(32, 4, 8, 8)" in str(refused.value)
        assert not path.exists()
    saved = save_agent(Laid(), runner, SPACE_INVADERS, path=path)
    assert path.exists() and unpack_agent(saved.bundle).n_actions == 6


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 70_000.0])
def test_diverged_weights_are_refused_when_saving(bad):
    state = {"head.weight": torch.tensor([[0.5, bad]])}
    with pytest.raises(ValueError, match="training diverged"):
        pack_agent(state, SPACE_INVADERS, 2, {})


def test_weights_of_another_network_are_refused_with_what_differs(bundle):
    weights = unpack_agent(bundle)
    with pytest.raises(ValueError, match=r"other shapes: policy_head.weight \(6, 512\)"):
        load_weights(make_model(4), weights)

    class Smaller(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.policy_head = torch.nn.Linear(512, 6)

    with pytest.raises(ValueError, match="not in the network: trunk.0.weight"):
        load_weights(Smaller(), weights)


def tampered(bundle, **changes):
    out = copy.deepcopy(bundle)
    out.update(changes)
    return out


def data_of(raw: bytes) -> str:
    return base64.b64encode(zlib.compress(raw)).decode()


def test_a_bundle_is_read_within_bounds_or_refused(bundle):
    """Everything a student's bundle could do wrong is an AgentBundleError saying what."""
    tensors = bundle["tensors"]
    huge = [{"name": "w", "shape": [100_000, 100_000], "dtype": "float16"}]
    one = [{"name": "w", "shape": [4], "dtype": "float16"}]
    cases = [
        ([1, 2], "expected a JSON object"),
        (tampered(bundle, format="a2c-course agent 0"), "format is not"),
        (tampered(bundle, extra=1), "unknown keys"),
        (tampered(bundle, n_actions=True), "'n_actions' must be an integer"),
        (tampered(bundle, claimed={"score": "600", "games": 1, "steps": 1}), "claimed score"),
        (tampered(bundle, claimed={"score": float("nan"), "games": 1, "steps": 1}), "claimed"),
        (tampered(bundle, tensors=huge), "more than 16,000,000 numbers"),
        (tampered(bundle, tensors=tensors + tensors[:1]), "distinct"),
        (tampered(bundle, tensors=[{"name": "w", "shape": [-1], "dtype": "float16"}]), "shape"),
        (tampered(bundle, tensors=[{"name": "w", "shape": [2], "dtype": "object"}]), "dtype"),
        (tampered(bundle, encoding="pickle"), "'encoding'"),
        (tampered(bundle, tensors=one, data="A" * 10_000), "at most"),
        (tampered(bundle, tensors=one, data="not base64!"), "not zlib-compressed base64"),
        # a bomb: 8 bytes declared, 8 MB inside
        (tampered(bundle, tensors=one, data=data_of(bytes(8_000_000))), "at most"),
        (tampered(bundle, tensors=one, data=data_of(bytes(9))), "exactly the 8 bytes"),
        (tampered(bundle, tensors=one, data=data_of(bytes(7))), "exactly the 8 bytes"),
        (
            tampered(bundle, tensors=one, data=data_of(np.full(4, np.inf, "<f2").tobytes())),
            "finite",
        ),
        (tampered(bundle, evaluation={"score": 1.0}), "evaluation's 'std'"),
    ]
    for bad, message in cases:
        with pytest.raises(AgentBundleError, match=message):
            unpack_agent(bad)


def test_a_small_bomb_within_the_base64_limit_stops_at_the_declared_size(bundle):
    """Compressed data that stays under the text limit but inflates past the declared size is
    refused after one byte more than declared, not inflated whole."""
    declared = [{"name": "w", "shape": [300_000], "dtype": "float16"}]  # 600 kB
    bomb = data_of(bytes(50_000_000))  # 50 MB of zeros compress to about 50 kB
    with pytest.raises(AgentBundleError, match="exactly the 600,000 bytes"):
        unpack_agent(tampered(bundle, tensors=declared, data=bomb))


def test_the_notebook_s_own_evaluation_travels_with_its_protocol(network, tmp_path):
    from course_lib.evaluation import GRADER_PROTOCOL, EvaluationResult, GameResult

    games = (GameResult(1, 200.0, 900, "game over"), GameResult(2, 150.0, 1000, "step cap"))
    evaluation = EvaluationResult(GRADER_PROTOCOL, games)
    saved = save_agent(
        network, fake_runner([120.0]), SPACE_INVADERS, tmp_path / AGENT_FILE, evaluation
    )
    read = load_agent(saved.path).evaluation
    assert read == {"score": 175.0, "std": 25.0, "games": 2, "steps": 1900, "capped": 1,
                    "protocol": GRADER_PROTOCOL}  # fmt: skip
    forged = copy.deepcopy(saved.bundle)
    forged["evaluation"]["protocol"] = {"games": 8, "seeds": [1, 2]}
    with pytest.raises(AgentBundleError, match="'protocol' is not an evaluation protocol"):
        unpack_agent(forged)


def test_load_agent_takes_a_path_never_a_file_descriptor():
    """A number is refused with a TypeError and the descriptor it names stays open (``open``
    would read it and close it: in a test run, pytest's own output capture)."""
    descriptor = os.open(os.devnull, os.O_RDONLY)
    try:
        with pytest.raises(TypeError):
            load_agent(descriptor)
        os.fstat(descriptor)  # still open
    finally:
        os.close(descriptor)
