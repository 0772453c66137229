"""What the sandbox lets a command see and do, and how the grader reads what comes out of it.

The sandbox tests run real bubblewrap with tiny commands (a second or two each); the channel
tests feed :func:`autograder.core.judging.channel.read_channel` the lines a hostile notebook could write.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from autograder.core.isolation import SandboxLimits
from autograder.core.isolation.bubblewrap import bwrap_works, run_bubblewrap
from autograder.core.isolation.python_layout import ENVIRONMENT, PYTHON_BIN
from autograder.core.judging import make_plan
from autograder.core.judging.channel import read_channel
from autograder.sandboxed.grading_runtime.record import dumps

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
needs_bwrap = pytest.mark.skipif(
    not bwrap_works(), reason="bubblewrap is not installed (.ci/run installs it)"
)
ENV = {"PATH": f"{PYTHON_BIN}:/usr/bin:/bin", "HOME": "/submission/home"}
SMALL = SandboxLimits(
    memory_bytes=256 * 1024**2,
    processes=64,
    scratch_bytes=16 * 1024**2,
    tmp_bytes=16 * 1024**2,
    channel_bytes=4096,
)


def _sh(script: str, limits: SandboxLimits = SMALL, readonly=None, stdin: bytes = b""):
    return run_bubblewrap(["/bin/sh", "-c", script], readonly or {}, ENV, stdin, 60, limits)


def test_bubblewrap_is_installed_for_these_tests() -> None:
    """CI installs bubblewrap: without it every test below would be skipped, so fail here."""
    assert bwrap_works(), "install bubblewrap: sudo apt-get install -y bubblewrap"


@needs_bwrap
def test_the_sandbox_learns_no_host_path_and_sees_no_grader_file(tmp_path: Path) -> None:
    """No host folder of the grader on bwrap's command line or in the mounts; the instructor's
    packages are hidden from the environment; only what is shown read-only is there."""
    shown = tmp_path / "grader-view-7f3a"
    shown.mkdir()
    (shown / "plan.json").write_text("{}")
    ran = _sh(
        "cat /proc/1/cmdline | tr '\\0' ' '; echo; cat /proc/self/mountinfo; ls /view; "
        'python -c "import solutions" 2>&1 | tail -1; python -c "import autograder" 2>&1 | tail -1',
        readonly={"/view": shown},
    )
    assert ran.returncode == 0, ran.output
    assert str(tmp_path) not in ran.output.split("\n")[0]  # bwrap's arguments came on a pipe
    assert "plan.json" in ran.output
    assert ran.output.count("ModuleNotFoundError") == 2, ran.output
    assert str(ROOT / "solutions") not in ran.output and str(ROOT / "autograder") not in ran.output
    if os.getuid() == 0:  # the grader's view is a copy in memory: the mount table names no source
        assert str(tmp_path) not in ran.output and "grader-view-7f3a" not in ran.output


@needs_bwrap
def test_no_install_record_names_the_checkout() -> None:
    """The kit's install records (the editable finder, its compiled copy, direct_url.json,
    RECORD) name the instructor's checkout: the sandbox finds none of them."""
    script = (
        f"for d in {ENVIRONMENT}/lib/python*/site-packages; do "
        'test -d "$d/torch" && echo "found $d"; '
        'ls "$d" "$d/__pycache__" 2>/dev/null | grep -i a2c_course_kit; '
        'cat "$d"/a2c_course_kit*/direct_url.json "$d"/a2c_course_kit*/RECORD 2>/dev/null; '
        'cat "$d"/__pycache__/__editable__*a2c_course_kit* 2>/dev/null; done; echo END'
    )
    ran = _sh(script)
    assert ran.returncode == 0 and "END" in ran.output, ran.output
    assert f"found {ENVIRONMENT}/lib/" in ran.output, ran.output  # it looked where they would be
    assert str(ROOT) not in ran.output, ran.output
    assert "direct_url" not in ran.output and "file://" not in ran.output, ran.output


def _host_uids(token: str) -> set[int]:
    """Real user ids, seen from the host, of the processes whose command line holds ``token``."""
    uids = set()
    for proc in Path("/proc").iterdir():
        try:
            if token.encode() in (proc / "cmdline").read_bytes():
                status = (proc / "status").read_text()
                uids.add(int(status.split("Uid:")[1].split()[0]))
        except (OSError, IndexError, ValueError):
            continue
    return uids


