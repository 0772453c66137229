"""Speed of the notebook's training loop (part 7), in agent steps per second.

    python benchmarks/notebook_loop.py [--env SpaceInvadersNoFrameskip-v4] [--steps 40000]
                                       [--warmup 2000] [--device auto]

It runs the loop of the solution notebook's part 7 with the reference parts: the rollout keeps
the autograd graph of its T forward passes (``Policy.act`` with graph), then
``ComputeValueTargets``, ``MergeTimeBatch``, ``A2C.step``, the learning-rate decay, the explained
variance and the dashboard's ``log``. ``python -m solutions.train`` plays the rollout under ``torch.no_grad()``
instead, so its speed is another number (``benchmarks/train_throughput.py``).

The first ``--warmup`` steps are not timed; the script prints the machine it ran on, so that
the figure can be written down with it (docs/benchmarks.md).
"""

from __future__ import annotations

import os

# As in the notebook, where `import course_lib` sets it before torch starts OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course_lib import nature_dqn_env  # noqa: E402
from course_lib.plots import TrainingDashboard  # noqa: E402
from course_lib.runners import EnvRunner  # noqa: E402
from course_lib.runtime import flush_denormals, resolve_device, seed_everything  # noqa: E402
from solutions.reference import A2C, ComputeValueTargets, MergeTimeBatch, Policy, make_model  # noqa: E402


def machine() -> str:
    """One line: CPU model, cores, torch threads, device, load average."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    return (
        f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} with "
        f"{torch.get_num_threads()} threads, load average {load[0]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="SpaceInvadersNoFrameskip-v4")
    parser.add_argument("--steps", type=int, default=40_000, help="timed agent steps")
    parser.add_argument("--warmup", type=int, default=2_000, help="untimed agent steps first")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    flush_denormals()
    device = resolve_device(args.device)
    nenvs, nsteps = 8, 5
    n_updates = math.ceil((args.steps + args.warmup) / (nenvs * nsteps))
    seed_everything(0)
    env = nature_dqn_env(args.env, nenvs=nenvs, seed=0)
    model = make_model(env.single_action_space.n).to(device)
    policy = Policy(model)
    runner = EnvRunner(
        env, policy, nsteps=nsteps, transforms=[ComputeValueTargets(policy), MergeTimeBatch()]
    )
    optimizer = torch.optim.RMSprop(model.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    a2c = A2C(policy, optimizer)
    dashboard = TrainingDashboard(runner)
    start = None
    try:
        for update in range(n_updates):  # the solution notebook's loop, with a timer
            if start is None and runner.step_var >= args.warmup:
                start, step0 = time.perf_counter(), runner.step_var
            lr = 7e-4 * (1 - update / n_updates)
            for group in optimizer.param_groups:
                group["lr"] = lr
            trajectory = runner.get_next()
            stats = a2c.step(trajectory)
            values = trajectory["values"].detach()
            targets = torch.as_tensor(trajectory["value_targets"], device=values.device)
            explained_variance = 1 - (targets - values).var() / targets.var()
            dashboard.log(
                runner.step_var, lr=lr, explained_variance=explained_variance.item(), **stats
            )
            dashboard.update()
        elapsed = time.perf_counter() - start
    finally:
        env.close()
    steps = runner.step_var - step0
    print(f"machine: {machine()}; device {device}")
    print(f"notebook loop: {steps} agent steps in {elapsed:.1f} s = {steps / elapsed:.0f} steps/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
