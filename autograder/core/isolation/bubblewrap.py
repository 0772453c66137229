"""Run a grading job in a throw-away bubblewrap sandbox (``bwrap``, Debian package ``bubblewrap``).

The student's notebook runs here, never in the grader's process. The job sees:

* read-only: the system (``/usr``, ``/bin``, ``/lib*``, ``/etc``), Python at neutral paths
  (:mod:`.python_layout`: the environment as its own virtual environment at ``/opt/venv``, the
  installation at ``/opt/python``; the instructor's packages, ``solutions`` and ``autograder``,
  and the kit's install records hidden even when they are installed into it: :mod:`.job_view`),
  and the folders given in ``readonly``;
* read-write: a private, size-limited ``/tmp`` and working folder (:data:`.job_view.SCRATCH`),
  both in memory and gone when the job ends: nothing of the sandbox is left on the host's disk;
* no network (a new network namespace holds only loopback), no other process (its own PID
  namespace: when the job ends or is killed, every process it started dies with it), no host
  IPC, a fresh session, and no host path on its command line (bubblewrap reads its arguments
  from a pipe).

Started as root, the grader has the launcher (:mod:`.root_launcher`) build the sandbox's whole
tree in a private mount namespace, every file system in it made by root (:func:`root_tree`), so
that nothing the job can read (the mount table, ``/proc/self/uid_map``, compiled files,
``sys.path``) names a host folder or the host user id it runs as; bubblewrap then runs as a
fresh unprivileged user id per run (:mod:`.leases`; its processes are all killed before the id
goes to another run) and a cgroup (:mod:`.cgroups`) caps the memory (``/tmp`` and the working
folder included) and the number of processes of the whole run. Without root, or without a
writable cgroup hierarchy, :attr:`~.contract.SandboxResult.limits` says that only per-process
limits hold (address space, file size, no core files, process count). Pipes, the wall clock
and the end of the run: :mod:`.supervision`.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autograder.core.isolation.cgroups import Cgroup
from autograder.core.isolation.contract import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)
from autograder.core.isolation.cpu_meter import CpuMeter
from autograder.core.isolation.job_view import SCRATCH, SYSTEM_DIRS, hidden_in
from autograder.core.isolation.leases import CACHE_FOLDERS, FIRST_UID, root_folder
from autograder.core.isolation.neutral_bytecode import neutral_bytecode
from autograder.core.isolation.python_layout import (
    ENVIRONMENT,
    PYTHON,
    PYTHON_BIN,
    Layout,
    layout,
)
from autograder.core.isolation.run_scope import RunScope
from autograder.core.isolation.supervision import (
    CHANNEL_VARIABLE,
    JobInput,
    apply_limits,
    in_sandbox_limits,
    through_root_launcher,
    write_all,
)

__all__ = [
    "bubblewrap_popen",
    "bwrap_works",
    "job_environment",
    "kill_group",
    "limits_note",
    "require_sandbox",
    "run_bubblewrap",
]

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")  #: bound from the host (root)
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
                "stderr": "/proc/self/fd/2"}  # fmt: skip
#: What a grader started as root shows in place of the host's files in /etc that name the host,
#: its users or its network (None: an empty file).
ETC_FILES = {
    "hostname": "grading\n",
    "hosts": "127.0.0.1 localhost\n127.0.1.1 grading\n::1 localhost\n",
    "passwd": "root:x:0:0:root:/root:/bin/sh\n"
    f"nobody:x:65534:65534:nobody:{SCRATCH}/home:/usr/sbin/nologin\n",
    "group": "root:x:0:\nnogroup:x:65534:\n",
    "machine-id": None,
    "resolv.conf": None,
    "subuid": None,
    "subgid": None,
}


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """True when ``bwrap`` is installed and can create the namespaces the sandbox needs."""
    if sys.platform != "linux" or shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    if os.getuid() == 0 and shutil.which("setpriv"):
        probe = [
            "setpriv",
            f"--reuid={FIRST_UID}",
            f"--regid={FIRST_UID}",
            "--clear-groups",
            *probe,
        ]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require_sandbox() -> None:
    """Raise :class:`SandboxUnavailable`, saying what to do, when bubblewrap cannot start."""
    if not bwrap_works():
        raise SandboxUnavailable(
            "bubblewrap (bwrap) cannot start here, so student code cannot be isolated: install "
            "it (Debian/Ubuntu: sudo apt-get install -y bubblewrap) on a Linux machine with user "
            "namespaces, or pass --no-sandbox to grade without isolation (the results then say "
            "`unsandboxed` and are not grades)."
        )


def data_fd(data: bytes, keep: list[int]) -> str:
    """A pipe's read end (added to ``keep``) that yields ``data``, for bubblewrap's ``--file``."""
    read, write = os.pipe()
    keep.append(read)
    threading.Thread(target=write_all, args=(write, data), daemon=True).start()
    return str(read)


def sandbox_args(
    view: Layout,
    readonly: Mapping[str, str],
    env: Mapping[str, str],
    limits: SandboxLimits,
    keep: list[int],
    root: str | None = None,
) -> list[str]:
    """bubblewrap's options (read from a pipe, so that no host path is on its command line).

    With ``root`` (a grader started as root) the launcher has built the whole tree in that
    folder (:func:`root_tree`): bubblewrap binds it at ``/`` and adds the system folders,
    ``/proc`` and the devices. Otherwise bubblewrap binds the Python folders of ``view`` and
    ``readonly`` (``{inside: outside}``) itself; the mount table then names their host folders
    and the sandbox's host user id.
    """
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    if root is not None:
        args += ["--bind", root, "/"]
    for folder in SYSTEM_DIRS:
        if Path(folder).is_symlink():
            if root is None:
                args += ["--symlink", os.readlink(folder), folder]
        elif Path(folder).exists() and not (root is not None and folder == "/etc"):
            args += ["--ro-bind", folder, folder]
    args += ["--proc", "/proc"]
    if root is not None:
        for device in DEVICES:
            args += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    else:
        args += ["--dev", "/dev"]
        # The private /tmp first: an environment under /tmp is bound on top of it.
        args += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
        for folder in view.folders:
            args += ["--ro-bind", str(folder.outside), folder.inside]
        for inside, outside in readonly.items():
            args += ["--ro-bind", outside, inside]
        for path in hidden_in([folder.outside for folder in view.folders]):
            inside = view.inside(path)
            if inside is None:
                continue
            if path.is_dir():
                args += ["--tmpfs", inside]
            else:
                args += ["--ro-bind", "/dev/null", inside]
        args += ["--dir", PYTHON_BIN, "--symlink", view.python_link, PYTHON]
        args += ["--file", data_fd(view.pyvenv.encode(), keep), f"{ENVIRONMENT}/pyvenv.cfg"]
        args += ["--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
        args += ["--dir", f"{SCRATCH}/home"]
    args += ["--chdir", SCRATCH]
    args += ["--uid", "65534", "--gid", "65534", "--hostname", "grading"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args


def root_tree(
    view: Layout, readonly: Mapping[str, str], limits: SandboxLimits, uid: int
) -> dict[str, Any]:
    """For the launcher: the sandbox's whole tree, built as root in a private mount namespace
    (see :mod:`autograder.core.isolation.root_launcher`). Every file system in it is made by root: the mount
    table names no host folder and no host user id. Package folders are shown through overlayfs
    with their compiled files rewritten (:func:`~.neutral_bytecode.neutral_bytecode`)."""
    cache = root_folder(CACHE_FOLDERS, "a2c-grading-python", locks=False)
    mounts: list[dict[str, Any]] = [
        {"kind": "tmpfs", "inside": "/tmp", "size": limits.tmp_bytes, "mode": "1777"},
        {"kind": "tmpfs", "inside": "/dev/shm", "size": limits.tmp_bytes, "mode": "1777"},
    ]
    for folder in view.folders:
        top = str(neutral_bytecode(folder, cache))
        mounts.append(
            {"kind": "overlay", "inside": folder.inside, "source": str(folder.outside), "top": top}
        )
    for path in hidden_in([folder.outside for folder in view.folders]):
        inside = view.inside(path)
        if inside is not None:
            mounts.append({"kind": "hide", "inside": inside, "dir": path.is_dir()})
    for inside, outside in readonly.items():
        mounts.append({"kind": "copy", "inside": inside, "source": outside})
    mounts.append({"kind": "bind", "inside": "/etc", "source": "/etc"})
    for name, text in ETC_FILES.items():
        if Path("/etc", name).is_file():
            mounts.append({"kind": "file", "inside": f"/etc/{name}", "text": text or ""})
    mounts.append(
        {"kind": "tmpfs", "inside": SCRATCH, "size": limits.scratch_bytes, "mode": "0755",
         "owner": uid, "dirs": ["home"]}
    )  # fmt: skip
    links = {folder: os.readlink(folder) for folder in SYSTEM_DIRS if Path(folder).is_symlink()}
    links[PYTHON] = view.python_link
    links.update({f"/dev/{name}": target for name, target in DEVICE_LINKS.items()})
    return {
        "dirs": [f for f in SYSTEM_DIRS if f not in links and Path(f).exists()] + ["/proc"],
        "files": {f"/dev/{device}": "" for device in DEVICES}
        | {f"{ENVIRONMENT}/pyvenv.cfg": view.pyvenv},
        "links": links,
        "mounts": mounts,
    }


def kill_group(process: subprocess.Popen) -> None:
    """End bubblewrap's whole group (inside it, its PID namespace already ends everything)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def job_environment(view: Layout, env: Mapping[str, str]) -> dict[str, str]:
    """The job's whole environment: ``env`` over what the sandbox's Python needs (``view``),
    their import paths joined."""
    whole = {**view.env, **env}
    if "PYTHONPATH" in view.env and "PYTHONPATH" in env:
        whole["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + view.env["PYTHONPATH"]
    return whole


def bubblewrap_popen(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    run: RunScope,
    keep: list[int],
) -> dict[str, Any]:
    """:class:`subprocess.Popen`'s arguments (but the pipes) that start ``argv`` in a new
    sandbox for ``run`` (see :func:`run_bubblewrap` for the arguments): where ``run`` has a
    user id and staging folder of its own (a grader started as root), the launcher builds the
    sandbox's tree there first (:mod:`.root_launcher`) and bubblewrap runs as that user;
    ``keep`` gets the descriptors the command must inherit."""
    limits = run.limits
    view = layout(SYSTEM_DIRS)
    env = job_environment(view, env)
    shown = {inside: str(Path(outside).resolve()) for inside, outside in readonly.items()}
    root = None
    launch: dict[str, Any] | None = None
    if run.staging is not None and run.uid is not None:
        root = str(run.staging / "root")
        launch = {"root": root, "uid": run.uid, "binds": [], "copies": []}
        launch.update(root_tree(view, shown, limits, run.uid))
    if launch is None:  # not root: the task limit inside the sandbox's user namespace
        argv = in_sandbox_limits(limits, PYTHON, list(argv))
    args = sandbox_args(view, shown, env, limits, keep, root)
    args_read, args_write = os.pipe()
    keep.append(args_read)
    # bubblewrap is the sandbox's process 1: its command line and environment name nothing of
    # the host (its options come from a pipe)
    bwrap = ["bwrap", "--args", str(args_read), "--", *argv]
    executable = shutil.which("bwrap") or "bwrap"
    if launch is None:
        command = bwrap
    else:
        launch["executable"] = executable
        command = through_root_launcher(launch, bwrap, keep)
        executable = sys.executable
    threading.Thread(
        target=write_all,
        args=(args_write, b"\0".join(a.encode() for a in args) + b"\0"),
        daemon=True,
    ).start()
    cgroup, per_user = run.cgroup, launch is not None
    return {
        "args": command,
        "executable": executable,
        "cwd": "/",
        "env": {"PATH": "/usr/bin:/bin"},
        "preexec_fn": lambda: apply_limits(limits, cgroup, per_user=per_user),
    }


def limits_note(cgroup: Cgroup | None, limits: SandboxLimits) -> str:
    """What held of ``limits``: a cgroup for the whole run, or per-process limits only."""
    if cgroup is not None and cgroup.active:
        return (
            f"cgroup: {limits.memory_bytes / 1024**3:g} GiB memory and {limits.processes} tasks "
            "for the whole run"
        )
    return (
        "no cgroup (the grader is not root, or no writable memory and pids cgroup): memory "
        f"is limited per process ({limits.address_space_bytes / 1024**3:g} GiB), /tmp and "
        "the working folder by their size"
    )


def run_bubblewrap(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    stdin: bytes | JobInput,
    wall_seconds: float,
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> SandboxResult:
    """Run ``argv`` in a new sandbox fed ``stdin``; never raises because of the command.

    Args:
        readonly: folders to show read-only, ``{path inside: path outside}``.
        env: the whole environment of the command (nothing else is inherited); the channel's
            file descriptor is added as ``A2C_CHANNEL_FD``.
        stdin: the job, or a :class:`~.supervision.JobInput` given once the run has started.
        wall_seconds: the command and everything it started is killed after this long.

    Raises :class:`~.contract.SandboxUnavailable` when bubblewrap cannot start.
    """
    require_sandbox()
    # Started as root, bubblewrap runs as an unprivileged user of its own: the launcher (root,
    # in a private mount namespace) builds the sandbox's tree in the staging folder first (see
    # autograder/core/isolation/root_launcher.py), where that user can reach it.
    as_root = os.getuid() == 0
    with RunScope(limits, staging=("stage", 0o755) if as_root else None) as run:
        env = {**env, CHANNEL_VARIABLE: str(run.pipes.channel_write)}
        popen = bubblewrap_popen(argv, readonly, env, run, run.pipes.keep)
        meter = CpuMeter(run.cgroup.cpu_seconds, uid=run.uid) if run.uid is not None else None
        outcome = run.supervise(popen, stdin, wall_seconds, kill_group, meter)
    note = limits_note(run.cgroup, limits)
    return run.result(outcome, wall_seconds, sandboxed=True, limits=note, isolation="bubblewrap")