@needs_bwrap
def test_the_sandbox_is_never_root_on_the_host() -> None:
    """Seen from the host, every process of the run belongs to an unprivileged user, so root's
    files stay closed even when the grader runs as root."""
    token = f"sandbox-uid-probe-{os.getpid()}"
    seen: list[set[int]] = []
    finished = threading.Event()

    def watch() -> None:  # for as long as the run lasts, however slowly the sandbox starts
        while not finished.is_set():
            seen.append(_host_uids(token))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        ran = _sh(f"sleep 2 # {token}\ncat /etc/shadow > /dev/null && echo READ-SHADOW")
    finally:
        finished.set()
        watcher.join()
    uids = set().union(*seen)
    assert uids and 0 not in uids, uids
    assert "READ-SHADOW" not in ran.output, ran.output


_UID_OF_RUN = (
    "import json, sys; from pathlib import Path; from autograder.core.isolation.bubblewrap import run_bubblewrap; "
    "ran = run_bubblewrap(['/bin/sh', '-c', 'sleep 3; ps -o user= -p 1 || true'], {}, "
    "json.loads(sys.argv[1]), b'', 60); print(json.dumps([ran.uid, ran.returncode]))"
)


@needs_bwrap
@pytest.mark.skipif(os.getuid() != 0, reason="sandbox user ids are given only by a root grader")
def test_two_grader_processes_never_share_a_sandbox_user() -> None:
    """Two graders at once (two ``grade-all``, two Dask workers) give their runs different user
    ids, so that each run's per-user process limit is its own."""
    import subprocess

    graders = [
        subprocess.Popen(
            [sys.executable, "-c", _UID_OF_RUN, json.dumps(ENV)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(3)
    ]
    results = [json.loads(grader.communicate(timeout=120)[0]) for grader in graders]
    assert all(code == 0 for _, code in results), results
    uids = [uid for uid, _ in results]
    assert len(set(uids)) == 3 and all(uid >= 1_800_000 for uid in uids), uids


@needs_bwrap
@pytest.mark.skipif(os.getuid() != 0, reason="the staging folder is used by a root grader only")
def test_a_root_grader_works_with_a_private_tmpdir(tmp_path: Path, monkeypatch) -> None:
    """As root with TMPDIR in a folder only root can enter (pytest's, a Slurm job's), the
    sandbox's user still reaches what it must show."""
    import tempfile

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shown = private / "view"
    shown.mkdir()
    (shown / "seen.txt").write_text("seen")
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    ran = _sh("cat /view/seen.txt; echo; python -c 'print(6 * 7)'", readonly={"/view": shown})
    assert ran.returncode == 0 and "seen" in ran.output and "42" in ran.output, ran.output


@pytest.mark.skipif(os.getuid() != 0, reason="starting processes as another user needs root")
def test_a_sandbox_users_leftover_processes_are_killed() -> None:
    """A process of a run's user that left the run's process group and session (as a run
    without a cgroup could leave) is killed before that user id is given to another run."""
    import subprocess

    from autograder.core.isolation.user_processes import kill_user_processes

    uid = 1_790_000 + os.getpid() % 10_000 + 1
    token = f"leftover-{os.getpid()}"
    subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c",
         f"setsid sh -c 'sleep 300; echo {token}' >/dev/null 2>&1 < /dev/null &"],
        check=True, timeout=30,
    )  # fmt: skip
    time.sleep(0.5)
    assert _host_uids(token) == {uid}  # it outlived the command that started it
    kill_user_processes(uid)
    time.sleep(0.2)
    assert _host_uids(token) == set()


@pytest.mark.skipif(os.getuid() != 0, reason="starting processes as another user needs root")
def test_a_sandbox_users_zombie_is_not_waited_for(monkeypatch) -> None:
    """A process of a run's user that has ended but that its parent has not collected yet (a
    zombie: a sandbox's process whose parent was killed first waits for init) runs nothing,
    so neither isolation mode waits for it to go before the user id is given again."""
    from autograder.core.isolation import user_processes

    uid = 1_790_000 + os.getpid() % 10_000 + 2
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child becomes the user and ends at once
        os.setgid(uid)
        os.setuid(uid)
        os._exit(0)
    try:
        for _ in range(500):
            if user_processes.ended(pid):
                break
            time.sleep(0.02)
        assert user_processes.ended(pid) and os.stat(f"/proc/{pid}").st_uid == uid  # a zombie of uid
        naps: list[float] = []
        monkeypatch.setattr(user_processes.time, "sleep", naps.append)
        user_processes.kill_user_processes(uid)
        assert naps == []  # nothing of the user runs: no round waited for it
        assert user_processes.processes_of(uid) == []
    finally:
        os.waitpid(pid, 0)


