"""Every limit of a run holds without cgroup v2 and without root (issue 44, item 2).

Real bubblewrap runs of tiny commands, in whatever mode this process may use: as root, each run
as a user of its own with a cgroup (v1 on this kind of machine: memory, pids, cpuacct); as a
plain user, no cgroup at all. The class tests are run both ways where the machine allows it
(a root CI job, and ``su`` to a plain user: see the issue's report). Container mode, which
needs root, is made to run without a writable cgroup (Docker's read-only ``/sys/fs/cgroup``).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from autograder.core.isolation import SandboxLimits, supervision
from autograder.core.isolation.bubblewrap import bwrap_works, run_bubblewrap
from autograder.core.isolation.python_layout import PYTHON_BIN

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not installed (.ci/run has it)"),
]

ENV = {"PATH": f"{PYTHON_BIN}:/usr/bin:/bin", "HOME": "/submission/home"}
LIMITS = SandboxLimits(memory_bytes=512 * 1024**2, scratch_bytes=16 * 1024**2,
                       tmp_bytes=16 * 1024**2, channel_bytes=4096)  # fmt: skip


def _sh(script: str, limits: SandboxLimits = LIMITS, wall: float = 90.0):
    return run_bubblewrap(["/bin/sh", "-c", script], {}, ENV, b"", wall, limits)


def _alive(token: str) -> list[str]:
    """Command lines of live processes (of any user) that carry ``token``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if token in line and proc.name != str(os.getpid()):
            found.append(line)
    return found


def test_forked_cpu_burners_stop_the_run_at_its_cpu_cap():
    """Three processes, each started in a session of its own (out of the run's process group),
    spin while the run's first process sleeps: the run is stopped once all of them together
    used its 6 s of CPU, long before its wall clock, and the result says so. As root the run's
    cgroup (v1: cpuacct) counts them; without root, its process tree in /proc does."""
    token = f"burner-{os.getpid()}"
    start = time.monotonic()
    ran = _sh(
        f"for i in 1 2 3; do setsid sh -c 'while :; do :; done # {token}' & done; sleep 80",
        replace(LIMITS, cpu_seconds=6.0),
    )
    assert ran.cpu_capped and not ran.timed_out, ran
    assert ran.cpu_seconds >= 6.0
    assert time.monotonic() - start < 60
    assert _alive(token) == []


def test_an_error_of_the_supervisor_itself_still_stops_and_removes_the_run(monkeypatch):
    """What goes wrong in the grader while a run goes on (a thread it cannot start, say: a
    grader at its task limit) is raised, but only after the run was stopped and removed."""
    token = f"orphan-{os.getpid()}"
    started = []

    class Failing(supervision.Reader):
        def start(self) -> None:
            started.append(self)
            if len(started) == 2:  # the channel's reader: the command runs already
                time.sleep(2)  # and has left its process
                raise RuntimeError("can't start new thread")
            super().start()

    monkeypatch.setattr(supervision, "Reader", Failing)
    with pytest.raises(RuntimeError, match="new thread"):
        _sh(f"setsid sh -c 'sleep 120 # {token}' & sleep 120 # {token}")
    time.sleep(0.5)
    assert _alive(token) == []


def test_one_runs_threads_never_keep_the_next_sandbox_from_starting():
    """A run holds 250 threads (its limit is 256 tasks) while another sandbox starts: the other
    starts and runs. Without root every sandbox shares the grader's user id, so the task limit
    is set inside each sandbox's own user namespace, where the kernel counts it for that
    sandbox alone; set on bubblewrap itself, the first run's threads counted against the next
    (``bwrap: Creating new namespace failed: Resource temporarily unavailable``)."""
    hold = (
        "import threading, time\n"
        "for _ in range(250):\n"
        "    threading.Thread(target=time.sleep, args=(25,), daemon=True).start()\n"
        "print('holding', threading.active_count(), flush=True)\n"
        "time.sleep(25)\n"
    )
    python = str(Path(PYTHON_BIN) / "python")
    held: dict = {}
    holder = threading.Thread(
        target=lambda: held.update(ran=run_bubblewrap([python, "-c", hold], {}, ENV, b"", 90,
                                                      LIMITS)),  # fmt: skip
    )
    holder.start()
    time.sleep(8)  # the threads are up
    try:
        other = _sh("echo started")
        assert other.returncode == 0 and "started" in other.output, other.output
    finally:
        holder.join()
    assert "holding 251" in held["ran"].output, held["ran"].output
    over = _sh(f"{python} -c \"{hold.replace('250', '300')}\"")
    assert "holding" not in over.output and "can't start new thread" in over.output, over.output


