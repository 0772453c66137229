"""The course's check of nbgrader cell metadata (``autograder.nbgrader.preprocessors.check_cell_metadata.CheckCellMetadata``):
nbgrader's own rules, each valid metadata checked once per process, a bad one refused every time."""

from __future__ import annotations

import copy

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader.nbgraderformat import ValidationError
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheck

from autograder.nbgrader.preprocessors.check_cell_metadata import CheckCellMetadata


def _meta(grade_id: str, **extra) -> dict:
    meta = {"grade": True, "solution": False, "locked": True, "points": 2, "schema_version": 3}
    return {**meta, "grade_id": grade_id, **extra}


def _notebook(*cells) -> object:
    return new_notebook(cells=list(cells))


GOOD = _notebook(
    new_code_cell("assert True", metadata={"nbgrader": _meta("test_a")}),
    new_code_cell("assert True", metadata={"nbgrader": _meta("test_b")}),
    new_markdown_cell("text"),
)
BAD = {
    "duplicate grade id": _notebook(
        new_code_cell("x", metadata={"nbgrader": _meta("test_a")}),
        new_code_cell("y", metadata={"nbgrader": _meta("test_a")}),
    ),
    "no points": _notebook(
        new_code_cell(
            "x", metadata={"nbgrader": {k: v for k, v in _meta("t").items() if k != "points"}}
        ),
    ),
    "points of the wrong type": _notebook(
        new_code_cell("x", metadata={"nbgrader": _meta("t", points="many")}),
    ),
    "markdown graded but not a solution": _notebook(
        new_markdown_cell("x", metadata={"nbgrader": _meta("t")}),
    ),
    "an old schema": _notebook(
        new_code_cell("x", metadata={"nbgrader": _meta("t", schema_version=1)}),
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_metadata_is_refused_every_time_as_nbgrader_refuses_it(name):
    for check in (NbgraderCheck(), CheckCellMetadata()):
        with pytest.raises(Exception):  # noqa: B017 - nbgrader's types differ per rule
            check.preprocess(copy.deepcopy(BAD[name]), {})
    # after the same metadata passed in a valid notebook, it is still refused here
    CheckCellMetadata().preprocess(copy.deepcopy(GOOD), {})
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017
            CheckCellMetadata().preprocess(copy.deepcopy(BAD[name]), {})


def test_valid_metadata_passes_again_and_leaves_the_notebook_as_it_was():
    for _ in range(2):
        nb = copy.deepcopy(GOOD)
        out, _ = CheckCellMetadata().preprocess(nb, {})
        assert out == GOOD


def test_a_corrupted_notebook_says_so():
    with pytest.raises(ValidationError, match="metadata may be corrupted"):
        CheckCellMetadata().preprocess(copy.deepcopy(BAD["duplicate grade id"]), {})
