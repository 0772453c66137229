"""Start bubblewrap as an unprivileged user, from a grader that runs as root.

Usage (by :func:`autograder.sandbox.run_in_sandbox` only)::

    python -I -S sandbox_launch.py FD

The plan comes as JSON on the pipe ``FD``, never on the command line, so that no root process on
the host shows the sandboxed command or a host path in its arguments::

    {"binds": [[source, target], ...], "copies": [[source, target], ...], "covers": [folder, ...],
     "rebinds": [[source, target], ...], "uid": N, "argv": [...]}

In a private mount namespace of its own this process, still root, binds each ``source`` on its
``target`` (empty folders under the grader's root-only staging folder, which the unprivileged
user can reach whatever ``TMPDIR`` is) and mounts a small in-memory file system on each
``copies`` target holding a copy of ``source`` (the mount table the sandbox can read then names
no host folder for them). ``covers`` are folders the unprivileged user could not pass through
(a private home holding the Python installation): each is covered by an empty in-memory folder
and each ``rebinds`` source (bound in the staging folder before) is bound back at its own path
inside it, so the environment is reachable and nothing else of that folder is. Then it drops to user and group ``uid`` with no supplementary group
and replaces itself with ``argv`` (bubblewrap). Only the standard library is used, and ``-I -S``
keeps the environment's ``.pth`` files and ``PYTHONPATH`` out of this root process.
"""

import ctypes
import ctypes.util
import json
import os
import shutil
import sys

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 32, 4096, 16384, 1 << 18,
)  # fmt: skip
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source, target, kind, flags, data=None):
    _check(
        _libc.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if kind is None else kind.encode(),
            flags,
            None if data is None else data.encode(),
        ),
        f"mount {target}",
    )


def _copy(source, target):
    """An in-memory copy of the folder ``source`` at ``target``, readable by everyone."""
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m")
    shutil.copytree(source, target, dirs_exist_ok=True, symlinks=False)
    for folder, dirs, files in os.walk(target):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    _mount(None, target, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def main(fd):
    with os.fdopen(fd, "rb") as pipe:
        plan = json.loads(pipe.read())
    _check(_libc.unshare(CLONE_NEWNS), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates to the host
    for source, target in plan["binds"]:
        _mount(source, target, None, MS_BIND)
    for source, target in plan["copies"]:
        _copy(source, target)
    for folder in plan.get("covers", []):
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for source, target in plan.get("rebinds", []):
        os.makedirs(target, mode=0o755, exist_ok=True)
        _mount(source, target, None, MS_BIND)
    uid = int(plan["uid"])
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execvp(plan["argv"][0], plan["argv"])


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]))
    except Exception as error:  # noqa: BLE001 - say why on the log, which the grader keeps
        print(f"sandbox launcher: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(125)
