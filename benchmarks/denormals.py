"""How much do denormal numbers slow down CPU training, and does flushing them help?

    python benchmarks/denormals.py --checkpoint runs/learning-10m/checkpoint.pt
                                   [--updates 400] [--rounds 3] [--threads 2]

A long run leaves RMSprop's running average of squared gradients ``v`` partly in the denormal
range (float32 below ~1.2e-38): where a weight's gradient is exactly 0 (an input of a dead ReLU
unit), ``v <- 0.99 v`` decays into it at every update and then stays, since 0.99 times one of the
smallest denormals rounds back to itself. x86 CPUs compute on denormals several times slower.
:func:`course_lib.runtime.flush_denormals` (called by the training CLI) flushes them to zero.

The benchmark resumes the checkpoint of a real run (the effect only appears after a few hundred
thousand steps; a fresh model has no denormals) and trains ``--updates`` updates of 8 envs x 5
steps on the real game, once with flushing off and once on, each in its own process (the
setting is per thread and inherited by torch's threads when they start), alternating for
``--rounds`` rounds. It prints the share of denormal entries in the RMSprop state, agent steps
per second (median over rounds) and the ratio. No checkpoint at hand: train one first, e.g.
``python -m solutions.train --steps 1000000 --out runs/a2c-1m``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as in training (see solutions/train.py)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WARMUP_UPDATES = 20


def denormal_share(optimizer) -> float:
    """Share of the entries of RMSprop's ``square_avg`` tensors that are denormal numbers."""
    import torch

    tiny = torch.finfo(torch.float32).tiny
    total = denormal = 0
    for state in optimizer.state.values():
        bits = state["square_avg"].detach().cpu().view(torch.int32) & 0x7FFFFFFF
        # Read the bit patterns: with flushing on, the CPU would see denormals as 0 in a compare.
        exponent_zero = bits < torch.tensor(tiny).view(torch.int32)
        denormal += int((exponent_zero & (bits != 0)).sum())
        total += bits.numel()
    return denormal / max(total, 1)


def child(checkpoint: Path, flush: bool, updates: int, threads: int) -> dict:
    """Resume ``checkpoint`` on CPU and time ``updates`` training updates; returns figures."""
    import torch

    from course_lib.runtime import flush_denormals, set_torch_threads

    if flush:
        flush_denormals()  # before any torch computation, so its threads inherit it
    set_torch_threads(threads)

    from course_lib import nature_dqn_env
    from course_lib.runners import EnvRunner
    from solutions.checkpoint import load_checkpoint
    from solutions.reference import MergeTimeBatch
    from solutions.train import NoGradPolicy, make_agent, value_targets

    ckpt = load_checkpoint(checkpoint, map_location="cpu")
    config = ckpt["config"]
    env = nature_dqn_env(config.env_id, nenvs=config.nenvs, seed=12345, backend=config.backend)
    model, policy, optimizer, a2c = make_agent(
        config, int(env.single_action_space.n), torch.device("cpu")
    )
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    share_start = denormal_share(optimizer)
    runner = EnvRunner(
        env,
        NoGradPolicy(policy),
        config.nsteps,
        transforms=[value_targets(config, policy), MergeTimeBatch()],
    )
    try:
        for _ in range(WARMUP_UPDATES):
            a2c.step(runner.get_next())
        start_step, start = runner.step_var, time.perf_counter()
        for _ in range(updates):
            a2c.step(runner.get_next())
        seconds = time.perf_counter() - start
    finally:
        env.close()
    return {
        "flush": flush,
        "steps_per_s": (runner.step_var - start_step) / seconds,
        "denormal_share_start": share_start,
        "denormal_share_end": denormal_share(optimizer),
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
