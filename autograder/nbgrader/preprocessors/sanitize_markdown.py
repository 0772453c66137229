"""The markdown cells a student could edit made safe to show in a browser.

formgrader renders the stored notebook's markdown as HTML, unsanitized, and so does nbgrader's
feedback template: scripts, event handlers, ``javascript:`` links and other active HTML are
removed (:mod:`autograder.core.intake.markdown_safety`). The grader already did it before
recording (:mod:`autograder.core.intake.student_markdown`), outside any lock, and marked each
cell it made safe: this second line, which nbgrader runs under the gradebook's lock, leaves a
marked cell as it is (no student text is rendered twice, nor under the lock) and renders only
a cell the grader did not check (a notebook recorded by another process).
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder.core.intake.markdown_safety import is_checked, sanitize_markdown

__all__ = ["SanitizeMarkdown"]


class SanitizeMarkdown(Preprocessor):
    """Replace each editable markdown cell that holds active HTML by its cleaned rendering."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        locked = cell.get("metadata", {}).get("nbgrader", {}).get("locked", False)
        if cell.get("cell_type") == "markdown" and not locked and not is_checked(cell):
            clean = sanitize_markdown(str(cell.get("source", "")))
            if clean is not None:
                cell.source = clean
        return cell, resources
