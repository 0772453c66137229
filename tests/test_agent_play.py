"""The grader plays a submission's saved weights in its own network (autograder.core.agent_play).

No student code runs while the games are played: the saved weights, read as plain data and
mapped onto the course's network by their shapes, are played in the grader's own copy of it.
The student's ``make_model`` only earns the replay, in the parts' sandbox, by computing that
network with the weights (the check). One honest agent (the reference network, untrained,
seeded) is graded through the real sandbox and real ROMs, briefly, and its games are played
again here: the same scores. The hostile ``make_model`` cells of
tests/submissions/hostile_agents.py are each graded once; the rest (the layouts, the check's
judge, the CPU cap, denormal and overflowing weights, no agent or a refused one) runs without a
sandbox.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import time
from functools import partial
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
import torch.nn as nn

from autograder.core.agent_play import verification
from autograder.core.agent_play.handed_in import find_agent, handed_in
from autograder.core.agent_play.model_check import CHECK_FRAMES, judge_check
from autograder.core.agent_play.verification import (
    AgentLimits,
    claim_gap,
    play_agent,
    verify_agent,
)
from autograder.core.assessor import Assessor
from autograder.sandboxed.grading_runtime import fixtures
from course_lib.atari_env import wrap_atari
from course_lib.checks.properties import capture
from course_lib.evaluation import GRADER_PROTOCOL, game_seeds, model_agent, play_games
from course_lib.network_layout import network_layouts
from course_lib.saved_agent import AGENT_FILE, AGENT_MIME, load_weights, pack_agent, unpack_agent
from solutions.reference import make_model
from tests.fake_atari import FakeAtariEnv
from tests.submissions.hostile_agents import EXPECTED_NOTES, attack_cell, scripted_agent
from tests.test_evaluation import protocol

ROOT = Path(__file__).resolve().parents[1]
GAME = "SpaceInvadersNoFrameskip-v4"
SHORT = dataclasses.replace(GRADER_PROTOCOL, games=2, max_agent_steps=60, games_at_once=2)


def _bundle(evaluation=None, model=None):
    if model is None:
        torch.manual_seed(0)
        model = make_model(6)
    claimed = {"score": 150.0, "games": 100, "steps": 10_000}
    return pack_agent(model.state_dict(), GAME, 6, claimed, evaluation)


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


def _reference_scores(bundle, seeds, protocol_=SHORT):
    """The games of ``bundle``'s weights played in the reference's own nn.Module, in-process."""
    torch.set_num_threads(1)
    model = load_weights(make_model(6), unpack_agent(bundle)).eval()
    return play_games(model_agent(model), protocol_, seeds).scores.tolist()


@pytest.fixture(scope="module")
def assessor(tmp_path_factory):
    release = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    made = Assessor(release, tmp_path_factory.mktemp("agent_play"))
    made.agent_protocol = SHORT
    return made


def _grade(assessor, nb):
    return assessor.assess(nbformat.writes(nb).encode(), "student").result


# --- through the sandbox and the real game ------------------------------------------------------


@pytest.mark.rom
@pytest.mark.slow
def test_the_grader_plays_the_saved_weights_in_its_own_network(assessor):
    """One grading of an honest agent: make_model's check ran in the parts' run, and the
    verified games are those the grader's seeds give with the saved weights in the reference's
    own network, played here: the same scores, steps and caps."""
    bundle = _bundle()
    result = _grade(assessor, _with_agent(bundle))
    assert result.graded, (result.status, result.notes)
    agent = result.agent
    assert agent["note"] == "" and agent["verified"] is not None, result.notes
    verified = agent["verified"]
    assert (verified["games"], verified["steps"], verified["capped"]) == (2, 120, 2)
    assert agent["claimed"]["score"] == 150.0 and agent["digest"] == unpack_agent(bundle).digest
    assert "probe:saved_agent" in result.timings  # the check rode in the parts' run
    assert 0 < agent["cpu_seconds"] < 20
    assert verified["scores"] == _reference_scores(bundle, agent["seeds"])


def _separating_seeds(bundle, candidates: int = 12) -> tuple[list[int], list[float], list[float]]:
    """Seeds of ``SHORT``'s games on which ``bundle``'s weights and the scripted policy score
    differently, with both lists of scores: two short games can end with the same scores by
    chance, and then they cannot tell which of the two was played."""
    for candidate in range(candidates):
        seeds = game_seeds(SHORT.games, seed=candidate)
        weights = _reference_scores(bundle, seeds)
        script = play_games(partial(scripted_agent, state={}), SHORT, seeds).scores.tolist()
        if script != weights:
            return seeds, weights, script
    raise AssertionError(f"no seeds of {candidates} tried tell the weights from the script")


@pytest.mark.rom
@pytest.mark.slow
def test_a_make_model_scripted_where_it_is_replayed_gets_what_its_weights_play(
    assessor, monkeypatch
):
    """The issue's attack: make_model is the course's network everywhere except where it can
    tell it is replayed, where it plays a scripted sweep-and-fire policy. The replay runs no
    student code: the verified score is what the saved weights play in the grader's network on
    the grading's seeds, not what the script would have played there. The grading's seeds are
    ones on which the two score differently (found here first), so that the scores tell them
    apart whatever the draw."""
    bundle = _bundle()
    seeds, weights, script = _separating_seeds(bundle)

    def known_seeds(games: int, seed: int | None = None) -> list[int]:
        assert games == len(seeds) and seed is None, (games, seed)
        return list(seeds)

    monkeypatch.setattr(verification, "game_seeds", known_seeds)
    result = _grade(assessor, _with_agent(bundle, attack_cell("scripted_elsewhere")))
    agent = result.agent
    assert result.graded and agent["verified"] is not None, (result.notes, agent["note"])
    assert agent["seeds"] == seeds  # the grading drew them through game_seeds
    assert agent["verified"]["scores"] == weights != script
    assert result.parts["model"].score == result.parts["model"].max


@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(EXPECTED_NOTES))
def test_a_make_model_that_is_not_the_course_network_with_its_weights_earns_no_replay(
    assessor, attack, monkeypatch
):
    """Each hostile make_model (scripted, another policy in eval mode, a wrong shape, NaN, a
    hang, a crash) is checked in the parts' run: no verified score, a note that says why, and
    no agent points; the model part, which it passes in training mode, is graded as before."""
    monkeypatch.setenv("A2C_GRADER_TIME_SCALE", "1")  # the hang costs one step's limit
    start = time.monotonic()
    result = _grade(assessor, _with_agent(_bundle(), attack_cell(attack)))
    agent = result.agent
    assert agent["verified"] is None and "seeds" not in agent, agent
    assert re.search(EXPECTED_NOTES[attack], agent["note"]), agent["note"]
    assert any(note.startswith("agent: ") for note in result.notes)
    if attack != "scripted":  # honest in training mode
        assert result.parts["model"].score == result.parts["model"].max, result.parts["model"]
    assert time.monotonic() - start < 240


# --- the check's judge, the layouts, the trusted play (no sandbox) -------------------------------


class _OneHead(nn.Module):
    """The course's network laid out otherwise: other names, no biases in the convolutions, a
    hand-made hidden layer stored (in, out), and one head of n_actions + 1 outputs whose value
    is its first row when ``value_first``."""

    def __init__(self, n_actions: int = 6, value_first: bool = False):
        super().__init__()
        self.value_first, self.n_actions = value_first, n_actions
        self.c1 = nn.Conv2d(4, 32, 8, 4, bias=False)
        self.c2 = nn.Conv2d(32, 64, 4, 2, bias=False)
        self.c3 = nn.Conv2d(64, 64, 3, 1)
        self.hidden = nn.Parameter(torch.randn(3136, 512) * 0.02)
        self.hidden_bias = nn.Parameter(torch.zeros(512))
        self.both = nn.Linear(512, n_actions + 1)

    def forward(self, obs):
        x = obs.float() / 255
        x = torch.relu(self.c3(torch.relu(self.c2(torch.relu(self.c1(x))))))
        x = torch.relu(x.flatten(1) @ self.hidden + self.hidden_bias)
        out = self.both(x)
        if self.value_first:
            return out[:, 1:], out[:, 0]
        return out[:, :-1], out[:, -1]


def _check_record(model, case):
    """What the check's probe reports for ``model`` (captured as the sandbox captures it)."""
    frames = torch.from_numpy(fixtures.random_frames(case["n"], case["obs_seed"]))
    with torch.no_grad():
        return {"outputs": {"ok": True, "observation": {"output": capture(model.eval()(frames))}}}


