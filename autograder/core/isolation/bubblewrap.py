"""Run a command in a throw-away sandbox: bubblewrap on Linux, a bare subprocess on request.

The student's notebook runs here, never in the grader's process. With bubblewrap (``bwrap``,
Debian package ``bubblewrap``) the command sees:

* read-only: the system (``/usr``, ``/bin``, ``/lib*``, ``/etc``), Python at neutral paths
  (:mod:`autograder.core.sandbox_layout`: the environment as its own virtual environment at
  ``/opt/venv``, the installation at ``/opt/python``; the instructor's packages, ``solutions``
  and ``autograder``, and the kit's install records hidden even when they are installed into
  it; :data:`PYTHON` is the interpreter), and the folders given in ``readonly``;
* read-write: a private, size-limited ``/tmp`` and working folder (:data:`SCRATCH`), both in
  memory and gone when the command ends: nothing of the sandbox is left on the host's disk;
* no network (a new network namespace holds only loopback), no other process (its own PID
  namespace: when the command ends or is killed, every process it started dies with it), no
  host IPC, a fresh session, and no host path on its command line (bubblewrap reads its
  arguments from a pipe).

Started as root, the grader has the launcher (:mod:`autograder.core.sandbox_launch`) build the
sandbox's whole tree in a private mount namespace, every file system in it made by root, so
that nothing the command can read (the mount table, ``/proc/self/uid_map``, compiled files,
``sys.path``) names a host folder or the host user id it runs as.

What goes in and out are pipes, never files: the command's standard input (the job), its
output and errors (the log; the grader keeps the end of it) and a *channel*, a pipe whose
write end the command finds at the file descriptor named by ``A2C_CHANNEL_FD``. The grader
reads both pipes with a size cap while the command runs.

Limits: a wall clock kills the whole process tree; rlimits (address space, file size, no core
files, process count) apply to every process. Started as root, the grader never runs the
command as root: bubblewrap runs as a fresh unprivileged user id per run (whose processes are
all killed before the id is given to another run), and a cgroup (v1 or v2) caps the memory
(``/tmp`` and the working folder included) and the number of processes of the whole run. Without root, or without a writable
cgroup hierarchy, :attr:`SandboxResult.limits` says that only per-process limits hold.

Without bubblewrap (macOS, kernels without user namespaces) :func:`run_in_sandbox` refuses
unless ``isolate=False``; then the command runs as a plain subprocess, as an unprivileged user
of its own, and the result says ``sandboxed=False``: the grader reports that loudly. Only a
grader started as root can give it that user: otherwise ``isolate=False`` refuses too
(:func:`require_unsandboxed_user`), since the command would have the grader's rights.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.core.sandbox_layout import (
    ENVIRONMENT,
    KIT_RECORDS,
    PYTHON,
    PYTHON_BIN,
    Layout,
    layout,
    neutral_bytecode,
)

__all__ = [
    "DEFAULT_LIMITS",
    "PYTHON",
    "SCRATCH",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "bwrap_works",
    "ended",
    "hidden_package_locations",
    "require_sandbox",
    "require_unsandboxed_user",
    "run_in_sandbox",
]

SCRATCH = "/submission"  #: the working folder inside the sandbox (in memory)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
CHANNEL_VARIABLE = "A2C_CHANNEL_FD"
#: The instructor's packages: never visible in the sandbox, wherever they are installed.
HIDDEN_PACKAGES = ("solutions", "autograder")
#: First of the unprivileged user ids the sandbox runs as when the grader is root (one per run).
FIRST_UID = 1_800_000
UID_COUNT = 100_000  #: user ids FIRST_UID ... FIRST_UID + UID_COUNT - 1
#: Where a grader running as root keeps its staging folders and the locks of the user ids in use
#: (``<first of these that is root's>/a2c-grading``): never TMPDIR, which may be private.
ROOT_FOLDERS = ("/run", "/var/tmp", "/tmp")
#: The staging folders a run keeps there, each named ``<kind>-<its user id>``: the sandbox's
#: tree (``stage``), an unsandboxed run's copies (``plain``), container mode's (``container``).
STAGING_KINDS = ("stage", "plain", "container")
#: Where a grader running as root keeps the neutral copies of compiled files (on disk: large).
CACHE_FOLDERS = ("/var/cache", "/var/tmp")
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
LAUNCHER = Path(__file__).resolve().with_name("sandbox_launch.py")
_uids = itertools.count()


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot start here, and running without it was not asked for."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use."""

    memory_bytes: int = 4 * 1024**3  #: the whole run, /tmp and scratch included (cgroup)
    address_space_bytes: int = 12 * 1024**3  #: each process (RLIMIT_AS)
    processes: int = 256  #: tasks (processes and threads) of the whole run
    scratch_bytes: int = 512 * 1024**2  #: the in-memory working folder
    tmp_bytes: int = 512 * 1024**2  #: the in-memory /tmp
    file_bytes: int = 256 * 1024**2  #: one file (RLIMIT_FSIZE)
    channel_bytes: int = 256 * 1024**2  #: what the grader keeps of the channel
    log_bytes: int = 8000  #: the end of the output the grader keeps


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxResult:
    """How the command ended, and what came out of it."""

    returncode: int | None  #: None when it was killed at the wall-clock limit
    timed_out: bool
    seconds: float
    sandboxed: bool
    output: str  #: the end of its stdout and stderr
    channel: list[bytes] = field(default_factory=list)  #: the channel's lines, as read
    channel_overflow: bool = False  #: the channel sent more than ``channel_bytes``
    limits: str = ""  #: which limits held (cgroup or per-process only)
    uid: int | None = None  #: the host user id the run had (a grader started as root)
    wall_seconds: float = 0.0  #: the wall clock it ran under
    #: how the command was isolated: "bubblewrap", "container" (a fresh user, see
    #: :mod:`autograder.core.container_isolation`) or "none"
    isolation: str = "bubblewrap"


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


