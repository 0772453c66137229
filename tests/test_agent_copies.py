"""Copies of an agent on the class board: the weights compared, not their hash.

The board names the same agent handed in by several students when their weights' fingerprints
(autograder/core/agent_play/fingerprint.py, entries drawn from the class's secret key) are
close in every layer, or in the whole trunk. The rule is calibrated on real runs by
``benchmarks/agent_copies.py``: two honest reference runs from the same seed (30k and 100k agent
steps, one and two torch threads) against copies of one of them; its recorded tables
(docs/agent_copies_*.json) are checked here against the rule as it is now. The copies
themselves are made here again on the reference network.
"""

from __future__ import annotations

import copy
import json
import stat
from pathlib import Path

import numpy as np
import pytest
import torch

from autograder.core.agent_play.fingerprint import (
    layer_distances,
    named_same,
    same_agent,
    weights_fingerprint,
)
from autograder.core.course.points import CoursePoints
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.nbgrader.class_reports.agent_records import AgentRecords
from autograder.nbgrader.class_reports.writing import write_outputs
from course_lib.network_layout import network_layouts
from course_lib.saved_agent import pack_agent, unpack_agent
from solutions.reference import make_model

ROOT = Path(__file__).resolve().parents[1]
KEY = bytes(range(32))


def _layers(seed: int):
    torch.manual_seed(seed)
    weights = unpack_agent(pack_agent(make_model(6).state_dict(), "G", 6, {}))
    return network_layouts(weights.tensors, 6)[0].layers(weights.tensors)


@pytest.mark.parametrize("table", sorted((ROOT / "docs").glob("agent_copies_*.json")))
def test_the_recorded_calibration_holds_under_the_rule_as_it_is(table):
    """Each recorded pair of real runs gets the verdict it was recorded with: the second honest
    run from the same seed is not named, every copy is."""
    rows = json.loads(table.read_text())["table"]
    verdicts = {row["against"]: named_same(row["distances"]) for row in rows}
    assert verdicts.pop("the second honest run (same seed)") is False
    assert len(verdicts) >= 8 and all(verdicts.values()), verdicts
    assert all(named_same(row["distances"]) == row["named_same"] for row in rows)


def test_a_flipped_bit_noise_a_scale_or_a_new_head_are_the_same_agent_another_is_not():
    base = _layers(0)
    first = weights_fingerprint(base, KEY)
    flipped = copy.deepcopy(base)
    flipped[2][0].view(np.uint32).reshape(-1)[::97] ^= 1 << 30  # one weight in 97, huge
    rng = np.random.default_rng(0)
    noisy = [(w + rng.normal(0, 0.1 * np.abs(w).mean(), w.shape).astype(np.float32), b)
             for w, b in base]  # fmt: skip
    scaled = [(w * 5.0, b * 5.0) for w, b in base]
    new_head = [*base[:4], *_layers(9)[4:]]  # a head trained anew on the copied trunk
    for name, layers in (("flipped", flipped), ("noise", noisy), ("scale", scaled),
                         ("new head", new_head)):  # fmt: skip
        assert same_agent(first, weights_fingerprint(layers, KEY)), name
    other = weights_fingerprint(_layers(1), KEY)  # another initialisation
    assert not same_agent(first, other) and min(layer_distances(first, other)) > 0.5
    assert layer_distances(first, {"version": 0}) is None and not same_agent(first, {})


def _result(student: str, layers, key: bytes) -> GradeResult:
    weights = {"score": 200.0, "std": 10.0, "games": 8, "steps": 8000, "capped": 8}
    agent = {"verified": weights, "claimed": {}, "digest": f"digest-{student}",
             "fingerprint": weights_fingerprint(layers, key)}  # fmt: skip
    return GradeResult(student, parts={"model": PartScore(1.0, 1.0, "")}, agent=agent)


def test_the_board_names_a_copy_whose_hash_differs_and_keeps_the_key_secret(tmp_path):
    """alice's agent, bob's copy of it with noise (another digest), carol's own: the summary
    names alice and bob together and not carol; the class's key is made once, readable by the
    instructor only, and the fingerprints are kept per student in out/agents."""
    records = AgentRecords(tmp_path)
    key = records.key()
    assert records.key() == key and len(key) == 32
    assert stat.S_IMODE((tmp_path / "agents" / "key").stat().st_mode) == 0o600
    base = _layers(0)
    rng = np.random.default_rng(3)
    copied = [(w + rng.normal(0, 0.05 * np.abs(w).mean(), w.shape).astype(np.float32), b)
              for w, b in base]  # fmt: skip
    results = [_result("alice", base, key), _result("bob", copied, key),
               _result("carol", _layers(5), key)]  # fmt: skip
    write_outputs(tmp_path, results, CoursePoints({"model": 1.0}), histogram=False)
    summary = (tmp_path / "summary.txt").read_text()
    assert "same agent weights handed in by: alice, bob" in summary, summary
    assert "carol" not in summary.split("same agent")[1]
    assert records.copies(["alice", "bob", "carol"]) == [["alice", "bob"]]
    assert records.previous("bob")["digest"] == "digest-bob"
    assert "alice" not in (tmp_path / "leaderboard.txt").read_text()
