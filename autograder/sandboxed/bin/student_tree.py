"""One student's processes, forked from the template: namespaces, working folders, fences, cells.

The template (``template.py``) has imported what a grading imports and holds nothing of any
student; for each student it calls :func:`fork_student`, and that student's whole grading runs
in this tree, every process of it forked, none started afresh::

    template
     └─ student: enters new user, mount, PID, IPC, network, UTS and cgroup namespaces, waits
         └─ runner: PID 1 of the student's PID namespace (``runner.py``'s supervisor): its own
            in-memory working folder, /tmp and /dev/shm, everything else read-only
             ├─ spare: forked before the job is read, so it holds nothing of the job; forks
             │  each executor the runner asks for
             │   └─ helper: a PID namespace of its own
             │       └─ executor: PID 1 there (``executor.py``): /proc of its own, a new
             │          session, limits, fresh random states, no new privileges, Landlock,
             │          the system call filter, no capability; then the cells and the probes
             └─ (the next executor after a kill: a new helper and executor, from the spare)

Order matters. The student's process first waits for a line ``go`` on its standard input: the
grader puts it into the student's cgroup (from outside, by its host pid) before sending it, so
everything after is counted and limited there, and only then enters the namespaces (the cgroup
namespace then shows that cgroup as its root). A process that has entered a new PID namespace
cannot start threads, nor enter another; its first child (the runner, the helper's executor)
can. The runner is PID 1 of the student's namespace: when it ends, or the grader kills it,
the kernel ends every process of the namespace, nested ones included, and the student's IPC
objects, mounts and files go with their namespaces. The executor cannot see the runner, the
spare or the template (another PID namespace), trace them (no capability, ``ptrace``
filtered) or reach their pipes (each process keeps only its own descriptors), and it is
never the parent of another student's process.

Descriptors of the student's process: 0 the job (from the grader), 1 and 2 the log, 3 the
channel (records, read by the grader); the executor gets 0 its requests, 1 and 2 the log, and
:data:`REPLY_FD`, its replies.

Only the standard library and the template's own modules.
"""

import fcntl
import os
import random
import resource
import select
import signal
import socket
import sys
import traceback

import confinement
import executor
import landlock
import runner
import seccomp

__all__ = ["IMPORTED_ENVIRONMENT", "REPLY_FD", "fork_student"]

#: What the template's imports changed in its environment (``None``: removed), set again in
#: each student's, where a fresh executor's own imports would have set it.
IMPORTED_ENVIRONMENT: dict = {}

REPLY_FD = 4  #: where an executor forked here writes its replies
_CHANNEL_FD = 3
_MAX_FD = 65536
_HIGH_FD = 64  #: descriptors are moved above this before they are put in their places
_GO = b"go\n"


def _fail(where: str) -> None:
    """Say on the log (descriptor 2) what went wrong in the student's tree, then end."""
    try:
        os.write(2, f"template, {where}: {traceback.format_exc(limit=3)}".encode())
    finally:
        os._exit(125)


def _place(fds: dict[int, int]) -> None:
    """Put each descriptor ``fds[target]`` at ``target`` and close every other one."""
    moved = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, _HIGH_FD) for target, fd in fds.items()}
    for target, fd in moved.items():
        os.dup2(fd, target)
    low = 0
    for fd in sorted(moved) + [_MAX_FD]:
        if low < fd:  # closerange(n, n) would close every descriptor (close_range's last is n - 1)
            os.closerange(low, fd)
        low = fd + 1


def fork_student(request: dict, fds: list[int], runtime: tuple) -> int:
    """In the template: fork the process of one student (see the module docstring). ``fds``:
    the job's read end, the log's and the channel's write ends, which are closed here once
    the student's process has them. Returns that process's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _place({0: fds[0], 1: fds[1], 2: fds[1], _CHANNEL_FD: fds[2]})
            _student(request, runtime)
        except BaseException:  # noqa: BLE001 - this process never returns to the template
            _fail("the student's process")
        os._exit(125)
    for fd in fds:
        os.close(fd)
    return pid


def _wait_for_go() -> None:
    """Block until the grader has put this process in the student's cgroup and says ``go``."""
    line = b""
    while len(line) < len(_GO):
        chunk = os.read(0, 1)
        if not chunk:
            os._exit(0)  # the grader gave up on this student
        line += chunk
    if line != _GO:
        os._exit(125)


def _exit_as(status: int) -> None:
    """End this process the way the process it waited for ended (a signal, or a code)."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 125)


def _student(request: dict, runtime: tuple) -> None:
    """The student's first process: namespaces, then the runner as its only child."""
    _wait_for_go()
    limits = request["limits"]
    try:
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")  # a machine short of memory ends a student's process first
    except OSError:
        pass  # where /proc refuses it, the cgroup's or the address space's limit holds
    confinement.enter_namespaces()
    # The kernel counts a user's tasks per user namespace: this one is the student's alone.
    processes = int(limits["processes"])
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    alive_read, alive_write = os.pipe()
    runner_pid = os.fork()
    if runner_pid == 0:
        try:
            os.close(alive_write)
            confinement.set_death_signal(signal.SIGKILL)
            if select.select([alive_read], [], [], 0)[0]:  # this process's parent is gone
                os._exit(125)
            os.close(alive_read)
            _runner(request, runtime)
        except BaseException:  # noqa: BLE001
            _fail("the runner")
        os._exit(125)
    os.close(alive_read)
    for fd in (0, 1, 2, _CHANNEL_FD):
        os.close(fd)  # the runner's alone: the grader sees them end with the student
    _, status = os.waitpid(runner_pid, 0)
    _exit_as(status)


