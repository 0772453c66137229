"""A grading process's temporary folders (a template's view, a Dask worker's folder) do not pile
up when the process is killed: the next process of that kind removes them, never a live one's
(autograder/core/isolation/held_folders.py). Real processes, really killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.core.isolation.held_folders import (
    LOCK_NAME,
    held_folder,
    let_go,
    remove_dead_folders,
)

ROOT = Path(__file__).resolve().parent.parent
HOLDER = (
    "import sys, time\n"
    "from autograder.core.isolation.held_folders import held_folder\n"
    "print(held_folder(sys.argv[1]), flush=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def prefix():
    name = f"a2c-test-held-{os.getpid()}-"
    yield name
    for entry in Path(tempfile.gettempdir()).glob(f"{name}*"):
        if entry.is_symlink() or not entry.is_dir():
            entry.unlink()
        else:
            shutil.rmtree(entry, ignore_errors=True)


def _holder(prefix: str) -> tuple[subprocess.Popen, Path]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, prefix], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def test_a_killed_processs_folder_is_removed_by_the_next_and_a_live_ones_never(prefix):
    live, live_folder = _holder(prefix)
    killed, killed_folder = _holder(prefix)
    try:
        (killed_folder / "view").mkdir()
        (killed_folder / "view" / "file.py").write_text("x = 1\n")
        os.kill(killed.pid, signal.SIGKILL)  # no exit handler runs
        killed.wait(timeout=30)
        assert killed_folder.is_dir()

        mine = held_folder(prefix)
        assert not killed_folder.exists(), "the killed process's folder was left"
        assert live_folder.is_dir() and (live_folder / LOCK_NAME).is_file()
        assert mine.is_dir() and mine not in (live_folder, killed_folder)

        assert remove_dead_folders(prefix) == []  # this process's own folder is held too
        assert mine.is_dir() and live_folder.is_dir()
    finally:
        live.kill()
        live.wait(timeout=30)
    assert remove_dead_folders(prefix) == [live_folder]
    let_go(mine)
    assert not mine.exists()


def test_what_held_folder_did_not_make_is_left_alone(prefix, tmp_path):
    base = Path(tempfile.gettempdir())
    plain = base / f"{prefix}plain"
    plain.mkdir()
    (plain / "kept").write_text("kept")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / LOCK_NAME).write_text("")
    link = base / f"{prefix}link"
    link.symlink_to(target, target_is_directory=True)
    lock_link = base / f"{prefix}lock-link"
    lock_link.mkdir()
    (lock_link / LOCK_NAME).symlink_to(target / LOCK_NAME)

    assert remove_dead_folders(prefix) == []
    assert (plain / "kept").read_text() == "kept"
    assert link.is_symlink() and (target / LOCK_NAME).exists()
    assert lock_link.is_dir()


TEMPLATE_HOLDER = """
import json, sys, time
from pathlib import Path
from autograder.core.isolation import templates
from autograder.core.isolation.contract import DEFAULT_LIMITS
from autograder.core.sandbox_view import KIT_RELEASE, job_env, setup_modules, write_view
view = write_view(Path(sys.argv[2]))
found = templates.template_for(view.key, view.bin_inside, view.readonly, job_env(),
                               DEFAULT_LIMITS, setup_modules(json.loads(KIT_RELEASE.read_text())))
assert found is not None, "no template here"
print(found._copy, flush=True)
if sys.argv[1] == "wait":
    time.sleep(300)
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_graders_template_view_is_removed_when_the_next_template_starts(tmp_path):
    """A grading process killed outright leaves its template's copy of the view (no exit handler
    runs); the next grading process's template removes it, and its own goes at its exit."""
    from autograder.core.isolation.bubblewrap import bwrap_works

    assert bwrap_works(), "bubblewrap is needed (.ci/run installs it)"
    killed = subprocess.Popen([sys.executable, "-c", TEMPLATE_HOLDER, "wait", str(tmp_path / "a")], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    assert killed.stdout is not None
    first = Path(killed.stdout.readline().strip())
    assert first.name.startswith("a2c-template-view-") and first.is_dir(), first
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=60)
    assert first.is_dir()  # left behind

    done = subprocess.run([sys.executable, "-c", TEMPLATE_HOLDER, "exit", str(tmp_path / "b")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    second = Path(done.stdout.strip())
    assert not first.exists(), "the killed grader's template view was left"
    assert not second.exists(), "the template's view outlived its process"