def test_a_run_that_cannot_start_leaves_no_open_pipe() -> None:
    """A command that cannot even start (a staging copy failed, a missing program) closes all
    of its run's pipes: a class of such failures never runs the grader out of descriptors."""
    from autograder.core.isolation import SandboxLimits
    from autograder.core.isolation.cgroups import Cgroup
    from autograder.core.isolation.supervision import Pipes, supervise

    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        pipes = Pipes()
        try:
            with pytest.raises(FileNotFoundError):
                popen = {"args": ["/nonexistent/program"]}
                limits = SandboxLimits()
                supervise(pipes, popen, b"", 5, limits, Cgroup("x", limits, False), print)
        finally:
            pipes.close()
        unused = Pipes()
        unused.close()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(os.getuid() != 0, reason="a run's own user id is leased by a root grader")
def test_every_mode_gives_a_runs_resources_back_in_one_order_whatever_fails() -> None:
    """The one run wrapper of the three modes (RunScope): the user's processes are stopped
    first, then pipes, cgroup and staging folder go, then what the user left elsewhere, and
    the user id is given back last; an error in the run or in one step of the ending still
    ends every other step, and no descriptor stays open."""
    from autograder.core.isolation import SandboxLimits
    from autograder.core.isolation.run_scope import RunScope

    before = len(os.listdir("/proc/self/fd"))
    seen: list[tuple[str, bool, bool]] = []
    holder: dict[str, RunScope] = {}

    def lease_open() -> bool:
        try:
            os.fstat(holder["run"].lease._fd)
        except OSError:
            return False
        return True

    def stop_user(uid: int) -> None:
        seen.append(("stop", holder["run"].staging.exists(), lease_open()))

    def clear_user(uid: int) -> None:
        seen.append(("clear", holder["run"].staging.exists(), lease_open()))
        raise OSError("a step of the ending failed")

    scope = RunScope(SandboxLimits(), ("container", 0o711), "test-", stop_user, clear_user)
    with pytest.raises((RuntimeError, OSError)):
        with scope as run:
            holder["run"] = run
            assert run.uid is not None and run.staging.is_dir() and run.pipes is not None
            raise RuntimeError("the grader failed mid-run")
    assert seen == [("stop", True, True), ("clear", False, True)]
    assert not lease_open() and not run.staging.exists()
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.skipif(os.getuid() != 0, reason="root's staging folders belong to a root grader")
def test_a_killed_runs_staging_folder_goes_with_the_next_run(tmp_path: Path) -> None:
    """A grader killed mid-run (SIGKILL: no clean-up) leaves its staging folder, named after
    the run's user id, whose lock then nobody holds; the next run removes it, and never the
    folder of a run that still holds its id."""
    from autograder.core.isolation.leases import UidLease, root_folder

    folder = root_folder([str(tmp_path)])
    living = UidLease(folder)
    dead = UidLease(folder)
    dead_uid = dead.uid
    dead.release()  # as the kernel drops a killed grader's lock
    try:
        for name in (f"stage-{dead_uid}", f"plain-{dead_uid}", f"stage-{living.uid}"):
            (folder / name / "root" / "work").mkdir(parents=True)
            (folder / name / "root" / "work" / "left.txt").write_text("x")
        lease = UidLease(folder)
        try:
            staging = lease.staging("container", 0o711)
            assert staging == folder / f"container-{lease.uid}" and list(staging.iterdir()) == []
            assert oct(staging.stat().st_mode & 0o777) == "0o711"
            left = sorted(path.name for path in folder.iterdir() if path.name != "uids")
            assert left == sorted([f"container-{lease.uid}", f"stage-{living.uid}"]), left
        finally:
            lease.release()
    finally:
        living.release()


