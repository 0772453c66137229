"""Gradescope, PrairieLearn and container mode, run as the platforms run them.

The fast tests read the bundles and the results files the front ends write. The slow ones (root
only, as on CI) build what an instructor uploads, run Gradescope's ``setup.sh`` in a fresh venv
(made from a Python every user can reach, as a platform's image has), and run each platform's
entry point on a folder laid out like the platform's, with a ``bwrap`` first on ``PATH`` that
fails the way it fails under Docker's seccomp profile: the grader must fall back to container
mode (:mod:`autograder.core.isolation.container`) and grade exactly as ``grade`` does with
bubblewrap. The hostile corpus (``tests/submissions/hostile.py``) is graded in container mode
too, from the platform's closed copy of the course.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.core.isolation import SandboxUnavailable, bubblewrap, container
from autograder.core.reports.grade_result import GradeResult, PartScore
from autograder.platforms.bundle_contents import RELEASE_NAME, grading_requirements, kit_files
from autograder.platforms.gradescope.bundle import build_zip
from autograder.platforms.gradescope.run_autograder import gradescope_results
from autograder.platforms.one_notebook import find_notebook
from autograder.platforms.prairielearn.bundle import ENTRYPOINT, write_bundle
from autograder.platforms.prairielearn.run_grader import prairielearn_results
from autograder.sandboxed.bin import landlock
from tests.submissions.course import course_submission
from tests.submissions.hostile import ATTACKS, COSTLY, IPC_KEY, hostile_submission

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "notebooks" / "a2c.ipynb"
FULL = {"model": 1, "policy": 2, "compute_value_targets": 3, "merge_time_batch": 2, "a2c": 4}
BONUS = {"gae": 2}
DOCKER_BWRAP = (
    "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
)
TOKEN = f"a2c-platform-{uuid.uuid4().hex[:12]}"
needs_root = pytest.mark.skipif(
    os.getuid() != 0, reason="container mode runs the notebook as another user: root only (CI)"
)


# ---------------------------------------------------------------------------- fast: the files
def _result(status: str = "graded") -> GradeResult:
    result = GradeResult("s", status=status, isolation="container")
    for key, points in {**FULL, **BONUS}.items():
        result.parts[key] = PartScore(points / 2, points, f"Part '{key}': feedback")
    result.manual = {"discussion": 3.0}
    return result


def test_the_gradescope_zip_holds_what_gradescope_runs(tmp_path, capsys):
    names = build_zip(tmp_path / "autograder.zip")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        requirements = archive.read("requirements.txt").decode()
        setup = archive.read("setup.sh").decode()
    assert names[:2] == ["setup.sh", "run_autograder"]
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & 0o111 and stat.S_ISREG(modes[script]), script
    assert {"solutions/reference.py", "solutions/a2c.ipynb", "autograder/core/judging/parts/model.py"} <= set(
        names
    )
    assert "course_lib/nature_dqn.py" in names and not any("__pycache__" in n for n in names)
    # The release the platform grades against (nbgrader's generate_assignment at build time):
    # the autograded cells with their points, stubs, no hidden test.
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        release = nbformat.reads(archive.read(RELEASE_NAME).decode(), as_version=4)
    graded = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(graded) >= 6 and "BEGIN HIDDEN TESTS" not in nbformat.writes(release)
    assert "torch==" in requirements and "nbgrader==" in requirements
    assert "pytest" not in requirements and "stable-baselines3" not in requirements
    assert "selenium" not in requirements
    assert requirements == grading_requirements()
    assert "python3 -m pip install" in setup and "bubblewrap" in setup
    with pytest.raises(ValueError, match=r"\.zip"):
        build_zip(tmp_path / "autograder.tar")
    assert cli.main(["gradescope", "--out", str(tmp_path / "cli.zip")]) == 0
    assert zipfile.ZipFile(tmp_path / "cli.zip").namelist() == names
    printed = capsys.readouterr().out
    assert f"cli.zip: {len(names)} files; upload it as the assignment's autograder" in printed
    # what the instructor guide says the command prints: the same line (the count moves as files
    # are added, so the guide's figure is checked for a plausible size, not to the file)
    guide = (Path(cli.__file__).parent / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"# autograder\.zip: (\d+) files; upload it as the assignment's autograder", guide)
    assert shown, "the guide shows what `gradescope` prints"
    assert abs(int(shown.group(1)) - len(names)) <= 25, (shown.group(1), len(names))


def test_a_solution_notebook_run_in_place_is_left_out_of_the_bundles(tmp_path):
    """An instructor who ran solutions/a2c.ipynb in its folder has its trained agent, plot and
    video there: no bundle carries them (nor a training-only requirement)."""
    for name in ("solutions/reference.py", "solutions/a2c_agent.json", "solutions/a2c_agent.mp4",
                 "solutions/a2c_training.png", "autograder/cli.py", "course_lib/__init__.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    for name in ("pyproject.toml", "README.md"):
        (tmp_path / name).write_text("x")
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\ntensorboard==2.21.0\n")
    assert sorted(kit_files(tmp_path)) == [
        "README.md", "autograder/cli.py", "course_lib/__init__.py", "pyproject.toml",
        "solutions/reference.py",
    ]  # fmt: skip
    assert grading_requirements(tmp_path) == "torch==2.13.0\n"


def test_the_prairielearn_bundle_holds_question_grader_and_image(tmp_path):
    out = tmp_path / "a2c_grader"
    names = write_bundle(out, "me/a2c-grader:1").names
    info = json.loads((out / "question" / "info.json").read_text())
    assert info["gradingMethod"] == "External" and info["singleVariant"] is True
    options = info["externalGradingOptions"]
    assert options["enabled"] and options["image"] == "me/a2c-grader:1"
    assert options["entrypoint"] == ENTRYPOINT == "/grade/serverFilesCourse/a2c_grader/run_grader"
    assert options["serverFilesCourse"] == ["a2c_grader/"] and options["enableNetworking"] is False
    assert 'file-names="a2c.ipynb"' in (out / "question" / "question.html").read_text()
    dockerfile = (out / "image" / "Dockerfile").read_text()
    assert "bubblewrap" in dockerfile and "COPY requirements.txt" in dockerfile
    assert "solutions" not in dockerfile  # the image is public: no course file in it
    assert os.stat(out / "run_grader").st_mode & 0o111
    assert "kit/solutions/reference.py" in names and "kit/autograder/core/judging/parts/a2c.py" in names
    assert f"kit/{RELEASE_NAME}" in names
    other = tmp_path / "other"
    (other / "question").mkdir(parents=True)
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="new or empty folder, or the folder of an earlier build"):
        write_bundle(other, "me/a2c-grader:1")
    assert (other / "notes.txt").read_text() == "mine"  # never emptied


def test_a_rebuilt_prairielearn_bundle_keeps_its_question_uuid(tmp_path, capsys):
    """PrairieLearn knows a question by its uuid: rebuilding into the same folder after a fix,
    as an instructor does, must give the same question, and the placeholder image is refused."""
    out = tmp_path / "a2c_grader"
    image = ["--image", "me/a2c-grader:1"]
    assert cli.main(["prairielearn", "--out", str(out), *image]) == 0
    first = json.loads((out / "question" / "info.json").read_text())["uuid"]
    assert f"question uuid {first} (new" in capsys.readouterr().out
    stale = out / "kit" / "autograder" / "gone.py"  # a file the next build no longer has
    stale.write_text("x")
    assert cli.main(["prairielearn", "--out", str(out), *image]) == 0
    assert json.loads((out / "question" / "info.json").read_text())["uuid"] == first
    assert f"question uuid {first} (kept" in capsys.readouterr().out
    assert not stale.exists() and (out / "kit" / "solutions" / "reference.py").is_file()
    # the uuid the course's questions/a2c/info.json already has, into a new folder
    fresh = tmp_path / "elsewhere"
    assert cli.main(["prairielearn", "--out", str(fresh), *image, "--uuid", first]) == 0
    assert json.loads((fresh / "question" / "info.json").read_text())["uuid"] == first
    other = "0b7e1f0e-6f4e-4f43-9d7c-2d6f3e1b9a11"
    assert cli.main(["prairielearn", "--out", str(out), *image, "--uuid", other]) == 2
    assert "differs from the uuid of the question built in" in capsys.readouterr().err
    assert json.loads((out / "question" / "info.json").read_text())["uuid"] == first
    for wrong in ([], ["--image", "YOUR_DOCKERHUB_USER/a2c-grader:latest"]):
        assert cli.main(["prairielearn", "--out", str(tmp_path / "placeholder"), *wrong]) == 2
        assert "give the name of the grading image you build and push" in capsys.readouterr().err
        assert not (tmp_path / "placeholder").exists()


def gradescope_shows(results: dict) -> dict[str, str]:
    """Test name -> how Gradescope shows it, read as its autograder specification documents
    ``results.json``: ``status`` is optional, ``"passed"`` or ``"failed"``; without it a test
    passes at full marks, and a test without a score is information (the verified agent's)."""
    shown = {}
    for test in results["tests"]:
        status = test.get("status")
        assert status in (None, "passed", "failed"), test
        if status is None and "score" not in test:  # no points at all: a line of information
            status = "information"
        elif status is None:
            status = "passed" if test["score"] >= test.get("max_score", 0) else "failed"
        shown[test["name"]] = status
    return shown


def prairielearn_shows(results: dict) -> dict[str, str]:
    """Test name -> how PrairieLearn's ``pl-external-grader-results`` element shows it: a test
    worth 0 of 0 as information, points below ``max_points`` as incorrect, else correct."""
    shown = {}
    for test in results["tests"]:
        if test["max_points"] == 0:
            shown[test["name"]] = "information"
        elif test["points"] != test["max_points"]:
            shown[test["name"]] = "incorrect"
        else:
            shown[test["name"]] = "correct"
    return shown


def test_results_files_follow_each_platforms_schema():
    """One test per autograded part with the feedback, the bonus its own test, each test passed
    or failed as the platform shows it; part 8 never a failed test (Gradescope: no test, the
    output says it is graded by hand; PrairieLearn: a 0 of 0 information line); a result that
    is not a grade scores 0 on both."""
    graded = gradescope_results(_result(), 12.4)
    assert graded["score"] == 7.0 and graded["execution_time"] == 12
    assert "isolation: container" in graded["output"] and graded["stdout_visibility"] == "hidden"
    assert "part 8 (discussion, 3 points): graded by hand" in graded["output"]
    tests = {test["name"].split()[0]: test for test in graded["tests"]}
    assert set(tests) == {*FULL, *BONUS}
    assert tests["a2c"]["score"] == 2.0 and tests["a2c"]["max_score"] == 4
    assert tests["a2c"]["output"] == "Part 'a2c': feedback" and tests["a2c"]["visibility"]
    assert "bonus" in tests["gae"]["name"]
    assert set(gradescope_shows(graded).values()) == {"failed"}  # half marks everywhere
    full = _result()
    full.parts = {key: PartScore(p, p, "") for key, p in {**FULL, **BONUS}.items()}
    assert set(gradescope_shows(gradescope_results(full, 1)).values()) == {"passed"}
    assert gradescope_results(_result("tampered: x"), 1)["score"] == 0.0
    assert all(t["score"] == 0 for t in gradescope_results(_result("error: y"), 1)["tests"])

    pl = prairielearn_results(_result())
    assert pl["gradable"] is True and pl["score"] == pytest.approx(7 / 12)
    pl_tests = {test["name"].split()[0]: test for test in pl["tests"]}
    assert pl_tests["a2c"]["points"] == 2.0 and pl_tests["a2c"]["max_points"] == 4
    assert "by hand" in pl_tests["discussion"]["message"]
    shown = prairielearn_shows(prairielearn_results(full))
    assert shown.pop("discussion - graded by hand") == "information"
    assert set(shown.values()) == {"correct"}
    assert prairielearn_results(full)["score"] == 1.0  # bonus included, at most 1
    assert prairielearn_results(_result("timeout: z"))["score"] == 0.0
    unreadable = prairielearn_results(_result("unreadable: not a notebook (invalid JSON)"))
    assert unreadable["gradable"] is False and unreadable["score"] == 0.0
    assert unreadable["format_errors"] == ["unreadable: not a notebook (invalid JSON)"]


def test_find_notebook_picks_the_submission(tmp_path):
    (tmp_path / "sub").mkdir()
    assert find_notebook(tmp_path)[0] is None and "no notebook" in find_notebook(tmp_path)[1]
    (tmp_path / "sub" / "mine.ipynb").write_text("{}")
    assert find_notebook(tmp_path)[0] == tmp_path / "sub" / "mine.ipynb"
    (tmp_path / "other.ipynb").write_text("{}")
    assert find_notebook(tmp_path)[0] is None and "several" in find_notebook(tmp_path)[1]
    (tmp_path / "a2c.ipynb").write_text("{}")
    assert find_notebook(tmp_path)[0] == tmp_path / "a2c.ipynb"


def test_no_isolation_possible_is_refused_with_the_ways_out(tmp_path, monkeypatch, capsys):
    """Not root and no bubblewrap (a JupyterHub pod): exit 2, naming every way out."""
    monkeypatch.setattr(bubblewrap, "bwrap_works", lambda: False)
    monkeypatch.setattr(container, "container_works", lambda: False)
    nbformat.write(course_submission(), tmp_path / "zoe.ipynb")
    assert cli.main(["grade", str(tmp_path / "zoe.ipynb")]) == 2
    error = capsys.readouterr().err
    for way in ("apt-get install -y bubblewrap", "docs/cluster.md", "--no-sandbox", "root"):
        assert way in error, error
    monkeypatch.setenv("A2C_ISOLATION", "sometimes")
    assert cli.main(["grade", str(tmp_path / "zoe.ipynb")]) == 2
    assert "A2C_ISOLATION must be auto, bubblewrap or container" in capsys.readouterr().err


@needs_root
def test_container_mode_needs_root():
    """An unprivileged process cannot run a notebook as another user: container mode says no."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)
        os._exit(0 if container.container_works.__wrapped__() is False else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert container.container_works()


@needs_root
def test_container_mode_refuses_a_readable_copy_of_the_grader(tmp_path):
    """From a checkout any user could read (this one, or the environment under a private
    home), container mode refuses instead of showing the reference."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(DOCKER_BWRAP)
    (bin_dir / "bwrap").chmod(0o755)
    nbformat.write(course_submission(), tmp_path / "zoe.ipynb")
    refused = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "zoe.ipynb"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "container mode" in refused.stderr, refused.stderr[-2000:]
    try:
        container.check_environment.__wrapped__()
    except SandboxUnavailable:  # the environment is what is refused first here
        assert "cannot reach the Python" in refused.stderr, refused.stderr[-2000:]
    else:
        assert "close them first" in refused.stderr, refused.stderr[-2000:]


# ---------------------------------------------------------------------------- slow: as platforms
def _shared_python() -> str:
    """A Python of this version that every user can run (a platform image's system Python)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (
        Path(sys.base_prefix) / "bin" / f"python{version}",
        Path("/usr/bin") / f"python{version}",
        Path("/usr/local/bin") / f"python{version}",
    ):
        real = candidate.resolve()
        if real.is_file() and container._others_can(real, stat.S_IXOTH):
            return str(candidate)
    pytest.fail(
        f"no Python {version} that every user can run (the platforms' images have one): "
        "install python3 and python3-venv from the system's packages"
    )


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture(scope="module")
def platforms():
    """Gradescope's folder (setup.sh run in a fresh venv), PrairieLearn's, the failing bwrap,
    and a private TMPDIR for every grading."""
    base = Path(tempfile.mkdtemp(prefix="a2c-platforms-", dir="/var/tmp"))
    base.chmod(0o755)  # the venv inside must be reachable by the notebook's user
    try:
        fake = base / "fakebin"
        fake.mkdir()
        (fake / "bwrap").write_text(DOCKER_BWRAP)
        (fake / "bwrap").chmod(0o755)
        subprocess.run([_shared_python(), "-m", "venv", str(base / "venv")], check=True)
        gradescope = base / "gradescope"
        (gradescope / "source").mkdir(parents=True)
        built = subprocess.run(
            [sys.executable, "-m", "autograder", "gradescope", "--out", str(base / "ag.zip")],
            capture_output=True, text=True, check=True, cwd=base,
        )  # fmt: skip
        assert "upload it" in built.stdout
        zipfile.ZipFile(base / "ag.zip").extractall(gradescope / "source")
        for script in ("setup.sh", "run_autograder"):
            (gradescope / "source" / script).chmod(0o755)
        shutil.copy(gradescope / "source" / "run_autograder", gradescope / "run_autograder")
        private = base / "private-tmp"  # TMPDIR only root can enter (a Slurm job's, pytest's)
        private.mkdir(mode=0o700)
        env = {
            "PATH": f"{fake}:{base / 'venv' / 'bin'}:/usr/bin:/bin",
            "HOME": str(base),
            "TMPDIR": str(private),
            "A2C_GRADER_TIME_SCALE": "3",  # a loaded machine: no flaky timeouts
        }
        setup = subprocess.run(
            [str(gradescope / "source" / "setup.sh")],
            cwd=gradescope / "source",
            capture_output=True,
            text=True,
            timeout=1500,
            env={**env, "A2C_SETUP_APT": "0", "A2C_TORCH_INDEX": "",
                 **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}},
        )  # fmt: skip
        assert setup.returncode == 0 and "setup.sh: ready" in setup.stdout, setup.stderr[-3000:]
        prairielearn = base / "prairielearn"
        bundle = prairielearn / "serverFilesCourse" / "a2c_grader"
        subprocess.run(
            [sys.executable, "-m", "autograder", "prairielearn", "--out", str(bundle),
             "--image", "a2c-course/a2c-grader:test"],
            check=True, capture_output=True, cwd=base,
        )  # fmt: skip
        writable = base / "writable"  # where an attack could leave a marker, if it lived on
        writable.mkdir()
        writable.chmod(0o777)
        yield {"base": base, "env": env, "gradescope": gradescope, "prairielearn": prairielearn,
               "writable": writable}  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _gradescope(platforms, nb) -> tuple[dict, subprocess.CompletedProcess[str]]:
    root = platforms["gradescope"]
    shutil.rmtree(root / "submission", ignore_errors=True)
    (root / "submission").mkdir()
    nbformat.write(nb, root / "submission" / "a2c.ipynb")
    done = subprocess.run(
        [str(root / "run_autograder")],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=900,
        env={**platforms["env"], "AUTOGRADER_ROOT": str(root)},
    )
    return json.loads((root / "results" / "results.json").read_text()), done


def _prairielearn(platforms, nb) -> tuple[dict, subprocess.CompletedProcess[str]]:
    root = platforms["prairielearn"]
    for folder in ("student", "data", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "student").mkdir()
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    if nb is not None:
        nbformat.write(nb, root / "student" / "a2c.ipynb")
    done = subprocess.run(
        [str(root / "serverFilesCourse" / "a2c_grader" / "run_grader")],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=900,
        env={**platforms["env"], "PL_GRADE_ROOT": str(root)},
    )
    return json.loads((root / "results" / "results.json").read_text()), done


def _scores(tests: list[dict], field: str = "score") -> dict[str, float]:
    """The autograded parts' scores (not part 8, not the agent's test of no points)."""
    skip = ("by hand", "Verified agent score")
    return {t["name"].split()[0]: t[field] for t in tests if not any(s in t["name"] for s in skip)}


@pytest.fixture(scope="module")
def reference_with_bubblewrap(tmp_path_factory):
    """``grade --json`` of the reference, in the bubblewrap sandbox: the scores to match."""
    assert bubblewrap.bwrap_works(), "bubblewrap is missing or cannot create namespaces"
    folder = tmp_path_factory.mktemp("bwrap")
    nbformat.write(course_submission(), folder / "ref.ipynb")
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "ref.ipynb", "--json", "--student", "ref"],
        cwd=folder, capture_output=True, text=True, timeout=900,
        env={**os.environ, "A2C_GRADER_TIME_SCALE": "3"},
    )  # fmt: skip
    result = json.loads(done.stdout)
    assert result["status"] == "graded", result
    assert result["isolation"] in ("bubblewrap", "bubblewrap-template"), result  # fresh or warm
    return {key: part["score"] for key, part in result["parts"].items()}


@needs_root
@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_gradescope_grades_as_grade_does_in_container_mode(platforms, reference_with_bubblewrap):
    """Reference: bubblewrap's scores; release: 0; a notebook that writes results.json (now and
    from a process left behind) earns nothing and the file stays the grader's."""
    results, done = _gradescope(platforms, course_submission())
    assert done.returncode == 0, done.stderr[-3000:]
    assert _scores(results["tests"]) == reference_with_bubblewrap == {**FULL, **BONUS}
    assert results["score"] == 14 and "isolation: container" in results["output"]
    assert "bubblewrap cannot start here" in results["output"]
    shown = gradescope_shows(results)
    assert shown.pop("Verified agent score") == "information"  # this notebook saved no agent
    assert set(shown.values()) == {"passed"}  # full marks: no red test
    assert not [t for t in results["tests"] if "by hand" in t["name"]]
    assert "part 8 (discussion, 3 points): graded by hand" in results["output"]
    source = platforms["gradescope"] / "source"
    assert not os.stat(source).st_mode & 0o007  # closed to the notebook's user
    assert not os.stat(platforms["gradescope"] / "results").st_mode & 0o007

    results, done = _gradescope(platforms, nbformat.read(RELEASE, as_version=4))
    assert results["score"] == 0 and "status: graded" in results["output"], results["output"]
    assert set(_scores(results["tests"]).values()) == {0.0}

    results_dir = platforms["gradescope"] / "results"
    attack = hostile_submission("write_results", marker=str(results_dir))
    results, done = _gradescope(platforms, attack)
    assert results["score"] == 0 and "FORGED" not in json.dumps(results), results
    assert set(_scores(results["tests"]).values()) == {0.0}
    time.sleep(6)  # the process it left would have written again by now
    assert json.loads((results_dir / "results.json").read_text()) == results
    assert [p.name for p in results_dir.iterdir()] == ["results.json"]