@pytest.mark.parametrize("value_first", [False, True])
def test_a_network_laid_out_otherwise_is_read_by_its_shapes_as_make_model_computes_it(value_first):
    """Other names, no conv biases, a transposed hidden layer, one head of A + 1 outputs, the
    value first or last: the grader finds every layer by its shape, and of the two ways to read
    the combined head it plays the one the student's make_model computes."""
    torch.manual_seed(3)
    model = _OneHead(value_first=value_first)
    weights = unpack_agent(_bundle(model=model))
    layouts = network_layouts(weights.tensors, 6)
    assert len(layouts) == 2 and layouts[0].pieces[3].transposed
    case = {"n": CHECK_FRAMES, "obs_seed": 11}
    loaded = load_weights(_OneHead(value_first=value_first), weights)
    layout, why = judge_check(_check_record(loaded, case), case, weights.tensors, layouts)
    assert why == "" and layout is layouts[1 if value_first else 0]
    assert layout.pieces[5].rows == ((0, 1) if value_first else (6, 7))


def test_make_model_that_computes_another_network_is_told_why():
    """Outputs of the network without the division by 255: no layout, and the hint of the
    model part's own check; a record that failed or never came: the reason."""
    torch.manual_seed(0)
    model = make_model(6)
    weights = unpack_agent(_bundle(model=model))
    layouts = network_layouts(weights.tensors, 6)
    case = {"n": CHECK_FRAMES, "obs_seed": 5}
    loaded = load_weights(make_model(6), weights)
    unscaled = copy.deepcopy(loaded)
    honest_forward = unscaled.forward
    unscaled.forward = lambda obs: honest_forward(obs.float() * 255)
    layout, why = judge_check(_check_record(unscaled, case), case, weights.tensors, layouts)
    assert layout is None and "other logits and values" in why and "255" in why
    assert judge_check({}, case, weights.tensors, layouts)[0] is None
    failed = {"outputs": {"ok": False, "error": "did not finish: still running after 20 s"}}
    layout, why = judge_check(failed, case, weights.tensors, layouts)
    assert layout is None and why.startswith("make_model could not be loaded") and "20 s" in why


