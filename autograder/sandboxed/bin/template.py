"""The template: a Python that has imported what grading imports, and forks each student from it.

Usage (the grader starts it in its sandbox, one per grading process; nothing here is importable
from the grader's packages)::

    python template.py CONTROL_FD SETTINGS_JSON

It imports the executor's pieces (IPython, the grading runtime: torch, numpy, ``course_lib``'s
checks; :func:`executor.prepare`) and the modules the release's set-up cells import
(``SETTINGS_JSON``'s ``modules``), freezes what it holds for the garbage collector (the
students' processes then copy none of it), checks that it is one thread and says ``ready``.
From then on it only forks: each message on the control socket ``CONTROL_FD`` (a Unix socket
to the grader, one JSON object a message, with the student's three pipes attached) is one
student, whose processes :func:`student_tree.fork_student` makes; the template replies
``{"op": "forked", "id", "pid"}``, and ``{"op": "ended", "id", "status"}`` when that process
ends. It ends when the grader closes the socket.

What it never does: run a byte of a submission (only forked processes do, in namespaces of
their own), hold anything secret (no reference, no case, no seed: the job goes from the grader
to the student's process on the student's own pipe), run a torch operation (torch starts its
thread pools at the first one, and a process with threads must not fork), or touch a GPU.
"""

import gc
import importlib
import json
import os
import select
import socket
import sys
import time

import executor
import student_tree

MAX_MESSAGE = 1 << 16  #: the longest message the grader sends (a student's settings)


def _send(control: socket.socket, message: dict) -> None:
    control.send(json.dumps(message).encode())


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def prepare(modules: list[str]) -> tuple:
    """Import the executor's pieces and ``modules``; what :func:`executor.serve` needs."""
    runtime = executor.prepare()
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a cell that imports it fails in the student's process
            pass
    gc.collect()
    gc.freeze()  # the students' collections never touch (and so never copy) these objects
    return runtime


def serve(control: socket.socket, runtime: tuple) -> None:
    """Fork a student per message until the grader closes the socket; report each one's end."""
    children: dict[int, tuple[int, object]] = {}  # pidfd -> (pid, the grader's id)
    while True:
        ready, _, _ = select.select([control, *children], [], [])
        for pidfd in ready:
            if pidfd is control:
                continue
            pid, ident = children.pop(pidfd)
            _, status = os.waitpid(pid, 0)
            os.close(pidfd)
            _send(control, {"op": "ended", "id": ident, "status": status})
        if control not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 3)
        except OSError:
            return
        if not message:
            return  # the grader is gone: so are its students, with this process's namespace
        request = json.loads(message)
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            _send(control, {"op": "refused", "id": request.get("id"), "error": "3 pipes needed"})
            continue
        pid = student_tree.fork_student(request, fds, runtime)
        children[os.pidfd_open(pid)] = (pid, request["id"])
        _send(control, {"op": "forked", "id": request["id"], "pid": pid})


def main(control_fd: str, settings: str) -> int:
    start = time.monotonic()
    # One thread for every math library as it loads (OpenMP, MKL and OpenBLAS read these once):
    # none starts a pool of its own here. Each student's process sets its own thread count.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    control = socket.socket(fileno=int(control_fd))
    control.set_inheritable(False)
    before = dict(os.environ)
    try:
        runtime = prepare(json.loads(settings)["modules"])
    except Exception as error:  # noqa: BLE001 - the grader then starts each student afresh
        _send(control, {"op": "failed", "error": f"{type(error).__name__}: {error}"[:2000]})
        return 1
    # What the imports set in the environment (a library's own folder on LD_LIBRARY_PATH, its
    # settings), which a fresh executor's imports set too: each student's gets it again.
    student_tree.IMPORTED_ENVIRONMENT.update(
        {name: value for name, value in os.environ.items() if before.get(name) != value}
    )
    student_tree.IMPORTED_ENVIRONMENT.update(
        {name: None for name in before if name not in os.environ}
    )
    if _threads() != 1:  # a process with threads must not fork
        _send(control, {"op": "failed", "error": f"{_threads()} threads after the imports"})
        return 1
    _send(control, {"op": "ready", "pid": os.getpid(), "seconds": time.monotonic() - start})
    serve(control, runtime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
