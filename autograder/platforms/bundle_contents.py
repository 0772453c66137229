"""What a platform's bundle carries: the kit's files, the release notebook, the course, the
requirements.

The Gradescope zip (:mod:`.gradescope.bundle`) and the PrairieLearn question
(:mod:`.prairielearn.bundle`) copy the kit's packages and install files (:func:`kit_files`),
the release notebook students got (:func:`release_bytes`, at :data:`RELEASE_NAME`), the course
as the instructor read it, whole, with the limits given when the bundle was built
(:func:`course_bytes`, at :data:`COURSE_NAME`: ``--timeout``, the agent's cap... hold on the
platform as in ``grade``; :func:`bundled_course` reads it back there) and what a grading image
installs (:func:`grading_requirements`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import autograder
from autograder.core.course.limits import Limits
from autograder.core.course.settings import Course
from autograder.core.package_digest import NOTEBOOK_OUTPUTS

__all__ = [
    "COURSE_NAME",
    "KIT_ROOT",
    "RELEASE_NAME",
    "bundled_course",
    "course_bytes",
    "grading_requirements",
    "kit_files",
    "release_bytes",
]

KIT_ROOT = Path(autograder.__file__).resolve().parents[1]  #: the checkout the bundles are made from
#: What a grading image needs of the kit: the packages, and what installs them.
KIT_PACKAGES = ("autograder", "solutions", "course_lib")
KIT_FILES = ("pyproject.toml", "README.md")
#: Pins of requirements.txt a grading image leaves out: what only the course's own tests,
#: benchmarks, cluster and training command (its TensorBoard files) use.
NOT_FOR_GRADING = (
    "tensorboard",
    "distributed",
    "pytest",
    "pytest-timeout",
    "pytest-xdist",
    "selenium",
    "stable-baselines3",
    "copydetect",
    "ruff",
)
#: Where a bundle carries the release notebook (relative to the kit's root).
RELEASE_NAME = "release/a2c.ipynb"
#: Where a bundle carries the course (:meth:`Course.to_plain`, JSON), beside the release.
COURSE_NAME = "release/course.json"
#: The largest course file read back (it holds a few dozen numbers).
MAX_COURSE_BYTES = 1024**2


def kit_files(root: Path = KIT_ROOT) -> dict[str, Path]:
    """``{name in the bundle: file}``: the kit's packages (no bytecode, nothing a run of the
    solution notebook in its folder wrote there: an instructor's trained agent, plot, video) and
    install files."""
    found: dict[str, Path] = {}
    for package in KIT_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.name.endswith(NOTEBOOK_OUTPUTS):
                continue
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found[path.relative_to(root).as_posix()] = path
    for name in KIT_FILES:
        found[name] = root / name
    return found


def release_bytes(root: Path = KIT_ROOT) -> bytes:
    """The release notebook of the kit's solution notebook, as nbgrader's
    ``generate_assignment`` makes it (what students got: the autograded cells and their points)."""
    from solutions.build_notebooks import generate_release

    with tempfile.TemporaryDirectory(prefix="a2c-release-") as folder:
        made = Path(folder) / "a2c.ipynb"
        generate_release(root / "solutions" / "a2c.ipynb", made)
        return made.read_bytes()


def course_bytes(release: bytes, limits: Limits | None = None) -> bytes:
    """The course of the ``release`` notebook's bytes with ``limits``, as the bundle carries it."""
    import nbformat

    course = Course.of_release(nbformat.reads(release.decode("utf-8"), as_version=4), limits)
    return (json.dumps(course.to_plain(), indent=2) + "\n").encode()


def bundled_course(root: Path = KIT_ROOT) -> tuple[Any, Course]:
    """The release notebook and the course a bundle carries (made now from the kit, with the
    declared limits, where it carries none: a checkout used as is)."""
    import nbformat

    bundled = root / RELEASE_NAME
    data = bundled.read_bytes() if bundled.is_file() else release_bytes(root)
    release = nbformat.reads(data.decode("utf-8"), as_version=4)
    path = root / COURSE_NAME
    if not path.is_file():
        return release, Course.of_release(release)
    with open(path, "rb") as handle:
        raw = handle.read(MAX_COURSE_BYTES + 1)
    if len(raw) > MAX_COURSE_BYTES:
        raise ValueError(f"{path} is larger than {MAX_COURSE_BYTES} bytes: not the kit's course")
    return release, Course.from_plain(json.loads(raw), f"the bundle's course ({path})")


def grading_requirements(root: Path = KIT_ROOT) -> str:
    """``requirements.txt`` without what only tests, benchmarks and the cluster need."""
    kept = []
    for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
        name = line.split("==")[0].strip().lower()
        if line.strip() and not line.startswith("#") and name not in NOT_FOR_GRADING:
            kept.append(line.strip())
    return "\n".join(kept) + "\n"
