"""``nbgrader autograde``'s exporter in this course: only the grader may create it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.exporters import NotebookExporter

from autograder.nbgrader.exporters.preprocessed_once import PreprocessedOnce

__all__ = ["GraderOnlyExporter"]

_REFUSAL = (
    "This course grades with `python -m autograder grade-all ... --course {course}`: the "
    "student's code runs in a sandbox and the scores come from the grader. `nbgrader "
    "autograde` (and formgrader's Autograde button) would grade whatever the notebook's cells "
    "display, so it stops here, before nbgrader removes anything: autograded/ and the "
    "gradebook are as the grader left them. To grade a student again, run python -m autograder "
    "grade-all on the file (kept as received in {course}/received/<student>/) with --course."
)


class GraderOnlyExporter(PreprocessedOnce, NotebookExporter):
    """``nbgrader autograde``'s exporter in this course: only the grader may create it.

    nbgrader's converter creates its exporter in ``start()``, before it looks at any student
    folder (``init_destination`` removes ``autograded/<student>`` with ``--force``, and on any
    later failure). Without the grader's record (``TrustedScores.record``, which only
    :func:`autograder.nbgrader.course.autograde` passes) this raises, so nothing is removed.
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
