"""The grader plays a submission's saved agent in the sandbox (autograder.core.agent_play).

One honest agent (the reference network, untrained, seeded) is played once through the real
sandbox and real ROMs, briefly, and its games are replayed here from the seeds the grader drew:
the same scores show that the sandbox only answered with logits and the grader drove the games.
The hostile agents (tests/submissions/hostile_agents.py) each get one short sandboxed run; the
rest (no agent, a refused bundle, the claim check, the framing) runs without a sandbox.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from autograder.core.agent_play import framing
from autograder.core.agent_play.sandboxed_agent import AgentLimits
from autograder.core.agent_play.verification import (
    claim_gap,
    find_agent,
    play_in_sandbox,
    verify_agent,
)
from autograder.core.assessor import Assessor
from course_lib.evaluation import GRADER_PROTOCOL, model_agent, play_games
from course_lib.saved_agent import (
    AGENT_FILE,
    AGENT_MIME,
    load_weights,
    pack_agent,
    unpack_agent,
)
from solutions.reference import make_model
from tests.submissions.hostile_agents import (
    AGENT_ATTACKS,
    CPU_BURN,
    EVAL_SWITCH,
    EXPECTED_NOTES,
    SEED_HUNT,
    attack_cell,
)

ROOT = Path(__file__).resolve().parents[1]
GAME = "SpaceInvadersNoFrameskip-v4"
SHORT = dataclasses.replace(GRADER_PROTOCOL, games=2, max_agent_steps=60, games_at_once=2)
TINY = dataclasses.replace(GRADER_PROTOCOL, games=1, max_agent_steps=20, games_at_once=1)
IMPORTS = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F"
QUICK_LIMITS = AgentLimits(start_seconds=180.0, step_seconds=3.0, agent_seconds=30.0)


def _bundle(evaluation=None):
    torch.manual_seed(0)
    claimed = {"score": 150.0, "games": 100, "steps": 10_000}
    return pack_agent(make_model(6).state_dict(), GAME, 6, claimed, evaluation)


def _with_agent(bundle, extra_cell: str | None = None):
    """The solution notebook with ``bundle`` in the save cell's output (and ``extra_cell`` right
    after the make_model cell)."""
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    ids = [cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") for cell in nb.cells]
    save = nb.cells[ids.index("save_agent")]
    output = {"text/plain": "agent", AGENT_MIME: bundle}
    save.outputs = [nbformat.v4.new_output("execute_result", data=output, execution_count=1)]
    if extra_cell is not None:
        nb.cells.insert(ids.index("model") + 1, nbformat.v4.new_code_cell(extra_cell))
    return nb


@pytest.fixture(scope="module")
def assessor(tmp_path_factory):
    release = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    return Assessor(release, tmp_path_factory.mktemp("agent_play"))


@pytest.fixture(scope="module")
def honest(assessor):
    """One real grading of an honest agent, shared."""
    bundle = _bundle()
    report = verify_agent(_with_agent(bundle), assessor._bin, assessor.lib, protocol=SHORT)
    return bundle, report


@pytest.mark.rom
@pytest.mark.slow
def test_the_grader_plays_the_games_and_the_sandbox_only_answers(honest):
    """Are the verified games those the grader's seeds give with the saved weights, played
    here in-process: the same scores, steps and caps?"""
    bundle, report = honest
    assert report.note == "" and report.verified is not None, report.log
    verified = report.verified
    assert (verified["games"], verified["steps"], verified["capped"]) == (2, 120, 2)
    assert report.claimed["score"] == 150.0 and report.digest == unpack_agent(bundle).digest
    assert len(set(report.seeds)) == 2  # drawn for this grading
    torch.set_num_threads(1)
    model = load_weights(make_model(6), unpack_agent(bundle)).eval()
    again = play_games(model_agent(model), SHORT, report.seeds)
    assert again.scores.tolist() == verified["scores"]


@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(AGENT_ATTACKS))
def test_a_hostile_agent_gets_a_note_and_no_score(assessor, attack):
    """Each hostile network answers through the real sandbox and framing (a job of just the
    reference's make_model and the attack, to keep the suite short; the honest test above
    plays a whole notebook's cells)."""
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    model_source = next(
        cell.source for cell in nb.cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "model"
    )  # fmt: skip
    job = {"cells": [IMPORTS, model_source, attack_cell(attack)], "bundle": _bundle(),
           "threads": 1}  # fmt: skip
    start = time.monotonic()
    conversation, ran = play_in_sandbox(job, TINY, assessor._bin, assessor.lib, QUICK_LIMITS)
    assert conversation.result is None, ran.output
    assert re.search(EXPECTED_NOTES[attack], conversation.failure), (conversation.failure, ran)
    assert time.monotonic() - start < 150  # bounded by the limits (3 s a step), not the attack


def _attack_job(body_name: str, body: str | None = None) -> dict:
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    model_source = next(
        cell.source for cell in nb.cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "model"
    )  # fmt: skip
    return {"cells": [IMPORTS, model_source, attack_cell(body_name, body)], "bundle": _bundle(),
            "threads": 1}  # fmt: skip


@pytest.mark.rom
@pytest.mark.slow
def test_a_network_that_hunts_for_the_seeds_finds_none(assessor):
    """The network searches its objects, environment, every process's command line and
    environment and the files it is shown for the games' seeds (fixed here so that the attack
    knows what to look for): it searched, found nothing, and still got its games."""
    seeds = [1_234_567_891, 987_654_321]
    job = _attack_job("wrong_shape", "        return honest_forward(x)\n")
    job["cells"][-1] = SEED_HUNT.format(seeds=" ".join(map(str, seeds)))
    conversation, ran = play_in_sandbox(
        job, SHORT, assessor._bin, assessor.lib, QUICK_LIMITS, seeds=seeds
    )
    assert conversation.result is not None, (conversation.failure, ran.output)
    assert "seed-hunt: searched" in ran.output and "FOUND" not in ran.output, ran.output[-3000:]


@pytest.mark.rom
@pytest.mark.slow
def test_a_network_that_plays_otherwise_under_evaluation_gets_what_it_played(assessor):
    """A network that always fires when it sees the evaluation (no gradients): its verified
    score is the one the grader's games give for always firing, on the same seeds, and not
    the honest network's."""
    seeds = [11, 22]
    conversation, ran = play_in_sandbox(
        _attack_job("wrong_shape", EVAL_SWITCH), SHORT, assessor._bin, assessor.lib,
        QUICK_LIMITS, seeds=seeds,
    )  # fmt: skip
    assert conversation.result is not None, (conversation.failure, ran.output)

    def always_fire(observations):
        logits = np.full((len(observations), 6), -20.0, dtype=np.float32)
        logits[:, 1] = 20.0
        return logits

    expected = play_games(always_fire, SHORT, seeds)
    assert conversation.result.scores.tolist() == expected.scores.tolist()
    assert [g.steps for g in conversation.result.games] == [g.steps for g in expected.games]


@pytest.mark.rom
@pytest.mark.slow
def test_an_agent_that_burns_cpu_is_capped_and_its_finished_games_scored(assessor):
    """Two threads spinning beside honest answers: the verification stops at its CPU cap (both
    sides, the sandbox's measured from its cgroup, not from what it says), well before the wall
    limits, and the note says so; the games finished by then are the score."""
    protocol = dataclasses.replace(GRADER_PROTOCOL, games=3, max_agent_steps=300, games_at_once=1)
    limits = dataclasses.replace(QUICK_LIMITS, cpu_seconds=8.0)
    start = time.monotonic()
    conversation, ran = play_in_sandbox(
        _attack_job("wrong_shape", CPU_BURN), protocol, assessor._bin, assessor.lib, limits
    )
    said = conversation.cpu_capped or conversation.failure
    if conversation.sandbox_cpu > 0:  # the run's cgroup measured it (a root grader, cgroup v2)
        assert said.startswith("capped at 8 s of CPU"), (said, ran.output[-2000:])
        assert conversation.grader_cpu + conversation.sandbox_cpu >= 8.0
    else:  # no cgroup to measure it: the agent's process stops at its own RLIMIT_CPU
        assert re.search("8 s of CPU|closed its channel", said), (said, ran.output[-2000:])
    games = conversation.result.games if conversation.result is not None else ()
    assert len(games) < 3 and all(game.steps == 300 for game in games)
    assert time.monotonic() - start < 120  # the CPU cap, not the 30 s of answers or the wall


def test_no_agent_or_a_refused_one_is_a_note_before_anything_runs(tmp_path):
    """No bundle; a bundle with a non-finite weight; an agent of another game: each a note,
    no sandbox started (the bin and lib folders do not even exist)."""
    nowhere = tmp_path / "missing"
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    report = verify_agent(nb, nowhere, nowhere)
    assert report.verified is None and "no saved agent" in report.note
    bundle = _bundle()
    broken = copy.deepcopy(bundle)
    broken["tensors"][0]["shape"] = [10**9]
    report = verify_agent(_with_agent(broken), nowhere, nowhere)
    assert "refused" in report.note and report.verified is None
    other = {**bundle, "env_id": "BreakoutNoFrameskip-v4"}
    report = verify_agent(_with_agent(other), nowhere, nowhere)
    assert "Breakout" in report.note and report.digest  # read, then refused


def test_the_agent_is_found_in_the_output_or_beside_the_notebook(tmp_path):
    bundle = _bundle()
    assert find_agent(_with_agent(bundle))[1] == "the notebook's output"
    bare = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    assert find_agent(bare, tmp_path) == (None, "")
    (tmp_path / AGENT_FILE).write_text(json.dumps(bundle))
    found, where = find_agent(bare, tmp_path)
    assert where == AGENT_FILE and unpack_agent(found).digest == unpack_agent(bundle).digest


def test_a_forged_notebook_evaluation_is_flagged_and_an_honest_one_is_not():
    """The notebook's own evaluation on the grader's protocol, far above the grader's games,
    is flagged; within the games' noise it is not; on another protocol it is not compared."""
    verified = {"score": 200.0, "std": 60.0, "games": 8, "protocol": GRADER_PROTOCOL.to_dict()}
    notebook = {"score": 230.0, "std": 70.0, "games": 8, "protocol": GRADER_PROTOCOL}
    assert claim_gap(verified, notebook) == ""
    forged = {**notebook, "score": 900.0, "std": 0.0}
    assert "more than the games' randomness explains" in claim_gap(verified, forged)
    other = dataclasses.replace(GRADER_PROTOCOL, max_agent_steps=None)
    assert claim_gap(verified, {**forged, "protocol": other}) == ""


def test_the_same_weights_in_two_submissions_have_the_same_digest():
    first, second = unpack_agent(_bundle()), unpack_agent(_bundle())
    torch.manual_seed(1)
    third = unpack_agent(pack_agent(make_model(6).state_dict(), GAME, 6, {"score": 1.0}))
    assert first.digest == second.digest != third.digest


def test_a_frame_is_bounded_tagged_and_timed():
    """An answer longer than expected, of another tag, late, or cut short is refused."""
    read, write = os.pipe()
    try:
        framing.send(write, framing.ANSWER, b"x" * 16, time.monotonic() + 5)
        with pytest.raises(framing.FrameError, match="more than"):
            framing.read_frame(read, 8, time.monotonic() + 5)
        os.read(read, 16)
        framing.send(write, framing.ASK, b"", time.monotonic() + 5)
        with pytest.raises(framing.FrameError, match="tag"):
            framing.read_frame(read, 8, time.monotonic() + 5)
        with pytest.raises(framing.FrameTimeout):
            framing.read_frame(read, 8, time.monotonic() + 0.2)
        framing.send(write, framing.ANSWER, np.zeros(2, "<f4").tobytes(), time.monotonic() + 5)
        assert framing.read_frame(read, 8, time.monotonic() + 5) == bytes(8)
        os.write(write, framing.HEADER.pack(framing.ANSWER, 8) + b"1234")
        os.close(write)
        write = -1
        with pytest.raises(framing.FrameError, match="closed"):
            framing.read_frame(read, 8, time.monotonic() + 5)
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
