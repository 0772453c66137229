"""nbgrader preprocessors of the course: scores come from the grader's record, never from cells.

``python -m autograder`` runs the student's notebook in a sandbox and judges every part in its
own, trusted process (:mod:`autograder.pipeline`). It then hands the notebook to
``nbgrader autograde`` only to fill the gradebook, with execution switched off
(``autograder/nbgrader_config.py``):

* :class:`TrustedScores` replaces the outputs of every autograded cell by the grader's record
  for that part, one stdout stream (the feedback) and one float result (the points), which
  nbgrader's ``SaveAutoGrades`` then saves. Whatever the student's code printed or displayed in
  those cells is gone. Without a record (``--TrustedScores.record=...``, which only the grader
  passes) it stops nbgrader with an error, so running ``nbgrader autograde`` by hand cannot
  grade a notebook's own outputs.
* :class:`HideGradedTracebacks` cuts the traceback of an error in a graded cell to its last
  line in the feedback HTML (a traceback quotes the cell's source, hidden lines included).
* :class:`GraderOnlyExporter` is the exporter of ``nbgrader autograde`` in this course. Run by
  hand (or by formgrader's *Autograde* button, which calls the same converter) without the
  grader's record, it refuses when nbgrader creates it, which is before nbgrader removes
  anything: ``autograded/<student>`` and the gradebook stay as the grader left them, even with
  ``--force``.
* :class:`SanitizeMarkdown` makes the markdown cells a student could edit safe to show in a
  browser (formgrader renders the stored notebook's markdown as HTML, unsanitized): scripts,
  event handlers, ``javascript:`` links and other active HTML are removed
  (:mod:`autograder.markdown_safety`; the grader already did it before recording, see
  :mod:`autograder.submitted_markdown`, so this is a second line).
* :class:`CourseTotals` and :class:`FeedbackExporter` (template ``a2c_feedback``) give the
  feedback HTML the course's one set of totals: full marks = autograded points without the
  bonus + part 8, the bonus counted above full marks, and part 8 shown as *not graded yet*
  (never 0) until formgrader has a score for it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nbconvert.exporters import HTMLExporter, NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_output
from traitlets import Bool, Unicode

from .markdown_safety import sanitize_markdown

__all__ = [
    "FEEDBACK_TEMPLATES",
    "CourseTotals",
    "FeedbackExporter",
    "GraderOnlyExporter",
    "HideGradedTracebacks",
    "SanitizeMarkdown",
    "TrustedScores",
    "error_line",
    "nbgrader_templates",
    "sanitize_markdown",
    "strip_ansi",
]

#: The folder of this course's nbconvert templates (``a2c_feedback``), and nbgrader's (whose
#: ``feedback`` template ours extends).
FEEDBACK_TEMPLATES = Path(__file__).resolve().with_name("templates")


def nbgrader_templates() -> Path:
    """nbgrader's formgrader template folder (``feedback/``, ``formgrade/``)."""
    import nbgrader

    return Path(nbgrader.__file__).resolve().parent / "server_extensions/formgrader/templates"


_REFUSAL = (
    "This course grades with `python -m autograder grade-all ... --course {course}`: the "
    "student's code runs in a sandbox and the scores come from the grader. `nbgrader "
    "autograde` (and formgrader's Autograde button) would grade whatever the notebook's cells "
    "display, so it stops here, before nbgrader removes anything: autograded/ and the "
    "gradebook are as the grader left them. To grade a student again, run python -m autograder "
    "grade-all on the file (kept as received in {course}/received/<student>/) with --course."
)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def error_line(output: dict[str, Any]) -> str:
    """``"ZeroDivisionError: division by zero"`` for an ``error`` output; no source lines."""
    name = strip_ansi(str(output.get("ename", "Error")))
    value = strip_ansi(str(output.get("evalue", ""))).strip()
    return f"{name}: {value}" if value else name


