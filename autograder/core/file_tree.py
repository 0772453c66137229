"""A folder's files as data: to snapshot a package and to notice a change in it.

:func:`read_tree` reads every file under a folder (caches left out); :func:`tree_digest` hashes
them. The grader snapshots ``course_lib`` for the sandbox, fingerprints its own packages
(:mod:`autograder.core.package_digest`) and checks that an unsandboxed run left its copy of
``course_lib`` alone, all with these two.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["read_tree", "tree_digest"]


def read_tree(folder: Path) -> dict[str, bytes]:
    """``{relative path: bytes}`` of every file under ``folder`` (caches left out)."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def tree_digest(folder: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``folder`` (caches left out)."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in read_tree(folder).items()}
