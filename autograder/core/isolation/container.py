"""Run a grading job as a fresh unprivileged user where bubblewrap cannot start (container mode).

Grading platforms run the grader inside a container of their own (Gradescope, PrairieLearn's
external graders, a CI runner) where Docker's default seccomp profile refuses the namespaces that
bubblewrap needs (``bwrap: Creating new namespace failed: Operation not permitted``). There the
grader is root, and this module gives the student's code the isolation that plain Unix users and
resource limits can give, with no namespace and no mount:

* **Another user.** The job runs as a user id of its own (one lease per run, as for bubblewrap:
  :class:`autograder.core.isolation.leases.UidLease`), with no supplementary group, ``no_new_privs`` set (no
  set-uid program gives root back) and a cleared environment. When the run ends every process
  of that user is killed (``kill(-1)`` from a process of that user), and what it left in
  ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (POSIX shared memory and semaphores) is removed, with
  its System V shared memory, message queues and semaphores
  (:mod:`autograder.core.isolation.ipc_cleanup`); it may make no POSIX message queue.
* **The grader's files closed.** The reference (package ``solutions``, which holds the source
  notebook), the judges (package ``autograder``), the grader's work folder and the folders the
  front end names (the platform's results folder, its copy of the course) lose every permission
  for other users before the run (:func:`close_grader_files`). The secret seed never leaves the
  grader's memory; the job, with the cases alone, comes on standard input.
* **What it may read.** The Python environment (it must be reachable by every user: refused
  otherwise) and copies of the grader's view (``course_lib``'s snapshot, the grading runtime,
  the scripts that run a job) in a folder of root's. No Python folder may be writable by that user
  (checked once per grader process, :func:`check_environment`).
* **Landlock**, where the kernel has it and the container's seccomp profile lets it through
  (:mod:`autograder.sandboxed.bin.landlock`): the job reads only the system folders, Python and the copies
  of the grader's view, writes only its own working and temporary folders and ``/dev``, so a
  copy of the course elsewhere on the machine stays out of reach even where Unix permissions
  would show it; from ABI 4 no TCP at all, from ABI 6 no signal to a process outside the run.
  The result's note says which held.
* **Limits.** Per process: address space, CPU time, file size, open files, no core files; per
  user: the number of processes; a cgroup for the whole run where the container lets root make
  one (rarely). The kernel's out-of-memory killer picks the job's processes first.
* **Nothing by path.** As with bubblewrap, the job comes on a pipe and the records go out on
  one; the grader opens no file the job could have written.

* **The network**, where something can fence it (:func:`network_fence`): Landlock ABI 4 (no
  TCP), else a network namespace of its own where the container lets root make one (only a
  loopback, down). Without either the job has the network the platform gives the container
  (Gradescope's has one, PrairieLearn's external graders have none by default), and a Dask
  worker refuses container mode (:mod:`autograder.core.cluster`): its job could reach the
  scheduler.

What it does not give, and bubblewrap does: a PID namespace (the job sees the grader's
processes, though it cannot signal them), a private view of the file system (without Landlock
it reads what any user of the image may read); and where the kernel refuses nested
namespaces, the student's code runs as the same user as the runner that supervises it. Hence:
one submission per container, which is how both platforms run.

Why one module: each guarantee above is a few lines here (a check, a limit, a clean-up), and
together they are the mode: read side by side with :mod:`.bubblewrap`, one file says what
container mode gives and what it does not.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from autograder.core.isolation.cgroups import Cgroup
from autograder.core.isolation.contract import SandboxLimits, SandboxResult, SandboxUnavailable
from autograder.core.isolation.cpu_meter import CpuMeter
from autograder.core.isolation.ipc_cleanup import remove_ipc_of
from autograder.core.isolation.job_view import (
    SYSTEM_DIRS,
    hidden_package_locations,
    outside_command,
    python_dirs,
)
from autograder.core.isolation.run_scope import RunScope
from autograder.core.isolation.user_processes import processes_of
from autograder.sandboxed.bin import landlock

__all__ = [
    "CONTAINER",
    "check_closed",
    "check_environment",
    "close_grader_files",
    "container_works",
    "network_fence",
    "run_in_container",
    "unavailable_message",
]

CONTAINER = "container"  #: the isolation mode's name, as results report it
OPEN_FILES = 1024  #: RLIMIT_NOFILE of the job's processes
#: Shared folders a job may write in: what its user left there is removed after the run.
SHARED_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
PR_SET_NO_NEW_PRIVS = 38
FIRST_PROBE_UID = 1_799_999  #: a user id just below the runs' own, used only by the probe


def unavailable_message() -> str:
    """Why no isolation can hold here (not root, no bubblewrap), and the ways out."""
    return (
        "student code cannot be isolated here: bubblewrap (bwrap) cannot start (not installed, "
        "or the kernel or a container's seccomp profile refuses user namespaces), and the "
        "grader is not root, so it cannot run the notebook as another user (container mode). "
        "Ways out: grade on a machine where bubblewrap works (Debian/Ubuntu: apt-get install -y "
        "bubblewrap); grade as root inside a throw-away container (Gradescope, PrairieLearn: "
        "`python -m autograder gradescope` / `prairielearn`); send the gradings to a Dask "
        "cluster whose workers can sandbox (--scheduler, docs/cluster.md); or, as root only, "
        "--no-sandbox for practice (results say `unsandboxed` and are not grades)."
    )


@functools.lru_cache(maxsize=1)
def container_works() -> bool:
    """True when this process is root on Linux and a child can become an unprivileged user."""
    if sys.platform != "linux" or os.getuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only drops and exits
        try:
            _drop(FIRST_PROBE_UID)
            os._exit(0 if os.getuid() == FIRST_PROBE_UID else 1)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


_CLONE_NEWNET = 0x40000000
NETWORK_LANDLOCK, NETWORK_NAMESPACE = "landlock", "network namespace"


def _own_network_namespace() -> None:
    """Move this process into a new network namespace (root only): no interface but a loopback
    that is down."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")


