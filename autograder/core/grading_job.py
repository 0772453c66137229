"""What the sandbox runs for one submission: the cells that define the graded parts, then probes.

Grading needs the student's definitions, not their training run. The job lists, in notebook
order:

* the release's set-up cells (:data:`SETUP_CELLS`: imports and the course's helpers), as
  released;
* every solution cell (the student's code for a part) and every code cell the student added
  before the last graded part (helpers their solutions use);
* at each autograded cell, the probes of its part: the plan's steps, run on the name the part
  defines as it is defined at that point of the notebook (``source`` is then ``None``).

Everything else is not run: the visible checks (the student ran them already; they grade
nothing), the demonstration cells, and the training, evaluation and video cells after the last
graded part, whose submitted outputs are what part 8 is graded on
(:mod:`autograder.core.intake.student_outputs`).
"""

from __future__ import annotations

from typing import Any

from nbformat import NotebookNode

from autograder.core.intake.repair import grade_id, graded_part
from autograder.core.sandbox_view import SETUP_CELLS

__all__ = ["SETUP_CELLS", "job_cells"]


def job_cells(nb: NotebookNode, names: dict[str, str]) -> list[dict[str, Any]]:
    """The cells to run, ``[{"index", "source", "part", "name"}]``; ``names`` maps each graded
    part to the name it defines (``{"policy": "Policy", ...}``)."""
    last = max(
        (index for index, cell in enumerate(nb.cells) if graded_part(cell) in names), default=-1
    )
    cells = []
    for index, cell in enumerate(nb.cells[: last + 1]):
        if cell.cell_type != "code":
            continue
        name, part = grade_id(cell), graded_part(cell)
        if part in names:
            cells.append({"index": index, "source": None, "part": part, "name": names[part]})
        elif name in SETUP_CELLS or name in names or name is None:
            # set-up, a part's solution cell (its id is the part key), or the student's own
            cells.append({"index": index, "source": cell.source, "part": None, "name": None})
    return cells
