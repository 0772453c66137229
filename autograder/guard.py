"""Keep the gradebook out of reach of the code being graded: save it before, restore it after.

``nbgrader autograde`` runs the student's notebook in a kernel *as the same user* as nbgrader,
so the student's code can open, overwrite or delete the gradebook file, and nbgrader would then
fail while saving the scores, or save them into a doctored database. Two nbgrader
preprocessors, placed around ``Execute`` in ``Autograde.autograde_preprocessors`` by
``autograder/nbgrader_config.py``, make the execution unable to change the gradebook:

* :class:`SaveGradebook` (before ``Execute``) reads the gradebook file into memory;
* :class:`RestoreGradebook` (after ``Execute``, once the kernel has been shut down) writes
  those bytes back, removing any journal file left beside it, before ``SaveAutoGrades`` writes
  the scores.

Neither changes the notebook. Both do nothing for a gradebook that is not a local sqlite file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

__all__ = ["RestoreGradebook", "SaveGradebook", "gradebook_path"]

_SAVED: dict[str, bytes] = {}


def gradebook_path(resources: dict[str, Any]) -> Path | None:
    """The gradebook file of an nbgrader conversion, or ``None`` if it is not a sqlite file."""
    url = resources.get("nbgrader", {}).get("db_url", "")
    prefix = "sqlite:///"
    return Path(url[len(prefix) :]) if url.startswith(prefix) else None


class SaveGradebook(Preprocessor):
    """Keep a copy of the gradebook's bytes; the notebook is unchanged."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        path = gradebook_path(resources)
        if path is not None and path.is_file():
            _SAVED[str(path)] = path.read_bytes()
        return nb, resources


class RestoreGradebook(Preprocessor):
    """Put back the bytes :class:`SaveGradebook` kept; the notebook is unchanged."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        path = gradebook_path(resources)
        if path is not None and str(path) in _SAVED:
            for suffix in ("-journal", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink() or path.is_dir():
                raise RuntimeError(f"the gradebook {path} was replaced by a link or a folder")
            path.write_bytes(_SAVED.pop(str(path)))
        return nb, resources