@functools.lru_cache(maxsize=1)
def network_fence() -> str:
    """What keeps a container-mode job off the network here: :data:`NETWORK_LANDLOCK` (ABI 4:
    no TCP), else :data:`NETWORK_NAMESPACE` (root may make one), else ``""`` (nothing: the job
    has the container's network)."""
    if landlock.abi_version() >= 4:
        return NETWORK_LANDLOCK
    if sys.platform != "linux" or os.getuid() != 0:
        return ""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only tries
        try:
            _own_network_namespace()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return NETWORK_NAMESPACE if os.waitstatus_to_exitcode(status) == 0 else ""


def _no_new_privileges() -> None:
    """No set-uid or file-capability program gives this process or its children privileges."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def _drop(uid: int) -> None:
    """Become ``uid`` (group ``uid``, no supplementary group) for good; no set-uid way back."""
    _no_new_privileges()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


# ------------------------------------------------------------------------ what the user may reach
def _others_can(path: Path, bits: int) -> bool:
    """Whether a user that owns nothing and is in no group of ``path``'s chain has ``bits``
    (``stat.S_IROTH``...) on ``path`` and can pass through every folder above it."""
    try:
        for folder in reversed(path.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
        return bool(os.stat(path).st_mode & bits)
    except OSError:
        return False


def close_grader_files(paths: Iterable[Path] = ()) -> list[Path]:
    """Take every permission of other users from the reference and the judges (the packages
    ``solutions`` and ``autograder`` wherever they are imported from) and from ``paths`` (a
    platform's copy of the course, its results folder); returns the paths closed.

    Only the folders themselves change (mode ``o-rwx``): root still reads and writes them, and
    what is inside becomes unreachable for the job's user. The platforms' entry points call it
    on their own copies; :func:`run_in_container` only checks (:func:`check_closed`).
    """
    closed = []
    for path in [*hidden_package_locations(), *map(Path, paths)]:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            continue
        if mode & 0o007:
            os.chmod(path, stat.S_IMODE(mode) & ~0o007)
        closed.append(path)
    return closed


def check_closed() -> None:
    """Raise :class:`SandboxUnavailable` when another user could read the reference or the
    judges (a checkout any user can read, say): container mode would then show them."""
    open_ = [str(path) for path in hidden_package_locations() if _others_can(path, stat.S_IXOTH)]
    if open_:
        raise SandboxUnavailable(
            "container mode runs the notebook as another user of this machine, who could read "
            f"the grader's own files at {', '.join(open_)}: close them first (chmod o-rwx on "
            "each; the gradescope and prairielearn entry points do it on their copies)"
        )


def _package_folders() -> list[Path]:
    """What a Python process of this environment runs code from: the environment (a venv),
    the standard library and every package folder on the import path."""
    found = {Path(sysconfig.get_paths()["stdlib"])}
    if sys.prefix != sys.base_prefix:
        found.add(Path(sys.prefix))
    found |= {Path(entry) for entry in sys.path if entry.endswith(("-packages", ".zip"))}
    return sorted({path.resolve() for path in found if path.exists()})


@functools.lru_cache(maxsize=1)
def check_environment() -> tuple[Path, ...]:
    """The Python folders the job runs from; raises :class:`SandboxUnavailable` when one is out
    of other users' reach (inside a private home, say) or holds anything other users can
    write (then a notebook could plant code that the grader's own Python would run). One
    ``lstat`` per file of the environment, once per grader process."""
    dirs = python_dirs()
    for path in dirs:
        if not _others_can(path, stat.S_IROTH | stat.S_IXOTH):
            raise SandboxUnavailable(
                f"container mode runs the notebook as an unprivileged user, who cannot reach the "
                f"Python installation or environment {path}: use one every user can read (the "
                f"system's Python, or a venv made from it outside any private folder)"
            )
    writable = []
    for path in _package_folders():
        if os.stat(path).st_mode & 0o002:
            writable.append(str(path))
        for folder, subdirs, files in os.walk(path):
            for name in [*subdirs, *files]:
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if info.st_mode & 0o002 and not stat.S_ISLNK(info.st_mode):
                    writable.append(os.path.join(folder, name))
    if writable:
        raise SandboxUnavailable(
            "container mode refuses a Python environment that other users can write ("
            + ", ".join(writable[:5])
            + "): chmod -R o-w it"
        )
    return tuple(dirs)


# ------------------------------------------------------------------------ the run
def _prepare_child(
    uid: int,
    limits: SandboxLimits,
    cgroup: Cgroup,
    cpu_seconds: int,
    fence: dict | None,
    network: str,
) -> None:
    """In the child, as root, before exec: cgroup, its own network namespace where that is the
    network's fence, limits, out-of-memory first, Landlock's fence where the kernel has it,
    then the user."""
    cgroup.join()
    if network == NETWORK_NAMESPACE:
        _own_network_namespace()
    try:
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")
    except OSError:
        pass
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))  # no POSIX message queue
    _no_new_privileges()
    if fence is not None:
        landlock.restrict(fence["read"], fence["write"], fence["abi"])
    _drop(uid)


def _kill_as_user(uid: int) -> None:
    """Kill every process of ``uid``: a child becomes that user and signals all it may."""
    for _ in range(5):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                _drop(uid)
                os.kill(-1, signal.SIGKILL)  # every process of this user but itself
            except BaseException:  # noqa: BLE001
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        if not processes_of(uid):
            return
        time.sleep(0.05)


def _remove_left_files(uid: int) -> None:
    """What ``uid`` created at the top of the shared scratch folders (one level: linear)."""
    for folder in SHARED_SCRATCH:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _clear_user(uid: int) -> None:
    """What a container-mode user may leave outside its staging folder: files in shared
    folders and System V IPC objects."""
    _remove_left_files(uid)
    remove_ipc_of(uid)


def _copy_view(source: Path, target: Path) -> None:
    """A copy of ``source`` that every user can read and none but root can change."""
    shutil.copytree(source, target, symlinks=False)
    for folder, _dirs, files in os.walk(target):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


def run_in_container(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    stdin: bytes,
    wall_seconds: float,
    limits: SandboxLimits,
    channel_variable: str,
) -> SandboxResult:
    """Run ``argv`` as a fresh unprivileged user (see the module docstring); the arguments are
    :func:`autograder.core.isolation.bubblewrap.run_bubblewrap`'s, paths inside mapped to copies outside."""
    check_environment()
    check_closed()
    # Whatever ends the run, an error here included, the whole user is killed first: without a
    # writable cgroup (Docker's read-only /sys/fs/cgroup) nothing else ends what it left.
    scope = RunScope(
        limits,
        staging=("container", 0o711),  # the user passes through, cannot list
        cgroup_prefix="container-",
        stop_user=_kill_as_user,
        clear_user=_clear_user,
    )
    with scope as run:
        assert run.staging is not None and run.uid is not None
        uid, staging, cgroup = run.uid, run.staging, run.cgroup
        views: dict[str, str] = {}
        for index, (inside, outside) in enumerate(readonly.items()):
            _copy_view(Path(outside), staging / f"view-{index}")
            views[inside] = str(staging / f"view-{index}")
        work, tmp = staging / "work", staging / "tmp"
        for path in (work, work / "home", tmp):
            path.mkdir(mode=0o700)
            os.chown(path, uid, uid)
        command, environment = outside_command(argv, env, views, work)
        environment["TMPDIR"] = str(tmp)  # its own, instead of the container's shared /tmp
        environment[channel_variable] = str(run.pipes.channel_write)
        cpu_seconds = int(wall_seconds * (os.cpu_count() or 1)) + 1
        abi = landlock.abi_version()
        fence = None
        if abi > 0:
            read = [*SYSTEM_DIRS, *map(str, check_environment()), *views.values(), "/proc"]
            fence = {"read": read, "write": [str(work), str(tmp), "/dev"], "abi": abi}

        def stop(process: subprocess.Popen) -> None:
            _kill_as_user(uid)  # the whole user: a process that left the group goes too

        popen = {"args": command, "cwd": str(work), "env": environment}
        network = network_fence()
        popen["preexec_fn"] = lambda: _prepare_child(
            uid, limits, cgroup, cpu_seconds, fence, network
        )
        meter = CpuMeter(cgroup.cpu_seconds, uid=uid)  # its processes may leave the tree
        outcome = run.supervise(popen, stdin, wall_seconds, stop, meter)
    if cgroup.active:
        memory = f"a cgroup of {limits.memory_bytes / 1024**3:g} GiB and {limits.processes} tasks"
    else:
        memory = (
            f"{limits.address_space_bytes / 1024**3:g} GiB of address space per process and "
            f"{limits.processes} processes (no cgroup could be made)"
        )
    network = {
        NETWORK_LANDLOCK: "",
        NETWORK_NAMESPACE: "; no network (a network namespace of its own)",
    }.get(network, "; it had the network the platform gives the container")
    note = (
        "container isolation (bubblewrap cannot start here): the notebook ran as an "
        f"unprivileged user of its own with {memory}; {landlock.describe(abi)}{network}"
    )
    return run.result(outcome, wall_seconds, sandboxed=True, limits=note, isolation=CONTAINER)
