"""The Linux calls that make a process forked from the template a student's sandbox of its own.

Only the standard library (``ctypes``): the template's processes run it inside the sandbox, before
any byte of a submission, in the order :mod:`student_tree` gives:

* :func:`enter_namespaces`: new user, mount, PID, IPC, network, UTS and cgroup namespaces, the
  process's own user and group ids mapped to themselves (no other id exists there);
* :func:`read_only_mounts`, :func:`mount_in_memory`, :func:`mount_proc`: every file system the
  template sees becomes read-only in the student's mount namespace, and the student's working
  folder, ``/tmp`` and ``/dev/shm`` are new in-memory file systems of its own, so nothing one
  student writes is there for the next;
* :func:`loopback_up`: the network namespace's loopback, as bubblewrap gives its own;
* :func:`no_new_privileges`, :func:`drop_capabilities`: the student's process keeps no
  capability of the namespaces it lives in (it cannot mount, trace or change its limits back).

The system call filter is :mod:`seccomp`'s, the file system fence :mod:`landlock`'s.
"""

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct

__all__ = [
    "ALL_NAMESPACES",
    "drop_capabilities",
    "enter_namespaces",
    "loopback_up",
    "mount_proc",
    "mount_in_memory",
    "no_new_privileges",
    "private_mounts",
    "read_only_mounts",
    "set_death_signal",
]

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)
#: user, mount, PID, IPC, network, UTS and cgroup namespaces
ALL_NAMESPACES = (
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS
    | CLONE_NEWCGROUP
)  # fmt: skip
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE = 1024, 2048, 4096, 16384, 1 << 18
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
#: mount options of /proc/self/mountinfo that a remount must keep (the kernel refuses to clear
#: them on a mount the template's namespace locked)
_KEPT_FLAGS = {
    "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME,
}  # fmt: skip
#: file systems left writable: each PID namespace mounts its own /proc, and devices are not files
_NOT_REMOUNTED = ("proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def _mount(source, target, kind, flags, data=None) -> None:
    _check(
        _libc.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if kind is None else kind.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        ),
        f"mount {target}",
    )


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def enter_namespaces(flags: int = ALL_NAMESPACES) -> None:
    """Enter new namespaces (``flags``, all seven by default) where this process keeps its user
    and group ids: the new user namespace maps them to themselves and nothing else. The caller
    has every capability of the new namespaces until :func:`drop_capabilities`; with
    ``CLONE_NEWPID`` its next child is the first process of the new PID namespace (and the caller
    itself can no longer start threads)."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(flags)
    if flags & CLONE_NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)


def private_mounts() -> None:
    """Nothing mounted here propagates to the namespace this one was copied from."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _unescape(field: str) -> str:
    """A path of /proc/self/mountinfo, whose spaces, tabs, newlines and backslashes are octal."""
    out, index = [], 0
    while index < len(field):
        if field[index] == "\\" and field[index + 1 : index + 4].isdigit():
            out.append(chr(int(field[index + 1 : index + 4], 8)))
            index += 4
        else:
            out.append(field[index])
            index += 1
    return "".join(out)


def read_only_mounts() -> list[str]:
    """Remount read-only every writable file system of this mount namespace (not /proc, the
    devices' file systems or cgroups); the mount points done, deepest last. Run in a namespace
    of one's own (:func:`private_mounts`): the template's view is untouched."""
    done = []
    with open("/proc/self/mountinfo") as table:
        lines = table.read().splitlines()
    for line in lines:
        fields = line.split()
        separator = fields.index("-")
        target, options, kind = _unescape(fields[4]), fields[5].split(","), fields[separator + 1]
        if "rw" not in options or kind in _NOT_REMOUNTED:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= _KEPT_FLAGS.get(option, 0)
        try:
            _mount(None, target, None, flags)
        except FileNotFoundError:
            continue  # a mount under a folder another mount covers: unreachable anyway
        done.append(target)
    return done


def mount_in_memory(
    target: str, size: int | None, mode: str, folders: tuple[str, ...] = ()
) -> None:
    """A new in-memory file system at ``target``, with ``folders`` in it: a ``tmpfs`` of
    ``size`` bytes, or with ``size`` ``None`` a ``ramfs``, bounded only by the memory cgroup
    its writer is charged to. A ``tmpfs`` made in a user namespace names its owner's user id
    on the host in the mount table (``uid=``); a ``ramfs`` names none."""
    if size is None:
        _mount("ramfs", target, "ramfs", MS_NOSUID | MS_NODEV, f"mode={mode}")
    else:
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
    for name in folders:
        os.mkdir(os.path.join(target, name), 0o755)


def mount_proc() -> None:
    """A /proc of this PID namespace: it shows this namespace's processes and no other."""
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def loopback_up() -> None:
    """Bring up the loopback of this network namespace (a new one has it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def set_death_signal(signal_number: int) -> None:
    """This process gets ``signal_number`` when the thread that forked it ends."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def not_dumpable() -> None:
    """No process of the same user may trace this one or read its memory through /proc."""
    _check(_libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def no_new_privileges() -> None:
    """No program this process runs gains privileges (set-user-id bits, file capabilities)."""
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def drop_capabilities() -> None:
    """Give up every capability: from the bounding set (none can come back through a program),
    the ambient set, then the effective, permitted and inheritable sets."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as file:
            last = int(file.read())
    except (OSError, ValueError):
        last = 63
    for capability in range(last + 1):
        _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)  # one the kernel lacks: EINVAL
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable} words, all zero
    _check(_libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(data)), "capset")
