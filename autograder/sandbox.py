"""Run a command in a throw-away sandbox: bubblewrap on Linux, a bare subprocess elsewhere.

The student's notebook runs here, never in the grader's process. With bubblewrap (``bwrap``,
Debian package ``bubblewrap``) the command sees:

* read-only: the system (``/usr``, ``/bin``, ``/lib*``, ``/etc``), the Python installation and
  the virtual environment the grader runs in, and the folders given in ``readonly`` (a snapshot
  of ``course_lib``, the plan, the notebook runner);
* read-write: its own ``scratch`` folder only (mounted at :data:`SCRATCH`), and a private
  ``/tmp``;
* no network (a new network namespace holds only loopback), no other process (its own PID
  namespace: when the command ends or is killed, every process it started dies with it), no
  host IPC, and a fresh session (no access to the grader's terminal).

Limits are enforced from outside: a wall-clock limit kills the whole process tree, and rlimits
(address space, file size, no core files; process count when not root) are set before the
command starts. Where bubblewrap cannot start (macOS, kernels without user namespaces), the
command runs as a plain subprocess in ``scratch`` with the same limits, and the result says
``sandboxed=False``: the grader reports that loudly, because such a run can read and write
whatever the grader's user can.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SCRATCH", "SandboxResult", "bwrap_works", "run_in_sandbox"]

SCRATCH = "/submission"  #: where the scratch folder appears inside the sandbox
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
MEMORY_BYTES = 12 * 1024**3
FILE_BYTES = 1024**3


@dataclass(frozen=True)
class SandboxResult:
    """How the command ended."""

    returncode: int | None  #: None when it was killed at the wall-clock limit
    timed_out: bool
    seconds: float
    sandboxed: bool
    output: str  #: the end of its stdout and stderr


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """True when ``bwrap`` is installed and can create the namespaces the sandbox needs."""
    if sys.platform != "linux" or shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _limits(memory_bytes: int) -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if os.getuid() != 0:  # root ignores RLIMIT_NPROC
        resource.setrlimit(resource.RLIMIT_NPROC, (4096, 4096))


def _bwrap_command(
    argv: Sequence[str], scratch: Path, readonly: Mapping[str, Path], env: Mapping[str, str]
) -> list[str]:
    command = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    for folder in SYSTEM_DIRS:
        if Path(folder).exists():
            kind = "--ro-bind" if not Path(folder).is_symlink() else "--symlink"
            target = os.readlink(folder) if kind == "--symlink" else folder
            command += [kind, target, folder]
    # The private /tmp first: a Python or virtual environment that lives under /tmp (a CI
    # clone, say) is then bound on top of it instead of being hidden by it.
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.prefix)}
    for prefix in sorted(prefixes):
        command += ["--ro-bind", str(prefix), str(prefix)]
    for inside, outside in readonly.items():
        command += ["--ro-bind", str(outside), inside]
    command += ["--bind", str(scratch), SCRATCH, "--chdir", SCRATCH]
    command += ["--uid", "65534", "--gid", "65534", "--hostname", "grading"]
    for name, value in env.items():
        command += ["--setenv", name, value]
    return [*command, "--", *argv]


def run_in_sandbox(
    argv: Sequence[str],
    scratch: Path,
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    wall_seconds: float,
    memory_bytes: int = MEMORY_BYTES,
    isolate: bool = True,
) -> SandboxResult:
    """Run ``argv`` with ``scratch`` as its only writable folder; never raises for the command.

    Args:
        readonly: folders to show read-only, ``{path inside: path outside}``.
        env: the whole environment of the command (nothing else is inherited).
        wall_seconds: the command and everything it started is killed after this long.
        isolate: use bubblewrap when it works (``False``: a plain subprocess, for debugging).

    Paths in ``argv`` and ``env`` must be the inside ones; without bubblewrap, inside paths
    are mapped back to the outside folders.
    """
    scratch = Path(scratch).resolve()
    sandboxed = isolate and bwrap_works()
    if sandboxed:
        command, cwd, environment = _bwrap_command(argv, scratch, readonly, env), scratch, None
    else:  # map the inside paths to the real folders
        mapping = {SCRATCH: str(scratch), **{k: str(v) for k, v in readonly.items()}}

        def real(text: str) -> str:
            for inside, outside in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
                text = text.replace(inside, outside)
            return text

        command = [real(arg) for arg in argv]
        environment = {name: real(value) for name, value in env.items()}
        cwd = scratch
    start = time.monotonic()
    log = scratch / ".sandbox.log"
    with open(log, "wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=environment if environment is not None else {"PATH": os.environ.get("PATH", "")},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: _limits(memory_bytes),
        )
        timed_out = False
        try:
            process.wait(timeout=wall_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # The whole group goes, whether it finished or not: nothing outlives grading.
            # (Inside bubblewrap the PID namespace already guarantees it.)
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    tail = log.read_bytes()[-4000:].decode("utf-8", "replace")
    log.unlink(missing_ok=True)
    code = None if timed_out else process.returncode
    return SandboxResult(code, timed_out, time.monotonic() - start, sandboxed, tail)