@needs_root
@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_prairielearn_grades_as_grade_does_in_container_mode(platforms, reference_with_bubblewrap):
    """Reference: bubblewrap's scores, score 1; no notebook: not gradable; a notebook that
    writes results.json earns nothing and cannot change the file."""
    results, done = _prairielearn(platforms, course_submission())
    assert done.returncode == 0, done.stderr[-3000:]
    assert results["gradable"] is True and results["score"] == 1.0, results
    assert _scores(results["tests"], "points") == reference_with_bubblewrap
    assert "isolation: container" in results["output"]
    shown = prairielearn_shows(results)
    assert shown.pop("discussion - graded by hand") == "information"
    assert shown.pop("Verified agent score") == "information"  # this notebook saved no agent
    assert "Verified agent score: none (no saved agent" in results["output"]
    assert set(shown.values()) == {"correct"}

    results, done = _prairielearn(platforms, None)
    assert results["gradable"] is False and "no notebook" in results["message"]

    results_dir = platforms["prairielearn"] / "results"
    results, done = _prairielearn(
        platforms, hostile_submission("write_results", marker=str(results_dir))
    )
    assert results["score"] == 0 and "FORGED" not in json.dumps(results), results
    time.sleep(6)
    assert json.loads((results_dir / "results.json").read_text()) == results


