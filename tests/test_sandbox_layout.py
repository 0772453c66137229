"""The sandbox's neutral layout (:mod:`autograder.core.isolation.python_layout`): where Python is shown, and the
compiled files rewritten so that they name no host folder. Fast: no sandbox is started."""

from __future__ import annotations

import marshal
import os
import py_compile
import sys
import time
from pathlib import Path

from autograder.core.isolation import neutral_bytecode as copies
from autograder.core.isolation.job_view import SYSTEM_DIRS
from autograder.core.isolation.neutral_bytecode import neutral_bytecode
from autograder.core.isolation.python_layout import ENVIRONMENT, Folder, layout


def _filenames(code) -> set[str]:
    names = {code.co_filename}
    for const in code.co_consts:
        if hasattr(const, "co_filename"):
            names |= _filenames(const)
    return names


def test_compiled_files_are_copied_with_the_inside_path(tmp_path: Path) -> None:
    site = tmp_path / "host-venv-5b1e" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    source = site / "pkg" / "mod.py"
    source.write_text("def f():\n    def g():\n        return 1\n    return g\n")
    compiled = Path(py_compile.compile(str(source), doraise=True))
    finder = site / "__editable___a2c_course_kit_0_1_0_finder.py"
    finder.write_text(f"MAPPING = {{'autograder': {str(tmp_path)!r}}}\n")
    hidden = Path(py_compile.compile(str(finder), doraise=True))
    (site / "pkg" / "__pycache__" / "junk.cpython-311.pyc").write_bytes(b"not a compiled file")
    cache = tmp_path / "cache"
    cache.mkdir()
    folder = Folder(site, f"{ENVIRONMENT}/lib/python3/site-packages", packages=True)

    image = neutral_bytecode(folder, cache)
    copy = (image / compiled.relative_to(site)).read_bytes()
    assert copy[:16] == compiled.read_bytes()[:16]  # the header (source stamp) is kept
    assert _filenames(marshal.loads(copy[16:])) == {f"{folder.inside}/pkg/mod.py"}
    assert b"host-venv-5b1e" not in copy
    assert (image / hidden.relative_to(site)).read_bytes() == b""  # the kit's finder: emptied
    assert (image / "pkg" / "__pycache__" / "junk.cpython-311.pyc").read_bytes() == b""
    assert neutral_bytecode(folder, cache) == image  # made once

    stale = cache / "0123456789abcdef-0123456789abcdef"  # a removed environment's copy
    stale.mkdir()
    os.utime(stale, (time.time() - 8 * 86400,) * 2)
    (site / "other.py").write_text("x = 1\n")
    py_compile.compile(str(site / "other.py"), doraise=True)  # the folder changed: a new copy
    again = neutral_bytecode(folder, cache)
    assert again != image and not image.exists() and (again / "__pycache__").is_dir()
    assert not stale.exists()  # unused for a week: removed


def test_a_new_grader_finds_its_copy_without_a_walk_and_sees_every_change(
    tmp_path: Path, monkeypatch
) -> None:
    """A grader process remembers its walk beside the copies: the next process reads the stamps
    of the folders and the metadata of the files it names instead of walking the environment,
    and walks again when a name was added deep inside or a compiled file changed in place."""
    site = tmp_path / "site-packages"
    (site / "pkg" / "sub").mkdir(parents=True)
    (site / "pkg" / "sub" / "deep.py").write_text("x = 1\n")
    deep = Path(py_compile.compile(str(site / "pkg" / "sub" / "deep.py"), doraise=True))
    cache = tmp_path / "cache"
    cache.mkdir()
    folder = Folder(site, f"{ENVIRONMENT}/lib/python3/site-packages", packages=True)
    image = neutral_bytecode(folder, cache)
    walks: list[Folder] = []
    walk = copies._scan
    monkeypatch.setattr(copies, "_scan", lambda f: walks.append(f) or walk(f))

    def new_grader() -> Path:
        copies._made.clear()  # what a new process does not know
        return neutral_bytecode(folder, cache)

    assert new_grader() == image and walks == []  # nothing changed: the copy, no walk

    (site / "pkg" / "sub" / "more.py").write_text("y = 2\n")
    more = Path(py_compile.compile(str(site / "pkg" / "sub" / "more.py"), doraise=True))
    added = new_grader()  # the top folder is as it was: only the deep folder's stamp tells
    assert walks == [folder] and added != image
    assert (added / more.relative_to(site)).is_file()

    with open(deep, "ab") as compiled:  # rewritten in place: no folder changes
        compiled.write(b"\0")
    changed = new_grader()
    assert changed not in (image, added) and walks == [folder]  # seen from its metadata
    assert new_grader() == changed and walks == [folder]


_HOLDER = """
import sys
from pathlib import Path
from autograder.core.isolation.neutral_bytecode import neutral_bytecode
from autograder.core.isolation.python_layout import Folder
site, cache, inside = map(Path, sys.argv[1:4])
print(neutral_bytecode(Folder(site, str(inside), packages=True), cache), flush=True)
sys.stdin.read()  # holds the copy until told to end
"""


def test_a_copy_another_grader_uses_is_kept_until_it_ends(tmp_path: Path) -> None:
    """Two graders on one machine (two checkouts, or two environments on one Python
    installation) share the cache: a newer state of a folder never removes the copy that
    another living grader process uses; once it has ended, the next change removes it."""
    import subprocess

    site, cache = tmp_path / "site-packages", tmp_path / "cache"
    site.mkdir()
    cache.mkdir()
    inside = f"{ENVIRONMENT}/lib/python3/site-packages"
    (site / "a.py").write_text("a = 1\n")
    py_compile.compile(str(site / "a.py"), doraise=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(site), str(cache), inside],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = Path(holder.stdout.readline().strip())
        assert held.is_dir(), held
        (site / "b.py").write_text("b = 1\n")
        py_compile.compile(str(site / "b.py"), doraise=True)
        newer = neutral_bytecode(Folder(site, inside, packages=True), cache)
        assert newer != held and held.is_dir()  # the other grader still uses it
    finally:
        holder.communicate("", timeout=60)
    (site / "c.py").write_text("c = 1\n")
    py_compile.compile(str(site / "c.py"), doraise=True)
    newest = neutral_bytecode(Folder(site, inside, packages=True), cache)
    assert newest.is_dir() and not held.exists() and not newer.exists()


def test_the_environment_is_shown_at_neutral_paths() -> None:
    view = layout(SYSTEM_DIRS)
    prefix = Path(sys.prefix).resolve()
    assert all(not folder.inside.startswith(str(prefix)) for folder in view.folders)
    site = next(Path(p).resolve() for p in sys.path if p.endswith("site-packages"))
    assert view.inside(site / "torch" / "__init__.py").startswith("/opt/")
    assert view.inside(Path("/nowhere/at/all")) is None
    assert "include-system-site-packages" in view.pyvenv and str(prefix) not in view.pyvenv
