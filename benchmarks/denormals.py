"""How much do denormal numbers slow down CPU training, and does flushing them help?

    python benchmarks/denormals.py --checkpoint runs/learning-10m/checkpoint.pt
                                   [--updates 400] [--rounds 3] [--threads 2]

A long run leaves RMSprop's running average of squared gradients ``v`` partly in the denormal
range (float32 below ~1.2e-38): where a weight's gradient is exactly 0 (an input of a dead ReLU
unit), ``v <- 0.99 v`` decays into it at every update and then stays, since 0.99 times one of the
smallest denormals rounds back to itself. x86 CPUs compute on denormals several times slower.
:func:`course_lib.runtime.flush_denormals` (called by the training CLI) flushes them to zero.

The benchmark resumes a copy of the checkpoint of a real run (the effect only appears after a
few hundred thousand steps; a fresh model has no denormals) with the training command itself,
``solutions.train.main(["--resume", ...])``, for ``--updates`` more updates on the real game,
once with flushing off and once on, each in its own process (the setting is per thread and
inherited by torch's threads when they start), alternating for ``--rounds`` rounds. Flushing
off is the command with its ``flush_denormals`` call made a no-op; nothing of the training is
copied here. It prints the share of denormal entries in the RMSprop state, the agent steps per
second the command measured for its session (median over rounds) and the ratio. No checkpoint at hand: train one first, e.g.
``python -m solutions.train --steps 1000000 --out runs/a2c-1m``.
"""

from __future__ import annotations

# ruff: noqa: E402 (the imports below come after passive_openmp(), which must precede torch)
from course_lib.openmp import passive_openmp

passive_openmp()  # before torch starts OpenMP, as in training (course_lib.openmp)

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def denormal_share_of(optimizer_state: dict) -> float:
    """Share of the entries of RMSprop's ``square_avg`` tensors that are denormal numbers, in an
    optimizer's ``state_dict()`` (as a checkpoint keeps it)."""
    import torch

    tiny = torch.finfo(torch.float32).tiny
    total = denormal = 0
    for state in optimizer_state["state"].values():
        bits = state["square_avg"].detach().cpu().view(torch.int32) & 0x7FFFFFFF
        # Read the bit patterns: with flushing on, the CPU would see denormals as 0 in a compare.
        exponent_zero = bits < torch.tensor(tiny).view(torch.int32)
        denormal += int((exponent_zero & (bits != 0)).sum())
        total += bits.numel()
    return denormal / max(total, 1)


def child(checkpoint: Path, flush: bool, updates: int, threads: int) -> dict:
    """Resume a copy of ``checkpoint`` for ``updates`` updates with the training command itself
    (``solutions.train.main``: ``--resume --device cpu``, no evaluation, no video), with
    flush-to-zero on (as the command does) or off (its ``flush_denormals`` call made a no-op,
    the one change); returns the speed the command measured and the denormal shares."""
    import tempfile

    from solutions import train
    from solutions.checkpoint import load_checkpoint
    from solutions.run_folder import CHECKPOINT_NAME

    if not flush:
        train.flush_denormals = lambda: False  # the command's own call, before torch's threads
    ckpt = load_checkpoint(checkpoint, map_location="cpu")
    config = ckpt["config"]
    share_start = denormal_share_of(ckpt["optimizer"])
    with tempfile.TemporaryDirectory(prefix="denormals-") as tmp:
        out = Path(tmp)
        shutil.copyfile(checkpoint, out / CHECKPOINT_NAME)
        steps = ckpt["step"] + updates * config.batch_size
        argv = ["--resume", "--out", str(out), "--steps", str(steps), "--device", "cpu",
                "--threads", str(threads), "--eval-games", "0", "--video-frames", "0",
                "--no-progress"]  # fmt: skip
        status = train.main(argv)
        if status != 0:
            raise RuntimeError(f"python -m solutions.train {' '.join(argv)} exited {status}")
        summary = json.loads((out / "summary.json").read_text())
        share_end = denormal_share_of(load_checkpoint(out / CHECKPOINT_NAME)["optimizer"])
    return {
        "flush": flush,
        "steps_per_s": summary["steps_per_s_this_session"],
        "denormal_share_start": share_start,
        "denormal_share_end": share_end,
        "checkpoint_step": ckpt["step"],
    }


def run_child(checkpoint: Path, flush: bool, updates: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--child", "on" if flush else "off"]
    cmd += ["--checkpoint", str(checkpoint), "--updates", str(updates), "--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark process failed ({' '.join(cmd)}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint", type=Path, required=True, help="checkpoint.pt of a long run"
    )
    parser.add_argument("--updates", type=int, default=400, help="timed updates per process")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.checkpoint.is_file():
        parser.error(
            f"no checkpoint at {str(args.checkpoint)!r}: train a run first, e.g. "
            "python -m solutions.train --steps 1000000 --out runs/a2c-1m"
        )
    if args.updates < 1 or args.rounds < 1 or args.threads < 1:
        parser.error("--updates, --rounds and --threads must be positive integers")
    if args.child:
        print(json.dumps(child(args.checkpoint, args.child == "on", args.updates, args.threads)))
        return 0

    results: dict[bool, list[dict]] = {False: [], True: []}
    for round_ in range(args.rounds):
        for flush in (False, True) if round_ % 2 == 0 else (True, False):
            result = run_child(args.checkpoint, flush, args.updates, args.threads)
            results[flush].append(result)
            print(
                f"round {round_ + 1} flush {'on ' if flush else 'off'}: "
                f"{result['steps_per_s']:7.1f} agent steps/s, denormal share of RMSprop state "
                f"{result['denormal_share_start']:.1%} -> {result['denormal_share_end']:.1%}",
                flush=True,
            )
    off = statistics.median(r["steps_per_s"] for r in results[False])
    on = statistics.median(r["steps_per_s"] for r in results[True])
    paired = [
        a["steps_per_s"] / b["steps_per_s"]
        for a, b in zip(results[True], results[False], strict=True)
    ]
    step = results[False][0]["checkpoint_step"]
    print(
        f"checkpoint at {step:,} agent steps, {args.updates} updates x {args.rounds} rounds: "
        f"flush off {off:.0f} steps/s, flush on {on:.0f} steps/s (medians), ratio {on / off:.2f}x; "
        f"per round {', '.join(f'{r:.2f}x' for r in paired)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
