"""Keep what the student's notebook showed when it was submitted, safely, marked as theirs.

Grading does not re-run the cells that train and evaluate: part 8 is graded by hand on the
curves, numbers and still frames of the agent's video (the video file itself never reaches
the grader; ``record_video`` shows frames as PNG beside it) that the student's own run
produced. :func:`keep_submitted_outputs`
filters every output of the submission to text and raster images (HTML, JavaScript, SVG and
widget state are dropped: feedback and formgrader show outputs in a browser, where a script would
run with the reader's rights), strips terminal control sequences from text, and puts a first
line above each kept output saying it is the student's, not the grader's. Autograded cells get
no outputs here: nbgrader fills them with the grader's verdict.
"""

from __future__ import annotations

import re
from typing import Any

import nbformat
from nbformat import NotebookNode

from autograder.core.intake.repair import graded_part
from autograder.core.reports.safe_text import printable

__all__ = ["MARK", "NO_VIDEO", "SAFE_MIME", "keep_submitted_outputs", "plain_text"]

SAFE_MIME = ("text/plain", "image/png", "image/jpeg")
#: The first line above a cell's kept outputs.
MARK = "[output as submitted by the student; not re-run by the grader]\n"
MAX_OUTPUTS = 50  #: per cell
MAX_TEXT = 100_000  #: characters per text output
#: Kept for the whole notebook (text characters, base64 image characters); past them outputs
#: are dropped with a note (the feedback page and formgrader render every kept output).
MAX_TOTAL_TEXT = 1_000_000
MAX_TOTAL_IMAGES = 30_000_000
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]{1,20000000}")
#: The note for a submission whose outputs hold no still frames of the agent's video.
NO_VIDEO = (
    "part 8: no video of the agent in the submitted outputs (no still frames of record_video's "
    "result: the notebook was not run to the end, or with an older course_lib)"
)


def plain_text(text: Any, limit: int = MAX_TEXT) -> str:
    """``text`` (a string or nbformat's list of lines) as :func:`~autograder.core.reports.safe_text.printable`
    text, cut to ``limit`` characters."""
    return printable("".join(map(str, text)) if isinstance(text, list) else text)[:limit]


def _safe(output: Any) -> NotebookNode | None:
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        name = "stderr" if output.get("name") == "stderr" else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=plain_text(output.get("text", "")))
    if kind == "error":
        lines = output.get("traceback", [])
        lines = lines if isinstance(lines, list) else []
        return nbformat.v4.new_output(
            "stream",
            name="stderr",
            text=plain_text("\n".join(map(str, lines[:100])) or output.get("evalue", "")),
        )
    if kind in ("display_data", "execute_result"):
        data = output.get("data", {})
        data = data if isinstance(data, dict) else {}
        kept = {}
        for mime in SAFE_MIME:
            value = data.get(mime)
            if not isinstance(value, (str, list)):
                continue
            if mime == "text/plain":
                kept[mime] = plain_text(value)
            elif _BASE64.fullmatch(image := "".join(map(str, value)).strip()):
                kept[mime] = image  # nothing but base64: it cannot leave the <img> attribute
        return nbformat.v4.new_output("display_data", data=kept) if kept else None
    return None


def _is_video(output: NotebookNode) -> bool:
    data = output.get("data", {})
    return "image/png" in data and data.get("text/plain", "").startswith("VideoResult")


def keep_submitted_outputs(nb: NotebookNode) -> list[str]:
    """Filter and mark the outputs of ``nb`` in place (see the module docstring); the notes."""
    video, text, images, dropped = False, 0, 0, 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.execution_count = None
        outputs = [] if graded_part(cell) else cell.get("outputs", [])
        kept = []
        for output in map(_safe, outputs if isinstance(outputs, list) else []):
            if output is None:
                continue
            data = output.get("data", {})
            size = len(output.get("text", "")) + len(data.get("text/plain", ""))
            image = sum(len(data.get(mime, "")) for mime in SAFE_MIME[1:])
            if text + size > MAX_TOTAL_TEXT or images + image > MAX_TOTAL_IMAGES:
                dropped += 1
                continue
            text, images = text + size, images + image
            kept.append(output)
        if kept:
            kept = [nbformat.v4.new_output("stream", name="stdout", text=MARK), *kept]
        cell.outputs = kept[: MAX_OUTPUTS + 1]
        video = video or any(_is_video(output) for output in cell.outputs)
    notes = [] if video else [NO_VIDEO]
    if dropped:
        notes.append(f"{dropped} submitted outputs not kept (past the notebook's output budget)")
    return notes
