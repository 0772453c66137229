"""The student distribution: does ``--student-dir`` write course_lib, the release and nothing secret?

The leak scan reads ``solutions/reference.py`` and ``autograder/**/*.py`` when it runs, so it
follows whatever those files hold today. Its rule, chosen so that lines every Python project
shares do not count and a copied solution or check does:

* a *significant* line is a stripped line that is not blank, a comment, an import or a decorator;
* a **reference leak** is any significant line of at least 25 characters from a
  ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` span of ``solutions/reference.py`` that appears
  as a line anywhere in the student tree;
* a **hidden-check leak** is any run of 3 consecutive significant lines of at least 20
  characters each from ``autograder/**/*.py`` that appears, consecutively and under the same
  filter, anywhere in the student tree (single short lines such as ``"values": values,`` or
  ``path.parent.mkdir(parents=True, exist_ok=True)`` are shared by unrelated code).

Notebooks are scanned by cell source, every other file as text.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from solutions import build_notebooks as bn

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXPECTED_TOP = {"course_lib", "notebooks", "pyproject.toml", "README.md", ".gitignore"}


# ------------------------------------------------------------------ the leak scan
def _significant(text: str, min_chars: int) -> list[str]:
    lines = (line.strip() for line in text.splitlines())
    return [
        line
        for line in lines
        if len(line) >= min_chars and not line.startswith(("#", "import ", "from ", "@"))
    ]


def _reference_solution_lines() -> set[str]:
    text = (ROOT / "solutions" / "reference.py").read_text()
    spans = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", text, flags=re.DOTALL)
    assert spans, "solutions/reference.py has no solution span: the scan would prove nothing"
    return {line for span in spans for line in _significant(span, 25)}


def _hidden_check_windows() -> dict[tuple[str, ...], str]:
    windows: dict[tuple[str, ...], str] = {}
    files = sorted((ROOT / "autograder").rglob("*.py"))
    assert files, "autograder/ has no Python file: the scan would prove nothing"
    for path in files:
        lines = _significant(path.read_text(), 20)
        for i in range(len(lines) - 2):
            windows.setdefault(tuple(lines[i : i + 3]), str(path.relative_to(ROOT)))
    return windows


def _tree_texts(tree: Path):
    for path in sorted(tree.rglob("*")):
        if not path.is_file() or ".git" in path.relative_to(tree).parts:
            continue
        if path.suffix == ".ipynb":
            cells = nbformat.read(path, as_version=4).cells
            yield path, "\n".join(cell.source for cell in cells)
            continue
        try:
            yield path, path.read_text()
        except UnicodeDecodeError:  # a binary file holds no source line
            continue


def find_leaks(tree: Path) -> list[str]:
    """One line per reference line or hidden-check window found in ``tree``."""
    solution_lines, windows = _reference_solution_lines(), _hidden_check_windows()
    leaks = []
    for path, text in _tree_texts(tree):
        where = path.relative_to(tree)
        for line in _significant(text, 25):
            if line in solution_lines:
                leaks.append(f"{where}: reference solution line {line!r}")
        lines = _significant(text, 20)
        for i in range(len(lines) - 2):
            source = windows.get(tuple(lines[i : i + 3]))
            if source:
                leaks.append(f"{where}: lines of {source}: {lines[i : i + 3]!r}")
    return leaks


# ------------------------------------------------------------------ one build for all tests
@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    """A student tree built into what looks like a clone of an older release of it."""
    out = tmp_path_factory.mktemp("student")
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "LICENSE").write_text("the instructor's licence\n")
    (out / "course_lib").mkdir()
    (out / "course_lib" / "stale_module.py").write_text("OLD = 1\n")
    # The function, not the command line: the command also rebuilds the committed notebooks in
    # place, and a test must not change the checkout.
    bn.build_student_distribution(out)
    return out


def test_tree_holds_course_lib_the_release_metadata_and_readme_only(student):
    """Does the tree hold course_lib, both notebooks, pyproject and README, and no solutions/ or autograder/?"""
    assert {p.name for p in student.iterdir()} - {".git", "LICENSE"} == EXPECTED_TOP
    assert (student / ".git" / "HEAD").is_file() and (student / "LICENSE").is_file()
    assert not (student / "course_lib" / "stale_module.py").exists()
    assert sorted(p.name for p in (student / "notebooks").iterdir()) == [
        "00_environments.ipynb",
        "a2c.ipynb",
    ]
    shipped = {
        p.relative_to(student / "course_lib") for p in (student / "course_lib").rglob("*.py")
    }
    source = {
        p.relative_to(ROOT / "course_lib")
        for p in (ROOT / "course_lib").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert shipped == source
    assert not any(p.name in {"solutions", "autograder"} for p in student.rglob("*"))
    assert not list(student.rglob("__pycache__"))


def test_no_reference_solution_line_and_no_hidden_check_in_the_tree(student):
    """Does the scan find no line of the reference's solutions or of the hidden checks?"""
    assert find_leaks(student) == []
    for _, text in _tree_texts(student):
        for marker in ("BEGIN SOLUTION", "HIDDEN TESTS", "grade_part", "solutions.reference"):
            assert marker not in text


