"""Misbehaving submissions, graded through the real ``nbgrader autograde``.

Each submission packs several independent misbehaviours that hit different parts, so that a
few nbgrader runs check that every misbehaviour costs points in its own part only:

* the tiny notebook (``tests/submissions/tiny.py``, seconds): an endless loop (cell timeout),
  a stderr flood from a thread, a deleted, a duplicated and an edited locked test cell, a syntax
  error, and code that overwrites the gradebook and the autograder's files;
* the course notebook (``tests/submissions/course.py``, real ROMs, about a minute): an exception,
  ``sys.exit()``, a stderr flood, monkeypatched numpy/torch comparisons, a wrong part, gradebook
  sabotage, next to the reference graded twice (same scores both times).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.collect import Submission
from autograder.pipeline import Grader, grade_many
from tests.submissions.course import MISBEHAVING, SOURCE, course_submission
from tests.submissions.tiny import MISBEHAVING_SCORES, misbehaving_submission, tiny_source

RELEASE = SOURCE.parents[1] / "notebooks" / "a2c.ipynb"  # the untouched student notebook


def test_tiny_misbehaviours_cost_only_their_own_part(tmp_path: Path) -> None:
    """Is every part of the misbehaving tiny notebook scored as if the others were fine?"""
    nbformat.write(tiny_source(), tmp_path / "source.ipynb")
    nbformat.write(misbehaving_submission(), tmp_path / "mallory.ipynb")
    with Grader(tmp_path / "source.ipynb", timeout=5, workdir=tmp_path / "work") as grader:
        result = grader.grade(tmp_path / "mallory.ipynb")
    assert {key: part.score for key, part in result.parts.items()} == MISBEHAVING_SCORES
    assert result.max_total == 10.0 and result.manual == {"discussion": 1.0}
    feedback = {key: part.feedback for key, part in result.parts.items()}
    assert "CellTimeoutError" in feedback["add"]  # the endless loop was stopped
    assert feedback["mul"] == "testing mul\nmul: PASS"  # stderr from the thread was dropped
    assert feedback["sub"] == "testing sub\nsub: PASS"  # the deleted test cell was restored
    assert "NameError" in feedback["div"]  # the edited "4.0" was replaced by the real test
    notes = " ".join(result.notes)
    assert "restored deleted cells: test_sub" in notes and "test_mul" in notes
    # The gradebook was restored (scores were saved); the changed autograder file is flagged.
    assert result.status.startswith("tampered") and "autograder/hidden.py" in notes


@pytest.mark.rom
@pytest.mark.slow
def test_course_notebook_misbehaviours_and_determinism(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Are the course notebook's misbehaving parts scored apart, and the reference twice alike?

    Also: does the untouched student release score zero on every autograded part?
    """
    nbformat.write(course_submission(), tmp_path / "ref.ipynb")
    nbformat.write(course_submission(**MISBEHAVING), tmp_path / "bad.ipynb")
    subs = [
        Submission("alice", tmp_path / "ref.ipynb", 0.0),
        Submission("bob", tmp_path / "ref.ipynb", 0.0),
        Submission("mallory", tmp_path / "bad.ipynb", 0.0),
        Submission("idle", RELEASE, 0.0),
    ]
    monkeypatch.setenv("A2C_GRADER_TIME_SCALE", "3")  # a shared, loaded machine: no flaky timeouts
    with Grader(SOURCE) as grader:
        results = grade_many(
            grader, subs, tmp_path / "out", jobs=2, progress=False, histogram=False, feedback=False
        )
    by_student = {result.student: result for result in results}
    alice, bob, mallory, idle = (by_student[name] for name in ("alice", "bob", "mallory", "idle"))
    assert alice.status == bob.status == mallory.status == "graded", [r.notes for r in results]
    assert idle.status == "graded" and set(idle.parts) == set(alice.parts)
    assert {key: part.score for key, part in idle.parts.items()} == dict.fromkeys(idle.parts, 0.0)
    assert alice.total == 14.0 and alice.max_total == 12.0  # gae: 2 bonus points
    assert alice.as_dict() == bob.as_dict()  # scores and feedback: grading is deterministic
    scores = {key: part.score for key, part in mallory.parts.items()}
    full = {key: part.max for key, part in alice.parts.items()}
    expected_full = ("model", "compute_value_targets", "a2c", "gae")
    assert {key: scores[key] for key in expected_full} == {key: full[key] for key in expected_full}
    assert scores["policy"] == 0.0 and "RuntimeError" in mallory.parts["policy"].feedback
    assert 0.0 < scores["merge_time_batch"] < full["merge_time_batch"]
    assert "time-major" in mallory.parts["merge_time_batch"].feedback