@needs_root
@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_hostile_corpus_gains_nothing_in_container_mode(platforms, reference_with_bubblewrap):
    """Every attack of the corpus, graded by grade-all from Gradescope's closed copy with the
    failing bwrap, earns nothing; an honest notebook in the same class gets bubblewrap's scores;
    nothing outlives its grading (processes, System V IPC) and the environment is unchanged."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    hits: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                hits.append(1)
                conn.close()
            except OSError:
                continue

    threading.Thread(target=serve, daemon=True).start()
    base, writable = platforms["base"], platforms["writable"]
    inbox = base / "inbox"
    shutil.rmtree(inbox, ignore_errors=True)
    inbox.mkdir()
    marker = writable / "outlived.txt"
    for attack in ATTACKS:
        nb = hostile_submission(
            attack, token=TOKEN, port=str(server.getsockname()[1]), marker=str(marker)
        )
        nbformat.write(nb, inbox / f"h_{attack}.ipynb")
    nbformat.write(course_submission(), inbox / "alice.ipynb")
    venv = base / "venv"
    before = _snapshot(venv)
    source = platforms["gradescope"] / "source"
    try:
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-I", "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); from autograder.cli import main; "
             "sys.exit(main(sys.argv[2:]))",
             str(source), "grade-all", "inbox", "--out", "out", "--jobs", "2", "--no-feedback"],
            cwd=base, capture_output=True, text=True, timeout=2400, env=platforms["env"],
        )  # fmt: skip
    finally:
        stop.set()
        server.close()
    assert (base / "out" / "grades.csv").is_file(), done.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader((base / "out" / "grades.csv").open())}
    alice = rows["alice"]
    assert alice["status"] == "graded" and "container isolation" in alice["notes"], alice
    assert {key: float(alice[key]) for key in reference_with_bubblewrap} == (
        reference_with_bubblewrap
    )
    for attack in ATTACKS:
        row = rows[f"h_{attack}"]
        if row["status"] == "graded":
            assert all(float(row[key]) == 0.0 for key in {*FULL, *BONUS}), row
        else:
            assert row["status"].startswith("tampered") and row["total"] == "", row
        assert "container isolation" in row["notes"] and row["sandboxed"] == "yes", row
    time.sleep(8)  # "outlive" writes its marker 6 s after its start, if it still lives
    assert not marker.exists()
    survivors = []
    for proc in Path("/proc").iterdir():
        try:
            if TOKEN.encode() in (proc / "cmdline").read_bytes():
                survivors.append(proc.name)
        except OSError:
            continue
    assert survivors == []
    left_ipc = [
        line
        for kind in ("shm", "msg", "sem")
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        if int(line.split()[0]) == IPC_KEY
    ]
    assert left_ipc == [], "leave_ipc's objects outlived its run"
    assert _snapshot(venv) == before, "a notebook changed the grading environment"
    if landlock.abi_version() >= 4:  # without Landlock, the job has the container's network
        assert hits == []


@needs_root
@pytest.mark.slow
def test_attacks_on_time_cost_one_budget_in_container_mode(platforms):
    """The corpus's attacks on time (cells that ignore SIGINT and hang on replay, a cell that
    tries to kill its supervisor), graded in container mode with a 15 s cell limit: each earns
    nothing, the hanging one is graded (its runner ended the run, not the wall clock), and
    each costs at most one budget: one cell limit and the reserve."""
    from autograder.core.assessor import WALL_MARGIN
    from autograder.core.course.limits import Limits

    reserve = Limits().notebook.reserve_seconds

    base = platforms["base"]
    inbox = base / "costly"
    shutil.rmtree(inbox, ignore_errors=True)
    inbox.mkdir()
    for attack in COSTLY:
        nbformat.write(hostile_submission(attack, token=TOKEN), inbox / f"t_{attack}.ipynb")
    source = platforms["gradescope"] / "source"
    start = time.monotonic()
    done = subprocess.run(
        [str(base / "venv" / "bin" / "python"), "-I", "-c",
         "import sys; sys.path.insert(0, sys.argv[1]); from autograder.cli import main; "
         "sys.exit(main(sys.argv[2:]))",
         str(source), "grade-all", "costly", "--out", "costly-out", "--jobs", "2",
         "--no-feedback", "--timeout", "15"],
        cwd=base, capture_output=True, text=True, timeout=900,
        env={**platforms["env"], "A2C_GRADER_TIME_SCALE": "1"},
    )  # fmt: skip
    seconds = time.monotonic() - start
    grades = base / "costly-out" / "grades.csv"
    assert grades.is_file(), done.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader(grades.open())}
    hung = rows["t_ignore_interrupt"]
    assert hung["status"] == "graded" and "container isolation" in hung["notes"], hung
    assert all(float(hung[key]) == 0.0 for key in {*FULL, *BONUS}), hung
    assert "run stopped: " in hung["notes"], hung
    # Without nested namespaces (Landlock forbids the mounts they need, Docker refuses them)
    # the cells run beside their runner, as its user, and can kill it: the run is not a grade.
    killer = rows["t_kill_runner"]
    if killer["status"] == "graded":
        assert all(float(killer[key]) == 0.0 for key in {*FULL, *BONUS}), killer
    else:
        assert killer["status"].startswith("error: the grading run ended early: "), killer
        assert killer["total"] == "", killer
    # Both at once: one budget each, the sandbox's margin, and the grader's start (a minute).
    assert seconds < 15 + reserve + WALL_MARGIN + 60, seconds


def _with_a_course(platforms, name: str, command: list[str]) -> Path:
    """A second bundle, built with ``command``'s options (the course's limits), in its own
    folder beside the fixture's (the image's venv is the fixture's)."""
    folder = platforms["base"] / name
    shutil.rmtree(folder, ignore_errors=True)
    if command[0] == "gradescope":
        (folder / "source").mkdir(parents=True)
        subprocess.run(
            [sys.executable, "-m", "autograder", *command, "--out", str(folder / "ag.zip")],
            capture_output=True, text=True, check=True, cwd=platforms["base"],
        )  # fmt: skip
        zipfile.ZipFile(folder / "ag.zip").extractall(folder / "source")
        for script in ("setup.sh", "run_autograder"):
            (folder / "source" / script).chmod(0o755)
        shutil.copy(folder / "source" / "run_autograder", folder / "run_autograder")
        setup = subprocess.run(
            [str(folder / "source" / "setup.sh")], cwd=folder / "source", capture_output=True,
            text=True, timeout=1500,
            env={**platforms["env"], "A2C_SETUP_APT": "0", "A2C_TORCH_INDEX": "",
                 **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}},
        )  # fmt: skip
        assert setup.returncode == 0, setup.stderr[-3000:]
    else:
        bundle = folder / "serverFilesCourse" / "a2c_grader"
        subprocess.run(
            [sys.executable, "-m", "autograder", *command, "--out", str(bundle),
             "--image", "a2c-course/a2c-grader:test"],
            check=True, capture_output=True, cwd=platforms["base"],
        )  # fmt: skip
    return folder


