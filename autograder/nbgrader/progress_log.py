"""The grades of a class as they are recorded, one JSON line each (``<out>/progress.jsonl``).

While :func:`autograder.nbgrader.grader.grade_many` runs, each recorded student's grade is appended at
once, so that a grader that dies (power cut, killed) leaves the grades it had made; the file is
removed once ``grades.csv`` holds every row. Appends from parallel gradings are serialised.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from autograder.core.reports.grade_result import GradeResult

__all__ = ["ProgressLog"]


class ProgressLog:
    """Appends one line per :class:`~autograder.core.reports.grade_result.GradeResult` to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, result: GradeResult) -> None:
        line = json.dumps({"student": result.student, "source": result.source, **result.as_dict()})
        with self._lock, open(self.path, "a", encoding="utf-8") as log:
            log.write(line + "\n")

    def remove(self) -> None:
        """Every row is in ``grades.csv``: the log goes."""
        self.path.unlink(missing_ok=True)
