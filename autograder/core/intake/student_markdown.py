"""Make a submission's markdown cells safe to show, and renderable, before they are recorded.

The grader does this in its own process while it assesses a submission (no lock held), so that
what nbgrader records, formgrader shows and the feedback renders is already safe:

* **the course's own cells stay as released**: a markdown cell whose text is a markdown cell of
  the release is left alone (nothing a student wrote is in it);
* **pasted images are kept, safely**: Jupyter and Colab store an image pasted into a markdown
  cell as a cell attachment. A PNG or JPEG attachment whose data is plain base64 of a real image
  of at most :data:`MAX_IMAGE_BYTES` is kept (:data:`MAX_IMAGES_BYTES` per notebook); any other
  attachment is dropped with a note, and a reference to a dropped or missing attachment is
  pointed elsewhere (nbconvert stops on ``attachment:`` names a cell does not hold);
* **sizes are capped**: a markdown cell longer than :data:`MAX_MARKDOWN_CELL` characters is
  replaced by a note (the whole notebook's cell text is capped when it is read:
  :data:`autograder.core.intake.submission_file.MAX_SOURCE_CHARS`);
* **time is capped**: rendering the cells of one notebook stops after :data:`MARKDOWN_SECONDS`;
  each cell still to do is then replaced by a note (the worst case is that budget plus one
  capped cell), so no student text holds a grading thread for long;
* **active HTML is removed** from every other cell (:func:`autograder.core.intake.markdown_safety.sanitize_markdown`,
  linear in the cell), and a code block in a language other than the course's is shown as text
  (no lexer the student names runs: :mod:`autograder.core.intake.code_highlighting`).
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from typing import Any
from urllib.parse import unquote

import nbformat
from nbformat import NotebookNode

from autograder.core.intake.markdown_safety import (
    CHECKED,
    CODE_NOTE,
    NOTE,
    is_checked,
    mark_checked,
    render_markdown,
    sanitize_markdown,
)

__all__ = [
    "MAX_IMAGES_BYTES",
    "MAX_IMAGE_BYTES",
    "MARKDOWN_SECONDS",
    "MAX_MARKDOWN_CELL",
    "mark_markdown_here",
    "safe_markdown",
]

MAX_MARKDOWN_CELL = 20_000  #: characters of a markdown cell (a part 8 answer: a few hundred words)
MAX_IMAGE_BYTES = 2 * 1024**2  #: one pasted image, decoded
MAX_IMAGES_BYTES = 10 * 1024**2  #: all pasted images of a notebook, decoded
#: Seconds of markdown rendering a notebook may take (a class's notebooks take well under one).
MARKDOWN_SECONDS = 20.0
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_REFERENCE = re.compile(r"attachment:([^\s)\"'<>\]]*)")
_LEFT_OUT = "#attachment-left-out"


def _image(mime: str, value: Any, budget: int) -> str | None:
    """The base64 data of an attachment's ``mime`` entry when it is a real image of that type
    within ``budget`` bytes, else ``None``."""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        value = "".join(value)
    limit = min(budget, MAX_IMAGE_BYTES)
    if not isinstance(value, str) or len(value) > limit * 4 // 3 + 1024:
        return None
    if not _BASE64.fullmatch(value):
        return None
    data = "".join(value.split())
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if len(raw) <= limit and raw.startswith(_MAGIC[mime]) else None


def _attachments(cell: NotebookNode, budget: int) -> tuple[dict[str, dict[str, str]], list[str]]:
    """The attachments of ``cell`` worth keeping (see the module docstring), and what was not."""
    given = cell.get("attachments")
    if not isinstance(given, dict):
        return {}, ["attachments that are not a mapping"] if given else []
    kept, dropped = {}, []
    for name, bundle in list(given.items())[:100]:
        image = None
        if isinstance(bundle, dict):
            for mime in ("image/png", "image/jpeg"):
                image = _image(mime, bundle.get(mime), budget)
                if image is not None:
                    kept[str(name)] = {mime: image}
                    budget -= len(image) * 3 // 4
                    break
        if image is None:
            kinds = ", ".join(map(str, bundle))[:80] if isinstance(bundle, dict) else "?"
            dropped.append(f"{str(name)[:60]!r} ({kinds})")
    dropped += [f"{len(given) - 100} more"] if len(given) > 100 else []
    return kept, dropped


def _point_missing(source: str, kept: dict[str, Any]) -> str:
    """``source`` with every ``attachment:`` reference to an attachment not in ``kept`` pointed
    at :data:`_LEFT_OUT`."""

    def point(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name in kept or unquote(name) in kept else _LEFT_OUT

    source = _REFERENCE.sub(point, source)
    _, named, _ = render_markdown(source)
    if any(name not in kept for name in named):  # a name the pattern did not read alike
        source = source.replace("attachment:", _LEFT_OUT + ":")
    return source


def safe_markdown(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Make the markdown cells of ``nb`` safe in place (see the module docstring); the notes."""
    released = {cell.source for cell in release.cells if cell.cell_type == "markdown"}
    notes: list[str] = []
    images = MAX_IMAGES_BYTES
    deadline = time.monotonic() + MARKDOWN_SECONDS
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "markdown":
            continue
        if isinstance(cell.get("metadata"), dict):
            cell.metadata.pop(CHECKED, None)  # only this process marks what it checked
        _make_safe(cell, f"markdown cell {index}", released, deadline, notes, images)
        images = max(0, images - _kept_bytes(cell))
        mark_checked(cell)
    return notes


