"""A memory and process cgroup for one run (root only): the limits of the whole run, not a process.

Where the grader is root and a cgroup hierarchy is writable (v2 where ``memory`` and ``pids``
are delegated, else v1), :class:`Cgroup` caps the memory (in-memory folders included) and the
tasks of everything a run starts; removing it kills what is left in it. Elsewhere it is
inactive, and only per-process limits hold (the result's note says which). It also counts the
CPU of everything the run started (:meth:`Cgroup.cpu_seconds`: v2's ``cpu.stat``, v1's
``cpuacct`` controller where it is mounted), which the run's CPU cap reads
(:mod:`.cpu_meter`).
"""

from __future__ import annotations

import itertools
import os
import secrets
import signal
import time
from pathlib import Path

from autograder.core.isolation.contract import SandboxLimits

__all__ = ["Cgroup", "run_name"]

_runs = itertools.count()
#: Names tried for one run's groups: its own, then drawn ones where a dead grader left that name.
_NAME_ATTEMPTS = 4


def run_name() -> str:
    """A name for a run's cgroup that no other run on this machine has now."""
    return f"{os.getpid()}-{next(_runs)}"


def _own_group(controller: str) -> str:
    """This process's cgroup in the v1 hierarchy of ``controller`` (``/`` when unknown)."""
    try:
        with open("/proc/self/cgroup") as table:
            for line in table:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    return path or "/"
    except (OSError, ValueError):
        pass
    return "/"


class Cgroup:
    """A memory + pids cgroup for one run (v2 where it is delegated to us, else v1)."""

    ROOT_V2 = Path("/sys/fs/cgroup")
    ROOT_V1 = {"memory": Path("/sys/fs/cgroup/memory"), "pids": Path("/sys/fs/cgroup/pids")}
    #: v1's CPU accounting, where it is mounted apart or with ``cpu`` (made when it can be)
    CPUACCT_V1 = (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/cpu,cpuacct"))

    def __init__(self, name: str, limits: SandboxLimits, enabled: bool = True) -> None:
        self.dirs: list[Path] = []
        if not enabled or os.getuid() != 0:
            return
        try:
            controllers = (self.ROOT_V2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            controllers = []
        # A grader that was killed (SIGKILL, the out-of-memory killer, a service stopped) leaves
        # its groups behind, and a later process with its pid would be given the same names: a
        # name taken is never reused (nor its group touched, whoever's it is), another is drawn.
        for attempt in range(_NAME_ATTEMPTS):
            try:
                self._make(name if attempt == 0 else f"{name}-{secrets.token_hex(4)}",
                           limits, controllers)  # fmt: skip
                return
            except FileExistsError:
                self.remove()  # what this attempt made: empty, its own
                self.dirs = []
            except OSError:
                self.remove()
                self.dirs = []
                return

    def _make(self, name: str, limits: SandboxLimits, controllers: list[str]) -> None:
        """The groups named ``name`` (v2 where delegated, else v1), their limits written."""
        if {"memory", "pids"} <= set(controllers):
            folder = self.ROOT_V2 / f"a2c-grading-{name}"
            folder.mkdir()
            self.dirs = [folder]
            (folder / "memory.max").write_text(str(limits.memory_bytes))
            (folder / "memory.swap.max").write_text("0") if (
                folder / "memory.swap.max"
            ).exists() else None
            (folder / "pids.max").write_text(str(limits.processes))
        elif all((root / "cgroup.procs").exists() for root in self.ROOT_V1.values()):
            memory = self.ROOT_V1["memory"] / f"a2c-grading-{name}"
            pids = self.ROOT_V1["pids"] / f"a2c-grading-{name}"
            memory.mkdir()
            self.dirs.append(memory)
            pids.mkdir()
            self.dirs.append(pids)
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            (pids / "pids.max").write_text(str(limits.processes))
            self._cpuacct_v1(name)

    def _cpuacct_v1(self, name: str) -> None:
        """A v1 ``cpuacct`` group beside the memory and pids ones, where the hierarchy is
        mounted and writable (else the run's CPU is read from its processes), inside the
        grader's own ``cpuacct`` group: what the grader's group counts includes its runs (a
        group only counts, so nothing of the grader's own limits changes)."""
        for root in self.CPUACCT_V1:
            if (root / "cpuacct.usage").exists() and not root.is_symlink():
                folder = root / _own_group("cpuacct").lstrip("/") / f"a2c-grading-{name}"
                try:
                    folder.mkdir()
                except FileExistsError:
                    raise
                except OSError:
                    return
                self.dirs.append(folder)
                return

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def cpu_seconds(self) -> float | None:
        """CPU seconds used so far by everything in the run (v2's ``cpu.stat``, v1's
        ``cpuacct.usage``), or ``None`` where there is no such figure (no cgroup, or v1
        without ``cpuacct``)."""
        for folder in self.dirs:
            try:
                if folder.parent == self.ROOT_V2:
                    for line in (folder / "cpu.stat").read_text().splitlines():
                        if line.startswith("usage_usec "):
                            return int(line.split()[1]) / 1e6
                elif (folder / "cpuacct.usage").exists():
                    return int((folder / "cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                return None
        return None

    def join(self) -> None:  # in the child, before exec
        self.add(os.getpid())

    def add(self, pid: int) -> None:
        """Move the process ``pid`` (not yet running anything of the run's) into this group."""
        for folder in self.dirs:
            with open(folder / "cgroup.procs", "w") as procs:
                procs.write(str(pid))

    def remove(self) -> None:
        for folder in self.dirs:
            for _ in range(50):
                try:
                    pids = (folder / "cgroup.procs").read_text().split()
                except OSError:
                    break
                for pid in pids:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except (OSError, ValueError):
                        pass
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)
