"""TensorBoard event files beside ``metrics.csv``: the same series at the same agent steps.

Every column of a metrics row but ``step`` becomes one scalar (the tag is the column's name) at
global step ``step``, written with ``torch.utils.tensorboard`` into the run's folder, so
``tensorboard --logdir runs`` (or, in a notebook, ``%load_ext tensorboard`` then
``%tensorboard --logdir runs``) lists each run folder as one run. A value that is not a finite
number (the score before the first game ends) is left out, as TensorBoard cannot draw it.

A resumed run opens a new event file whose first record tells TensorBoard to hide what the
earlier files hold from the checkpoint's step on (``SummaryWriter``'s ``purge_step``), just as
:class:`~solutions.metrics_log.MetricsLog` drops the rows logged after the checkpoint: those
steps are played again, and each step is shown once.

Each row is flushed as it is written. Without the ``tensorboard`` package (``pip install
tensorboard``; ``requirements.txt`` pins it) the run goes on with ``metrics.csv`` only and says
so once.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["TensorBoardLog"]


class TensorBoardLog:
    """Write metrics rows with ``columns`` as TensorBoard scalars into ``log_dir``.

    With ``resume_step``, events at steps above it, written by an earlier session of the run,
    are hidden from TensorBoard. Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self, log_dir: Path, columns: Sequence[str], resume_step: int | None = None
    ) -> None:
        self.tags = [column for column in columns if column != "step"]
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:  # torch says which package is missing
            print(f"No TensorBoard files: {error}. metrics.csv has the same series.",
                  file=sys.stderr)  # fmt: skip
            self._writer = None
            return
        purge_step = None if resume_step is None else resume_step + 1
        self._writer = SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)

    def write(self, row: dict[str, Any]) -> None:
        """Add ``row``'s values at ``row["step"]`` and flush them to disk."""
        if self._writer is None:
            return
        step = int(row["step"])
        for tag in self.tags:
            value = float(row[tag])
            if math.isfinite(value):
                self._writer.add_scalar(tag, value, global_step=step)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> TensorBoardLog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