# ------------------------------------------------------------------------ root: folders and users
def _root_folder(
    bases: Sequence[str] = ROOT_FOLDERS, name: str = "a2c-grading", locks: bool = True
) -> Path:
    """Root's own ``name`` folder in the first of ``bases`` that is root's (mode 0711: the
    sandbox's users can pass through it, not list it), with ``uids/`` (0700) for the user id
    locks (``locks``); refuses a folder that is not root's or that others can write."""
    for base in map(Path, bases):
        try:
            info = base.stat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0:
            continue
        folder = base / name
        for path, mode in ((folder, 0o711), (folder / "uids", 0o700))[: 2 if locks else 1]:
            try:
                path.mkdir(mode=mode)
            except FileExistsError:
                pass
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
                raise SandboxUnavailable(
                    f"{path} must be a folder of root's that only root can write (found "
                    f"owner {info.st_uid}, mode {stat.filemode(info.st_mode)}): remove it"
                )
            path.chmod(mode)
        return folder
    raise SandboxUnavailable(f"none of {', '.join(bases)} is a folder of root's")


class _UidLease:
    """A sandbox user id that no other run uses while this one holds it, whatever process the
    other run is in: a ``flock`` on ``uids/<uid>`` in root's folder (the kernel drops it when
    the holder ends, even killed). Each run has its own id, so its process limit is its own."""

    def __init__(self, folder: Path) -> None:
        start = (os.getpid() * 7919 + next(_uids)) % UID_COUNT  # graders start apart
        for step in range(UID_COUNT):
            uid = FIRST_UID + (start + step) % UID_COUNT
            fd = os.open(
                folder / "uids" / str(uid),
                os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW,
                0o600,
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd, self._folder = uid, fd, folder
            return
        raise SandboxUnavailable(f"all {UID_COUNT} sandbox user ids are in use")

    def staging(self, kind: str, mode: int) -> Path:
        """This run's staging folder, ``<kind>-<uid>`` in root's folder (``kind`` one of
        :data:`STAGING_KINDS`). A run removes its folder before it gives its user id back, so
        a staging folder whose user id nobody holds was left by a run that was killed before it
        cleaned up: every such folder is removed first (this run's own id included)."""
        for entry in self._folder.iterdir():
            kind_of, _, uid = entry.name.partition("-")
            if kind_of in STAGING_KINDS and uid.isdigit() and not self._held(int(uid)):
                shutil.rmtree(entry, ignore_errors=True)
        path = self._folder / f"{kind}-{self.uid}"
        path.mkdir(mode=mode)
        path.chmod(mode)
        return path

    def _held(self, uid: int) -> bool:
        """Whether a living run holds the user id ``uid`` (this one does hold its own)."""
        if uid == self.uid:
            return False  # its folder, if any, is a dead run's: this run has only just begun
        try:
            fd = os.open(self._folder / "uids" / str(uid), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # a lock taken here goes with the descriptor
        return False

    def release(self) -> None:
        os.close(self._fd)


# ------------------------------------------------------------------------ cgroups (root only)
class _Cgroup:
    """A memory + pids cgroup for one run (v2 where it is delegated to us, else v1)."""

    ROOT_V2 = Path("/sys/fs/cgroup")
    ROOT_V1 = {"memory": Path("/sys/fs/cgroup/memory"), "pids": Path("/sys/fs/cgroup/pids")}

    def __init__(self, name: str, limits: SandboxLimits, enabled: bool = True) -> None:
        self.dirs: list[Path] = []
        if not enabled or os.getuid() != 0:
            return
        try:
            controllers = (self.ROOT_V2 / "cgroup.subtree_control").read_text().split()
        except OSError:
            controllers = []
        try:
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
        except OSError:
            self.remove()
            self.dirs = []

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def join(self) -> None:  # in the child, before exec
        for folder in self.dirs:
            with open(folder / "cgroup.procs", "w") as procs:
                procs.write(str(os.getpid()))

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


def require_sandbox() -> None:
    """Raise :class:`SandboxUnavailable`, saying what to do, when bubblewrap cannot start."""
    if not bwrap_works():
        raise SandboxUnavailable(
            "bubblewrap (bwrap) cannot start here, so student code cannot be isolated: install "
            "it (Debian/Ubuntu: sudo apt-get install -y bubblewrap) on a Linux machine with user "
            "namespaces, or pass --no-sandbox to grade without isolation (the results then say "
            "`unsandboxed` and are not grades)."
        )


def require_unsandboxed_user() -> None:
    """Raise :class:`SandboxUnavailable` unless a notebook run without the sandbox would run as
    a user of its own: only a grader started as root can give it one. Run with the grader's own
    rights, a notebook could change anything that user can write (the environment, the user
    site, configuration in the home folder, the course, the grader's checkout) and, through it,
    every later grading; no check afterwards can be trusted, since that user can also rewrite
    the check."""
    if os.getuid() != 0:
        raise SandboxUnavailable(
            "--no-sandbox runs a notebook as a plain process, and only a grader started as root "
            "can run it as an unprivileged user of its own; as your user it could change your "
            "Python environment, your home folder and the course, and through them every later "
            "grading. Grade in the sandbox (install bubblewrap: sudo apt-get install -y "
            "bubblewrap), or start the grader as root (sudo) to grade without it."
        )


def ended(pid: int | str) -> bool:
    """Whether process ``pid`` has ended (or is gone): a zombie, which runs nothing and holds
    nothing but its entry until its parent (often init, for a sandbox's processes whose parent
    was killed first) collects it, which may take a while."""
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _kill_user(uid: int, rounds: int = 50) -> None:
    """Kill every process of the host user ``uid`` (a sandbox user id, never root's), until
    none is left running: a run without a cgroup may have left some outside its process group,
    and the next run given that user id must not meet them. Zombies are not waited for
    (:func:`ended`)."""
    for _ in range(rounds):
        found = False
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/status") as status:
                    ids = next(line for line in status if line.startswith("Uid:")).split()[1:]
            except (OSError, StopIteration):
                continue
            if str(uid) in ids and not ended(entry.name):
                found = True
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.02)


def _limits(limits: SandboxLimits, cgroup: _Cgroup) -> None:  # runs in the child, before exec
    import resource

    cgroup.join()
    resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per user id: the run's own fresh user id when the grader is root (root ignores it).
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)


