"""``metrics.csv``: one row per log interval, in step order, also across a resume.

A resumed run first drops the rows logged after the checkpoint's step: those steps are played
again, so no step appears twice.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["MetricsLog"]


class MetricsLog:
    """Append rows with ``columns`` to ``path``; with ``resume_step``, keep the older rows up to it.

    Each row is flushed as it is written, so the file is complete up to the last log interval
    whatever stops the run. Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: Path, columns: Sequence[str], resume_step: int | None = None) -> None:
        if resume_step is not None and path.is_file():
            with path.open(newline="") as f:
                kept = [row for row in csv.DictReader(f) if int(row["step"]) <= resume_step]
        else:
            kept = []
        self._file = path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=list(columns))
        self._writer.writeheader()
        self._writer.writerows(kept)
        self._file.flush()

    def write(self, row: dict[str, Any]) -> None:
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> MetricsLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