def _slow_cell_and_agent() -> nbformat.NotebookNode:
    """The solution notebook with its agent saved (the reference network's weights) and a cell
    of the student's own after make_model that takes 8 s."""
    from tests.test_agent_play import _bundle, _with_agent

    return _with_agent(_bundle(), extra_cell="import time\ntime.sleep(8)")


#: The course's limits given when the bundles are built: a 5 s cell, 0.5 s of CPU for the agent.
COURSE_LIMITS = ["--timeout", "5", "--agent-cpu-seconds", "0.5"]


@needs_root
@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_a_courses_timeout_and_agent_cap_hold_in_the_gradescope_zip(platforms):
    """A zip built with ``--timeout 5 --agent-cpu-seconds 0.5`` carries its course: Gradescope's
    run_autograder stops the student's 8 s cell at 5 s (the default limit is 120 s) and caps
    the agent's play at 0.5 s of CPU (the default is 20 s)."""
    folder = _with_a_course(platforms, "gradescope-course", ["gradescope", *COURSE_LIMITS])
    bundled = json.loads((folder / "source" / "release" / "course.json").read_text())
    assert bundled["limits"]["cell"]["timeout"] == 5 and bundled["limits"]["agent"] == {
        "cpu_seconds": 0.5
    }
    platforms_gradescope = {**platforms, "gradescope": folder}
    results, done = _gradescope(platforms_gradescope, _slow_cell_and_agent())
    shown = json.dumps(results)
    assert "ran past the 5 s limit" in shown, results["output"]
    assert "capped at 0.5 s of CPU" in shown, results["output"]


@needs_root
@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_a_courses_timeout_and_agent_cap_hold_in_the_prairielearn_bundle(platforms):
    """The same course in PrairieLearn's bundle: its run_grader stops the 8 s cell at 5 s and
    caps the agent at 0.5 s of CPU."""
    folder = _with_a_course(platforms, "prairielearn-course", ["prairielearn", *COURSE_LIMITS])
    course = folder / "serverFilesCourse" / "a2c_grader" / "kit" / "release" / "course.json"
    assert json.loads(course.read_text())["limits"]["cell"]["timeout"] == 5
    results, done = _prairielearn({**platforms, "prairielearn": folder}, _slow_cell_and_agent())
    shown = json.dumps(results)
    assert results["gradable"] is True, results
    assert "ran past the 5 s limit" in shown, results["output"]
    assert "capped at 0.5 s of CPU" in shown, results["output"]
