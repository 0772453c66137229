"""Restrict a process with Landlock: what it may read and write, TCP, and whom it may signal.

Landlock (Linux 5.13 and later, ``/sys/kernel/security/lsm`` lists it) lets a process give up
access rights for itself and its children, without privileges and without namespaces, so it
works where container runtimes refuse namespaces. Container mode
(:mod:`autograder.core.isolation.container`) uses it, where the kernel and the container's seccomp
profile allow the three system calls, so that the notebook's user can read nothing but the
folders listed (the system, Python, the grader's view), whatever else of the machine other
users could read, and write nothing but its own folders; so does each student's executor forked
from a template (``student_tree.py``), inside its sandbox. With ABI 4 (Linux 6.7) it can neither
bind nor connect a TCP socket; with ABI 6 (Linux 6.12) it can signal no process outside its
domain and reach no abstract Unix socket outside it.

Only the standard library (it runs inside the sandbox too) and the system call numbers of x86-64 and arm64 (the same for these calls).
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
from collections.abc import Iterable

__all__ = ["abi_version", "describe", "restrict"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2
#: Rights on the file system each ABI knows (all of them are handled: denied unless allowed).
_FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
READ = _EXECUTE | _READ_FILE | _READ_DIR  #: read and run files, list folders

_libc = ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args) -> int:
    result = _libc.syscall(number, *args)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"landlock system call {number}: {os.strerror(error)}")
    return result


@functools.lru_cache(maxsize=1)
def abi_version() -> int:
    """The kernel's Landlock ABI, 0 where Landlock is missing, disabled or refused."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        return 0
    try:
        return _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    return _FS_RIGHTS[max(version for version in _FS_RIGHTS if version <= abi)]


def describe(abi: int) -> str:
    """What :func:`restrict` takes away at ``abi``, for a result's note."""
    if abi <= 0:
        return "no Landlock (the kernel or the container refuses it): Unix permissions only"
    parts = [f"Landlock ABI {abi}: reads only the system, Python and the grader's view"]
    if abi >= 4:
        parts.append("no TCP")
    if abi >= 6:
        parts.append("no signal to processes outside the run")
    return ", ".join(parts)


def restrict(read: Iterable[str], write: Iterable[str], abi: int) -> None:
    """Allow this process and its children to read (and run) below ``read`` and to do anything
    below ``write``, nothing else of the file system; no TCP (ABI 4) and no signal or abstract
    socket outside (ABI 6). Needs ``no_new_privs`` set (or root). Folders that do not exist
    are left out. Raises :class:`OSError` when the kernel refuses."""
    fs = _fs_rights(abi)
    fields = [fs]
    if abi >= 4:
        fields.append(_NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    attr = struct.pack(f"={len(fields)}Q", *fields)
    ruleset = _syscall(
        _CREATE_RULESET, ctypes.c_char_p(attr), ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
    )
    try:
        for folders, rights in ((read, READ), (write, fs)):
            for folder in folders:
                try:
                    fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    rule = struct.pack("=Qi", rights if os.path.isdir(folder) else rights & 0o7, fd)
                    _syscall(
                        _ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.c_char_p(rule),
                        ctypes.c_uint32(0),
                    )
                finally:
                    os.close(fd)
        _syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
