"""Read a submitted file safely: a regular file, opened without following links, size-checked.

A submission is the student's: it may be huge, a link to one of the instructor's files, a FIFO
that never ends, or not a notebook at all. :func:`read_bytes` gets its bytes without following
a link and without reading past :data:`MAX_NOTEBOOK_BYTES`; :func:`parse_notebook` turns them
into a notebook (at most :data:`MAX_CELLS` cells and :data:`MAX_SOURCE_CHARS` characters of
cell text) leniently (a Colab download is valid nbformat and is kept as it is; only
``metadata.widgets``, whose saved state often breaks nbconvert, is dropped). Both raise
:class:`UnreadableNotebook` with a message for the instructor.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from course_lib.saved_agent import AGENT_FILE

__all__ = [
    "MAX_CELLS",
    "MAX_NOTEBOOK_BYTES",
    "MAX_SOURCE_CHARS",
    "UnreadableNotebook",
    "KEPT_AGENT_SUFFIX",
    "parse_notebook",
    "read_bytes",
    "agent_file_beside",
    "agent_file_for",
]

#: Larger files are refused before parsing (a notebook with a long training run's plots and a
#: video is a few MB).
MAX_NOTEBOOK_BYTES = 50 * 1024**2
#: More cells are refused before nbformat reads them (the course notebook has about 40; each
#: step of grading, recording and feedback costs something per cell).
MAX_CELLS = 2000
#: More characters of cell text (code and markdown, outputs apart) are refused too: the course
#: notebook has about 45,000, and the feedback page highlights every code cell.
MAX_SOURCE_CHARS = 250_000


class UnreadableNotebook(ValueError):
    """A submitted file is not a Jupyter notebook, or not one the grader will read."""


def read_bytes(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of the regular file ``path``; links and special files are refused."""
    path = Path(path)
    try:
        fd = os.open(
            path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError as error:
        reason = "a symbolic link" if path.is_symlink() else error.strerror
        raise UnreadableNotebook(
            f"{path.name}: not read ({reason}); submit the .ipynb file itself."
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnreadableNotebook(f"{path.name}: not a regular file; submit the .ipynb file itself.")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise UnreadableNotebook(
                f"{path.name}: {info.st_size / 1024**2:.0f} MB, more than the "
                f"{limit / 1024**2:.0f} MB a notebook may have; clear large outputs and resubmit."
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnreadableNotebook(f"{path.name}: grew past {limit / 1024**2:.0f} MB while read.")
    return data


#: The saved agent's file's size cap: the bundle of a Nature-DQN is about 4.5 MB.
MAX_AGENT_FILE_BYTES = 16 * 1024**2


def agent_file_beside(notebook: Path) -> bytes | None:
    """The bytes of ``a2c_agent.json`` handed in beside ``notebook``, or None: only where the
    notebook is the one notebook of its folder (a student's own folder: nbgrader's
    ``submitted/<student>/a2c/``, Gradescope's and PrairieLearn's submission), so one student's
    file is never read for another's notebook in a shared folder. A link, a special file or a
    file over :data:`MAX_AGENT_FILE_BYTES` is not read (the notebook's own output is then the
    agent, or there is none)."""
    folder = Path(notebook).parent
    try:
        if sum(1 for _ in folder.glob("*.ipynb")) != 1:
            return None
        return read_bytes(folder / AGENT_FILE, MAX_AGENT_FILE_BYTES)
    except (OSError, UnreadableNotebook):
        return None


#: How ``grade-all`` keeps the saved agent handed in beside a notebook, beside its kept copy:
#: ``received/<student>/<stamp>-<digest>.ipynb`` and ``<stamp>-<digest>`` + this.
KEPT_AGENT_SUFFIX = "." + AGENT_FILE


def agent_file_for(notebook: Path) -> bytes | None:
    """The saved agent handed in with ``notebook``: the copy kept beside a kept notebook
    (``<name>`` + :data:`KEPT_AGENT_SUFFIX`, as ``grade-all`` keeps both in ``received/``: a
    ``regrade`` grades the agent that came with the file), else :func:`agent_file_beside`."""
    notebook = Path(notebook)
    kept = notebook.with_name(notebook.stem + KEPT_AGENT_SUFFIX)
    try:
        if kept.is_file() and not kept.is_symlink():
            return read_bytes(kept, MAX_AGENT_FILE_BYTES)
    except (OSError, UnreadableNotebook):
        return None
    return agent_file_beside(notebook)


def _source_length(cell: object) -> int:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        return sum(len(line) if isinstance(line, str) else 0 for line in source)
    return len(source) if isinstance(source, str) else 0


def parse_notebook(data: bytes, name: str = "notebook") -> NotebookNode:
    """``data`` as a notebook (nbformat 4); see the module docstring."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise UnreadableNotebook(f"{name}: larger than {MAX_NOTEBOOK_BYTES / 1024**2:.0f} MB.")
    try:
        raw = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise UnreadableNotebook(
            f"{name}: not a readable notebook ({type(error).__name__}: {str(error)[:200]}); ask "
            "the student to download it again (Colab: File > Download > Download .ipynb)."
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise UnreadableNotebook(
            f"{name}: JSON without a list of `cells`, so not a Jupyter notebook."
        )
    if len(raw["cells"]) > MAX_CELLS:
        raise UnreadableNotebook(
            f"{name}: {len(raw['cells'])} cells, more than the {MAX_CELLS} a notebook may have; "
            "ask the student to merge or delete cells and resubmit."
        )
    text = sum(_source_length(cell) for cell in raw["cells"])
    if text > MAX_SOURCE_CHARS:
        raise UnreadableNotebook(
            f"{name}: {text} characters in its cells, more than the {MAX_SOURCE_CHARS} a notebook "
            "may have (outputs apart); ask the student to remove pasted data and resubmit."
        )
    if isinstance(raw.get("metadata"), dict):
        raw["metadata"].pop("widgets", None)
    try:
        return nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds for bad files
        raise UnreadableNotebook(
            f"{name}: not a valid notebook ({type(error).__name__}: {str(error)[:200]})."
        ) from None