def test_the_leak_scan_finds_planted_lines(student, tmp_path):
    """Would the scan catch one solution line, or three lines of a hidden check, put in the tree?"""
    solution_line = sorted(_reference_solution_lines())[0]
    window, source = next(iter(_hidden_check_windows().items()))
    (tmp_path / "planted.py").write_text(f"x = 1\n    {solution_line}\n")
    (tmp_path / "notes.md").write_text("\n".join(["# notes", *window, ""]))
    leaks = find_leaks(tmp_path)
    assert any(leak.startswith("planted.py: reference solution line") for leak in leaks), leaks
    assert any(leak.startswith(f"notes.md: lines of {source}") for leak in leaks), leaks


def test_student_notebook_installs_from_the_student_repository(student):
    """Do the setup cell, the Colab badge and the README point at STUDENT_REPO_URL?"""
    nb = nbformat.read(student / "notebooks" / "a2c.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    assert f'STUDENT_REPO_URL = "{bn.STUDENT_REPO_URL}"' in setup.source
    assert 'f"git+{STUDENT_REPO_URL}"' in setup.source
    assert bn.colab_url() in nb.cells[0].source
    readme = (student / "README.md").read_text()
    assert bn.STUDENT_REPO_URL in readme and bn.colab_url() in readme
    assert "{" not in re.sub(r"```.*?```", "", readme, flags=re.DOTALL)  # no unfilled template
    # the same notebook as the committed release
    committed = nbformat.read(bn.RELEASE_NOTEBOOK, as_version=4)
    assert [c.source for c in nb.cells] == [c.source for c in committed.cells]


def test_pyproject_installs_course_lib_only_with_the_instructor_bounds(student, tmp_path):
    """Does the student package keep the instructor's dependencies, and does its wheel hold course_lib only?"""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    student_meta = tomllib.loads((student / "pyproject.toml").read_text())
    instructor_meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for key in ("dependencies", "requires-python", "version"):
        assert student_meta["project"][key] == instructor_meta["project"][key]
    assert student_meta["tool"]["setuptools"]["packages"]["find"]["include"] == ["course_lib*"]
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path), str(student)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"course_lib"}


def test_refuses_to_write_into_the_instructor_repository():
    """Is an instructor checkout (solutions/, autograder/) refused before anything is written?"""
    with pytest.raises(ValueError, match="instructor repository"):
        bn.build_student_distribution(ROOT)
    before = {p: p.stat().st_mtime_ns for p in (bn.SOURCE_NOTEBOOK, bn.RELEASE_NOTEBOOK)}
    result = subprocess.run(
        [sys.executable, "-m", "solutions.build_notebooks", "--student-dir", str(ROOT)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2 and "instructor repository" in result.stderr, result.stderr
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_the_colab_like_run_changes_only_the_address_and_fills_only_the_stubs(student):
    """benchmarks/colab_like.py: is the setup cell it runs the release's, with only the address
    swapped for the local repository; does the filled notebook carry the solution of every
    graded part, and the untouched one the release's stubs?"""
    from benchmarks import colab_like

    def by_id(nb):
        return {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}

    release = by_id(nbformat.read(student / "notebooks" / "a2c.ipynb", as_version=4))
    solution = by_id(nbformat.read(bn.SOURCE_NOTEBOOK, as_version=4))
    filled = by_id(colab_like._colab_notebook(student, filled=True))
    untouched = by_id(colab_like._colab_notebook(student, filled=False))
    local = release["setup"].replace(bn.STUDENT_REPO_URL, f"file://{student}")
    assert local != release["setup"] and filled["setup"] == untouched["setup"] == local
    stubs = [key for key, text in release.items() if key and "raise NotImplementedError" in text]
    assert {"model", "policy", "a2c", "train"} <= set(stubs)
    for key in stubs:
        assert filled[key] == solution[key] and untouched[key] == release[key], key
    same = [key for key in release if key and key not in stubs and key != "setup"]
    assert all(filled[key] == untouched[key] == release[key] for key in same)