def _reference_layers(seed=0, scale=1.0):
    torch.manual_seed(seed)
    weights = unpack_agent(_bundle(model=make_model(6)))
    layers = network_layouts(weights.tensors, 6)[0].layers(weights.tensors)
    return [(w * scale, b * scale) for w, b in layers]


def test_the_play_s_network_computes_the_numbers_of_one_forward_pass_per_batch_to_the_bit():
    """The play's NatureDQN (weights converted once, frames scaled in place, in-place ReLUs, no
    value head) gives the very logits of the plain forward pass written out here, for batches of
    8 down to 1 and for every pixel value: a sampled action depends on every bit of them."""
    import torch.nn.functional as F

    from autograder.core.judging.parts.model import NatureDQN
    from course_lib.checks.layers import NATURE_TRUNK

    def plain(layers, obs):
        tensors = [(torch.from_numpy(w).float(), torch.from_numpy(b).float()) for w, b in layers]
        with torch.no_grad():
            x = torch.from_numpy(obs).to(torch.float32) * (1 / 255)
            for (weight, bias), (_, _, stride) in zip(tensors[:3], NATURE_TRUNK, strict=False):
                x = F.relu(F.conv2d(x, weight, bias, stride=stride))
            x = F.relu(F.linear(x.flatten(1), *tensors[3]))
            return F.linear(x, *tensors[4]).numpy()

    layers = _reference_layers()
    network = NatureDQN(layers, dtype=torch.float32)
    every_value = np.arange(4 * 84 * 84) % 256
    frames = np.concatenate([every_value.reshape(1, 4, 84, 84).astype(np.uint8),
                             fixtures.random_frames(7, 3)])  # fmt: skip
    for batch in (8, 5, 1):
        logits, values = network(frames[:batch], values=False)
        assert values is None and logits.tobytes() == plain(layers, frames[:batch]).tobytes()


def _fake(render_mode=None):
    """A scripted game of 6 actions (as Space Invaders) without FIRE, on the course's stack."""
    six = ["NOOP", "UP", "DOWN", "UPLEFT", "DOWNLEFT", "UPRIGHT"]
    emulator = FakeAtariEnv(action_meanings=six, render_mode=render_mode, lives=1,
                            life_loss_frames=(4000,))  # fmt: skip
    return wrap_atari(emulator, clip_reward=False, noop_max=0)