def _kept_bytes(cell: NotebookNode) -> int:
    kept = cell.get("attachments") or {}
    return sum(len(data) * 3 // 4 for bundle in kept.values() for data in bundle.values())


def _make_safe(
    cell: NotebookNode,
    where: str,
    released: set[str],
    deadline: float,
    notes: list[str],
    images: int,
) -> None:
    """Make one markdown cell safe in place (see the module docstring); notes into ``notes``."""
    if not isinstance(cell.get("source"), str):
        cell.source = ""
    kept, dropped = _attachments(cell, images)
    if dropped:
        notes.append(
            f"{where}: attachments left out (only PNG and JPEG images of at most "
            f"{MAX_IMAGE_BYTES // 1024**2} MB each are kept): " + ", ".join(dropped[:5])
        )
    if kept:
        cell["attachments"] = kept
    else:
        cell.pop("attachments", None)
    if cell.source in released:
        return
    if len(cell.source) > MAX_MARKDOWN_CELL:
        notes.append(f"{where}: {len(cell.source)} characters, not shown (too long)")
        cell.source = (
            f"*[The grader left this cell out: {len(cell.source)} characters, more than a "
            "markdown cell may have; the file as submitted is kept in received/.]*"
        )
        cell.pop("attachments", None)
        return
    if time.monotonic() > deadline:
        notes.append(f"{where}: not shown (the notebook's markdown took too long to render)")
        cell.source = (
            "*[The grader left this cell out: rendering this notebook's markdown took more "
            f"than {MARKDOWN_SECONDS:g} s; the file as submitted is kept in received/.]*"
        )
        cell.pop("attachments", None)
        return
    clean = sanitize_markdown(cell.source)
    if clean is not None:
        cell.source = clean
        if clean.endswith(NOTE) or (NOTE + CODE_NOTE) in clean:
            notes.append(f"{where}: active HTML removed before showing it")
        if clean.endswith(CODE_NOTE):
            notes.append(f"{where}: code blocks in languages other than Python shown as text")
    elif "attachment:" in cell.source:
        cell.source = _point_missing(cell.source, kept)


def mark_markdown_here(notebook: str) -> str:
    """``notebook`` (an assessed notebook's JSON, made safe by another process: a Dask worker)
    with each markdown cell a student could edit checked again and marked by this process, here
    and before nbgrader records it: nbgrader's own pass, under the gradebook's lock, then
    renders none of them. Cells the worker made safe are safe as they are, so this renders them
    with nothing to change; it costs what the worker's pass cost, outside any lock."""
    nb = nbformat.reads(notebook, as_version=4)
    changed = False
    for cell in nb.cells:
        locked = cell.get("metadata", {}).get("nbgrader", {}).get("locked", False)
        if cell.get("cell_type") != "markdown" or locked or is_checked(cell):
            continue
        clean = sanitize_markdown(str(cell.get("source", "")))
        if clean is not None:
            cell.source = clean
        mark_checked(cell)
        changed = True
    return nbformat.writes(nb) if changed else notebook
