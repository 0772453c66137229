"""Build the course notebooks and the student distribution; check drift.

Run from the repository root::

    python -m solutions.build_notebooks           # sync solutions/a2c.ipynb, write notebooks/a2c.ipynb
    python -m solutions.build_notebooks --check   # rebuild in a temp dir; exit 1 with a diff on drift
    python -m solutions.build_notebooks --student-dir DIR   # also write the student distribution

1. **sync**: every region of ``solutions/reference.py`` between ``# %% [part: <key>]`` and
   ``# %% [end part: <key>]`` is copied verbatim into the cell of ``solutions/a2c.ipynb`` whose
   nbgrader ``grade_id`` is ``<key>`` (a region without a cell, or a part cell without a region,
   is an error). The student distribution's address :data:`STUDENT_REPO_URL` is written into the
   setup cell (``grade_id`` ``setup``) and the Colab badge. Outputs are cleared.
2. **release**: nbgrader's own ``generate_assignment`` runs on the synced notebook in a temporary
   course directory (``source/a2c/a2c.ipynb``): solutions become ``raise NotImplementedError()``
   stubs, hidden tests and outputs are removed, checksums are added. The result is copied to
   ``notebooks/a2c.ipynb``.
3. **--check**: both steps run into a temporary directory and the results are compared with the
   committed files; every committed notebook must also be free of outputs.
4. **--student-dir DIR**: after 1 and 2, writes the tree students get (a public repository, or a
   wheel): ``course_lib/``, ``notebooks/a2c.ipynb`` and ``notebooks/00_environments.ipynb``, a
   ``pyproject.toml`` that installs ``course_lib`` only (the same dependencies and lower bounds as
   this repository's) and a student ``README.md``. Nothing of ``solutions/`` or ``autograder/``.
   ``DIR`` may be a clone of the student repository: only the paths above are replaced, ``.git``
   and any other file stay.

Instructors: set :data:`STUDENT_REPO_URL` below to the public address of your student
distribution, then rebuild.

Why one module: the four steps share the notebook's regions, cells and paths, and ``--check``
runs the others as they are; split, each would import the rest.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from solutions.parts import (
    ASSIGNMENT,
    PARTS,
    REFERENCE,
    RELEASE_NOTEBOOK,
    ROOT,
    SOURCE_NOTEBOOK,
)

__all__ = [
    "PLACEHOLDER_REPO_URL",
    "SECRET_MARKERS",
    "STUDENT_REPO_URL",
    "build",
    "build_student_distribution",
    "check",
    "clear_outputs",
    "generate_release",
    "main",
    "placeholder_warning",
    "read_regions",
    "student_pyproject",
    "sync_notebook",
]

#: The public repository of the **student distribution** (never this instructor repository, which
#: holds the reference and the hidden checks): the notebook's setup cell installs ``course_lib``
#: from here on Colab, and the Colab badge opens ``notebooks/a2c.ipynb`` from here. Set it in this
#: one place, then rebuild.
STUDENT_REPO_URL = "https://github.com/a2c-course/a2c-course"
#: The address this kit ships with; a build that still uses it prints a warning.
PLACEHOLDER_REPO_URL = "https://github.com/a2c-course/a2c-course"
#: Branch of the student repository used in the "Open in Colab" badge.
STUDENT_BRANCH = "main"

# Where the notebooks are (ROOT, REFERENCE, SOURCE_NOTEBOOK, RELEASE_NOTEBOOK): solutions.parts.
PLAIN_NOTEBOOKS = (ROOT / "notebooks" / "00_environments.ipynb",)
INSTRUCTOR_PYPROJECT = ROOT / "pyproject.toml"
STUDENT_README = ROOT / "solutions" / "student_readme.md"
#: What ``--student-dir`` writes (and replaces when it is there already); nothing else.
STUDENT_PATHS = ("course_lib", "notebooks", "pyproject.toml", "README.md", ".gitignore")
#: The regions the notebook needs: the import cell and the graded parts, in notebook order.
REQUIRED_PARTS = ("imports", *PARTS)

_BEGIN = re.compile(r"^# %% \[part: (?P<key>[A-Za-z0-9_]+)\]\s*$")
_END = re.compile(r"^# %% \[end part: (?P<key>[A-Za-z0-9_]+)\]\s*$")
_URL_LINE = re.compile(r'^STUDENT_REPO_URL = ".*"$', re.MULTILINE)
_BADGE = re.compile(r"\(https://colab\.research\.google\.com/github/[^)]*\)|\(COLAB_LINK\)")

# A minimal nbgrader configuration: the course id and the stub every solution becomes. The same
# settings stand in autograder/nbgrader/config.py (solutions may not import autograder); a test
# (test_release_build_and_grading_share_the_stub_settings) fails when the two disagree.
_NBGRADER_CONFIG = """\
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "a2c"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
"""


def read_regions(path: Path = REFERENCE) -> dict[str, str]:
    """The ``{key: source}`` regions of ``path``, without their marker lines and outer blank lines.

    Raises:
        ValueError: a region that is not closed, closed twice, nested, or defined twice.
    """
    regions: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if current is not None:
                raise ValueError(
                    f"{path}:{number}: part {begin['key']!r} opens inside part {current!r}."
                )
            current, lines = begin["key"], []
        elif end:
            if end["key"] != current:
                raise ValueError(
                    f"{path}:{number}: 'end part: {end['key']}' without its opening line."
                )
            if current in regions:
                raise ValueError(f"{path}:{number}: part {current!r} is defined twice.")
            regions[current] = "\n".join(lines).strip("\n")
            current = None
        elif re.match(r"^# %% \[(end )?part", line):
            raise ValueError(
                f"{path}:{number}: malformed marker {line!r}; use '# %% [part: <key>]'."
            )
        elif current is not None:
            lines.append(line)
    if current is not None:
        raise ValueError(
            f"{path}: part {current!r} is never closed with '# %% [end part: {current}]'."
        )
    return regions


def _grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def clear_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove outputs and execution counts in place (notebooks are committed without outputs)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.get("metadata", {}).pop("execution", None)
    return nb


def colab_url(repo_url: str = STUDENT_REPO_URL, branch: str = STUDENT_BRANCH) -> str:
    """The "Open in Colab" address of the student notebook in ``repo_url``."""
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)(\.git)?/?", repo_url)
    if match is None:
        raise ValueError(
            f"STUDENT_REPO_URL must look like 'https://github.com/OWNER/REPO', got {repo_url!r}."
        )
    return f"https://colab.research.google.com/github/{match[1]}/blob/{branch}/notebooks/a2c.ipynb"


def sync_notebook(
    nb: nbformat.NotebookNode, regions: dict[str, str], repo_url: str = STUDENT_REPO_URL
) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose part cells hold the regions verbatim and whose setup cell holds ``repo_url``.

    Raises:
        ValueError: a region without a cell, a cell with a part key but no region, or no setup cell.
    """
    absent = [key for key in REQUIRED_PARTS if key not in regions]
    if absent:
        raise ValueError(
            f"Part(s) {absent} have no region in solutions/reference.py: wrap each in "
            "'# %% [part: <key>]' ... '# %% [end part: <key>]'."
        )
    nb = clear_outputs(copy.deepcopy(nb))
    by_id = {_grade_id(cell): cell for cell in nb.cells if _grade_id(cell)}
    missing = [key for key in regions if key not in by_id]
    if missing:
        raise ValueError(
            f"solutions/reference.py has parts {missing} but the notebook has no cell with that "
            "grade_id: add a solution cell (nbgrader metadata grade_id=<key>) for each."
        )
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if (
            meta.get("solution")
            and cell.cell_type == "code"
            and meta.get("grade_id") not in regions
        ):
            if "### BEGIN SOLUTION" not in cell.source:  # hand-written solution cells are fine
                raise ValueError(
                    f"Solution cell {meta.get('grade_id')!r} has no region in solutions/reference.py "
                    "and no '### BEGIN SOLUTION' of its own."
                )
    for key, source in regions.items():
        by_id[key].source = source
    setup = by_id.get("setup")
    if setup is None or not _URL_LINE.search(setup.source):
        raise ValueError(
            "The notebook needs a setup cell (grade_id 'setup') with a STUDENT_REPO_URL line."
        )
    setup.source = _URL_LINE.sub(f'STUDENT_REPO_URL = "{repo_url}"', setup.source)
    badge = f"({colab_url(repo_url)})"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _BADGE.sub(badge, cell.source)
    return nb