# ------------------------------------------------------------------------ what the sandbox sees
def _within(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def _python_dirs() -> list[Path]:
    """The Python installation, the environment, and package folders on the import path.

    The folder the grader was started in (first on the import path of ``python -m``) is not
    shown: it may be the checkout, or a folder of the instructor's own files.
    """
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    here = Path.cwd().resolve()
    for entry in sys.path:
        if not entry or not Path(entry).is_dir():
            continue
        path = Path(entry).resolve()
        if path == here or path.name not in ("site-packages", "dist-packages"):
            continue
        dirs.add(path)
    dirs = sorted(dirs, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in dirs:  # drop folders inside folders already shown
        if not _within(path, kept):
            kept.append(path)
    return kept


def _reachable(dirs: Sequence[Path], staging: Path) -> dict[str, list]:
    """For the launcher: how an unprivileged user reaches ``dirs`` at their own paths when a
    folder above one of them is closed to others (``/root`` holding the Python installation):
    the closed folder is covered by an empty one and the dir bound back inside it."""
    covers: set[str] = set()
    for path in dirs:
        for folder in reversed(path.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                covers.add(str(folder))
                break
    plan: dict[str, list] = {"binds": [], "covers": sorted(covers), "rebinds": []}
    for index, path in enumerate(dirs):
        if any(Path(folder) in path.parents for folder in covers):
            (staging / f"python-{index}").mkdir(mode=0o755)
            plan["binds"].append([str(path), str(staging / f"python-{index}")])
            plan["rebinds"].append([str(staging / f"python-{index}"), str(path)])
    return plan


def hidden_package_locations() -> list[Path]:
    """Where the instructor's packages (reference and judges) are imported from."""
    found: set[Path] = set()
    for name in HIDDEN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            found.add(Path(location).resolve())
    return sorted(found)


def _hidden(shown: Sequence[Path]) -> list[Path]:
    """The instructor's packages (and install records) inside the folders shown."""
    found = set(hidden_package_locations())
    for entry in sys.path:
        if entry and Path(entry).is_dir():
            for name in HIDDEN_PACKAGES:
                if (Path(entry) / name).is_dir():
                    found.add((Path(entry) / name).resolve())
            # Install records name the checkout's folders: the editable finder (and its
            # compiled copy), the .pth that loads it, direct_url.json and RECORD.
            for pattern in KIT_RECORDS:
                for record in Path(entry).glob(pattern):
                    found.add(record.resolve())
    return sorted(path for path in found if _within(path, shown))


def _data_fd(data: bytes, keep: list[int]) -> str:
    """A pipe's read end (added to ``keep``) that yields ``data``, for bubblewrap's ``--file``."""
    read, write = os.pipe()
    keep.append(read)
    threading.Thread(target=_write_all, args=(write, data), daemon=True).start()
    return str(read)


def _sandbox_args(
    view: Layout,
    readonly: Mapping[str, str],
    env: Mapping[str, str],
    limits: SandboxLimits,
    keep: list[int],
    root: str | None = None,
) -> list[str]:
    """bubblewrap's options (read from a pipe, so that no host path is on its command line).

    With ``root`` (a grader started as root) the launcher has built the whole tree in that
    folder (:func:`_root_tree`): bubblewrap binds it at ``/`` and adds the system folders,
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
        for path in _hidden([folder.outside for folder in view.folders]):
            inside = view.inside(path)
            if inside is None:
                continue
            if path.is_dir():
                args += ["--tmpfs", inside]
            else:
                args += ["--ro-bind", "/dev/null", inside]
        args += ["--dir", PYTHON_BIN, "--symlink", view.python_link, PYTHON]
        args += ["--file", _data_fd(view.pyvenv.encode(), keep), f"{ENVIRONMENT}/pyvenv.cfg"]
        args += ["--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
        args += ["--dir", f"{SCRATCH}/home"]
    args += ["--chdir", SCRATCH]
    args += ["--uid", "65534", "--gid", "65534", "--hostname", "grading"]
    for name, value in env.items():
        args += ["--setenv", name, value]
    return args


def _root_tree(
    view: Layout, readonly: Mapping[str, str], limits: SandboxLimits, uid: int
) -> dict[str, Any]:
    """For the launcher: the sandbox's whole tree, built as root in a private mount namespace
    (see :mod:`autograder.core.sandbox_launch`). Every file system in it is made by root: the mount
    table names no host folder and no host user id. Package folders are shown through overlayfs
    with their compiled files rewritten (:func:`~autograder.core.sandbox_layout.neutral_bytecode`)."""
    cache = _root_folder(CACHE_FOLDERS, "a2c-grading-python", locks=False)
    mounts: list[dict[str, Any]] = [
        {"kind": "tmpfs", "inside": "/tmp", "size": limits.tmp_bytes, "mode": "1777"},
        {"kind": "tmpfs", "inside": "/dev/shm", "size": limits.tmp_bytes, "mode": "1777"},
    ]
    for folder in view.folders:
        top = str(neutral_bytecode(folder, cache))
        mounts.append(
            {"kind": "overlay", "inside": folder.inside, "source": str(folder.outside), "top": top}
        )
    for path in _hidden([folder.outside for folder in view.folders]):
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


# ------------------------------------------------------------------------ reading the pipes
class _Reader(threading.Thread):
    """Drains a pipe; keeps whole lines up to ``cap`` bytes (or just the end, ``tail=True``)."""

    def __init__(self, fd: int, cap: int, tail: bool = False) -> None:
        super().__init__(daemon=True)
        self.fd, self.cap, self.tail = fd, cap, tail
        self.data = bytearray()
        self.overflow = False

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 20):
                if self.tail:
                    self.data += chunk
                    del self.data[: max(0, len(self.data) - self.cap)]
                elif len(self.data) + len(chunk) <= self.cap:
                    self.data += chunk
                else:
                    self.overflow = True  # keep draining, so the writer never blocks
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def lines(self) -> list[bytes]:
        lines = bytes(self.data).split(b"\n")
        return lines[:-1]  # the last piece is empty or an unfinished line


def _write_all(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(data)
    except OSError:
        pass  # the command ended without reading everything


class _Pipes:
    """A run's three pipes: its channel and its log (read here), its stdin (written here).
    ``keep`` lists the descriptors the command keeps (``pass_fds``): the channel's write end,
    and whatever a launcher adds."""

    def __init__(self) -> None:
        self.channel_read, self.channel_write = os.pipe()
        self.log_read, self.log_write = os.pipe()
        self.stdin_read, self.stdin_write = os.pipe()
        self.keep = [self.channel_write]
        self.started = False  #: the command started: the other ends are the readers' now

    def close_kept(self) -> None:
        """Close the command's ends that are still open here (after it started, or failed to)."""
        for fd in self.keep:
            os.close(fd)
        self.keep = []

    def close(self) -> None:
        """Close every end still open here: after a run, or when it failed before starting."""
        self.close_kept()
        if not self.started:  # else the readers and the writer own (and close) their ends
            ends = (self.channel_read, self.log_read, self.log_write)
            for fd in (*ends, self.stdin_read, self.stdin_write):
                os.close(fd)
            self.started = True  # closed once


@dataclass
class _Ended:
    """How a supervised command ended (:func:`_supervise`)."""

    returncode: int | None
    timed_out: bool
    seconds: float
    output: str
    channel: list[bytes]
    channel_overflow: bool


def _supervise(
    pipes: _Pipes,
    popen: dict[str, Any],
    stdin: bytes,
    wall_seconds: float,
    limits: SandboxLimits,
    cgroup: _Cgroup,
    stop: Callable[[subprocess.Popen], None],
) -> _Ended:
    """Start ``subprocess.Popen(**popen)`` in a session of its own on ``pipes``, feed it
    ``stdin``, read its channel and log up to the caps, and end it at ``wall_seconds``:
    ``stop(process)`` kills everything it started, whether it finished or not (nothing
    outlives grading), then its cgroup goes. A process that escaped could hold the pipes open:
    the readers are waited for a little, no more."""
    start = time.monotonic()
    process = subprocess.Popen(
        **popen,
        stdin=pipes.stdin_read,
        stdout=pipes.log_write,
        stderr=pipes.log_write,
        pass_fds=pipes.keep,
        start_new_session=True,
    )
    pipes.started = True
    for fd in (pipes.stdin_read, pipes.log_write):
        os.close(fd)
    pipes.close_kept()
    channel = _Reader(pipes.channel_read, limits.channel_bytes)
    log = _Reader(pipes.log_read, limits.log_bytes, tail=True)
    channel.start()
    log.start()
    threading.Thread(target=_write_all, args=(pipes.stdin_write, stdin), daemon=True).start()
    timed_out = False
    try:
        process.wait(timeout=wall_seconds)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        stop(process)
        process.wait()
        cgroup.remove()
    channel.join(timeout=10)
    log.join(timeout=2)
    return _Ended(
        returncode=None if timed_out else process.returncode,
        timed_out=timed_out,
        seconds=time.monotonic() - start,
        output=bytes(log.data).decode("utf-8", "replace"),
        channel=channel.lines(),
        channel_overflow=channel.overflow,
    )


def outside_command(
    argv: Sequence[str], env: Mapping[str, str], views: Mapping[str, str], work: Path
) -> tuple[list[str], dict[str, str]]:
    """``argv`` and ``env`` with the sandbox's inside paths (the shown folders ``views``,
    ``{inside: outside}``; the scratch folder; the neutral interpreter) as the outside folders
    a run without a sandbox of its own uses: the grader's own Python, ``work`` as scratch."""
    mapping = {
        **views,
        SCRATCH: str(work),
        PYTHON: sys.executable,
        PYTHON_BIN: str(Path(sys.executable).parent),
    }
    order = sorted(mapping.items(), key=lambda item: -len(item[0]))

    def real(text: str) -> str:
        for inside, outside in order:
            text = text.replace(inside, outside)
        return text

    return [real(arg) for arg in argv], {name: real(value) for name, value in env.items()}


def _launcher(launch: dict[str, Any], argv: list[str], keep: list[int]) -> list[str]:
    """The command that starts ``argv`` through :mod:`autograder.core.sandbox_launch` as root: its
    plan goes on a pipe (whose read end is added to ``keep``), never on a command line."""
    plan_read, plan_write = os.pipe()
    keep.append(plan_read)
    plan = json.dumps({**launch, "argv": argv}).encode()
    threading.Thread(target=_write_all, args=(plan_write, plan), daemon=True).start()
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(plan_read)]


def run_in_sandbox(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    stdin: bytes,
    wall_seconds: float,
    limits: SandboxLimits = DEFAULT_LIMITS,
    isolate: bool = True,
) -> SandboxResult:
    """Run ``argv`` in a new sandbox fed ``stdin``; never raises because of the command.

    Args:
        readonly: folders to show read-only, ``{path inside: path outside}``.
        env: the whole environment of the command (nothing else is inherited); the channel's
            file descriptor is added as ``A2C_CHANNEL_FD``.
        wall_seconds: the command and everything it started is killed after this long.
        isolate: ``False`` runs a plain subprocess (debugging only: no isolation at all).

    Paths in ``argv`` and ``env`` are the inside ones; without bubblewrap they are mapped to the
    outside folders. Raises :class:`SandboxUnavailable` when ``isolate`` is true and bubblewrap
    cannot start.
    """
    if isolate:
        require_sandbox()
    else:
        require_unsandboxed_user()
    pipes = _Pipes()
    env = {**env, CHANNEL_VARIABLE: str(pipes.channel_write)}
    keep = pipes.keep
    staging: Path | None = None
    lease: _UidLease | None = None
    launch: dict[str, Any] | None = None
    run_name = f"{os.getpid()}-{next(_uids)}"
    cgroup = _Cgroup(run_name, limits)  # unsandboxed as root too: nothing it starts outlives it
    try:
        if isolate:
            view = layout(SYSTEM_DIRS)
            env = {**view.env, **env}
            if "PYTHONPATH" in view.env and "PYTHONPATH" in env:
                env["PYTHONPATH"] += os.pathsep + view.env["PYTHONPATH"]
            shown = {inside: str(Path(outside).resolve()) for inside, outside in readonly.items()}
            root = None
            if os.getuid() == 0:
                # bubblewrap runs as an unprivileged user of its own: the launcher (root, in a
                # private mount namespace) builds the sandbox's tree in the staging folder first
                # (see autograder/core/sandbox_launch.py), where that user can reach it.
                folder = _root_folder()
                lease = _UidLease(folder)
                staging = lease.staging("stage", 0o755)
                root = str(staging / "root")
                launch = {"root": root, "uid": lease.uid, "binds": [], "copies": []}
                launch.update(_root_tree(view, shown, limits, lease.uid))
            args = _sandbox_args(view, shown, env, limits, keep, root)
            args_read, args_write = os.pipe()
            keep.append(args_read)
            # bubblewrap is the sandbox's process 1: its command line and environment name
            # nothing of the host (its options come from a pipe)
            bwrap = ["bwrap", "--args", str(args_read), "--", *argv]
            executable = shutil.which("bwrap") or "bwrap"
            if launch is None:
                command = bwrap
            else:
                launch["executable"] = executable
                command = _launcher(launch, bwrap, keep)
                executable = sys.executable
            cwd = "/"
            environment = {"PATH": "/usr/bin:/bin"}
            threading.Thread(
                target=_write_all,
                args=(args_write, b"\0".join(a.encode() for a in args) + b"\0"),
                daemon=True,
            ).start()
        else:
            # Not isolated, but never root (require_unsandboxed_user): a user id of its own, who
            # cannot write the environment, the checkout or the grader's folders; the grader's
            # view copied.
            views: dict[str, str] = {}
            folder = _root_folder()
            lease = _UidLease(folder)
            staging = lease.staging("plain", 0o755)
            work = staging / "work"
            launch = {"binds": [], "copies": [], "uid": lease.uid}
            launch.update(_reachable(_python_dirs(), staging))
            for index, (inside, outside) in enumerate(readonly.items()):
                (staging / str(index)).mkdir(mode=0o755)
                launch["copies"].append([str(Path(outside).resolve()), str(staging / str(index))])
                views[inside] = str(staging / str(index))
            work.mkdir(mode=0o700)
            (work / "home").mkdir()
            for path in (work, work / "home"):
                os.chown(path, lease.uid, lease.uid)
            command, environment = outside_command(argv, env, views, work)
            cwd = str(work)
            executable = None
            command = _launcher(launch, command, keep)

        def stop(process: subprocess.Popen) -> None:
            # The whole group (inside bubblewrap the PID namespace already ends everything).
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        popen = {"args": command, "executable": executable, "cwd": cwd, "env": environment}
        popen["preexec_fn"] = lambda: _limits(limits, cgroup)
        ended = _supervise(pipes, popen, stdin, wall_seconds, limits, cgroup, stop)
    finally:
        pipes.close()
        cgroup.remove()
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if lease is not None:
            _kill_user(lease.uid)
            lease.release()
    if not isolate:
        note = "not sandboxed: no isolation"
    elif cgroup.active:
        note = (
            f"cgroup: {limits.memory_bytes / 1024**3:g} GiB memory and {limits.processes} tasks "
            "for the whole run"
        )
    else:
        note = (
            "no cgroup (the grader is not root, or no writable memory and pids cgroup): memory "
            f"is limited per process ({limits.address_space_bytes / 1024**3:g} GiB), /tmp and "
            "the working folder by their size"
        )
    return SandboxResult(
        **vars(ended),
        sandboxed=isolate,
        limits=note,
        uid=lease.uid if lease is not None else None,
        wall_seconds=wall_seconds,
        isolation="bubblewrap" if isolate else "none",
    )
