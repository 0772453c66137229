"""Does a corpus answer get, through the sandbox, the verdict it gets in-process?

``tests/test_autograder_checks.py`` judges every entry of ``tests/buggy_parts.py`` in-process
(``run_part``: the same probes and judges). Here corpus entries are pasted into the solution
cells of the course notebook and graded the way an instructor grades a class: ``grade_many``
(``jobs=2``), the notebook run in the bubblewrap sandbox, the probe records judged by the
grader, the scores written to nbgrader's gradebook and read back.

Packing. Submission k holds, for each part, the k-th corpus entry of that part, or the reference
answer when the part has fewer entries; the probes run every part with fixtures, never with the
student's other parts, so each part's expected score is known on its own. The first ``PACKS``
submissions go through the sandbox (every part's first entries: valid, buggy and stub answers);
the whole corpus is judged in-process by ``test_autograder_checks.py``. The entries that never
finish (``Entry.seconds`` is set) are judged in-process only: in a notebook the visible check,
the graded cell and the training cell would each run to the cell timeout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from autograder.core.intake.collect import Submission
from autograder.core.isolation.bubblewrap import bwrap_works
from autograder.core.judging import run_part
from autograder.core.judging.parts import PART_KEYS, subchecks
from autograder.core.reports.grade_result import PartScore
from autograder.nbgrader.grader import Grader, grade_many
from tests.buggy_parts import CORPUS, PART_NAMES, Entry
from tests.submissions.course import SOURCE, corpus_source, course_submission

#: Entries graded in-process only: they never finish (see the module docstring).
IN_PROCESS_ONLY = tuple(entry for entry in CORPUS if entry.seconds is not None)
THROUGH_NBGRADER = tuple(entry for entry in CORPUS if entry.seconds is None)
PACKS = 3  #: submissions graded through the sandbox (about 30 s each on 2 cores)

_LINE = re.compile(r"^(PASS|FAIL|NOT CREDITED YET) \[[0-9.]+ pt\] (.*)$")


def pack(entries: Sequence[Entry]) -> list[dict[str, Entry]]:
    """Submission k -> {part key: the k-th entry of that part}; absent parts stay the reference."""
    by_part = {part: [entry for entry in entries if entry.part == part] for part in PART_KEYS}
    count = max(len(part_entries) for part_entries in by_part.values())
    return [
        {part: found[k] for part, found in by_part.items() if k < len(found)} for k in range(count)
    ]


def _squash(text: str) -> str:
    """``text`` without whitespace: the feedback is wrapped at 110 columns (textwrap.fill)."""
    return re.sub(r"\s+", "", text)


def parse_feedback(part: str, feedback: str) -> dict[str, tuple[bool, str]]:
    """Sub-check key -> (passed, message) from the text ``grade_part`` printed for ``part``.

    Raises AssertionError when the text does not hold one line per sub-check, in order, with
    the sub-check's title (the messages are compared without whitespace, see :func:`_squash`).
    """
    lines: list[str] = []
    for line in feedback.splitlines():
        if line.startswith(("  PASS [", "  FAIL [", "  NOT CREDITED YET [")):
            lines.append(line.strip())
        elif lines and line.startswith(" " * 9):  # a wrapped continuation of the line above
            lines[-1] += " " + line.strip()
    checks = subchecks(part)
    assert len(lines) == len(checks), f"{len(lines)} sub-check lines, {len(checks)} expected"
    parsed = {}
    for check, line in zip(checks, lines, strict=True):
        match = _LINE.match(line)
        assert match, f"not a sub-check line: {line!r}"
        body, title = _squash(match.group(2)), _squash(check.title)
        assert body.startswith(title), f"{check.key}: expected the title {check.title!r}: {line!r}"
        parsed[check.key] = (match.group(1) == "PASS", body[len(title) :].removeprefix("--"))
    return parsed


def expected_score(entry: Entry, points: float) -> float:
    """The score the corpus implies: the weights of the sub-checks that pass, out of ``points``."""
    weights = {check.key: check.weight for check in subchecks(entry.part)}
    passing = sum(weight for key, weight in weights.items() if key not in entry.fails)
    return points * passing / sum(weights.values())


def verdict_problems(entry: Entry | None, part: str, got: PartScore) -> list[str]:
    """What differs between a graded part and its expectation (``None``: the reference)."""
    try:
        parsed = parse_feedback(part, got.feedback)
    except AssertionError as error:
        return [f"unreadable feedback ({error})"]
    failed = {key for key, (passed, _) in parsed.items() if not passed}
    fails = entry.fails if entry is not None else frozenset()
    want = got.max if entry is None else expected_score(entry, got.max)
    problems = []
    if failed != set(fails):
        problems.append(f"failed sub-checks {sorted(failed)}, expected {sorted(fails)}")
    if got.score != pytest.approx(want, abs=1e-5):
        problems.append(f"score {got.score}, expected {want:g} of {got.max:g}")
    messages = "".join(message for passed, message in parsed.values() if not passed)
    if entry is not None and _squash(entry.feedback) not in messages:
        problems.append(f"the feedback does not contain {entry.feedback!r}")
    return problems


# ---------------------------------------------------------------------------- fast checks


def test_packing_grades_every_entry_once():
    """Is every finishing entry in exactly one submission, in as few submissions as possible?"""
    packed = pack(THROUGH_NBGRADER)
    placed = [entry.id for submission in packed for entry in submission.values()]
    assert sorted(placed) == sorted(entry.id for entry in THROUGH_NBGRADER)
    most = max(sum(entry.part == part for entry in THROUGH_NBGRADER) for part in PART_KEYS)
    assert len(packed) == most
    assert all(submission[part].part == part for submission in packed for part in submission)
    assert {entry.id for entry in IN_PROCESS_ONLY} == {"model-loops", "compute_value_targets-loops"}


def test_parse_feedback_reads_wrapped_lines():
    """Does the parser recover failed sub-checks and messages from real, wrapped feedback?"""
    entry = next(entry for entry in CORPUS if entry.id == "merge_time_batch-returns_new_dict")
    result = run_part(entry.part, entry.candidate, 2)
    text = result.feedback()
    assert any(line.startswith(" " * 9) for line in text.splitlines())  # some lines wrap
    parsed = parse_feedback(entry.part, text)
    assert {key for key, (passed, _) in parsed.items() if not passed} == set(entry.fails)
    for sub in result.subresults:
        assert parsed[sub.key][1] == ("" if sub.passed else _squash(sub.message))
    got = PartScore(result.score, 2.0, text)
    assert verdict_problems(entry, entry.part, got) == []
    wrong = PartScore(2.0, 2.0, text.replace("FAIL [", "PASS [", 1))
    assert len(verdict_problems(entry, entry.part, wrong)) == 2  # the sub-check and the score


@pytest.mark.slow
def test_corpus_sources_define_working_models():
    """Does every model answer's notebook source build a module, helper classes included?"""
    for entry in THROUGH_NBGRADER:
        if entry.part != "model" or entry.scenario == "stub":
            continue
        namespace = {"np": np, "torch": torch, "nn": torch.nn, "F": torch.nn.functional}
        exec(compile(corpus_source(entry.candidate, "make_model"), entry.id, "exec"), namespace)
        assert isinstance(namespace["make_model"](4), torch.nn.Module), entry.id


