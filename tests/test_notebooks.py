"""The course notebooks: is the release a fresh build, free of solutions, and do both notebooks run?

The executing tests use real ROMs and a kernel (``rom`` and ``slow``); the training cell shrinks
to a few seconds because ``A2C_KIT_QUICK=1``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.validator import Validator

from solutions import build_notebooks as bn

ROOT = Path(__file__).resolve().parent.parent
SOURCE, RELEASE = bn.SOURCE_NOTEBOOK, bn.RELEASE_NOTEBOOK
ENV_TOUR = ROOT / "notebooks" / "00_environments.ipynb"
PARTS = ("model", "policy", "compute_value_targets", "merge_time_batch", "a2c", "gae")


def _cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    nb = nbformat.read(path, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def _execute(path: Path, tmp_path: Path, allow_errors: bool) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    env = {"A2C_KIT_QUICK": "1", "PYTHONPATH": str(ROOT)}
    old = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client = NotebookClient(
            nb, timeout=240, kernel_name="python3", allow_errors=allow_errors,
            resources={"metadata": {"path": str(tmp_path)}},
        )  # fmt: skip
        client.execute()
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb


# ------------------------------------------------------------------ build and release
def test_committed_notebooks_equal_a_fresh_build():
    """Do the committed solution and release notebooks equal what the builder makes now?"""
    problems = bn.check()
    assert problems == [], "\n".join(problems)


def test_solution_cells_hold_the_reference_regions_verbatim():
    """Is every part cell of the source exactly its region of reference.py?"""
    regions = bn.read_regions()
    cells = _cells(SOURCE)
    assert set(PARTS) | {"imports"} <= set(regions)
    for key, source in regions.items():
        assert cells[key].source == source
    for key in PARTS:
        meta = cells[key].metadata["nbgrader"]
        assert (meta["solution"], meta["grade"], meta["locked"]) == (True, False, False)
        test = cells[f"test_{key}"]
        assert (
            test.metadata["nbgrader"]["grade"] is True and test.metadata["nbgrader"]["points"] > 0
        )
        assert test.source.rstrip().splitlines()[-2].startswith(f'grade_part("{key}",')


def test_release_has_no_solution_and_no_autograder():
    """Does the student notebook hide every solution line, hidden test and autograder import?"""
    text = RELEASE.read_text()
    for marker in ("autograder", "BEGIN SOLUTION", "HIDDEN TESTS", "grade_part"):
        assert marker not in text
    released = _cells(RELEASE)
    for key, region in bn.read_regions().items():
        spans = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", region, flags=re.S)
        solution_lines = {
            line.strip() for span in spans for line in span.splitlines() if len(line.strip()) > 12
        }
        leaked = [line for line in solution_lines if line in released[key].source]
        assert leaked == [], f"solution lines of {key!r} in the release: {leaked}"
        if spans:
            assert "raise NotImplementedError()" in released[key].source
    nb = nbformat.read(RELEASE, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


def test_setup_cell_and_badge_carry_the_repository_url():
    """Is COURSE_REPO_URL written into the setup cell and the Colab badge of both notebooks?"""
    for path in (SOURCE, RELEASE):
        nb = nbformat.read(path, as_version=4)
        assert f'COURSE_REPO_URL = "{bn.COURSE_REPO_URL}"' in _cells(path)["setup"].source
        assert bn.colab_url() in nb.cells[0].source
        assert "apt-get" not in nbformat.writes(nb)


def test_sync_rejects_missing_regions_and_cells(tmp_path):
    """Does the builder refuse a region without a cell, and a malformed or unclosed region?"""
    nb = nbformat.read(SOURCE, as_version=4)
    with pytest.raises(ValueError, match="no cell with that grade_id"):
        bn.sync_notebook(nb, {**bn.read_regions(), "extra_part": "x = 1"})
    regions = bn.read_regions()
    del regions["policy"]
    with pytest.raises(ValueError, match=r"\['policy'\] have no region"):
        bn.sync_notebook(nb, regions)
    bad = tmp_path / "ref.py"
    bad.write_text("# %% [part: model]\nx = 1\n")
    with pytest.raises(ValueError, match="never closed"):
        bn.read_regions(bad)
    bad.write_text("# %% [part model]\nx = 1\n")
    with pytest.raises(ValueError, match="malformed marker"):
        bn.read_regions(bad)


def test_colab_url_validates_the_repository_address():
    """Is a non-GitHub COURSE_REPO_URL refused with a message that shows the expected form?"""
    assert bn.colab_url("https://github.com/o/r.git").endswith(
        "github/o/r/blob/main/notebooks/a2c.ipynb"
    )
    with pytest.raises(ValueError, match="https://github.com/OWNER/REPO"):
        bn.colab_url("https://example.org/course")


# ------------------------------------------------------------------ execution
@pytest.mark.slow
@pytest.mark.rom
def test_solution_notebook_runs_and_passes_nbgrader_validation(tmp_path):
    """Does the source run headless in quick mode, with every graded cell at full points?

    nbclient executes it once; nbgrader's own Validator (without re-executing) then checks the
    grade cells, which is what ``nbgrader validate`` does after its execution step.
    """
    nb = _execute(SOURCE, tmp_path, allow_errors=True)
    errors = [
        (c.metadata.get("nbgrader", {}).get("grade_id"), o.ename, o.evalue)
        for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]  # fmt: skip
    assert errors == []
    executed = tmp_path / "a2c.ipynb"
    nbformat.write(nb, executed)
    results = Validator(preprocessors=[]).validate(str(executed))
    assert results == {}, results
    assert (tmp_path / "a2c_agent.mp4").is_file() or (tmp_path / "a2c_agent.gif").is_file()


@pytest.mark.slow
@pytest.mark.rom
def test_release_fails_at_the_first_todo_and_passes_inverted_validation(tmp_path):
    """Does the untouched release stop at the first stub with NotImplementedError and fail every test?"""
    nb = _execute(RELEASE, tmp_path, allow_errors=True)
    first_error = next(
        (c, o)
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    )
    cell, output = first_error
    assert output.ename == "NotImplementedError"
    assert cell.metadata["nbgrader"]["grade_id"] == "check_model"
    executed = tmp_path / "release.ipynb"
    nbformat.write(nb, executed)
    assert Validator(preprocessors=[], invert=True).validate(str(executed)) == {}


@pytest.mark.slow
@pytest.mark.rom
def test_nbgrader_validate_cli_inverted_on_the_release(tmp_path):
    """Does the real ``nbgrader validate --invert`` accept the untouched release?"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    copy = tmp_path / "a2c.ipynb"
    copy.write_bytes(RELEASE.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", "--invert", str(copy)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NOTEBOOK PASSED" not in result.stdout and "Success!" in result.stdout


@pytest.mark.rom
def test_environment_tour_runs(tmp_path):
    """Does the ungraded environment tour run top to bottom without errors?"""
    nb = _execute(ENV_TOUR, tmp_path, allow_errors=False)
    assert any(
        o.output_type == "display_data"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
