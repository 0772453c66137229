"""A graded cell's traceback cut to its last line: a traceback quotes the cell's hidden lines.
"""

from __future__ import annotations

import re
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

__all__ = ["HideGradedTracebacks", "error_line", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def error_line(output: dict[str, Any]) -> str:
    """``"ZeroDivisionError: division by zero"`` for an ``error`` output; no source lines."""
    name = strip_ansi(str(output.get("ename", "Error")))
    value = strip_ansi(str(output.get("evalue", ""))).strip()
    return f"{name}: {value}" if value else name


class HideGradedTracebacks(Preprocessor):
    """Cut every traceback in a graded cell to one line (``ename: evalue``)."""

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
