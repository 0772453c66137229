"""The course notebooks: is the release a fresh build, free of solutions, and do both notebooks run?

The executing tests use real ROMs and a kernel (``rom`` and ``slow``); the training cell shrinks
to a few seconds because ``A2C_KIT_QUICK=1``. They run a notebook as a user does after the
README's install: Jupyter starts the kernel in the notebook's own folder, with no ``PYTHONPATH``.
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

from autograder.core.package_digest import NOTEBOOK_OUTPUTS
from course_lib.saved_agent import AGENT_MIME, unpack_agent
from solutions import build_notebooks as bn

ROOT = Path(__file__).resolve().parent.parent
SOURCE, RELEASE = bn.SOURCE_NOTEBOOK, bn.RELEASE_NOTEBOOK
ENV_TOUR = ROOT / "notebooks" / "00_environments.ipynb"
PARTS = ("model", "policy", "compute_value_targets", "merge_time_batch", "a2c", "gae")


def _cells(path: Path) -> dict[str, nbformat.NotebookNode]:
    return _cells_of(nbformat.read(path, as_version=4))


def _cells_of(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if "nbgrader" in c.metadata}


def _execute(path: Path, allow_errors: bool) -> nbformat.NotebookNode:
    """Run ``path`` top to bottom as Jupyter's *Run All* does: kernel in the notebook's folder.

    The kernel inherits this process's environment, less ``PYTHONPATH``, plus ``A2C_KIT_QUICK=1``.
    Files the notebook writes into its folder (plots, video) are removed afterwards.
    """
    nb = nbformat.read(path, as_version=4)
    folder = path.parent
    before = set(folder.iterdir())
    old = {key: os.environ.get(key) for key in ("A2C_KIT_QUICK", "PYTHONPATH")}
    os.environ["A2C_KIT_QUICK"] = "1"
    os.environ.pop("PYTHONPATH", None)
    try:
        client = NotebookClient(
            nb, timeout=240, kernel_name="python3", allow_errors=allow_errors,
            resources={"metadata": {"path": str(folder)}},
        )  # fmt: skip
        client.execute()
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        nb.metadata["written_files"] = sorted(p.name for p in set(folder.iterdir()) - before)
        for new in set(folder.iterdir()) - before:
            if new.is_file():
                new.unlink()
    return nb


# ------------------------------------------------------------------ build and release
@pytest.mark.slow
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


def test_setup_cell_and_badge_carry_the_student_repository_url():
    """Is STUDENT_REPO_URL written into the setup cell and the Colab badge of both notebooks?"""
    for path in (SOURCE, RELEASE):
        nb = nbformat.read(path, as_version=4)
        assert f'STUDENT_REPO_URL = "{bn.STUDENT_REPO_URL}"' in _cells(path)["setup"].source
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
    """Is a non-GitHub STUDENT_REPO_URL refused with a message that shows the expected form?"""
    assert bn.colab_url("https://github.com/o/r.git").endswith(
        "github/o/r/blob/main/notebooks/a2c.ipynb"
    )
    with pytest.raises(ValueError, match="https://github.com/OWNER/REPO"):
        bn.colab_url("https://example.org/course")


def test_notebook_loop_benchmark_times_the_notebooks_own_part_7_cell(tmp_path):
    """Does benchmarks/notebook_loop.py run the solution notebook's cells unchanged, part 7's
    with only the step budget inserted (not a copy of the loop), and stop on a notebook whose
    part 7 cell it cannot budget?"""
    from benchmarks.notebook_loop import BEFORE_TRAIN, benchmark_notebook

    cells = _cells(SOURCE)
    sources = [cell.source for cell in benchmark_notebook(SOURCE, 1234).cells]
    assert sources[: len(BEFORE_TRAIN)] == [cells[key].source for key in BEFORE_TRAIN]
    budgeted = [s for s in sources if "TOTAL_STEPS = 1234\n" in s]
    assert len(budgeted) == 1
    assert budgeted[0].replace("TOTAL_STEPS = 1234\n", "", 1) == cells["train"].source
    assert budgeted[0].index("TOTAL_STEPS = 1234") < budgeted[0].index("n_updates = math.ceil")
    broken = nbformat.read(SOURCE, as_version=4)
    for cell in broken.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "train":
            cell.source = cell.source.replace("n_updates = math.ceil(", "n_updates = round(")
    nbformat.write(broken, tmp_path / "broken.ipynb")
    with pytest.raises(SystemExit, match="part 7 cell has no line"):
        benchmark_notebook(tmp_path / "broken.ipynb", 1234)


# ------------------------------------------------------------------ execution
@pytest.mark.slow
@pytest.mark.rom
def test_solution_notebook_runs_as_a_self_learner_runs_it(tmp_path):
    """Does solutions/a2c.ipynb run top to bottom, hidden tests included, as *Run All* runs it?

    The self-learner's path: the README's install, ``jupyter lab`` in the checkout, the kernel in
    ``solutions/``, no ``PYTHONPATH`` (so ``import autograder`` must come from the install).
    nbclient executes it once; nbgrader's own Validator (without re-executing) then checks that
    every graded cell scores full points, which is what ``nbgrader validate`` does after its
    execution step.
    """
    nb = _execute(SOURCE, allow_errors=True)
    errors = [
        (c.metadata.get("nbgrader", {}).get("grade_id"), o.ename, o.evalue)
        for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]  # fmt: skip
    assert errors == []
    executed = tmp_path / "a2c.ipynb"
    nbformat.write(nb, executed)
    results = Validator(preprocessors=[]).validate(str(executed))
    assert results == {}, results
    written = nb.metadata["written_files"]
    # A grader running beside this notebook must not take its outputs for a change to its files.
    assert all(name.endswith(NOTEBOOK_OUTPUTS) for name in written), written
    assert "a2c_agent.mp4" in written or "a2c_agent.gif" in written, written
    # The trained agent travels twice: the file beside the notebook and the cell's output.
    assert "a2c_agent.json" in written
    (saved,) = [
        o.data[AGENT_MIME]
        for o in _cells_of(nb)["save_agent"].outputs
        if AGENT_MIME in o.get("data", {})
    ]
    agent = unpack_agent(saved)
    assert agent.n_actions == 6 and agent.evaluation["games"] == 2 and agent.claimed["steps"] > 0


@pytest.mark.slow
@pytest.mark.rom
def test_release_fails_at_the_first_todo_and_passes_inverted_validation(tmp_path):
    """Does the untouched release stop at the first stub with NotImplementedError and fail every test?"""
    nb = _execute(RELEASE, allow_errors=True)
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
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    copy = tmp_path / "a2c.ipynb"
    copy.write_bytes(RELEASE.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", "--invert", str(copy)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NOTEBOOK PASSED" not in result.stdout and "Success!" in result.stdout


@pytest.mark.slow
@pytest.mark.rom
def test_environment_tour_runs():
    """Does the ungraded environment tour run top to bottom without errors?"""
    nb = _execute(ENV_TOUR, allow_errors=False)
    assert any(
        o.output_type == "display_data"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
