"""What a grading job is shown of the grader, and its environment: one view, made once.

The sandbox sees the grader at :data:`GRADER_DIR`: ``lib/`` (a snapshot of ``course_lib`` as
installed and the grading runtime, which it imports as ``grading_runtime``) and ``bin/`` (the
scripts that run a job: ``autograder/sandboxed/bin``). :func:`write_view` makes that folder;
its :attr:`View.key` (a digest of every file shown) names a template
(:mod:`autograder.core.isolation.template`), so every assessor of a process that shows the same
files shares one. :func:`job_env` is a job's whole environment, :func:`setup_modules` what the
release's set-up cells import (a template imports them too), :func:`job_argv` the command of
a job that starts afresh.

Nothing here imports torch or nbgrader: a grading command calls :func:`warm_start` before its
own imports, so that the sandbox's Python imports in parallel with the grader's.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core.file_tree import tree_digest
from autograder.core.isolation.job_view import SCRATCH
from autograder.core.isolation.python_layout import PYTHON, PYTHON_BIN

__all__ = [
    "GRADER_DIR",
    "SETUP_CELLS",
    "View",
    "job_argv",
    "job_env",
    "setup_modules",
    "warm_start",
    "write_view",
]

GRADER_DIR = "/grader"  #: where the sandbox sees the grader's view
#: What runs a job inside the sandbox (shown as ``GRADER_DIR/bin``).
IN_SANDBOX = Path(__file__).resolve().parents[1] / "sandboxed" / "bin"
#: The grading runtime (probes, records, harness): shown as the package ``grading_runtime``.
RUNTIME_DIR = Path(__file__).resolve().parents[1] / "sandboxed" / "grading_runtime"
#: The packages the sandboxed notebook imports, snapshotted when a view is made.
SANDBOX_PACKAGES = ("course_lib",)
#: Locked cells of the release that the graded parts rely on (imports, course helpers).
SETUP_CELLS = ("setup", "imports", "course_imports")
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.ipynb")
#: The kit's own release, whose set-up cells a template imports before any assessor exists.
KIT_RELEASE = Path(__file__).resolve().parents[2] / "notebooks" / "a2c.ipynb"


@dataclass(frozen=True)
class View:
    """A view of the grader, written to a folder: ``lib`` and ``bin`` and what names them."""

    lib: Path
    bin: Path
    key: str  #: a digest of every file shown: one template per key and process

    @property
    def readonly(self) -> dict[str, Path]:
        """``{path inside: path outside}``, as the isolation modes take it."""
        return {f"{GRADER_DIR}/bin": self.bin, f"{GRADER_DIR}/lib": self.lib}

    @property
    def bin_inside(self) -> str:
        return f"{GRADER_DIR}/bin"


def write_view(folder: Path) -> View:
    """Write the view into ``folder`` (empty or new): ``course_lib`` as installed, the grading
    runtime and the job's scripts."""
    folder = Path(folder).resolve()
    lib, bin_ = folder / "lib", folder / "bin"
    for package in SANDBOX_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"{package} is not installed: pip install -e . first")
        source = Path(list(spec.submodule_search_locations)[0])
        shutil.copytree(source, lib / package, ignore=_IGNORED)
    shutil.copytree(RUNTIME_DIR, lib / "grading_runtime", ignore=_IGNORED)
    shutil.copytree(IN_SANDBOX, bin_, ignore=_IGNORED)
    digest = hashlib.sha256()
    for name, files in (("lib", tree_digest(lib)), ("bin", tree_digest(bin_))):
        digest.update(json.dumps([name, sorted(files.items())]).encode())
    return View(lib, bin_, digest.hexdigest())


def job_env(threads: int = 1) -> dict[str, str]:
    """A job's environment inside the sandbox (the isolation adds what its Python needs)."""
    return {
        "PATH": os.pathsep.join([PYTHON_BIN, "/usr/bin", "/bin"]),
        "HOME": f"{SCRATCH}/home",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{GRADER_DIR}/lib",
        "PYTHONDONTWRITEBYTECODE": "1",
        "A2C_KIT_QUICK": "1",
        "NBGRADER_EXECUTION": "autograde",
        "MPLBACKEND": "Agg",
        **{name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")},
    }


def setup_modules(release: Mapping[str, Any]) -> list[str]:
    """The modules the release's set-up cells import (``import a.b``, ``from a.b import c``:
    ``a.b`` and ``a.b.c``, which may be a module), in order; ``release`` as read by ``json``
    or nbformat."""
    found: list[str] = []
    for cell in release.get("cells", []):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.get("cell_type") != "code" or grade_id not in SETUP_CELLS:
            continue
        source = cell.get("source", "")
        try:
            tree = ast.parse("".join(source) if isinstance(source, list) else source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
                found += [f"{node.module}.{alias.name}" for alias in node.names]
    return list(dict.fromkeys(found))


def job_argv() -> list[str]:
    """The command of a job that starts afresh: the runner, which starts the executor."""
    return [PYTHON, f"{GRADER_DIR}/bin/runner.py", f"{GRADER_DIR}/bin/executor.py"]


#: How long :func:`warm_start` waits for the sandbox's process to be started.
LAUNCH_SECONDS = 5.0


def warm_start(limits: Any = None) -> threading.Thread:
    """Start the sandbox's Python for the kit's own view now, in a thread: this process's
    template (:mod:`autograder.core.isolation.template`), or where none can be had, the run of
    the one notebook a command grades (:mod:`autograder.core.isolation.early_start`). A grading
    command calls it first thing, so that the sandbox's Python imports torch while the grader
    imports its own; an assessor made later shows the same files (the same view key), so it
    finds what was started. Nothing is started where no isolation holds.

    It returns once the sandbox's process is started (at most :data:`LAUNCH_SECONDS`): the
    copy of the view and the launch are Python of this process, and behind the caller's own
    imports (torch's libraries load holding the interpreter's lock) they took seconds instead
    of a few tenths, so the sandbox's imports began late and the grading waited for them."""
    from autograder.core.isolation import early_start, modes, templates
    from autograder.core.isolation.contract import DEFAULT_LIMITS
    from autograder.core.isolation.supervision import JobInput

    limits = limits or DEFAULT_LIMITS
    launched = threading.Event()

    def start() -> None:
        folder = Path(tempfile.mkdtemp(prefix="a2c-view-"))
        try:
            view = write_view(folder)
            mode = modes.require_isolation()
            release = json.loads(KIT_RELEASE.read_text()) if KIT_RELEASE.is_file() else {}
            modules = setup_modules(release)
            if mode == modes.BUBBLEWRAP and templates.template_for(
                view.key, view.bin_inside, view.readonly, job_env(), limits, modules, launched
            ):
                shutil.rmtree(folder, ignore_errors=True)  # the template keeps its own copy
                return
            job = early_start.start_early(
                view.key,
                lambda job: modes.run_isolated(
                    job_argv(), view.readonly, job_env(), job, JobInput.WAIT_SECONDS, limits
                ),
                job_env(),
                limits,
                clean_up=[folder],
            )
            if job is not None:  # its process is started in a thread of its own
                job.waiting.wait(LAUNCH_SECONDS)
        except Exception:  # noqa: BLE001 - the grading then starts its sandbox as before
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            launched.set()

    thread = threading.Thread(target=start, daemon=True, name="a2c-warm-start")
    thread.start()
    launched.wait(LAUNCH_SECONDS)
    return thread
