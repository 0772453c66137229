"""Does the hidden grading give the reference full marks, and every corpus answer its due?

``run_part`` probes and judges in this process (no notebook, no sandbox: the same probes and
judges as grading). The corpus of buggy and valid answers lives in ``tests/buggy_parts.py``;
each entry says which sub-checks must fail.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from autograder.core.judging import grade_part, judge_part, make_plan, run_part
from autograder.core.judging.parts import PART_KEYS, PART_NAMES, part_module, subchecks
from autograder.sandboxed.grading_runtime.harness import guarded
from course_lib.checks.properties import chi_square_p_value
from solutions import reference
from tests.answer_lines import answer_lines_in
from tests.buggy_parts import CORPUS

REFERENCE = {key: getattr(reference, name) for key, name in PART_NAMES.items()}


@pytest.mark.slow
@pytest.mark.parametrize("part_key", PART_KEYS)
def test_reference_gets_full_marks(part_key, capsys):
    """Does the reference pass every sub-check of its part, with nothing on stderr?"""
    score = grade_part(part_key, REFERENCE[part_key], 3)
    out, err = capsys.readouterr()
    assert score == 3.0 and type(score) is float, out
    assert err == ""
    assert out.count("PASS") == len(subchecks(part_key)) and "FAIL" not in out


#: The corpus is judged on the cases of one seed, so a verdict that depends on the cases (a value
#: head with a ReLU gives a right batch of one when that one value is positive) stays fixed.
CORPUS_SEED = 20261124


@pytest.mark.slow
@pytest.mark.parametrize("entry", CORPUS, ids=lambda entry: entry.id)
def test_corpus_entry(entry):
    """Does each answer fail exactly the sub-checks it should, with a useful message that quotes
    no line of a working answer?"""
    scale = 1.0 if entry.seconds is None else entry.seconds / 10
    result = run_part(entry.part, entry.candidate, 10, scale=scale, seed=CORPUS_SEED)
    failed = {sub.key for sub in result.subresults if not sub.passed}
    messages = "\n".join(f"{s.key}: {s.message}" for s in result.subresults if not s.passed)
    assert failed == set(entry.fails), messages
    weights = {check.key: check.weight for check in subchecks(entry.part)}
    expected = (
        10 * sum(w for k, w in weights.items() if k not in entry.fails) / sum(weights.values())
    )
    assert result.score == pytest.approx(expected, abs=1e-5)
    assert entry.feedback in messages, result.feedback()
    assert answer_lines_in(messages) == [], messages


def test_corpus_covers_every_part():
    """Has every part at least one valid alternative and two bugs in the corpus?"""
    for part in PART_KEYS:
        entries = [entry for entry in CORPUS if entry.part == part]
        assert sum(not entry.fails for entry in entries) >= 1, part
        assert sum(bool(entry.fails) for entry in entries) >= 2, part


@pytest.mark.slow
def test_corpus_sources_are_notebook_ready():
    """Can an entry's source be executed with the notebook's imports alone?"""
    for entry in CORPUS:
        namespace = {"np": np, "torch": torch, "nn": torch.nn, "F": torch.nn.functional}
        exec(compile(entry.source(), entry.id, "exec"), namespace)
        assert PART_NAMES[entry.part] in namespace
        if entry.part == "model" and entry.seconds is None and entry.scenario != "stub":
            namespace["make_model"](4)  # builds: every helper class it needs is defined


def test_stub_scores_zero_and_grading_is_deterministic(capsys):
    """Does a NotImplementedError stub score 0.0, and the same answer the same twice?"""
    stub = next(e for e in CORPUS if e.id == "compute_value_targets-stub")
    assert grade_part(stub.part, stub.candidate, 2) == 0.0
    buggy = next(e for e in CORPUS if e.id == "compute_value_targets-ignores_resets")
    first, second = (run_part(buggy.part, buggy.candidate, 2, seed=7) for _ in range(2))
    assert first.score == second.score and first.feedback() == second.feedback()
    capsys.readouterr()


def test_grading_leaves_the_callers_state_alone(capsys):
    """Are the notebook's RNG states and grad mode the same after grading?"""
    torch.manual_seed(5)
    np.random.seed(5)
    torch.set_grad_enabled(False)
    try:
        grade_part("merge_time_batch", REFERENCE["merge_time_batch"], 1)
        assert not torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)
    after = (torch.rand(1).item(), np.random.rand())
    torch.manual_seed(5)
    np.random.seed(5)
    assert after == (torch.rand(1).item(), np.random.rand())
    capsys.readouterr()


def test_nothing_reaches_stderr(capfd):
    """Is a warning or a C-level write to stderr from student code kept off stderr?"""

    class Noisy(reference.MergeTimeBatch):
        def __call__(self, trajectory):
            warnings.warn("a student warning", UserWarning, stacklevel=1)
            print("to python stderr", file=sys.stderr)
            import os

            os.write(2, b"to fd 2\n")
            super().__call__(trajectory)

    assert grade_part("merge_time_batch", Noisy, 1) == 1.0
    out, err = capfd.readouterr()
    assert err == "" and "PASS" in out


