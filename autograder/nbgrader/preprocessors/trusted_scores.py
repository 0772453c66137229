"""The grader's scores in the autograded cells: what nbgrader saves, never what a cell displayed.

``python -m autograder`` runs the student's notebook in a sandbox and judges every part in its
own, trusted process (:mod:`autograder.nbgrader.grader`). It then hands the notebook to
``nbgrader autograde`` only to fill the gradebook, with execution switched off
(``autograder/nbgrader/config.py``). :class:`TrustedScores` replaces the outputs of every
autograded cell by the grader's record for that part, one stdout stream (the feedback) and one
float result (the points), which nbgrader's ``SaveAutoGrades`` then saves (the bonus part's
cell, worth 0 in the gradebook, gets no result: its points are extra credit). Whatever the
student's code printed or displayed in those cells is gone. Where the course gives the verified
agent points, the record holds them too (:data:`AGENT_POINTS_KEY`), and they go into the
notebook's metadata for the feedback's totals; a key of that name the student wrote is removed
either way. Without a record
(``--TrustedScores.record=...``, which only the grader passes) it stops nbgrader with an
error, so running ``nbgrader autograde`` by hand cannot grade a notebook's own outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbformat.v4 import new_output
from traitlets import Bool, Unicode

from autograder.nbgrader.preprocessors.save_extra_credit import is_extra_credit

__all__ = ["AGENT_POINTS_KEY", "TrustedScores"]

#: The record's entry, and the autograded notebook's metadata key, of the verified agent's points
#: (only where the course gives the agent points; read by ``CourseTotals`` for the feedback).
AGENT_POINTS_KEY = "a2c_agent_points"


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
        extra = resources.setdefault("a2c_extra_credit", {})
        # The verified agent's points, for the feedback's totals: the grader's, never the file's.
        nb.metadata.pop(AGENT_POINTS_KEY, None)
        if AGENT_POINTS_KEY in scores:
            nb.metadata[AGENT_POINTS_KEY] = float(scores[AGENT_POINTS_KEY])
        for cell in nb.cells:
            grade_id = _graded_code(cell)
            if grade_id is None:
                continue
            entry = scores.get(grade_id, {"score": 0.0, "feedback": "not graded: no record"})
            score = float(entry["score"])
            cell.outputs = [
                new_output("stream", name="stdout", text=str(entry["feedback"]) + "\n")
            ]
            if is_extra_credit(cell):
                # The bonus: 0 of 0 in the gradebook (a cell without a result scores its
                # maximum, 0, in nbgrader's SaveAutoGrades), its points saved as extra credit.
                # No `0.0` result, which the feedback page would show under its `2 / 2 points`.
                extra[grade_id] = score
                continue
            cell.outputs.append(
                new_output(
                    "execute_result",
                    data={"text/plain": repr(score)},
                    execution_count=cell.get("execution_count"),
                )
            )
        return nb, resources
