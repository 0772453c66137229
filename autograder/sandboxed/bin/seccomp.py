"""A system call filter for a student's process: what it and its children may never call.

A student's process forked from the template (:mod:`student_tree`) lives in namespaces of its
own and has no capability left; the filter takes away, on top, the calls that reach beyond a
process's own memory or its namespaces, whatever a kernel bug or a capability left behind
would otherwise allow: tracing and reading other processes (``ptrace``,
``process_vm_readv``/``writev``, ``pidfd_getfd``, ``kcmp``), new or other namespaces
(``unshare``, ``setns``, ``clone`` with a namespace flag, ``clone3``, whose flags a filter
cannot read: it answers ``ENOSYS`` and the C library falls back to ``clone``), mounts and the
new mount API, kernel keys, BPF, performance counters, ``userfaultfd``, ``io_uring`` (its
requests bypass filters), modules, ``kexec``, swap, reboot, the kernel log, ``acct``, file
handles. Everything else is allowed: Python, numpy, torch threads, ``subprocess`` and
``multiprocessing`` work as before. A call refused fails with ``EPERM`` (``ENOSYS`` for
``clone3``); a process of another architecture ABI (x32) is refused every call.

Only ``ctypes``; the system call numbers of x86-64 and arm64.
"""

import ctypes
import ctypes.util
import errno
import os
import struct

__all__ = ["DENIED", "install_filter"]

#: what the filter refuses, by name (numbers per architecture below)
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "unshare", "setns",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key", "bpf",
    "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "swapon",
    "swapoff", "reboot", "syslog", "acct", "open_by_handle_at", "name_to_handle_at",
    "lookup_dcookie", "quotactl",
)  # fmt: skip
_NUMBERS = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
        "kcmp": 312, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
        "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "keyctl": 250,
        "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "swapon": 167,
        "swapoff": 168, "reboot": 169, "syslog": 103, "acct": 163, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "lookup_dcookie": 212, "quotactl": 179,
        "clone": 56, "clone3": 435,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
        "kcmp": 272, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "keyctl": 219,
        "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "swapon": 224,
        "swapoff": 225, "reboot": 142, "syslog": 116, "acct": 89, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "lookup_dcookie": 18, "quotactl": 60,
        "clone": 220, "clone3": 435,
    },
}  # fmt: skip
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
#: clone flags that make namespaces (CLONE_NEWNS ... CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME)
_NAMESPACE_FLAGS = 0x7E020080

_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
_RET_ERRNO = 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian)
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


def _statement(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _program(machine: str) -> list[bytes]:
    numbers = _NUMBERS[machine]
    denied = [numbers[name] for name in DENIED]
    refuse = _RET_ERRNO | errno.EPERM
    # Instructions after the loads: one jump per denied call, then clone, clone3, allow.
    program = [
        _statement(_LD_W_ABS, _ARCH),
        _statement(_JEQ_K, _AUDIT_ARCH[machine], jt=1),
        _statement(_RET_K, _RET_KILL_PROCESS),
        _statement(_LD_W_ABS, _NR),
    ]
    if machine == "x86_64":  # the x32 ABI has its own numbers: refused
        program.append(_statement(_JGE_K, _X32_BIT, jt=0, jf=1))
        program.append(_statement(_RET_K, refuse))
    for number in denied:
        program.append(_statement(_JEQ_K, number, jt=0, jf=1))
        program.append(_statement(_RET_K, refuse))
    program += [
        _statement(_JEQ_K, numbers["clone3"], jt=0, jf=1),
        _statement(_RET_K, _RET_ERRNO | errno.ENOSYS),
        _statement(_JEQ_K, numbers["clone"], jt=0, jf=3),
        _statement(_LD_W_ABS, _ARG0),  # the low half of the flags (x86-64 and arm64 alike)
        _statement(_JSET_K, _NAMESPACE_FLAGS, jt=0, jf=1),
        _statement(_RET_K, refuse),
        _statement(_RET_K, _RET_ALLOW),
    ]
    return program


def install_filter() -> None:
    """Filter this process's system calls, and its children's, for good (:data:`DENIED`).
    Needs ``no_new_privs`` set first. Raises :class:`OSError` where the kernel refuses, or on an
    architecture without the numbers here."""
    machine = os.uname().machine
    if machine not in _NUMBERS:
        raise OSError(errno.ENOSYS, f"no system call numbers for {machine}")
    code = b"".join(_program(machine))
    buffer = ctypes.create_string_buffer(code, len(code))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = _Program(len(code) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_SECCOMP): {os.strerror(error)}")
