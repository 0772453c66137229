"""One notebook graded as on Gradescope, inside Gradescope's default container limits.

Gradescope's default autograder container has half a CPU and 768 MB of memory. This script
builds the autograder zip, lays out a Gradescope-like root (``source/`` with ``setup.sh`` run in
a venv, ``submission/``, ``results/``), and runs ``run_autograder`` on one notebook inside a
cgroup limited to 768 MB (swap included) and 50 ms of CPU per 100 ms: a v2 sub-group where the
machine delegates ``memory`` and ``cpu``, else v1 ``memory`` and ``cpu`` groups. The run sees no
cgroup file system (a private mount namespace with an empty one), as in a container, so the
grader cannot make a cgroup of its own and everything stays in the limited group. With
``--fake-bwrap`` a ``bwrap`` that fails as under Docker's seccomp profile comes first on
``PATH`` (container mode). It prints the wall time, the group's CPU time, its peak memory, the
out-of-memory kills and the score. Root only, Linux only::

    python -m benchmarks.gradescope_container --python /usr/bin/python3 --fake-bwrap
    python -m benchmarks.gradescope_container --venv /var/tmp/gs-venv ...  # reuse a venv
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

V2 = V1 = Path("/sys/fs/cgroup")  #: where v2 and the v1 controllers are mounted
MEMORY = 768 * 1024**2
FAKE_BWRAP = (
    "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
)


def _group(name: str) -> dict[str, Path]:
    """The limited group(s): ``{"v2": folder}`` or ``{"memory": ..., "cpu": ..., "cpuacct": ...}``."""
    controllers = V2 / "cgroup.subtree_control"
    if controllers.exists() and {"memory", "cpu"} <= set(controllers.read_text().split()):
        folder = V2 / name
        folder.mkdir()
        (folder / "memory.max").write_text(str(MEMORY))
        (folder / "memory.swap.max").write_text("0")
        (folder / "cpu.max").write_text("50000 100000")
        return {"v2": folder}
    memory, cpu, acct = V1 / "memory" / name, V1 / "cpu" / name, V1 / "cpuacct" / name
    memory.mkdir()
    cpu.mkdir()
    acct.mkdir()
    (memory / "memory.limit_in_bytes").write_text(str(MEMORY))
    if (memory / "memory.memsw.limit_in_bytes").exists():
        (memory / "memory.memsw.limit_in_bytes").write_text(str(MEMORY))
    (cpu / "cpu.cfs_period_us").write_text("100000")
    (cpu / "cpu.cfs_quota_us").write_text("50000")
    return {"memory": memory, "cpu": cpu, "cpuacct": acct}


def _usage(group: dict[str, Path]) -> dict[str, float]:
    if "v2" in group:
        folder = group["v2"]
        cpu = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
        events = dict(line.split() for line in (folder / "memory.events").read_text().splitlines())
        peak = folder / "memory.peak"
        return {
            "cpu_seconds": int(cpu["usage_usec"]) / 1e6,
            "peak_mib": int(peak.read_text()) / 1024**2 if peak.exists() else float("nan"),
            "oom_kills": int(events.get("oom_kill", 0)),
            "throttled_seconds": int(cpu.get("throttled_usec", 0)) / 1e6,
        }
    memory, cpu = group["memory"], group["cpu"]
    acct = group["cpuacct"] / "cpuacct.usage"
    stat = dict(line.split() for line in (cpu / "cpu.stat").read_text().splitlines())
    control = dict(
        line.split() for line in (memory / "memory.oom_control").read_text().splitlines()
    )
    return {
        "cpu_seconds": int(acct.read_text()) / 1e9 if acct.exists() else float("nan"),
        "peak_mib": int((memory / "memory.max_usage_in_bytes").read_text()) / 1024**2,
        "oom_kills": int(control.get("oom_kill", 0)),
        "throttled_seconds": int(stat.get("throttled_time", 0)) / 1e9,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/usr/bin/python3", help="makes the venv")
    parser.add_argument("--venv", type=Path, default=None, help="reuse (or make) this venv")
    parser.add_argument("--notebook", type=Path, default=None, help="default: the reference")
    parser.add_argument("--fake-bwrap", action="store_true", help="container mode")
    args = parser.parse_args()
    if os.getuid() != 0:
        print("run as root: the cgroups and container mode need it", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="a2c-gs-bench-", dir="/var/tmp"))
    base.chmod(0o755)
    name = base.name
    group: dict[str, Path] = {}
    try:
        root = base / "autograder"
        (root / "source").mkdir(parents=True)
        (root / "submission").mkdir()
        subprocess.run(
            [sys.executable, "-m", "autograder", "gradescope", "--out", str(base / "ag.zip")],
            check=True,
        )
        zipfile.ZipFile(base / "ag.zip").extractall(root / "source")
        for script in ("setup.sh", "run_autograder"):
            (root / "source" / script).chmod(0o755)
        shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
        venv = args.venv or base / "venv"
        path = f"{venv / 'bin'}:/usr/bin:/bin"
        if args.fake_bwrap:
            (base / "bin").mkdir()
            (base / "bin" / "bwrap").write_text(FAKE_BWRAP)
            (base / "bin" / "bwrap").chmod(0o755)
            path = f"{base / 'bin'}:{path}"
        if not (venv / "bin" / "python").exists():
            subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        started = time.monotonic()
        env = {**os.environ, "PATH": path, "A2C_SETUP_APT": "0"}
        subprocess.run(["./setup.sh"], cwd=root / "source", check=True, env=env)
        print(f"setup.sh: {time.monotonic() - started:.0f} s (unlimited)")
        if args.notebook is None:
            import nbformat

            from tests.submissions.course import course_submission

            nbformat.write(course_submission(), root / "submission" / "a2c.ipynb")
        else:
            shutil.copy(args.notebook, root / "submission" / "a2c.ipynb")
        group = _group(f"a2c-gs-bench-{name}")
        joins = " ".join(f"echo $$ > {folder}/cgroup.procs;" for folder in group.values())
        inner = f"mount -t tmpfs none /sys/fs/cgroup && exec {root / 'run_autograder'}"
        command = f"{joins} exec unshare -m sh -c '{inner}'"
        started = time.monotonic()
        done = subprocess.run(
            ["sh", "-c", command],
            env={"PATH": path, "AUTOGRADER_ROOT": str(root), "LANG": "C.UTF-8"},
            cwd="/",
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        usage = _usage(group)
        results = json.loads((root / "results" / "results.json").read_text())
        print(done.stdout.strip())
        print(
            json.dumps(
                {
                    "wall_seconds": round(wall, 1),
                    **{k: round(v, 2) for k, v in usage.items()},
                    "score": results["score"],
                    "exit": done.returncode,
                    "cgroup": "v2" if "v2" in group else "v1 memory, cpu, cpuacct",
                },
                indent=2,
            )
        )
        return 0 if done.returncode == 0 else 1
    finally:
        for folder in group.values():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
