"""The template course kept per machine (:mod:`autograder.nbgrader.template_cache`): a later grader
writes the kept files instead of running ``generate_assignment``, and only when they were built
from the same inputs and are whole. Runs nbgrader in-process; no sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from autograder.core.file_tree import read_tree
from autograder.nbgrader import template_cache
from autograder.nbgrader.course import SOURCE_NOTEBOOK
from autograder.nbgrader.template_cache import _private, template_course

pytestmark = pytest.mark.slow


@pytest.fixture
def builds(monkeypatch) -> list[Path]:
    """Every ``generate_assignment`` build the tests cause, by its folder."""
    made: list[Path] = []
    build = template_cache.build_template

    def counted(dest: Path, source: Path):
        made.append(Path(dest))
        return build(dest, source)

    monkeypatch.setattr(template_cache, "build_template", counted)
    return made


def test_a_later_grader_writes_the_kept_template(tmp_path: Path, builds) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    first = template_course(tmp_path / "first", SOURCE_NOTEBOOK, cache)
    second = template_course(tmp_path / "second", SOURCE_NOTEBOOK, cache)
    assert builds == [tmp_path / "first"]  # built once
    assert read_tree(second.root) == read_tree(first.root)  # the same bytes, gradebook included
    assert second.release_notebook.is_file() and second.gradebook.is_file()
    with pytest.raises(ValueError, match="not empty"):
        template_course(tmp_path / "second", SOURCE_NOTEBOOK, cache)


def test_other_inputs_or_a_damaged_copy_build_again(tmp_path: Path, builds) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    template_course(tmp_path / "a", SOURCE_NOTEBOOK, cache)
    changed = tmp_path / "source" / "a2c.ipynb"
    changed.parent.mkdir()
    nb = nbformat.read(SOURCE_NOTEBOOK, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("A note from this term's instructor."))
    nbformat.write(nb, changed)
    other = template_course(tmp_path / "b", changed, cache)
    assert builds == [tmp_path / "a", tmp_path / "b"]  # another solution notebook: its own
    assert b"this term's instructor" in other.release_notebook.read_bytes()

    (kept,) = (entry for entry in cache.iterdir() if b"this term" not in _release(entry))
    gradebook = next((kept / "files").rglob("gradebook.db"))
    gradebook.write_bytes(gradebook.read_bytes()[:-1] + b"\0")  # one byte changed on disk
    again = template_course(tmp_path / "c", SOURCE_NOTEBOOK, cache)
    assert builds[-1] == tmp_path / "c"  # not written from the damaged copy
    built, first = read_tree(again.root), read_tree(tmp_path / "a")
    assert built.keys() == first.keys()
    assert all(built[name] == first[name] for name in built if not name.endswith(".db"))
    restored = template_course(tmp_path / "d", SOURCE_NOTEBOOK, cache)
    assert builds[-1] == tmp_path / "c"  # the copy was made whole again: written from it
    assert read_tree(restored.root) == built  # (nbgrader's row ids differ from build to build)


def _release(entry: Path) -> bytes:
    return next((entry / "files").rglob("release/**/*.ipynb")).read_bytes()


def test_only_a_folder_of_the_users_own_keeps_templates(tmp_path: Path) -> None:
    """The kept files hold the hidden tests: a folder that others can read or write, or a link,
    is not used (every grader then builds its own template)."""
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    assert _private(own) == own
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    assert _private(shared) is None
    link = tmp_path / "link"
    link.symlink_to(own)
    assert _private(link) is None
    assert _private(tmp_path / "missing") is None
    kept = template_cache.private_cache()
    assert kept is not None and not os.stat(kept).st_mode & 0o066
