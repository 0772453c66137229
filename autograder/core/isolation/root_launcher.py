"""Start bubblewrap as an unprivileged user, from a grader that runs as root.

Usage (by :func:`autograder.core.isolation.bubblewrap.run_bubblewrap` only)::

    python -I -S sandbox_launch.py FD

The plan comes as JSON on the pipe ``FD``, never on the command line, so that no root process on
the host shows the sandboxed command or a host path in its arguments::

    {"binds": [[source, target], ...], "copies": [[source, target], ...], "covers": [folder, ...],
     "rebinds": [[source, target], ...], "uid": N, "executable": path, "argv": [...]}

plus, for a sandboxed run, the sandbox's tree (:func:`autograder.core.isolation.bubblewrap.root_tree`)::

    {"root": folder, "dirs": [...], "files": {inside: text}, "links": {inside: target},
     "mounts": [{"kind": "tmpfs" | "overlay" | "hide" | "copy" | "bind" | "file", ...}, ...]}

In a private mount namespace of its own this process, still root, binds each ``source`` on its
``target`` (empty folders under the grader's root-only staging folder, which the unprivileged
user can reach whatever ``TMPDIR`` is) and mounts a small in-memory file system on each
``copies`` target holding a copy of ``source`` (the mount table the sandbox can read then names
no host folder for them). ``covers`` are folders the unprivileged user could not pass through
(a private home holding the Python installation): each is covered by an empty in-memory folder
and each ``rebinds`` source (bound in the staging folder before) is bound back at its own path
inside it, so the environment is reachable and nothing else of that folder is. With ``root``
it builds the sandbox's whole tree there: an in-memory root with the folders, files and links
given, then each mount in order (in-memory folders, overlayfs views of the Python folders
whose layers are named relative to their own folder, hidden files and folders, copies, the
host's ``/etc`` with the files that name the host replaced by the plan's), every
file system made by root, so that the sandbox's mount table names no host folder and no host
user id. Then it drops to user and group ``uid`` with no supplementary group (for a sandboxed
run, into a user namespace of its own where that user is 0, so that bubblewrap's namespace
maps the sandbox's user to 0, not to a host id) and replaces itself with ``argv`` (bubblewrap).
Only the standard library is used, and ``-I -S`` keeps the environment's ``.pth`` files and
``PYTHONPATH`` out of this root process.
"""

import ctypes
import ctypes.util
import json
import os
import shutil
import sys

CLONE_NEWNS, CLONE_NEWUSER, PR_SET_DUMPABLE = 0x00020000, 0x10000000, 4
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


def _at(root, inside):
    return os.path.join(root, inside.lstrip("/"))


def _mountpoint(path, folder=True):
    if folder:
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        open(path, "w").close()


def _tree(plan):
    """The sandbox's whole tree at ``plan["root"]`` (see the module docstring)."""
    root = plan["root"]
    os.makedirs(root, mode=0o755)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m")
    for folder in plan["dirs"]:
        _mountpoint(_at(root, folder))
    for inside, text in plan["files"].items():
        _mountpoint(os.path.dirname(_at(root, inside)))
        with open(_at(root, inside), "w") as file:
            file.write(text)
    for inside, target in plan["links"].items():
        _mountpoint(os.path.dirname(_at(root, inside)))
        os.symlink(target, _at(root, inside))
    layers = os.path.join(os.path.dirname(root), "layers")
    files = os.path.join(os.path.dirname(root), "files")
    for index, mount in enumerate(plan["mounts"]):
        target = _at(root, mount["inside"])
        kind = mount["kind"]
        _mountpoint(target, kind not in ("hide", "file") or mount.get("dir", False))
        if kind == "tmpfs":
            options = f"mode={mount['mode']},size={mount['size']}"
            _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)
            for name in mount.get("dirs", []):
                os.mkdir(os.path.join(target, name), 0o755)
            owner = mount.get("owner")
            if owner is not None:
                for path in [target] + [os.path.join(target, n) for n in mount.get("dirs", [])]:
                    os.chown(path, owner, owner)
        elif kind == "overlay":
            # Layers named relative to their folder: the mount table shows "lowerdir=t:l".
            here = os.path.join(layers, str(index))
            os.makedirs(os.path.join(here, "l"))
            os.makedirs(os.path.join(here, "t"), mode=0o755)
            _mount(mount["source"], os.path.join(here, "l"), None, MS_BIND)
            _mount(mount["top"], os.path.join(here, "t"), None, MS_BIND)
            os.chdir(here)
            _mount("overlay", target, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, "lowerdir=t:l")
            os.chdir("/")
        elif kind == "hide":
            if mount["dir"]:
                _mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
            else:
                _mount("/dev/null", target, None, MS_BIND)
        elif kind == "copy":
            _copy(mount["source"], target)
        elif kind == "bind":  # read-only, without what is mounted below the source
            _mount(mount["source"], target, None, MS_BIND)
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        elif kind == "file":  # a file of the plan's, from an in-memory folder made by root
            if not os.path.isdir(files):
                os.makedirs(files, mode=0o755)
                _mount("tmpfs", files, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
            source = os.path.join(files, str(index))
            with open(source, "w") as file:
                file.write(mount["text"])
            os.chmod(source, 0o644)
            _mount(source, target, None, MS_BIND)


def main(fd):
    with os.fdopen(fd, "rb") as pipe:
        plan = json.loads(pipe.read())
    _check(_libc.unshare(CLONE_NEWNS), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates to the host
    if "root" in plan:
        _tree(plan)
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
    if "root" in plan:
        # A user namespace where that user is 0: bubblewrap's own namespace inside it maps the
        # sandbox's user to 0, so /proc/self/uid_map in the sandbox names no host user id.
        _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")  # its /proc files are its own
        _check(_libc.unshare(CLONE_NEWUSER), "unshare user")
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"0 {uid} 1"),
            ("gid_map", f"0 {uid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
    os.execvp(plan.get("executable", plan["argv"][0]), plan["argv"])


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]))
    except Exception as error:  # noqa: BLE001 - say why on the log, which the grader keeps
        print(f"sandbox launcher: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(125)
