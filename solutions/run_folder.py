"""What keeps a training run whole: one run per folder, a clean stop, and a metrics file in order.

:func:`~solutions.train.train` relies on three rules, each enforced here:

* **One run per folder.** :func:`open_run_folder` reads what ``--out`` holds before anything is
  written. An empty or missing folder starts a new run. A folder with a run in it (a
  checkpoint, or the files of a run that stopped before its first checkpoint) is refused
  unless ``--resume`` is given, and the message says whether that run is finished or not and
  which command continues it. ``--resume`` with a budget the run has already reached raises
  :class:`BudgetReached` before any file is touched.
* **A clean stop.** :class:`StopRequest` turns the first Ctrl-C (``SIGINT``) or ``SIGTERM``
  into a flag that the training loop reads after each update: the loop then writes a checkpoint
  at that update and returns. A second Ctrl-C aborts at once (``KeyboardInterrupt``).
* **Metrics in order.** A resumed run first drops the rows of ``metrics.csv`` logged after the
  checkpoint's step (:func:`truncate_metrics`): they are played again, so no step appears twice.
"""

from __future__ import annotations

import csv
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from .checkpoint import load_checkpoint

__all__ = ["BudgetReached", "CHECKPOINT_NAME", "RUN_FILES", "StopRequest", "open_run_folder"]
__all__ += ["check_budget", "resume_command", "truncate_metrics"]

CHECKPOINT_NAME = "checkpoint.pt"
#: Files a run writes to its folder; any of them means the folder holds a run.
RUN_FILES = (CHECKPOINT_NAME, "metrics.csv", "summary.json", "dashboard.json", "training.png")


class BudgetReached(Exception):
    """``--resume`` asked for a budget the run has already reached: there is nothing to train."""


def resume_command(out_dir: str | Path, extra: Sequence[str] = ()) -> str:
    """The shell command that continues the run in ``out_dir`` (its config is in the checkpoint)."""
    words = ["python", "-m", "solutions.train", "--resume", "--out", str(out_dir), *extra]
    return " ".join(shlex.quote(word) for word in words)


def open_run_folder(out_dir: Path, resume: bool, map_location: Any = "cpu") -> dict | None:
    """Check ``out_dir`` against ``resume``; return its checkpoint when resuming, else ``None``.

    Raises:
        FileExistsError: the folder holds a run and ``resume`` is false.
        FileNotFoundError: ``resume`` is true and the folder holds no checkpoint.
    """
    ckpt_path = out_dir / CHECKPOINT_NAME
    ckpt = load_checkpoint(ckpt_path, map_location=map_location) if ckpt_path.is_file() else None
    found = [name for name in RUN_FILES if (out_dir / name).exists()]
    if resume:
        if ckpt is None:
            stopped = (
                f" (it holds {', '.join(found)} of a run that stopped before its first "
                "checkpoint: delete them or choose another --out)"
                if found
                else ""
            )
            raise FileNotFoundError(
                f"--resume: no checkpoint at {str(ckpt_path)!r}{stopped}; to start a new run, "
                "leave out --resume."
            )
        return ckpt
    if ckpt is not None:
        done, budget = ckpt["step"], ckpt["config"].total_steps
        if ckpt["update"] >= ckpt["config"].num_updates:
            state = (
                f"a finished run ({done:,} agent steps); to train it further, run "
                f"{resume_command(out_dir, ['--steps', 'N'])} with N above {done}"
            )
        else:
            state = (
                f"an unfinished run (stopped at {done:,} of {budget:,} agent steps); "
                f"continue it with {resume_command(out_dir)}"
            )
        raise FileExistsError(f"{str(out_dir)!r} holds {state}, or choose another --out.")
    if found:
        raise FileExistsError(
            f"{str(out_dir)!r} holds {', '.join(found)} of a run that stopped before its first "
            "checkpoint, so there is nothing to resume: delete the folder or choose another --out."
        )
    return None


def check_budget(ckpt: dict, num_updates: int, total_steps: int) -> None:
    """Raise :class:`BudgetReached` when the checkpoint has done ``num_updates`` already."""
    if ckpt["update"] >= num_updates:
        raise BudgetReached(
            f"the run has done {ckpt['step']:,} agent steps, at or above the budget "
            f"--steps {total_steps}: nothing to train, no file changed. To train further, pass "
            f"--steps above {ckpt['step']}."
        )


def truncate_metrics(path: Path, max_step: int, columns: Sequence[str]) -> None:
    """Keep the header and the rows of ``path`` up to ``max_step`` (later rows are replayed)."""
    if not path.is_file():
        return
    with path.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if int(row["step"]) <= max_step]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


class StopRequest:
    """While active, the first SIGINT or SIGTERM sets :attr:`signal_name` instead of killing.

    The training loop polls :attr:`requested` after every update, saves a checkpoint and returns;
    a second SIGINT raises ``KeyboardInterrupt`` at once (no checkpoint). Handlers can only be
    installed from the main thread: elsewhere this does nothing and signals act as usual.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop now
        self.signal_name = signal.Signals(signum).name
        print(
            f"\n{self.signal_name}: saving a checkpoint after the current update "
            "(Ctrl-C again to abort without saving)...",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