def generate_release(source: Path, out: Path) -> None:
    """Run nbgrader's ``generate_assignment`` on ``source`` and write the student notebook to ``out``."""
    with tempfile.TemporaryDirectory(prefix="a2c-release-") as tmp:
        course = Path(tmp)
        (course / "nbgrader_config.py").write_text(_NBGRADER_CONFIG)
        (course / "source" / ASSIGNMENT).mkdir(parents=True)
        (course / "source" / ASSIGNMENT / "a2c.ipynb").write_bytes(source.read_bytes())
        cmd = [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            ASSIGNMENT,
            "--no-db",
            "--force",
        ]
        result = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
        released = course / "release" / ASSIGNMENT / "a2c.ipynb"
        if result.returncode != 0 or not released.is_file():
            raise RuntimeError(
                f"nbgrader generate_assignment failed:\n{result.stdout}\n{result.stderr}"
            )
        nb = clear_outputs(nbformat.read(released, as_version=4))
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)


def build(
    source: Path = SOURCE_NOTEBOOK, release: Path = RELEASE_NOTEBOOK, reference: Path = REFERENCE
) -> None:
    """Sync ``source`` from ``reference`` in place, then write the student ``release``."""
    nb = sync_notebook(nbformat.read(source, as_version=4), read_regions(reference))
    nbformat.validate(nb)
    nbformat.write(nb, source)
    generate_release(source, release)