@needs_bwrap
def test_tmp_and_the_working_folder_are_in_memory_and_size_limited() -> None:
    """Writing past the size of /tmp or of the working folder fails; nothing reaches the disk."""
    ran = _sh(
        "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>/dev/null || echo TMP-FULL; "
        "dd if=/dev/zero of=big bs=1M count=64 2>/dev/null || echo SCRATCH-FULL; pwd"
    )
    assert "TMP-FULL" in ran.output and "SCRATCH-FULL" in ran.output, ran.output


@needs_bwrap
@pytest.mark.skipif(os.getuid() != 0, reason="cgroups are made only when the grader is root")
def test_memory_and_processes_of_the_whole_run_are_capped() -> None:
    """Memory counts every process and /tmp; a fork bomb stops at the task limit, quickly."""
    limits = SandboxLimits(memory_bytes=128 * 1024**2, processes=64, tmp_bytes=1024**3)
    ran = _sh("dd if=/dev/zero of=/tmp/big bs=1M count=400 2>&1 | tail -1; echo DONE", limits)
    assert ran.limits.startswith("cgroup"), ran.limits
    assert "400+0 records out" not in ran.output, ran.output
    bomb = _sh("for i in $(seq 200); do sleep 30 & done 2>/dev/null; echo STARTED; wait", limits)
    assert bomb.seconds < 45 and not bomb.timed_out
    assert "fork" in bomb.output.lower() or "resource" in bomb.output.lower() or bomb.returncode


@needs_bwrap
def test_the_channel_is_capped_and_standard_input_arrives() -> None:
    ran = _sh(
        'cat; python -c \'import os; os.write(int(os.environ["A2C_CHANNEL_FD"]), b"x" * 99999)\'',
        stdin=b"the job\n",
    )
    assert "the job" in ran.output and ran.channel_overflow


# --- the channel, as untrusted data --------------------------------------------------------------


def _line(**message) -> bytes:
    return json.dumps(message).encode()


def test_read_channel_keeps_planned_records_and_flags_everything_else() -> None:
    """Only the plan's steps, once each, in the record format, count; the rest is malformed."""
    plan = make_plan(seed=1)
    first, second = (step["key"] for step in plan["parts"]["policy"][:2])
    good = {"ok": False, "timed_out": False, "error": "your code raised ValueError: x"}
    lines = [
        _line(part="policy", key=first, record=dumps(good)),
        _line(part="policy", key=first, record=dumps(good)),  # a second record: forged
        _line(part="policy", key="invented", record=dumps({"ok": True, "observation": {}})),
        _line(part="policy", key=second, record='{"ok": "yes"}'),
        b"not json",
        b"[1, 2, 3]",
        _line(event="cell", index=3, ok=False, error="NameError: x"),
        _line(event="probe", part="policy", seconds=1.5),
        _line(event="end"),
    ]
    channel = read_channel(lines, plan)
    assert channel.records["policy"] == {first: good}
    assert len(channel.malformed) == 5, channel.malformed
    assert channel.cells == {3: {"ok": False, "error": "NameError: x"}}
    assert channel.probe_seconds == {"policy": 1.5} and channel.ended


def test_a_channel_line_is_bounded_before_it_is_parsed() -> None:
    """Nested lists where a record's text belongs (what student code that reached the executor's
    reply pipe through the call stack made the runner forward), and a message of a million
    fields: each is refused before ``json`` builds it, whatever its length."""
    plan = make_plan(seed=1)
    key = plan["parts"]["policy"][0]["key"]
    nested = b'{"part": "policy", "key": "%s", "record": [%s[]]}' % (key.encode(), b"[]," * 3_000_000)
    fields = b"{" + b"".join(b'"f%d": 0, ' % n for n in range(1_000_000)) + b'"event": "end"}'
    tracemalloc.start()
    try:
        channel = read_channel([nested, nested, fields], plan)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert channel.records["policy"] == {} and not channel.ended
    assert len(channel.malformed) == 3, channel.malformed
    assert "lists and dicts" in channel.malformed[0] and "items" in channel.malformed[2]
    assert peak < 16 * 1024**2, peak  # parsed, the nested line alone builds ~200 MB of lists


