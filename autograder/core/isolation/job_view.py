"""What a grading job is shown of this machine, and where: folders shown, folders hidden.

The job sees the system folders (:data:`SYSTEM_DIRS`), Python (:func:`python_dirs`, at neutral
paths in bubblewrap: :mod:`.python_layout`) and the folders the grader gives it; never the
instructor's packages (:data:`HIDDEN_PACKAGES`: the reference and the judges), wherever they
are installed (:func:`hidden_in`). Its working folder is :data:`SCRATCH`. A mode without a
private view of its own runs the job on outside copies: :func:`outside_command` maps the inside
paths of its command to them.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.isolation.python_layout import KIT_RECORDS, PYTHON, PYTHON_BIN, within

__all__ = [
    "HIDDEN_PACKAGES",
    "SCRATCH",
    "SYSTEM_DIRS",
    "hidden_in",
    "hidden_package_locations",
    "outside_command",
    "python_dirs",
    "reachable",
]

SCRATCH = "/submission"  #: the working folder inside the sandbox (in memory)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
#: The instructor's packages: never visible in the sandbox, wherever they are installed.
HIDDEN_PACKAGES = ("solutions", "autograder")


def python_dirs() -> list[Path]:
    """The Python installation, the environment, and package folders on the import path.

    The folder the grader was started in (first on the import path of ``python -m``) is not
    shown: it may be the checkout, or a folder of the instructor's own files.
    """
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    here = Path.cwd().resolve()
    for entry in sys.path:
        if not entry or not Path(entry).is_dir():
            continue
        path = Path(entry).resolve()
        if path == here or path.name not in ("site-packages", "dist-packages"):
            continue
        dirs.add(path)
    dirs = sorted(dirs, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in dirs:  # drop folders inside folders already shown
        if not within(path, kept):
            kept.append(path)
    return kept


def reachable(dirs: Sequence[Path], staging: Path) -> dict[str, list]:
    """For the launcher: how an unprivileged user reaches ``dirs`` at their own paths when a
    folder above one of them is closed to others (``/root`` holding the Python installation):
    the closed folder is covered by an empty one and the dir bound back inside it."""
    covers: set[str] = set()
    for path in dirs:
        for folder in reversed(path.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                covers.add(str(folder))
                break
    plan: dict[str, list] = {"binds": [], "covers": sorted(covers), "rebinds": []}
    for index, path in enumerate(dirs):
        if any(Path(folder) in path.parents for folder in covers):
            (staging / f"python-{index}").mkdir(mode=0o755)
            plan["binds"].append([str(path), str(staging / f"python-{index}")])
            plan["rebinds"].append([str(staging / f"python-{index}"), str(path)])
    return plan


def hidden_package_locations() -> list[Path]:
    """Where the instructor's packages (reference and judges) are imported from."""
    found: set[Path] = set()
    for name in HIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            found.add(Path(location).resolve())
    return sorted(found)


def hidden_in(shown: Sequence[Path]) -> list[Path]:
    """The instructor's packages (and install records) inside the folders shown."""
    found = set(hidden_package_locations())
    for entry in sys.path:
        if entry and Path(entry).is_dir():
            for name in HIDDEN_PACKAGES:
                if (Path(entry) / name).is_dir():
                    found.add((Path(entry) / name).resolve())
            # Install records name the checkout's folders: the editable finder (and its
            # compiled copy), the .pth that loads it, direct_url.json and RECORD.
            for pattern in KIT_RECORDS:
                for record in Path(entry).glob(pattern):
                    found.add(record.resolve())
    return sorted(path for path in found if within(path, shown))


def outside_command(
    argv: Sequence[str], env: Mapping[str, str], views: Mapping[str, str], work: Path
) -> tuple[list[str], dict[str, str]]:
    """``argv`` and ``env`` with the sandbox's inside paths (the shown folders ``views``,
    ``{inside: outside}``; the scratch folder; the neutral interpreter) as the outside folders
    a run without a sandbox of its own uses: the grader's own Python, ``work`` as scratch."""
    mapping = {
        **views,
        SCRATCH: str(work),
        PYTHON: sys.executable,
        PYTHON_BIN: str(Path(sys.executable).parent),
    }
    order = sorted(mapping.items(), key=lambda item: -len(item[0]))

    def real(text: str) -> str:
        for inside, outside in order:
            text = text.replace(inside, outside)
        return text

    return [real(arg) for arg in argv], {name: real(value) for name, value in env.items()}
