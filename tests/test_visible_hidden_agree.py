"""Does every answer the hidden tests take points from fail its part's visible check?

A visible check that prints ``OK`` for code the grader then charges for tells the student the
part is done when it is not. Every entry of the bug corpus (``tests/buggy_parts.py``, whatever
it grows to) that fails a hidden sub-check is run here through the visible check its notebook
cell calls (the other parts are the reference, as the grader drives each part with fixtures),
on the check's own public inputs: the check must fail, with a message that names the idea and
quotes no line of a working answer (:mod:`tests.answer_lines`). Every valid alternative of the
corpus must pass it.
"""

from __future__ import annotations

import contextlib
import io
import signal

import pytest

from autograder.core.judging.parts import PART_KEYS
from course_lib import checks
from course_lib.checks import CheckFailed
from solutions import reference as ref
from tests.answer_lines import answer_lines_in
from tests.buggy_parts import CORPUS

pytestmark = pytest.mark.slow

#: Each part's visible check, called as the notebook's check cell calls it.
VISIBLE = {
    "model": checks.check_model,
    "policy": lambda Policy: checks.check_policy(Policy, ref.make_model),
    "compute_value_targets": checks.check_compute_value_targets,
    "merge_time_batch": checks.check_merge_time_batch,
    "a2c": lambda A2C: checks.check_a2c(A2C, ref.Policy, ref.make_model),
    "gae": checks.check_gae,
}

BUGS = [entry for entry in CORPUS if entry.fails]
VALID = [entry for entry in CORPUS if not entry.fails]


class _NeverEnds(BaseException):
    """The candidate ran past its CPU time: in a notebook the check would never print OK."""


@contextlib.contextmanager
def _cpu_limit(seconds: float | None):
    """Interrupt the candidate after ``seconds`` of CPU time (``None``: no limit). SIGVTALRM,
    so pytest-timeout's SIGALRM stays untouched; a BaseException, so no check catches it."""
    if seconds is None:
        yield
        return

    def interrupt(signum, frame):
        raise _NeverEnds

    previous = signal.signal(signal.SIGVTALRM, interrupt)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def test_every_part_of_the_corpus_has_a_visible_check():
    """Is there a visible check for every graded part, so no corpus entry goes unchecked?"""
    assert set(VISIBLE) == set(PART_KEYS)
    assert {entry.part for entry in CORPUS} <= set(VISIBLE)


@pytest.mark.parametrize("entry", BUGS, ids=lambda entry: entry.id)
def test_a_bug_the_hidden_tests_charge_for_fails_the_visible_check(entry):
    """Does the part's visible check fail (never print its last OK) on this buggy answer, with a
    hint that hands out no line of the answer?"""
    printed = io.StringIO()
    stopped = (CheckFailed, NotImplementedError)
    if entry.seconds is not None:  # an endless loop: the check never gets to say OK
        stopped = (*stopped, _NeverEnds)
    with pytest.raises(stopped) as failure, contextlib.redirect_stdout(printed):
        with _cpu_limit(entry.seconds):
            VISIBLE[entry.part](entry.candidate)
    assert answer_lines_in(str(failure.value)) == [], str(failure.value)


@pytest.mark.parametrize("entry", VALID, ids=lambda entry: entry.id)
def test_a_valid_alternative_passes_the_visible_check(entry):
    """Does correct-but-different code pass the visible check, as it gets full marks hidden?"""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        VISIBLE[entry.part](entry.candidate)
    lines = printed.getvalue().splitlines()
    assert lines and all(line.startswith("OK ") for line in lines), lines