def test_grading_refuses_without_bubblewrap_unless_asked(tmp_path: Path) -> None:
    """Where bwrap cannot start, is grading refused with the fix, instead of run unisolated?"""
    import subprocess

    (tmp_path / "a.ipynb").write_text(
        '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "a.ipynb"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        # No bwrap on PATH; bubblewrap insisted on (as root, container mode would hold).
        env={**os.environ, "PATH": str(Path(sys.executable).parent), "A2C_ISOLATION": "bubblewrap"},
    )
    assert done.returncode == 2, done.stderr
    assert "bubblewrap" in done.stderr and "--no-sandbox" in done.stderr


@needs_bwrap
@pytest.mark.slow
def test_a_non_editable_install_does_not_show_the_reference(tmp_path: Path) -> None:
    """`pip install .` copies solutions/ and autograder/ into site-packages: does a notebook
    that imports the reference from there still get nothing?"""
    import subprocess
    import sysconfig

    from tests.submissions.hostile import hostile_submission

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_dir = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    source = tmp_path / "kit"  # a copy: building writes build/ into the folder it builds
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", "runs")
    shutil.copytree(ROOT, source, ignore=ignore)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", site_dir, str(source)],
        check=True, timeout=300,
    )  # fmt: skip
    # the dependencies (torch, nbgrader...) from this environment, as a plain path entry
    (Path(site_dir) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    assert (Path(site_dir) / "solutions" / "reference.py").is_file()
    nbformat_nb = hostile_submission("import_reference")
    import nbformat

    nbformat.write(nbformat_nb, tmp_path / "mallory.ipynb")
    done = subprocess.run(
        [python, "-m", "autograder", "grade", "mallory.ipynb", "--json",
         "--source", str(ROOT / "solutions" / "a2c.ipynb")],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PATH": f"{venv / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin"},
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["sandboxed"] is True and report["status"] == "graded", report
    assert report["total"] == 0.0, report


# What one container-mode run makes with System V IPC (key 0x0a2c0032: shared memory of 64 KiB,
# a message queue and a semaphore set, mode 0666), and what the next run finds of it.
_IPC_KEY = 0x0A2C0032
_MAKE_IPC = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget({_IPC_KEY}, 65536, 0o1666)  # IPC_CREAT | 0666
address = libc.shmat(segment, None, 0)
ctypes.memmove(address, b"left-by-one-run", 15)
queue, sems = libc.msgget({_IPC_KEY}, 0o1666), libc.semget({_IPC_KEY}, 1, 0o1666)
posix = libc.mq_open(b"/a2c-left", os.O_CREAT | os.O_RDWR, 0o666, None)
why = os.strerror(ctypes.get_errno()) if posix < 0 else "made"
print("MADE", segment >= 0, queue >= 0, sems >= 0, "MQ", why)
"""
_FIND_IPC = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
found = [libc.shmget({_IPC_KEY}, 0, 0), libc.msgget({_IPC_KEY}, 0), libc.semget({_IPC_KEY}, 0, 0)]
print("FOUND", [ident >= 0 for ident in found])
"""


@pytest.mark.skipif(os.getuid() != 0, reason="container mode runs the job as another user: root")
def test_container_mode_leaves_no_ipc_to_the_next_run(monkeypatch) -> None:
    """A run in container mode (no IPC namespace) makes a shared memory segment, a message
    queue and a semaphore set any user may open: all are gone before the next run, under
    another user id, looks for them; a POSIX message queue cannot be made at all."""
    from autograder.core.isolation import container
    from autograder.core.isolation.ipc_cleanup import ipc_objects_of
    from autograder.core.isolation.supervision import CHANNEL_VARIABLE

    # The job runs the system's Python (this venv's may be in a private home), and this
    # checkout is readable by every user: not what this test is about.
    monkeypatch.setattr(container, "check_closed", lambda: None)
    monkeypatch.setattr(container, "check_environment", lambda: (Path("/usr"),))

    def run(code: str):
        return container.run_in_container(
            ["/usr/bin/python3", "-c", code], {}, ENV, b"", 60, SMALL, CHANNEL_VARIABLE
        )

    made = run(_MAKE_IPC)
    assert "MADE True True True MQ" in made.output and "MQ made" not in made.output, made.output
    assert ipc_objects_of(made.uid) == []
    found = run(_FIND_IPC)
    assert found.uid != made.uid and "FOUND [False, False, False]" in found.output, found.output