def test_the_play_stops_at_its_cpu_cap_and_scores_the_finished_games():
    """A cap of 0.3 s of CPU: the games finished by then are the score and the reason says
    so; a cap too small for any game is no score, with the reason."""
    long_games = protocol(games=3, games_at_once=1, max_agent_steps=400, actions="greedy")
    played = play_agent(_reference_layers(), long_games, AgentLimits(cpu_seconds=0.3),
                        seeds=[1, 2, 3], make_env=_fake)  # fmt: skip
    assert played.capped.startswith("capped at 0.3 s of CPU"), played
    if played.result is not None:
        assert 0 < len(played.result.games) < 3
    none = play_agent(_reference_layers(), long_games, AgentLimits(cpu_seconds=0.0),
                      seeds=[1, 2, 3], make_env=_fake)  # fmt: skip
    assert none.result is None and "before any game finished" in none.failure


def _denormals(array: np.ndarray) -> bool:
    return bool(np.any((array != 0) & (np.abs(array) < np.finfo(np.float32).tiny)))


def test_weights_that_overflow_or_drive_the_network_into_denormals_cannot_break_the_play(
    monkeypatch,
):
    """Weights that make the network's logits overflow float32 (from a bundle they cannot: its
    float16 weights stay under it, by a factor of two; the grader's side holds anyway): a note,
    no exception. Weights of 3e-10 drive the logits into float32's denormal range (slow on a
    CPU) where nothing flushes them; in the play, which sets one torch thread and flushes
    denormal numbers to zero in its own thread, none is left."""
    import autograder.core.agent_play.verification as verification

    short = protocol(games=1, max_agent_steps=20)
    huge = [(np.full_like(w, 1e30), np.full_like(b, 1e30)) for w, b in _reference_layers()]
    played = play_agent(huge, short, seeds=[1], make_env=_fake)
    assert played.result is None and "not finite" in played.failure
    tiny = [(np.sign(w) * np.float32(3e-10), np.zeros_like(b)) for w, b in _reference_layers()]
    frames = fixtures.random_frames(4, 0)
    assert _denormals(verification.NatureDQN(tiny, dtype=torch.float32)(frames)[0])
    seen = []

    class Spy(verification.NatureDQN):
        def __call__(self, obs, values=True):
            logits, value = super().__call__(obs, values)
            seen.append((torch.get_num_threads(), _denormals(logits)))
            return logits, value

    monkeypatch.setattr(verification, "NatureDQN", Spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # not one (the suite's workers run on one): the play must set it
    try:
        played = play_agent(tiny, short, seeds=[1], make_env=_fake)
    finally:
        torch.set_num_threads(before)
    assert played.result is not None and seen and all(seen_ == (1, False) for seen_ in seen)


def test_no_agent_a_refused_one_or_another_network_is_a_note_before_anything_runs():
    """No bundle; a bundle with a non-finite weight; an agent of another game; weights that are
    not the course's network: each a note, nothing played."""
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    found = handed_in(nb)
    assert not found.playable and "no saved agent" in found.note
    report = verify_agent(found, None, None)
    assert report.verified is None and "no saved agent" in report.note
    bundle = _bundle()
    broken = copy.deepcopy(bundle)
    broken["tensors"][0]["shape"] = [10**9]
    assert "refused" in handed_in(_with_agent(broken)).note
    other = handed_in(_with_agent({**bundle, "env_id": "BreakoutNoFrameskip-v4"}))
    assert "Breakout" in other.note and other.weights is not None
    bigger = nn.Sequential(nn.Linear(3136, 512), nn.Linear(512, 6))
    odd = handed_in(_with_agent(pack_agent(bigger.state_dict(), GAME, 6, {"score": 1.0})))
    assert "not the course's network" in odd.note and "(32, 4, 8, 8)" in odd.note
    report = verify_agent(odd, {}, {})
    assert report.verified is None and report.digest and report.note == odd.note


def test_the_agent_is_found_in_the_output_or_beside_the_notebook(tmp_path):
    bundle = _bundle()
    assert find_agent(_with_agent(bundle))[1] == "the notebook's output"
    bare = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    assert find_agent(bare, tmp_path) == (None, "")
    (tmp_path / AGENT_FILE).write_text(json.dumps(bundle))
    found, where = find_agent(bare, tmp_path)
    assert where == AGENT_FILE and unpack_agent(found).digest == unpack_agent(bundle).digest
    nested = ("[" * 4096 + "]" * 4096).encode()  # a RecursionError in json, not a crash
    assert find_agent(bare, agent_file=nested) == (None, f"{AGENT_FILE} (RecursionError)")


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
