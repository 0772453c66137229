"""One run per folder: what ``--out`` may hold before a run starts or resumes there.

:func:`open_run_folder` reads what the folder holds before anything is written. An empty or
missing folder starts a new run. A folder with a run in it (a checkpoint, or the files of a run
that stopped before its first checkpoint) is refused unless ``--resume`` is given, and the
message says whether that run is finished or not and which command continues it. ``--resume``
with a budget the run has already reached raises :class:`BudgetReached` (:func:`check_budget`)
before any file is touched. The checkpoint is read here, once, onto the CPU.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from .checkpoint import load_checkpoint
from .config import A2CConfig

__all__ = ["BudgetReached", "CHECKPOINT_NAME", "RUN_FILES", "check_budget", "open_run_folder"]
__all__ += ["budget_change_note", "check_budget_change", "resume_command"]

CHECKPOINT_NAME = "checkpoint.pt"
#: Files a run writes to its folder; any of them means the folder holds a run.
RUN_FILES = (CHECKPOINT_NAME, "metrics.csv", "summary.json", "dashboard.json", "training.png")


class BudgetReached(Exception):
    """``--resume`` asked for a budget the run has already reached: there is nothing to train."""


def resume_command(out_dir: str | Path, extra: Sequence[str] = ()) -> str:
    """The shell command that continues the run in ``out_dir`` (its config is in the checkpoint)."""
    words = ["python", "-m", "solutions.train", "--resume", "--out", str(out_dir), *extra]
    return " ".join(shlex.quote(word) for word in words)


def open_run_folder(out_dir: Path, resume: bool) -> dict | None:
    """Check ``out_dir`` against ``resume``; return its checkpoint (on the CPU) when resuming,
    else ``None``.

    Raises:
        FileExistsError: the folder holds a run and ``resume`` is false.
        FileNotFoundError: ``resume`` is true and the folder holds no checkpoint.
    """
    ckpt_path = out_dir / CHECKPOINT_NAME
    ckpt = load_checkpoint(ckpt_path) if ckpt_path.is_file() else None
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


def check_budget_change(ckpt: dict, config: A2CConfig) -> None:
    """Refuse a resumed ``config`` whose budget is below the checkpoint's (and above its steps).

    The learning rate of update u is ``lr * (1 - u / num_updates)``: a lower budget at the same
    update makes it jump down (e.g. half the budget left, then a budget one step above the steps
    done: from lr / 2 to almost 0), and the curves no longer follow one schedule.

    Raises:
        ValueError: the budget is lower; the message gives the jump and what to do instead.
    """
    saved: A2CConfig = ckpt["config"]
    if config.total_steps >= saved.total_steps:
        return
    update = ckpt["update"]
    raise ValueError(
        f"--steps {config.total_steps} is below this run's budget of {saved.total_steps} "
        f"agent steps ({ckpt['step']:,} done). The learning rate decays linearly to 0 over the "
        f"budget, so it would jump from {saved.lr_at(update):.3g} to {config.lr_at(update):.3g} "
        f"here. To stop earlier, resume with --steps {saved.total_steps} (or leave --steps out) "
        "and press Ctrl-C when you like: the checkpoint is saved at that update."
    )


def budget_change_note(ckpt: dict, config: A2CConfig) -> str | None:
    """One line on what a raised budget does to the learning rate (``None``: budget unchanged)."""
    saved: A2CConfig = ckpt["config"]
    if config.total_steps == saved.total_steps:
        return None
    update = ckpt["update"]
    return (
        f"budget raised from {saved.total_steps:,} to {config.total_steps:,} agent steps: the "
        f"learning rate goes from {saved.lr_at(update):.3g} to {config.lr_at(update):.3g} at "
        f"step {ckpt['step']:,} and decays linearly to 0 at step {config.total_steps:,}."
    )
