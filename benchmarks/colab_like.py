"""A Colab-like run of the student distribution: Colab's Python and packages first, pip from git.

Google Colab runs Python 3.13 (since 2026-08-25) with torch 2.11 (a CUDA build), gymnasium 1.3.0,
ale-py 0.12.1 and numpy 2.5 already installed, and students get ``course_lib`` only through the
setup cell's ``pip install git+STUDENT_REPO_URL``. This script walks that path on a Linux
machine, for each Python it is given (default: 3.11, 3.12 and 3.13, from pyenv or ``PATH``):

1. a virtual environment with Colab's versions installed first, :data:`COLAB_PINS` (a pin that
   has no release for that Python, such as numpy 2.5 on 3.11, gives way to the newest that has
   one, and the output says so), plus the newest of :data:`COLAB_OTHERS` (opencv-python, not
   headless, as on Colab; plotting, progress bars, the Jupyter kernel and ``nbclient``). torch
   comes from PyPI, whose Linux wheel is the CUDA build with its ``nvidia-*`` packages (several
   GB, as Colab has it): the notebook runs on the CPU here, but imports the same torch. A pip
   configuration that caps versions or adds a local package folder is lifted for the whole run
   (``PIP_CONFIG_FILE`` and ``PIP_CONSTRAINT`` set to the null device, ``PIP_FIND_LINKS``
   removed), so pip sees what Colab's pip sees;
2. the student distribution (``solutions.build_notebooks.build_student_distribution``) in a
   fresh folder made a git repository, so that ``git+file://...`` stands for the public address;
3. the student notebook with the stubs filled from the solution notebook, run top to bottom in
   that environment with ``A2C_KIT_QUICK=1``: a first cell makes ``google.colab`` importable, as
   it is on Colab, so the **unchanged** setup cell (only its address swapped for the local git
   URL) pip-installs the distribution; every visible check must print ``OK``, no cell may fail,
   and ``course_lib`` must come from the environment, not from this checkout. The setup cell
   runs with an empty pip cache of its own, as on a new runtime, and is measured: its duration
   (the kernel's timestamps), the packages it added or replaced, and what they weigh (their files
   fetched again with ``pip download``; pip's index pages and the git clone, printed apart, are
   not in that figure);
4. the untouched student notebook in the same environment: it must stop at the first stub with
   ``NotImplementedError``.

Run it from the repository root with the project's environment active (a first run downloads
several GB: torch's CUDA build and its nvidia packages, once per Python for torch itself)::

    python benchmarks/colab_like.py                          # 3.11, 3.12, 3.13; fresh venvs
    python benchmarks/colab_like.py --python /usr/bin/python3.13 --venv-dir /tmp/colab
                                    # one interpreter; keeps its venv in /tmp/colab and reuses it
    python benchmarks/colab_like.py --json colab_like.json   # the figures, also as JSON

It prints each stage's time and the versions it ran with, a table of the Pythons, and exits 1 if
any step fails on any of them. The git clone of the student repository is local here; its size
is printed (on Colab it comes from the repository's host).
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solutions import build_notebooks as bn  # noqa: E402

#: Colab's versions (googlecolab/backend-info, 2026-08), installed before the setup cell runs.
COLAB_PINS = {"torch": "2.11.0", "gymnasium": "1.3.0", "ale-py": "0.12.1", "numpy": "2.5.*"}
#: Also on Colab before the setup cell (the newest of each here), plus the kernel machinery.
COLAB_OTHERS = ("opencv-python", "matplotlib", "tqdm", "cloudpickle", "imageio", "ipykernel")
COLAB_OTHERS += ("nbclient", "nbformat")
#: The Pythons of a default run: the one Colab runs, and the two before it.
DEFAULT_PYTHONS = ("3.11", "3.12", "3.13")

_FAKE_COLAB = """\
# colab_like.py: on Colab `google.colab` is imported before any cell runs; the setup cell tests it.
import sys, types
sys.modules.setdefault("google.colab", types.ModuleType("google.colab"))
print(sys.executable, sys.version.split()[0])
"""
_WHERE = """\
# colab_like.py: where course_lib and the packages came from.
import course_lib, cv2, numpy, torch
print("course_lib", course_lib.__file__)
print("torch", torch.__version__, "numpy", numpy.__version__, "cv2", cv2.__version__)
"""

_RUNNER = """\
import json, sys
import nbformat
from nbclient import NotebookClient
source, target, cwd = sys.argv[1:4]
nb = nbformat.read(source, as_version=4)
client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                        resources={"metadata": {"path": cwd}})
client.execute()
nbformat.write(nb, target)
"""


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kwargs)


def _pip_env(**extra: str) -> dict[str, str]:
    """The environment for pip as Colab's: no local config, version cap or package folder."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL")}  # fmt: skip
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_CONSTRAINT=os.devnull, **extra)
    return env


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` ("3.13"): pyenv's newest, else ``pythonX.Y`` on ``PATH``."""
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found = sorted(
        glob.glob(f"{root}/versions/{version}.*/bin/python3"),
        key=lambda p: [int(x) for x in Path(p).parts[-3].split(".") if x.isdigit()],
    )
    return found[-1] if found else shutil.which(f"python{version}")


def colab_specs(bin_python: Path) -> tuple[list[str], list[str]]:
    """The requirement of each of :data:`COLAB_PINS` for this Python, and what gave way: a pin
    with no release for it becomes the bare name (the newest that has one)."""
    specs, notes = [], []
    for name, version in COLAB_PINS.items():
        spec = f"{name}=={version}"
        probe = subprocess.run(
            [str(bin_python), "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet", spec],
            capture_output=True, text=True, env=_pip_env(),
        )  # fmt: skip
        if probe.returncode == 0:
            specs.append(spec)
        else:
            specs.append(name)
            notes.append(f"{spec} has no release for this Python: the newest {name} instead")
    return specs, notes


def _venv(python: str, venv: Path) -> tuple[Path, list[str]]:
    """The venv's Python, with Colab's packages (:data:`COLAB_PINS`, :data:`COLAB_OTHERS`) and
    nothing else: in a reused venv, what an earlier setup cell added is removed again (the
    packages of its first install are listed in ``colab-packages.json`` in the venv)."""
    bin_python = venv / "bin" / "python"
    if not bin_python.exists():
        _run([python, "-m", "venv", str(venv)])
    specs, notes = colab_specs(bin_python)
    for note in notes:
        print("  " + note, flush=True)
    _run(
        [str(bin_python), "-m", "pip", "install", "--progress-bar", "off", "--upgrade",
         *specs, *COLAB_OTHERS],
        env=_pip_env(),
    )  # fmt: skip
    listed = venv / "colab-packages.json"
    if not listed.is_file():
        listed.write_text(json.dumps(sorted(_versions(bin_python))))
    extra = sorted(set(_versions(bin_python)) - set(json.loads(listed.read_text())) - {"python"})
    if extra:
        _run([str(bin_python), "-m", "pip", "uninstall", "-y", "-q", *extra])
    return bin_python, notes


def _wheel_megabytes(bin_python: Path, added: dict[str, list]) -> float:
    """The size of the files pip fetches for the ``added`` packages (name -> [old, new version]),
    fetched again into a scratch folder (the setup cell's own pip keeps no copy)."""
    names = [f"{name}=={new}" for name, (_, new) in added.items()
             if new is not None and name != "a2c-course-lib"]  # fmt: skip
    if not names:
        return 0.0
    with tempfile.TemporaryDirectory(prefix="colab-like-wheels-") as folder:
        _run([str(bin_python), "-m", "pip", "download", "--no-deps", "--quiet", "-d", folder,
              *names], env=_pip_env())  # fmt: skip
        return round(_folder_bytes(Path(folder)) / 1e6, 1)


def _versions(bin_python: Path) -> dict[str, str]:
    """Every installed distribution's version, and ``"python"``."""
    code = (
        "import json, sys, importlib.metadata as m\n"
        "out = {d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()}\n"
        "out['python'] = sys.version.split()[0]\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([str(bin_python), "-c", code], capture_output=True, text=True)
    return json.loads(result.stdout)


SHOWN = ("python", "torch", "numpy", "gymnasium", "ale-py", "opencv-python",
         "opencv-python-headless", "a2c-course-lib")  # fmt: skip


def _shown(versions: dict[str, str]) -> dict[str, str | None]:
    return {name: versions.get(name) for name in SHOWN}


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _cell_seconds(cell) -> float | None:
    """A cell's run time from the kernel's timestamps (nbclient records them)."""
    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start = dt.datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
        end = dt.datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _student_repo(work: Path) -> Path:
    student = work / "student"
    bn.build_student_distribution(student)
    git = ["git", "-c", "user.name=colab-like", "-c", "user.email=colab-like@localhost"]
    _run(["git", "init", "-q", "-b", "main", str(student)])
    _run([*git, "-C", str(student), "add", "-A"])
    _run([*git, "-C", str(student), "commit", "-q", "-m", "student distribution"])
    return student


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _colab_notebook(student: Path, filled: bool) -> nbformat.NotebookNode:
    """The student notebook as Colab runs it: ``google.colab`` present, the local git address."""
    nb = nbformat.read(student / "notebooks" / "a2c.ipynb", as_version=4)
    setup = next(cell for cell in nb.cells if _grade_id(cell) == "setup")
    old = f'STUDENT_REPO_URL = "{bn.STUDENT_REPO_URL}"'
    assert old in setup.source, "the setup cell lost its STUDENT_REPO_URL line"
    setup.source = setup.source.replace(old, f'STUDENT_REPO_URL = "file://{student}"')
    if filled:
        solution = nbformat.read(bn.SOURCE_NOTEBOOK, as_version=4)
        answers = {
            _grade_id(cell): cell.source
            for cell in solution.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
        }
        for cell in nb.cells:
            if cell.cell_type == "code" and _grade_id(cell) in answers:
                cell.source = answers[_grade_id(cell)]
    index = nb.cells.index(setup)
    nb.cells.insert(index, nbformat.v4.new_code_cell(_FAKE_COLAB))
    nb.cells.insert(index + 2, nbformat.v4.new_code_cell(_WHERE))
    return nb


def _execute(bin_python: Path, nb: nbformat.NotebookNode, work: Path, name: str, cache: Path):
    """Run ``nb`` in a kernel of ``bin_python``, its pip (the setup cell's) caching in ``cache``."""
    content = work / "content"  # Colab's working folder
    content.mkdir(exist_ok=True)
    source, target, runner = work / f"{name}.in.ipynb", work / f"{name}.ipynb", work / "run.py"
    nbformat.write(nb, source)
    runner.write_text(_RUNNER)
    env = {k: v for k, v in _pip_env(PIP_CACHE_DIR=str(cache)).items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV")}  # fmt: skip
    env.update(A2C_KIT_QUICK="1", PATH=f"{bin_python.parent}:{env.get('PATH', '')}")
    _run([str(bin_python), str(runner), str(source), str(target), str(content)], env=env,
         cwd=content)  # fmt: skip
    return nbformat.read(target, as_version=4)


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(f"{out.ename}: {out.evalue}")
        elif "data" in out and "text/plain" in out.data:
            parts.append(out.data["text/plain"])
    return "".join(parts)


def _errors(nb) -> list[tuple[str | None, str, str]]:
    return [
        (_grade_id(cell), out.ename, out.evalue)
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]


def run_one(python: str, venv: Path, work: Path) -> dict:
    """The four steps on one interpreter; a dict of what was measured, ``"failures"`` included."""
    times, failures = {}, []
    start = time.perf_counter()
    bin_python, substituted = _venv(python, venv)
    times["colab packages (venv)"] = time.perf_counter() - start

    start = time.perf_counter()
    student = _student_repo(work)
    times["student distribution + git"] = time.perf_counter() - start

    # Colab runs the setup cell in a runtime where the distribution is not installed yet.
    subprocess.run(
        [str(bin_python), "-m", "pip", "uninstall", "-y", "-q", "a2c-course-lib"],
        capture_output=True,
    )
    before = _versions(bin_python)
    cache = work / "setup-cell-pip-cache"  # empty, as on a new Colab runtime
    start = time.perf_counter()
    solved = _execute(bin_python, _colab_notebook(student, filled=True), work, "solved", cache)
    times["notebook with solutions (setup cell's pip install included)"] = (
        time.perf_counter() - start
    )
    after = _versions(bin_python)
    setup = next(c for c in solved.cells if _grade_id(c) == "setup")
    changed = {name: [before.get(name), version] for name, version in after.items()
               if before.get(name) != version}  # fmt: skip
    downloaded_mb = _wheel_megabytes(bin_python, changed)
    for err in _errors(solved):
        failures.append(f"cell {err[0]}: {err[1]}: {err[2]}")
    checks = [c for c in solved.cells if (_grade_id(c) or "").startswith("check_")]
    for cell in checks:
        text = _text(cell).strip()
        print(f"  {_grade_id(cell)}: {text.splitlines()[-1] if text else '(no output)'}")
        if not text.startswith("OK"):
            failures.append(f"{_grade_id(cell)} did not print OK: {text!r}")
    where = next(_text(c) for c in solved.cells if c.source.startswith("# colab_like.py: where"))
    print("  " + where.replace("\n", "\n  ").rstrip())
    if str(venv) not in where or str(ROOT) in where:
        failures.append(f"course_lib did not come from the venv: {where!r}")
    if len(checks) < 6:
        failures.append(f"only {len(checks)} check cells found")

    start = time.perf_counter()
    untouched = _execute(
        bin_python, _colab_notebook(student, filled=False), work, "untouched", cache
    )
    times["untouched notebook"] = time.perf_counter() - start
    first = (_errors(untouched) or [(None, "no error", "")])[0]
    print(f"  untouched: first error in cell {first[0]}: {first[1]}")
    if first[:2] != ("check_model", "NotImplementedError"):
        failures.append(f"the untouched notebook did not stop at the first stub: {first}")

    pip_check = subprocess.run(
        [str(bin_python), "-m", "pip", "check"], capture_output=True, text=True
    )
    for name in ("torch", "numpy", "gymnasium", "ale-py"):
        if before.get(name) != after.get(name):
            failures.append(f"the setup cell replaced Colab's {name}: {changed[name]}")
    return {
        "python": before["python"],
        "interpreter": python,
        "before_setup_cell": _shown(before),
        "substituted": substituted,
        "setup_cell": {
            "seconds": _cell_seconds(setup),
            "downloaded_mb": downloaded_mb,
            "added_or_changed": changed,
            "student_repo_mb": round(_folder_bytes(student / ".git") / 1e6, 2),
        },
        "stages_s": {stage: round(seconds) for stage, seconds in times.items()},
        "pip_check": pip_check.stdout.strip() or pip_check.stderr.strip(),
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", action="append", metavar="PATH",
                        help="a Colab-like interpreter; repeat for several (default: Python "
                        f"{', '.join(DEFAULT_PYTHONS)} from pyenv or PATH)")  # fmt: skip
    parser.add_argument("--venv-dir", type=Path, help="keep the venvs here and reuse them "
                        "(one per Python; default: temporary)")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the work folders")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    pythons = args.python or [find_python(v) or f"python{v}" for v in DEFAULT_PYTHONS]
    missing = [p for p in pythons if not shutil.which(p) and not Path(p).is_file()]
    if missing:
        print(f"no interpreter at {', '.join(missing)}: pass --python PATH", file=sys.stderr)
        return 2
    results = []
    for python in pythons:
        print(f"== {python}", flush=True)
        work = Path(tempfile.mkdtemp(prefix="colab-like-"))
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()  # fmt: skip
        venv = args.venv_dir / f"colab-{version}" if args.venv_dir else work / "venv"
        started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        result = {"started_utc": started, "load_at_start": os.getloadavg()[0],
                  **run_one(python, venv, work)}  # fmt: skip
        result["load_at_end"] = os.getloadavg()[0]
        results.append(result)
        print(json.dumps(result, indent=1))
        if args.keep:
            print("work folder:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(
        "\n| Python | torch, numpy, gymnasium, ale-py before | setup cell | downloaded | result |"
    )
    print("|---|---|---|---|---|")
    for r in results:
        b, cell = r["before_setup_cell"], r["setup_cell"]
        print(f"| {r['python']} | {b['torch']}, {b['numpy']}, {b['gymnasium']}, {b['ale-py']} | "
              f"{cell['seconds'] or float('nan'):.0f} s | {cell['downloaded_mb']} MB | "
              f"{'FAILED' if r['failures'] else 'passed'} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    failures = [f"{r['python']}: {f}" for r in results for f in r["failures"]]
    for failure in failures:
        print("FAIL", failure)
    print("colab-like run:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