def _graded_code(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution"):
        return meta.get("grade_id")
    return None


class TrustedScores(Preprocessor):
    """Set every autograded cell's outputs from the grader's record (see the module docstring)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)
    record = Unicode(
        "", help="JSON file {grade_id: {score, feedback}} written by python -m autograder"
    ).tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        if not self.record or not Path(self.record).is_file():
            raise RuntimeError(
                "This course grades with `python -m autograder grade-all` (the student's code runs "
                "in a sandbox, the scores come from the grader): `nbgrader autograde` alone "
                "would grade whatever the notebook's cells display."
            )
        scores = json.loads(Path(self.record).read_text(encoding="utf-8"))
        for cell in nb.cells:
            grade_id = _graded_code(cell)
            if grade_id is None:
                continue
            entry = scores.get(grade_id, {"score": 0.0, "feedback": "not graded: no record"})
            cell.outputs = [
                new_output("stream", name="stdout", text=str(entry["feedback"]) + "\n"),
                new_output(
                    "execute_result",
                    data={"text/plain": repr(float(entry["score"]))},
                    execution_count=cell.get("execution_count"),
                ),
            ]
        return nb, resources


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


class GraderOnlyExporter(NotebookExporter):
    """``nbgrader autograde``'s exporter in this course: only the grader may create it.

    nbgrader's converter creates its exporter in ``start()``, before it looks at any student
    folder (``init_destination`` removes ``autograded/<student>`` with ``--force``, and on any
    later failure). Without the grader's record (``TrustedScores.record``, which only
    :func:`autograder.course.autograde` passes) this raises, so nothing is removed.
    """

    def __init__(self, config: Any = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        record = self.config.get("TrustedScores", {}).get("record", "")
        if not record or not Path(str(record)).is_file():
            from nbgrader.converters.base import NbGraderException

            course = self.config.get("CourseDirectory", {}).get("root", "") or "."
            message = _REFUSAL.format(course=Path(course).resolve())
            self.log.error(message)  # nbgrader's command line exits without printing it
            raise NbGraderException(message)


class SanitizeMarkdown(Preprocessor):
    """Replace each editable markdown cell that holds active HTML by its cleaned rendering."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        locked = cell.get("metadata", {}).get("nbgrader", {}).get("locked", False)
        if cell.get("cell_type") == "markdown" and not locked:
            clean = sanitize_markdown(str(cell.get("source", "")))
            if clean is not None:
                cell.source = clean
        return cell, resources


class CourseTotals(Preprocessor):
    """After nbgrader's ``GetGrades``: the course's totals in ``resources["a2c"]`` (feedback).

    ``{"score", "full_marks", "final", "pending", "parts": [{"name", "score", "points",
    "kind"}], "explain"}``: ``score`` counts every graded point (the bonus included), ``final``
    is true once no hand-graded cell waits for formgrader, and a waiting cell's ``score`` is
    ``None`` (the template says *not graded yet*).
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        from .outputs import course_points, manual_scores

        points = course_points(nb)
        meta = resources.get("nbgrader", {})
        student = meta.get("student", "")
        hand = manual_scores(meta["db_url"], [student]).get(student, {}) if meta else {}
        parts = []
        for cell in nb.cells:
            info = cell.get("metadata", {}).get("nbgrader", {})
            grade_id = str(info.get("grade_id") or "")
            key = grade_id[len("test_") :] if grade_id.startswith("test_") else ""
            if key in points.auto:
                kind = "bonus" if key in points.bonus else "autograded"
                score = float(info.get("score") or 0.0)
                parts.append(
                    {"name": key, "score": score, "points": points.auto[key], "kind": kind}
                )
            elif grade_id in points.manual:
                parts.append(
                    {
                        "name": grade_id,
                        "score": hand.get(grade_id),
                        "points": points.manual[grade_id],
                        "kind": "part 8, graded by hand",
                    }
                )
        pending = [part["name"] for part in parts if part["score"] is None]
        late = float(meta.get("late_penalty") or 0.0) if meta else 0.0
        resources["a2c"] = {
            "score": round(sum(part["score"] or 0.0 for part in parts) - late, 6),
            "full_marks": points.full_marks,
            "final": not pending,
            "pending": pending,
            "parts": parts,
            "explain": points.explain(),
        }
        return nb, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback HTML with the course's totals (template ``a2c_feedback``).

    The course configuration selects it for ``generate_feedback`` and sets its template (a
    class of its own, so that formgrader's HTML exporter keeps nbgrader's templates).
    """