_STUDENT_PYPROJECT = """\
# The student distribution of the A2C course: it installs `course_lib` only.
# Written by `python -m solutions.build_notebooks --student-dir DIR` in the instructor repository;
# do not edit it here, edit the instructor repository and rebuild.
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "a2c-course-lib"
version = "{version}"
description = "course_lib for the A2C on Atari assignment: env batches, Atari wrappers, runner, plots, video, visible checks"
readme = "README.md"
requires-python = "{requires_python}"
license = "MIT"
# Lower bounds only, so that a Colab runtime keeps its own torch and numpy.
dependencies = [
{dependencies}
]

[tool.setuptools.packages.find]
include = ["course_lib*"]
"""

_STUDENT_GITIGNORE = "__pycache__/\n*.egg-info/\n.ipynb_checkpoints/\n/build/\n*.mp4\n*.gif\n"


def _toml_value(text: str, key: str) -> str:
    match = re.search(rf'^{key} = "([^"]*)"', text, flags=re.MULTILINE)
    if match is None:
        raise ValueError(f'{INSTRUCTOR_PYPROJECT.name} has no `{key} = "..."` line.')
    return match[1]


def student_pyproject(instructor_pyproject: Path = INSTRUCTOR_PYPROJECT) -> str:
    """The student ``pyproject.toml``: course_lib only, with the instructor package's dependencies.

    The version, ``requires-python`` and every dependency (lower bounds) are read from
    ``instructor_pyproject``, so the two cannot drift apart.
    """
    text = instructor_pyproject.read_text()
    block = re.search(r"^dependencies = \[\n(.*?)^\]", text, flags=re.MULTILINE | re.DOTALL)
    if block is None:
        raise ValueError(f"{instructor_pyproject} has no `dependencies = [...]` block.")
    dependencies = re.findall(r'^\s*"([^"]+)",?\s*$', block[1], flags=re.MULTILINE)
    return _STUDENT_PYPROJECT.format(
        version=_toml_value(text, "version"),
        requires_python=_toml_value(text, "requires-python"),
        dependencies="\n".join(f'    "{dep}",' for dep in dependencies),
    )


def _student_readme(repo_url: str) -> str:
    return (
        STUDENT_README.read_text()
        .replace("{STUDENT_REPO_URL}", repo_url.removesuffix("/").removesuffix(".git"))
        .replace("{COLAB_URL}", colab_url(repo_url))
    )


#: Text that only the instructor's side holds: a file with one of these in the student folder
#: means answers or grading code are (or would be) there.
SECRET_MARKERS = (
    "### BEGIN SOLUTION",
    "### END SOLUTION",
    "### BEGIN HIDDEN TESTS",
    "### END HIDDEN TESTS",
    "from autograder",
    "import autograder",
    "solutions.reference",
    "from solutions",
)
#: What an nbgrader course folder holds (``grade-all --course``, or nbgrader's own layout).
COURSE_MARKS = ("gradebook.db", "source", "autograded", "submitted", "nbgrader_config.py")
_SCAN_LIMIT = 20 * 1024**2


def _secret_files(out: Path) -> list[str]:
    """Files under ``out`` (``.git`` aside) holding a :data:`SECRET_MARKERS` line."""
    found = []
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        if ".git" in relative.parts or path.is_symlink() or not path.is_file():
            continue
        if path.stat().st_size > _SCAN_LIMIT:
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        marks = [mark for mark in SECRET_MARKERS if mark in text]
        if marks:
            found.append(f"{relative} ({marks[0]!r})")
    return found


def _student_dir(out: Path) -> Path:
    """``out`` resolved, if the student distribution may be written there.

    Raises:
        ValueError: ``out`` is the instructor repository, an nbgrader course, or holds a file
            with solutions, hidden tests or grader imports.
    """
    out = Path(out).resolve()
    if (out / "solutions").exists() or (out / "autograder").exists():
        raise ValueError(
            f"{out} holds solutions/ or autograder/: it looks like the instructor repository. "
            "Pass an empty folder or a clone of the student repository."
        )
    course = [name for name in COURSE_MARKS if (out / name).exists()]
    if course:
        raise ValueError(
            f"{out} holds {', '.join(course)}: it looks like an nbgrader course (the grading "
            "folder, with the solutions, the gradebook and the submissions), never the public "
            "student repository. Pass a clone of the student repository, e.g. ~/public-a2c-student-repo."
        )
    if out.is_dir():
        secret = _secret_files(out)
        if secret:
            shown = "; ".join(secret[:5]) + (
                f"; and {len(secret) - 5} more" if len(secret) > 5 else ""
            )
            raise ValueError(
                f"{out} holds files with solution, hidden-test or grader text: {shown}. The "
                "student repository is public: remove them (and check its git history) first."
            )
    return out