def test_guarded_never_raises_and_times_out():
    """Does guarded turn exceptions, sys.exit and endless loops into failed records?"""

    def loop():
        while True:
            pass

    def exits():
        raise SystemExit(3)

    start = time.perf_counter()
    record = guarded(loop, 0.2)
    assert not record["ok"] and record["timed_out"] and "did not finish" in record["error"]
    assert time.perf_counter() - start < 5
    record = guarded(exits, 1)
    assert not record["ok"] and "SystemExit" in record["error"]
    record = guarded(lambda: 1 / 0, 1)
    assert "ZeroDivisionError" in record["error"] and "line" in record["error"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_step_timeout_that_a_finaliser_swallows_fires_again():
    """Python ignores an exception raised in a ``__del__`` (or a garbage collection's weakref
    callback): a step whose limit passes while one runs must still be stopped on its CPU time,
    not only by the wall clock (WALL_CLOCK_FACTOR times later) or the grader from outside."""

    class SlowFinaliser:
        def __del__(self):
            end = time.thread_time() + 0.6
            while time.thread_time() < end:  # the 0.3 s limit passes in here
                pass

    def step():
        SlowFinaliser()  # finalised at once: the first StepTimeout is raised, and ignored, in it
        while True:
            pass

    start = time.thread_time()
    record = guarded(step, 0.3)
    used = time.thread_time() - start
    assert not record["ok"] and record["timed_out"], record
    assert used < 0.9, f"stopped after {used:.2f} s of CPU: the limit fired once only"


def test_judging_refuses_observations_the_probes_do_not_write():
    """Is a forged record (passing claims, no real observation) worth nothing, and flagged?"""
    plan = make_plan(3)
    forged = {
        step["key"]: {"ok": True, "observation": {"passed": True}}
        for step in plan["parts"]["model"]
    }
    result = judge_part("model", forged, 1, plan)
    assert result.score == 0.0 and result.malformed
    assert all("unreadable result" in sub.message for sub in result.subresults)


def test_bad_author_input_is_a_value_error():
    """Does a wrong part key or points value (the author's mistake) raise ValueError?"""
    with pytest.raises(ValueError, match="Unknown part key 'polcy'"):
        grade_part("polcy", REFERENCE["policy"], 1)
    with pytest.raises(ValueError, match="points"):
        grade_part("policy", REFERENCE["policy"], -1)


def test_chi_square_p_value():
    """Is the p-value near 1 for exact counts and tiny for greedy counts?"""
    probs = np.array([0.5, 0.25, 0.25])
    assert chi_square_p_value(np.array([500, 250, 250]), probs) > 0.99
    assert chi_square_p_value(np.array([1000, 0, 0]), probs) < 1e-50


def test_feedback_is_one_line_per_subcheck(capsys):
    """Does the printed feedback hold a header and one PASS/FAIL entry per sub-check?"""
    stub = next(e for e in CORPUS if e.id == "a2c-stub")
    grade_part("a2c", stub.candidate, 4)
    out = capsys.readouterr().out
    assert out.startswith("Part 'a2c' (A2C): 0 / 4 points")
    assert out.count("  FAIL [") == len(subchecks("a2c"))


@pytest.mark.slow
def test_partial_credit_through_a_real_kernel(tmp_path):
    """In a Jupyter kernel, do nbgrader's rules read our float as the grade, with no stderr?

    The cell runs a looping answer (time limit via SIGALRM in the kernel's main thread) and a
    noisy one (a warning and a write to fd 2); ``determine_grade`` is nbgrader's own reader.
    """
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbgrader.utils import determine_grade

    cells = [
        "from autograder.core.judging import grade_part\n"
        "from tests.buggy_parts import CORPUS\n"
        "answers = {e.id: e.candidate for e in CORPUS}",
        "import os\nos.environ['A2C_GRADER_TIME_SCALE'] = '0.03'\n"
        "grade_part('compute_value_targets', answers['compute_value_targets-loops'], 2)",
        "import os, warnings\n"
        "class Noisy(answers['compute_value_targets-ignores_resets']):\n"
        "    def __call__(self, trajectory):\n"
        "        warnings.warn('student warning')\n"
        "        os.write(2, b'fd 2 noise')\n"
        "        super().__call__(trajectory)\n"
        "os.environ['A2C_GRADER_TIME_SCALE'] = '1'\n"
        "grade_part('compute_value_targets', Noisy, 2)",
    ]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    for cell in notebook.cells[1:]:
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 2, "grade_id": "g"}
    root = str(Path(__file__).resolve().parent.parent)
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": root}}
    ).execute()
    grades = [determine_grade(cell)[0] for cell in notebook.cells[1:]]
    assert grades == [0.0, 1.0]
    for cell in notebook.cells:
        assert all(out.get("name") != "stderr" for out in cell.outputs), cell.outputs


def test_feedback_speaks_course_words():
    """Is a property the code has never a FAIL (it says it waits for the part's values, naming
    them by title, not by check id), and are points shown to at most two decimals?"""
    entry = next(e for e in CORPUS if e.id == "merge_time_batch-env_major")
    result = run_part(entry.part, entry.candidate, 2, seed=CORPUS_SEED)
    text = result.feedback()
    held = [sub for sub in result.subresults if sub.held]
    assert held and all(not sub.passed for sub in held)  # earns nothing...
    for sub in held:  # ...and says why, in the titles students read
        line = next(line for line in text.splitlines() if sub.title[:40] in line)
        assert line.startswith("  NOT CREDITED YET ["), line
        assert "your code has this property" in sub.message
        assert '"rows are time-major' in sub.message
    for key in part_module(entry.part).GATE:
        assert f"'{key}'" not in text
    header = text.splitlines()[0]
    assert (
        header == f"Part 'merge_time_batch' (MergeTimeBatch): {round(result.score, 2):g} / 2 points"
    )
    assert len(header.split(":")[1].split("/")[0].strip().partition(".")[2]) <= 2