@pytest.mark.skipif(os.getuid() != 0, reason="only root's runs have cgroups (their limits)")
def test_a_run_whose_name_a_killed_grader_left_behind_still_gets_its_own_cgroup(monkeypatch):
    """A grader killed mid-run (SIGKILL, the out-of-memory killer, a service stopped) leaves
    its run's groups; a later grader that gets its pid draws the same names. Its run gets groups
    of its own all the same, with the whole run's limits (before: no cgroup, the per-process
    limits only, and a note blaming the missing root), and the leftover is not touched."""
    from autograder.core.isolation import cgroups, run_scope

    leftovers = []

    def named_like_a_leftover(name, limits, enabled=True):
        leftovers.append(cgroups.Cgroup(name, limits, enabled))  # the killed grader's
        return cgroups.Cgroup(name, limits, enabled)

    monkeypatch.setattr(run_scope, "Cgroup", named_like_a_leftover)
    try:
        if not leftovers_possible():
            pytest.skip("no writable memory and pids cgroup on this machine")
        ran = _sh("echo ran")
        assert ran.returncode == 0 and "ran" in ran.output, ran.output
        assert ran.limits.startswith("cgroup:"), ran.limits
        (leftover,) = leftovers
        assert leftover.active and all(folder.is_dir() for folder in leftover.dirs)
        assert all((folder / "cgroup.procs").read_text() == "" for folder in leftover.dirs)
    finally:
        for leftover in leftovers:
            leftover.remove()


def leftovers_possible() -> bool:
    """Whether this machine gives a root run a cgroup at all."""
    from autograder.core.isolation import cgroups

    probe = cgroups.Cgroup(f"probe-{os.getpid()}-{time.monotonic_ns()}", LIMITS)
    try:
        return probe.active
    finally:
        probe.remove()


@pytest.mark.skipif(os.getuid() != 0, reason="container mode runs the job as another user: root")
def test_container_mode_without_a_writable_cgroup_ends_the_users_processes_first(monkeypatch):
    """Container mode where no cgroup can be made: a run that leaves a process in a session of
    its own, whose supervisor then fails, has every process of its user ended before its user
    id is given back; a user id whose processes cannot be ended is not given back."""
    from autograder.core.isolation import cgroups, container, leases
    from autograder.core.isolation.user_processes import processes_of

    monkeypatch.setattr(container, "check_closed", lambda: None)
    monkeypatch.setattr(container, "check_environment", lambda: (Path("/usr"),))

    class NoCgroup(cgroups.Cgroup):  # Docker's /sys/fs/cgroup is read-only
        def __init__(self, name, limits, enabled=True):
            super().__init__(name, limits, enabled=False)

    monkeypatch.setattr(container, "Cgroup", NoCgroup)
    ended = []
    original = leases.UidLease.end

    def end(lease):
        given_back = original(lease)
        ended.append((lease.uid, given_back, processes_of(lease.uid)))
        return given_back

    monkeypatch.setattr(leases.UidLease, "end", end)

    class Failing(supervision.Reader):
        def start(self) -> None:
            if self.fd != -1 and not self.tail:
                time.sleep(2)  # the job runs, and has left its process
                raise RecursionError("maximum recursion depth exceeded while decoding a frame")
            super().start()

    monkeypatch.setattr(supervision, "Reader", Failing)
    token = f"left-{os.getpid()}"
    with pytest.raises(RecursionError):
        container.run_in_container(
            ["/bin/sh", "-c", f"setsid sh -c 'sleep 120 # {token}' & sleep 120"], {}, ENV, b"",
            60, LIMITS, supervision.CHANNEL_VARIABLE,
        )  # fmt: skip
    assert len(ended) == 1 and ended[0][1] is True and ended[0][2] == [], ended
    assert _alive(token) == []

