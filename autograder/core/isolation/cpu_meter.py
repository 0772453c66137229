"""The CPU a run has used, every process it started counted, read from outside it.

A run's CPU cap must count what its processes fork: a cell that starts burners in child
processes, or a child that forks grandchildren and exits, is the same run. :class:`CpuMeter`
reads, first found wins:

* the run's cgroup (:meth:`.cgroups.Cgroup.cpu_seconds`): v2's ``cpu.stat``, v1's
  ``cpuacct.usage``, which count every task that ever ran in it;
* else the processes' own counters in ``/proc``, summed over the run's processes: the process
  tree under the run's first process (bubblewrap without root: every process of the sandbox
  lives in its PID namespace, under it), or every process of the run's own user id (container
  mode, whose processes may leave the tree). Each process is counted by what it used since it
  was last seen; a process's ``cutime`` and ``cstime`` (its children that it waited for) count
  too, less what was already counted of the children that were seen before they went. A child
  whose parent never waits for it (``SIGCHLD`` ignored) and that lives between two readings is
  not counted: the stated limit of the mode without a cgroup (:data:`INTERVAL` seconds apart).
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["INTERVAL", "CpuMeter"]

INTERVAL = 0.1  #: seconds between two readings of a run's CPU (the supervisor's loop)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: str) -> tuple[int, int, int, int, int] | None:
    """``(ppid, start time, own ticks, waited-for children's ticks, zombie)`` of ``pid``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            fields = stat_file.read().rpartition(b")")[2].split()
    except OSError:
        return None
    try:
        ppid, start = int(fields[1]), int(fields[19])
        own = int(fields[11]) + int(fields[12])
        children = int(fields[13]) + int(fields[14])
    except (IndexError, ValueError):
        return None
    return ppid, start, own, children, fields[0] == b"Z"


def _uid_of(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class CpuMeter:
    """CPU seconds of a run so far (see the module docstring). ``cgroup_seconds``: the run's
    cgroup's counter (None where it has none); ``root``: the run's first process; ``uid``: the
    run's own user id (then every process of it is the run's)."""

    def __init__(
        self,
        cgroup_seconds: Callable[[], float | None] = lambda: None,
        root: int | None = None,
        uid: int | None = None,
    ) -> None:
        self._cgroup, self.root, self.uid = cgroup_seconds, root, uid
        self._seen: dict[str, tuple[int, int, int, int]] = {}  # pid -> (start, ppid, own, children)
        self._ticks = 0

    def __call__(self) -> float:
        """CPU seconds used so far by everything the run started."""
        counted = self._cgroup()
        if counted is not None:
            return counted
        if self.root is None and self.uid is None:
            return 0.0
        self._read()
        return self._ticks / _TICKS

    def _members(self) -> dict[str, tuple[int, int, int, int]]:
        """``{pid: (start, ppid, own ticks, children's ticks)}`` of the run's processes now."""
        parents: dict[str, int] = {}
        stats = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            if self.uid is not None and _uid_of(entry) != self.uid:
                continue
            stat = _stat(entry)
            if stat is not None:
                stats[entry] = stat
                parents[entry] = stat[0]
        if self.uid is not None:
            return {pid: (s[1], s[0], s[2], s[3]) for pid, s in stats.items()}
        inside = {str(self.root)}
        changed = True
        while changed:  # the tree under the run's first process
            changed = False
            for pid, ppid in parents.items():
                if pid not in inside and str(ppid) in inside:
                    inside.add(pid)
                    changed = True
        return {pid: (s[1], s[0], s[2], s[3]) for pid, s in stats.items() if pid in inside}

    def _read(self) -> None:
        now = self._members()
        gone: dict[int, int] = {}  # parent -> what was counted of its children that went
        for pid, (start, ppid, own, children) in self._seen.items():
            if pid not in now or now[pid][0] != start:
                gone[ppid] = gone.get(ppid, 0) + own + children
        for pid, (start, _, own, children) in now.items():
            before = self._seen.get(pid)
            if before is None or before[0] != start:
                self._ticks += own + children
                continue
            grown = children - before[3]
            self._ticks += max(0, own - before[2]) + max(0, grown - gone.get(int(pid), 0))
        self._seen = now
