"""A Colab-like run of the student distribution: another Python, Colab's packages first, pip from git.

Google Colab runs a newer Python than this project's CI (3.12 in 2025/26), with its own newest
``torch`` (a CUDA build), ``numpy`` and ``opencv-python`` (not headless) already installed, and
students get ``course_lib`` only through the setup cell's ``pip install git+STUDENT_REPO_URL``.
This script walks that path on a Linux machine, start to end:

1. a virtual environment on ``--python`` (default: Python 3.12 if found), where it installs the
   newest ``torch``, ``numpy`` and ``opencv-python`` from the package index first, plus the
   Jupyter kernel and ``nbclient`` (Colab has them); a pip configuration that caps versions is
   lifted for this step (``PIP_CONSTRAINT`` set to an empty file), so "newest" means newest;
2. the student distribution (``solutions.build_notebooks.build_student_distribution``) in a
   fresh folder made a git repository, so that ``git+file://...`` stands for the public address;
3. the student notebook with the stubs filled from the solution notebook, run top to bottom in
   that environment with ``A2C_KIT_QUICK=1``: a first cell makes ``google.colab`` importable, as
   it is on Colab, so the **unchanged** setup cell (only its address swapped for the local git
   URL) pip-installs the distribution; every visible check must print ``OK``, no cell may fail,
   and ``course_lib`` must come from the environment, not from this checkout;
4. the untouched student notebook in the same environment: it must stop at the first stub with
   ``NotImplementedError``.

Run it from the repository root with the project's environment active (the first run downloads
several GB: the CUDA build of torch and its nvidia packages)::

    python benchmarks/colab_like.py                        # a fresh venv, removed at the end
    python benchmarks/colab_like.py --venv /tmp/colab312   # keeps the venv and reuses it (faster,
                                                           # but what an earlier run installed stays)

It prints each stage's time and the versions it ran with, and exits 1 if any step fails.
"""

from __future__ import annotations

import argparse
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

#: What Colab has before the setup cell runs (the newest of each), plus the kernel machinery.
COLAB_PACKAGES = ("torch", "numpy", "opencv-python", "ipykernel", "nbclient", "nbformat")
DEFAULT_PYTHON = "/root/.pyenv/versions/3.12.1/bin/python"

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


def _venv(python: str, venv: Path) -> Path:
    """The venv's Python, with the newest of Colab's packages (upgraded in a reused venv)."""
    bin_python = venv / "bin" / "python"
    if not bin_python.exists():
        _run([python, "-m", "venv", str(venv)])
    env = {**os.environ, "PIP_CONSTRAINT": os.devnull}  # lift a local version cap
    _run(
        [str(bin_python), "-m", "pip", "install", "--progress-bar", "off", "--upgrade",
         *COLAB_PACKAGES],
        env=env,
    )  # fmt: skip
    return bin_python


def _versions(bin_python: Path) -> dict[str, str]:
    code = (
        "import json, sys, importlib.metadata as m\n"
        "names = ['torch', 'numpy', 'opencv-python', 'opencv-python-headless', 'ale-py',\n"
        "         'gymnasium', 'a2c-course-lib']\n"
        "out = {'python': sys.version.split()[0]}\n"
        "for n in names:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run([str(bin_python), "-c", code], capture_output=True, text=True)
    return json.loads(result.stdout)


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


def _execute(bin_python: Path, nb: nbformat.NotebookNode, work: Path, name: str):
    content = work / "content"  # Colab's working folder
    content.mkdir(exist_ok=True)
    source, target, runner = work / f"{name}.in.ipynb", work / f"{name}.ipynb", work / "run.py"
    nbformat.write(nb, source)
    runner.write_text(_RUNNER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(A2C_KIT_QUICK="1", PATH=f"{bin_python.parent}:{env.get('PATH', '')}")
    env["PIP_CONSTRAINT"] = os.devnull  # Colab's pip has no version cap: the setup cell's neither
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="the Colab-like interpreter")
    parser.add_argument("--venv", type=Path, help="venv to create or reuse (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    python = args.python if Path(args.python).exists() else shutil.which("python3.12")
    if python is None:
        print(f"no Python 3.12 at {args.python} and none on PATH: pass --python", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="colab-like-"))
    venv = args.venv or work / "venv"
    times, failures = {}, []

    start = time.perf_counter()
    bin_python = _venv(python, venv)
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
    start = time.perf_counter()
    solved = _execute(bin_python, _colab_notebook(student, filled=True), work, "solved")
    times["notebook with solutions (setup cell's pip install included)"] = (
        time.perf_counter() - start
    )
    after = _versions(bin_python)
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
    untouched = _execute(bin_python, _colab_notebook(student, filled=False), work, "untouched")
    times["untouched notebook"] = time.perf_counter() - start
    first = (_errors(untouched) or [(None, "no error", "")])[0]
    print(f"  untouched: first error in cell {first[0]}: {first[1]}")
    if first[:2] != ("check_model", "NotImplementedError"):
        failures.append(f"the untouched notebook did not stop at the first stub: {first}")

    pip_check = subprocess.run(
        [str(bin_python), "-m", "pip", "check"], capture_output=True, text=True
    )
    print("versions before the setup cell:", json.dumps(before))
    print("versions after the setup cell: ", json.dumps(after))
    print("pip check:", pip_check.stdout.strip() or pip_check.stderr.strip())
    for stage, seconds in times.items():
        print(f"{stage}: {seconds:.0f} s")
    if before.get("torch") != after.get("torch") or before.get("numpy") != after.get("numpy"):
        failures.append("the setup cell replaced Colab's torch or numpy")
    if args.keep:
        print("work folder:", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAIL", failure)
    print("colab-like run:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