def _runner(request: dict, runtime: tuple) -> None:
    """PID 1 of the student's namespace: its file systems, then ``runner.py``'s supervisor."""
    limits, fences = request["limits"], request["fences"]
    confinement.private_mounts()
    confinement.read_only_mounts()
    # Where the student's memory cgroup caps everything it writes (a grader started as root),
    # its folders are ramfs, whose mount options name no host user id (a tmpfs made here would:
    # uid=<the template's user id on the host>); elsewhere tmpfs of today's sizes.
    capped = bool(limits.get("memory_capped"))
    scratch, tmp = (None, None) if capped else (int(limits["scratch_bytes"]), int(limits["tmp_bytes"]))
    confinement.mount_in_memory(fences["scratch"], scratch, "0755", ("home",))
    confinement.mount_in_memory("/tmp", tmp, "1777")
    if os.path.isdir("/dev/shm"):
        confinement.mount_in_memory("/dev/shm", tmp, "1777")
    confinement.mount_proc()
    confinement.loopback_up()
    confinement.not_dumpable()
    os.chdir(fences["scratch"])
    os.environ.clear()
    os.environ.update(request["env"], PWD=fences["scratch"])
    for name, value in IMPORTED_ENVIRONMENT.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    # Before the job is read, and before the channel is named in the environment: the spare
    # (and so every executor) holds neither, as a fresh executor does not.
    spare = Spare(request, runtime)
    os.environ[runner.CHANNEL_VARIABLE] = str(_CHANNEL_FD)
    code = runner.supervise_job(lambda: runner.ForkedExecutor(spare))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class Spare:
    """The runner's side of the spare: a process forked before the job was read, which forks
    each executor (a helper in a new PID namespace, the executor its first process)."""

    def __init__(self, request: dict, runtime: tuple) -> None:
        self.socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                self.socket.close()
                _spare(theirs, request, runtime)
            except BaseException:  # noqa: BLE001
                _fail("the spare")
            os._exit(125)
        theirs.close()

    def executor(self) -> tuple[int, int, int]:
        """A new executor: its pid (in the runner's namespace), the write end of its requests
        and the read end of its replies."""
        self.socket.send(b"executor")
        message, fds, _, _ = socket.recv_fds(self.socket, 64, 2)
        if len(fds) != 2 or not message.isdigit():
            for fd in fds:
                os.close(fd)
            raise OSError("the spare could not start an executor")
        return int(message), fds[0], fds[1]


def _spare(sock: socket.socket, request: dict, runtime: tuple) -> None:
    os.close(0)  # the job and the channel are the runner's alone
    os.close(_CHANNEL_FD)
    while True:
        if not sock.recv(64):
            os._exit(0)  # the runner is done
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:  # helpers of executors that ended
                pass
        except ChildProcessError:
            pass
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        pid_read, pid_write = os.pipe()
        helper = os.fork()
        if helper == 0:
            try:
                for fd in (sock.fileno(), request_write, reply_read, pid_read):
                    os.close(fd)
                _helper(request_read, reply_write, pid_write, request, runtime)
            except BaseException:  # noqa: BLE001
                _fail("an executor's helper")
            os._exit(125)
        for fd in (request_read, reply_write, pid_write):
            os.close(fd)
        pid = os.read(pid_read, 32)
        os.close(pid_read)
        socket.send_fds(sock, [pid if pid.isdigit() else b"-"], [request_write, reply_read])
        os.close(request_write)
        os.close(reply_read)


def _helper(requests: int, replies: int, pid_pipe: int, request: dict, runtime: tuple) -> None:
    """A PID namespace for one executor: it is the first process there; its pid goes to the
    spare, and this process waits for it."""
    confinement.unshare(confinement.CLONE_NEWPID | confinement.CLONE_NEWNS)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(pid_pipe)
            _executor(requests, replies, request, runtime)
        except BaseException:  # noqa: BLE001
            _fail("the executor")
        os._exit(125)
    os.close(requests)
    os.close(replies)
    os.write(pid_pipe, str(pid).encode())
    os.close(pid_pipe)
    os.waitpid(pid, 0)
    os._exit(0)


def _executor(requests: int, replies: int, request: dict, runtime: tuple) -> None:
    """The student's Python: confined, then ``executor.py``'s loop (never returns)."""
    limits, fences = request["limits"], request["fences"]
    _place({0: requests, 1: 1, 2: 2, REPLY_FD: replies})
    confinement.private_mounts()
    confinement.mount_proc()
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (int(limits["address_space_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["file_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _fresh_random_states(int(os.environ.get("OMP_NUM_THREADS") or 1))
    confinement.no_new_privileges()
    abi = landlock.abi_version()
    if abi > 0:
        landlock.restrict(fences["read"], fences["write"], abi)
    seccomp.install_filter()
    confinement.drop_capabilities()
    sys.argv = [fences["executor"], str(REPLY_FD)]
    requests_file = open(0, encoding="utf-8", closefd=False)
    sys.stdin = open(os.devnull)  # input() in a cell gets EOF instead of reading requests
    code = executor.serve(REPLY_FD, runtime, requests_file)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fresh_random_states(threads: int) -> None:
    """Every generator a student's code or a probe draws from, reseeded from the kernel's
    entropy (the template's states are every student's otherwise), and torch's thread count."""
    import numpy
    import torch

    random.seed()
    numpy.random.seed()
    torch.seed()
    torch.set_num_threads(max(1, threads))