def placeholder_warning(repo_url: str = STUDENT_REPO_URL) -> str:
    """A warning when :data:`STUDENT_REPO_URL` is still the kit's placeholder, else ``""``."""
    if repo_url != PLACEHOLDER_REPO_URL:
        return ""
    return (
        f"warning: STUDENT_REPO_URL is still the placeholder {PLACEHOLDER_REPO_URL}: the "
        "notebook's setup cell and Colab badge point at a repository that is not yours. Set "
        "STUDENT_REPO_URL in solutions/build_notebooks.py to your public student repository "
        "(https://github.com/<org>/<repo>) and build again."
    )


def build_student_distribution(out: Path, repo_url: str = STUDENT_REPO_URL) -> list[Path]:
    """Write the student distribution into ``out`` (see the module docstring); return its paths.

    The student notebook is built afresh from ``solutions/`` (the committed files are not read),
    so the tree is what the current sources give.

    Raises:
        ValueError: ``out`` looks like an instructor checkout (it has ``solutions/`` or
            ``autograder/``), an nbgrader course (``gradebook.db``, ``source/``...), or holds a
            file with solution or hidden-test markers; nothing there is replaced.
    """
    out = _student_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in STUDENT_PATHS:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    shutil.copytree(
        ROOT / "course_lib",
        out / "course_lib",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    with tempfile.TemporaryDirectory(prefix="a2c-student-") as tmp:
        source = Path(tmp) / "a2c.ipynb"
        nb = sync_notebook(nbformat.read(SOURCE_NOTEBOOK, as_version=4), read_regions(), repo_url)
        nbformat.write(nb, source)
        generate_release(source, out / "notebooks" / "a2c.ipynb")
    for path in PLAIN_NOTEBOOKS:
        nbformat.write(
            clear_outputs(nbformat.read(path, as_version=4)), out / "notebooks" / path.name
        )
    (out / "pyproject.toml").write_text(student_pyproject())
    (out / "README.md").write_text(_student_readme(repo_url))
    (out / ".gitignore").write_text(_STUDENT_GITIGNORE)
    return [out / name for name in STUDENT_PATHS]


def _diff(committed: Path, fresh: Path) -> str:
    old = committed.read_text().splitlines(keepends=True) if committed.is_file() else []
    new = fresh.read_text().splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(old, new, str(committed), f"fresh build of {committed.name}")
    )


def _outputs_left(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    return any(
        cell.cell_type == "code" and (cell.outputs or cell.execution_count) for cell in nb.cells
    )


def check() -> list[str]:
    """Rebuild into a temp dir; return one problem per drifted or unclean notebook (empty: all good)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="a2c-check-") as tmp:
        source, release = Path(tmp) / "a2c.ipynb", Path(tmp) / "release.ipynb"
        source.write_bytes(SOURCE_NOTEBOOK.read_bytes())
        build(source, release)
        for committed, fresh in ((SOURCE_NOTEBOOK, source), (RELEASE_NOTEBOOK, release)):
            diff = _diff(committed, fresh)
            if diff:
                problems.append(f"{committed.relative_to(ROOT)} is out of date:\n{diff}")
    for path in PLAIN_NOTEBOOKS:
        if path.is_file() and _outputs_left(path):
            problems.append(f"{path.relative_to(ROOT)} has outputs: clear them before committing.")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solutions.build_notebooks", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="fail with a diff if committed notebooks drifted"
    )
    parser.add_argument(
        "--student-dir",
        type=Path,
        metavar="DIR",
        help="also write the student distribution (course_lib, released notebooks, pyproject.toml, "
        "README.md) into DIR, e.g. a clone of the public student repository",
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for problem in problems:
            print(problem)
        if problems:
            print("Run `python -m solutions.build_notebooks` and commit the result.")
            return 1
        print("Notebooks are up to date.")
        return 0
    warning = placeholder_warning()
    if warning:
        print(warning, file=sys.stderr)
    if args.student_dir is not None:
        try:  # refuse a wrong folder before anything is written
            _student_dir(args.student_dir)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    build()
    print(
        f"Synced {SOURCE_NOTEBOOK.relative_to(ROOT)}; wrote {RELEASE_NOTEBOOK.relative_to(ROOT)}."
    )
    if args.student_dir is not None:
        build_student_distribution(args.student_dir)
        print(
            f"Wrote the student distribution to {args.student_dir} (installs course_lib only; "
            f"students reach it at {STUDENT_REPO_URL})."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
