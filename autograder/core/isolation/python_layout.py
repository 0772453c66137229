"""Where the sandbox finds Python: the grader's environment at neutral paths, nothing of the host.

A notebook must not learn where the grading machine keeps the checkout, the virtual environment
or its work folders, whether it reads ``sys.prefix``, ``sys.path``, a module's ``__file__``, the
mount table or a compiled file. So the sandbox never shows a Python folder at its own path:

* the grader's environment is a virtual environment of its own at :data:`ENVIRONMENT`
  (``/opt/venv``): a ``pyvenv.cfg`` and ``bin/python`` made for the sandbox, and the
  environment's package folders (``site-packages``) at their place below it; nothing else of
  the environment (its ``bin`` scripts and ``pyvenv.cfg`` name its folder) is shown;
* the Python installation is at :data:`INSTALLATION` (``/opt/python``), unless it is a system
  folder (``/usr``), which the sandbox shows as it is;
* any other package folder on the import path (a user site, ``dist-packages``) is at
  ``/opt/packages/<n>``, on ``PYTHONPATH``.

Compiled files and the installation's own files still name the host's folders: a grader started
as root shows neutral copies of them (:mod:`.neutral_bytecode`).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ENVIRONMENT",
    "INSTALLATION",
    "PYTHON",
    "Folder",
    "Layout",
    "layout",
    "within",
]

INSTALLATION = "/opt/python"  #: the Python installation, when it is not a system folder
ENVIRONMENT = "/opt/venv"  #: the virtual environment the sandbox runs in
PACKAGES = "/opt/packages"  #: other package folders on the import path: PACKAGES/<n>
PYTHON = f"{ENVIRONMENT}/bin/python"  #: the interpreter, inside the sandbox
PYTHON_BIN = f"{ENVIRONMENT}/bin"
#: Install records of the course kit that name the checkout's folders (hidden by the sandbox).
KIT_RECORDS = (
    "__editable__*a2c_course_kit*",
    "__pycache__/__editable__*a2c_course_kit*",
    "a2c_course_kit-*.dist-info",
    "a2c_course_kit*.egg-info",
    "a2c_course_kit*.egg-link",
)


@dataclass(frozen=True)
class Folder:
    """A folder the sandbox shows read-only: ``outside`` (resolved) at ``inside``."""

    outside: Path
    inside: str
    packages: bool  #: a package folder (else the installation: its package folders are apart)


@dataclass(frozen=True)
class Layout:
    """The Python folders the sandbox shows, and the environment made for it."""

    folders: tuple[Folder, ...]  #: outermost first (a folder may be shown inside another)
    pyvenv: str  #: the text of ``ENVIRONMENT/pyvenv.cfg``
    python_link: str  #: where ``ENVIRONMENT/bin/python`` links to (inside)
    env: dict[str, str]  #: variables the interpreter needs (``LD_LIBRARY_PATH``, ``PYTHONPATH``)

    def inside(self, path: Path) -> str | None:
        """Where the sandbox shows the host path ``path`` (resolved), or None if it does not."""
        for folder in sorted(self.folders, key=lambda f: -len(f.outside.parts)):
            if path == folder.outside or folder.outside in path.parents:
                return str(Path(folder.inside) / path.relative_to(folder.outside))
        return None


def within(path: Path, folders: list[Path]) -> bool:
    """Whether ``path`` is one of ``folders`` or inside one."""
    return any(path == folder or folder in path.parents for folder in folders)


@functools.cache
def layout(system_dirs: tuple[str, ...]) -> Layout:
    """This interpreter's layout in the sandbox; ``system_dirs`` are shown at their own paths."""
    system = [Path(folder).resolve() for folder in system_dirs]
    base, prefix = Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()
    executable = Path(sys.executable).resolve()
    if not executable.is_relative_to(base):
        raise RuntimeError(
            f"the interpreter {executable} is not inside its installation {base}: the sandbox "
            "cannot show it at a neutral path"
        )
    base_inside = str(base) if within(base, system) else INSTALLATION
    folders: list[Folder] = []
    if not within(base, system):
        folders.append(Folder(base, INSTALLATION, packages=False))
    here = Path.cwd().resolve()
    extra: list[str] = []
    system_site = prefix == base
    for entry in dict.fromkeys(sys.path):
        path = Path(entry).resolve() if entry else None
        if path is None or not path.is_dir() or path == here:
            continue
        if path.name not in ("site-packages", "dist-packages"):
            continue  # the standard library is shown with the installation
        if path.is_relative_to(prefix) and prefix != base:
            inside = f"{ENVIRONMENT}/{path.relative_to(prefix)}"
        elif path.is_relative_to(base):
            inside, system_site = f"{base_inside}/{path.relative_to(base)}", True
            if within(path, system):
                continue
        elif within(path, system):
            extra.append(str(path))
            continue
        else:
            inside = f"{PACKAGES}/{len(extra)}"
            extra.append(inside)
        folders.append(Folder(path, inside, packages=True))
    env = {}
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/").resolve()
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and base_inside != str(base):
        if libdir.is_relative_to(base):  # libpython's run path names the real folder
            env["LD_LIBRARY_PATH"] = f"{INSTALLATION}/{libdir.relative_to(base)}"
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(extra)
    link = f"{base_inside}/{executable.relative_to(base)}"
    pyvenv = (
        f"home = {Path(link).parent}\n"
        f"include-system-site-packages = {'true' if system_site else 'false'}\n"
        f"version = {'.'.join(map(str, sys.version_info[:3]))}\n"
    )
    return Layout(tuple(folders), pyvenv, link, env)


