"""What a student sees of a graded cell: its printed feedback, never the hidden tests' source.

Two consumers:

* :func:`cell_feedback` turns the outputs of one autograded test cell into the plain-text
  feedback of ``python -m autograder grade --json`` (what ``grade_part`` printed, or the one-line
  error or timeout message);
* :class:`HideGradedTracebacks` is an nbgrader preprocessor (listed in
  ``GenerateFeedback.preprocessors`` by ``autograder/nbgrader_config.py``) that cuts the
  traceback of an error in a graded cell to its last line before the feedback HTML is written.
  An IPython traceback quotes the lines around the failing one, and in a graded cell those are
  the hidden tests.
"""

from __future__ import annotations

import re
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

__all__ = ["HideGradedTracebacks", "cell_feedback", "error_line", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Longest feedback kept per part, in characters (a flood of prints is cut).
MAX_FEEDBACK_CHARS = 4000


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def error_line(output: dict[str, Any]) -> str:
    """``"ZeroDivisionError: division by zero"`` for an ``error`` output; no source lines."""
    name = strip_ansi(str(output.get("ename", "Error")))
    value = strip_ansi(str(output.get("evalue", ""))).strip()
    if name == "CellTimeoutError" or (not value and "timeout" in name.lower()):
        return "CellTimeoutError: the cell did not finish before the per-cell time limit"
    return f"{name}: {value}" if value else name


def _text(data: Any) -> str:
    return "".join(data) if isinstance(data, list) else str(data)


def cell_feedback(cell: NotebookNode | dict[str, Any]) -> str:
    """The feedback of one executed graded cell: its stdout, then its error line, if any.

    Stderr streams are left out (nbgrader's IgnorePattern drops them before grading), and so is
    the float result (the score, reported on its own).
    """
    parts: list[str] = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream" and output.get("name") == "stdout":
            parts.append(_text(output.get("text", "")))
        elif kind == "error":
            parts.append(error_line(output) + "\n")
    text = strip_ansi("".join(parts)).strip()
    if len(text) > MAX_FEEDBACK_CHARS:
        text = text[:MAX_FEEDBACK_CHARS] + "\n... feedback truncated ..."
    return text


class HideGradedTracebacks(Preprocessor):
    """Cut every traceback in a graded cell to one line (``ename: evalue``); cells keep the rest.

    Changes only ``error`` outputs of cells whose nbgrader metadata has ``grade: true``; the
    notebook's other cells keep their full tracebacks (they show the student's own code).
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        graded = bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade", False))
        if graded and cell.get("cell_type") == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [error_line(output)]
        return cell, resources