# ---------------------------------------------------------------------------- the sandbox


@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_corpus_through_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Do the packed corpus entries get, through the sandbox, their in-process verdicts?"""
    assert bwrap_works(), "bubblewrap is missing or cannot create namespaces"
    packed = pack(THROUGH_NBGRADER)[:PACKS]
    subs = []
    for k, submission in enumerate(packed):
        replace = {
            part: corpus_source(entry.candidate, PART_NAMES[part])
            for part, entry in submission.items()
        }
        path = tmp_path / f"pack{k:02d}.ipynb"
        nbformat.write(course_submission(replace=replace), path)
        subs.append(Submission(f"pack{k:02d}", path, 0.0))
    monkeypatch.setenv("A2C_GRADER_TIME_SCALE", "3")  # a shared, loaded machine: no flaky timeouts
    with Grader(SOURCE) as grader:
        results = grade_many(
            grader, subs, tmp_path / "out", jobs=2, progress=False, histogram=False, feedback=False
        )
    by_student = {result.student: result for result in results}
    problems, checked = [], []
    for k, submission in enumerate(packed):
        result = by_student[f"pack{k:02d}"]
        if result.status != "graded" or set(result.parts) != set(PART_KEYS):
            problems.append(
                f"pack{k:02d}: status {result.status!r}, parts {sorted(result.parts)}, "
                f"notes {result.notes}"
            )
            continue
        for part in PART_KEYS:
            entry = submission.get(part)
            name = entry.id if entry is not None else f"{part}-reference"
            checked.append(name)
            for problem in verdict_problems(entry, part, result.parts[part]):
                feedback = result.parts[part].feedback
                problems.append(f"{name} (pack{k:02d}): {problem}\n{feedback}")
    assert not problems, "\n\n".join(problems)
    graded = {name for name in checked if not name.endswith("-reference")}
    assert graded == {entry.id for submission in packed for entry in submission.values()}
