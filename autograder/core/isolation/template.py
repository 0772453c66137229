"""Grading on a warm interpreter: one template per grading process, a fresh sandbox per student.

Starting a Python that imports IPython and torch costs a sandbox 2 to 3 s of CPU before any of
the student's code runs. A grading process (``grade``, ``grade-all``'s pool, each Dask worker,
``regrade``) therefore keeps one *template* per view of the grader: a Python in a bubblewrap
sandbox of its own, exactly as a job's (:func:`.bubblewrap.launch_bubblewrap`: the same
read-only view, no network, a user id of its own when the grader is root), that has imported
what a grading imports and then only forks (``autograder/sandboxed/bin/template.py``). It
holds nothing secret (no reference, no case, no seed), never runs a byte of a submission, a
torch operation or a GPU. Each student is forked from it into new user, mount, PID, IPC,
network, UTS and cgroup namespaces, then gets its own working folder, ``/tmp`` and ``/dev/shm``
in memory, the rest of the view read-only, Landlock, a system call filter, no capability,
today's limits and fresh random states (``autograder/sandboxed/bin/student_tree.py``).

The grader's side of a student's run (:meth:`Template.run`) is a run like any other
(:func:`.supervision.supervise`: its pipes, the wall clock, the CPU cap): the template forks
the student's process, which waits; the grader finds its host pid (:mod:`.forked_student`), puts it
into the student's own cgroup (a grader started as root: memory, tasks and CPU counted for
that student alone) and only then sends ``go`` and the job on the student's own pipe. When the
run ends, however it ends, the student's process is killed through a pidfd (never a pid that
may have been reused), which ends its runner, PID 1 of the student's namespace, and with it
every process of that student; the run returns only once the template has seen it end.

**The guarantee that replaces a fresh user id per run.** A bubblewrap run started by a root
grader has a user id of its own, and every process of that id is killed before the id is used
again. A template's students share the template's user id; what keeps one student from the
next instead: every process of a student lives in that student's PID namespace, which no
process can leave, and ends when its first process ends (the grader waits for that); its IPC
objects, mounts, files and network live in its own namespaces, which end with it; its memory
and tasks are counted in its own cgroup (root). When a template is closed, its user id is
ended as any run's (:meth:`.leases.UidLease.end`).

**What students of one template share**, the mode's stated limit (docs/grading.md): the
template's read-only memory image (copied on write: a student changes only its own copy) and
so its address layout (where libraries and objects lie; ASLR is drawn once, for the template)
and Python's hash seed.

A process keeps its templates in :mod:`.templates` (one per view of the grader). Where a
template cannot start (the kernel refuses nested user namespaces, ``A2C_TEMPLATE=off``), runs
start afresh (isolation ``bubblewrap``); container mode never uses one.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from autograder.core.isolation.bubblewrap import (
    bubblewrap_popen,
    job_environment,
    limits_note,
    require_sandbox,
)
from autograder.core.isolation.contract import SandboxLimits, SandboxResult, SandboxUnavailable
from autograder.core.isolation.forked_student import END_SECONDS, ForkedStudent, host_pid
from autograder.core.isolation.held_folders import held_folder, let_go
from autograder.core.isolation.job_view import SCRATCH, SYSTEM_DIRS
from autograder.core.isolation.python_layout import PYTHON, layout
from autograder.core.isolation.run_scope import RunScope
from autograder.core.isolation.supervision import Pipes, Reader, start_process

__all__ = ["ISOLATION", "Template", "TemplateUnavailable", "Warm"]

ISOLATION = "bubblewrap-template"  #: the isolation a result reports for a student forked here
STUDENTS_AT_ONCE = 16  #: the template's own task limit covers this many students at once
START_SECONDS = 240.0  #: the template's imports on a machine loaded far beyond its cores
FORK_SECONDS = 60.0  #: how long the template may take to fork a student
_MESSAGE_BYTES = 1 << 16
_STARTER = ThreadPoolExecutor(1, thread_name_prefix="a2c-template-starter")
_GO = b"go\n"
#: The first student of every template checks where it runs (run as a cell in its executor).
_SELF_CHECK = """\
import os, sys
_status = open("/proc/self/status").read()
assert os.getpid() == 1, f"pid {os.getpid()}: not the first process of its namespace"
assert [p for p in os.listdir("/proc") if p.isdigit()] == ["1"], "other processes in /proc"
assert "\\nNoNewPrivs:\\t1" in _status and "\\nSeccomp:\\t2" in _status, "no system call filter"
assert "\\nCapEff:\\t0000000000000000" in _status, "capabilities left"
with open("/submission/home/check", "w") as _file:
    _file.write("ok")
try:
    open(sys.argv[0].rpartition("/")[0] + "/check", "w")
except OSError:
    pass
else:
    raise AssertionError("the grader's view is writable")
"""


class TemplateUnavailable(SandboxUnavailable):
    """The template could not start here, or ended: students then start afresh."""


@dataclasses.dataclass(frozen=True)
class Warm:
    """What a run needs to be forked from a template: the view's ``key`` (a digest of every
    file the view shows), where it shows ``autograder/sandboxed/bin`` (``bin_inside``) and what
    the release's set-up cells import (``modules``, imported by the template too)."""

    key: str
    bin_inside: str
    modules: tuple[str, ...] = ()


class Template:
    """One template: started in its sandbox on construction (raises
    :class:`TemplateUnavailable` with the reason when it cannot be had), then
    :meth:`run` once per student, :meth:`close` at the end.

    Args:
        bin_inside: where the view shows ``autograder/sandboxed/bin`` (``template.py``).
        readonly: the grader's view, ``{path inside: path outside}``, as a job is shown it.
        env: the job's environment (:func:`.bubblewrap.run_bubblewrap`'s ``env``).
        limits: a run's limits: the template gets their memory, and their task limit times
            :data:`STUDENTS_AT_ONCE`; each student gets them as a run does.
        modules: what the release's set-up cells import, imported by the template too.
        launched: set once the template's process is started (its imports then run on their
            own), before the constructor waits for them to end.
    """

    def __init__(
        self,
        bin_inside: str,
        readonly: Mapping[str, Path],
        env: Mapping[str, str],
        limits: SandboxLimits,
        modules: Sequence[str] = (),
        launched: threading.Event | None = None,
    ) -> None:
        require_sandbox()
        # Its own copy of the view: the assessor that asked first may remove its folder while
        # this template serves the process's other assessors. A held folder: if this process is
        # killed, the next template's start removes it.
        self._copy = held_folder("a2c-template-view-")
        try:
            readonly = {
                inside: Path(shutil.copytree(outside, self._copy / str(index), symlinks=False))
                for index, (inside, outside) in enumerate(readonly.items())
            }
        except BaseException:
            let_go(self._copy)
            raise
        self.readonly = readonly
        self._lock = threading.Lock()
        self._students: dict[int, ForkedStudent] = {}
        self._next = 0
        self._ready = threading.Event()
        self._failure = ""
        self.dead = False
        self.used = time.monotonic()
        self._job_env = dict(env)
        self._view = layout(SYSTEM_DIRS)
        self.bin_inside = bin_inside
        self.fences = {
            "scratch": SCRATCH,
            "executor": f"{bin_inside}/executor.py",
            "read": [*SYSTEM_DIRS, "/opt", *readonly, "/proc", "/dev"],
            "write": [SCRATCH, "/tmp", "/dev"],
        }
        own = dataclasses.replace(limits, processes=limits.processes * STUDENTS_AT_ONCE)
        # The template is a run of the one run wrapper for its whole life: a user id and a
        # staging folder of its own where the grader is root, its cgroup (its students each
        # get their own); all given back by close(), the user id last, once its every process
        # (every student's included) has ended.
        scope = RunScope(
            own, staging=("stage", 0o755) if os.getuid() == 0 else None, cgroup_prefix="template-"
        )
        try:
            self._scope: RunScope | None = scope.__enter__()
        except BaseException:
            let_go(self._copy)
            raise
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log_read, log_write = os.pipe()
        keep = [theirs.fileno()]
        self.process: subprocess.Popen | None = None
        try:
            argv = [PYTHON, f"{bin_inside}/template.py", str(theirs.fileno()),
                    json.dumps({"modules": list(modules)})]  # fmt: skip
            popen = bubblewrap_popen(argv, readonly, env, self._scope, keep)
            popen.update(stdin=subprocess.DEVNULL, stdout=log_write, stderr=log_write,
                         pass_fds=keep, start_new_session=True)  # fmt: skip
            # bubblewrap dies with the thread that started it (--die-with-parent): a thread of
            # the process's own, which lives as long as the process, starts every template.
            self.process = _STARTER.submit(start_process, **popen).result()
        except BaseException:
            os.close(log_read)
            self._undo()
            raise
        finally:
            os.close(log_write)
            for fd in keep[1:]:
                os.close(fd)
            theirs.close()
        if launched is not None:
            launched.set()
        self.log = Reader(log_read, 8000, tail=True)
        self.log.start()
        threading.Thread(target=self._read, daemon=True, name="a2c-template").start()
        try:
            self._wait_ready(limits)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- the template's reports
    def _read(self) -> None:
        while True:
            try:
                data = self.control.recv(_MESSAGE_BYTES)
            except OSError:
                break
            if not data:
                break
            try:
                message = json.loads(data)
                op = message["op"]
            except (ValueError, KeyError, TypeError):
                continue
            if op in ("ready", "failed"):
                self._failure = str(message.get("error", ""))
                self._ready.set()
                continue
            student = self._students.get(message.get("id"))
            if student is None:
                continue
            if op == "forked" and isinstance(message.get("pid"), int):
                student.inner = message["pid"]
                student.forked.set()
            elif op in ("ended", "refused"):
                status = message.get("status")
                student.status = status if isinstance(status, int) else None
                student.forked.set()
                student.ended.set()
        self.dead = True
        self._ready.set()
        with self._lock:
            for student in self._students.values():
                student.forked.set()
                student.ended.set()

    def _wait_ready(self, limits: SandboxLimits) -> None:
        if not self._ready.wait(START_SECONDS) or self.dead or self._failure:
            why = self._failure or ("it ended" if self.dead else "it did not start in time")
            self.log.join(timeout=1)
            tail = bytes(self.log.data).decode("utf-8", "replace").strip()[-600:]
            raise TemplateUnavailable(
                f"the grader's template: {why}" + (f": {tail}" if tail else "")
            )
        job = {"cells": [{"index": 0, "source": _SELF_CHECK, "part": None, "name": None}],
               "steps": {}, "time_scale": 1.0, "timeout": 60.0, "budget_seconds": 60.0,
               "wall_factor": 2.0}  # fmt: skip
        ran = self.run(self._job_env, json.dumps(job).encode(), START_SECONDS, limits)
        cells = [line for line in ran.channel if b'"event": "cell"' in line]
        if not cells or b'"ok": true' not in cells[0]:
            said = (cells[0].decode("utf-8", "replace") if cells else ran.output)[-600:]
            raise TemplateUnavailable(f"the grader's template: its first student failed: {said}")

    @property
    def alive(self) -> bool:
        return not self.dead and self.process is not None and self.process.poll() is None

    @property
    def busy(self) -> bool:
        with self._lock:
            return bool(self._students)

    # ----------------------------------------------------------------- one student's run
    def run(
        self, env: Mapping[str, str], stdin: bytes, wall_seconds: float, limits: SandboxLimits
    ) -> SandboxResult:
        """One student's run, forked from this template: the arguments and result of
        :func:`.bubblewrap.run_bubblewrap` (the template's view stands for ``readonly``);
        raises :class:`TemplateUnavailable` when the template cannot fork it."""
        self.used = time.monotonic()
        with self._lock:
            self._next += 1
            student = ForkedStudent(self._next)
        request = {
            "id": student.ident,
            "env": job_environment(self._view, env),
            "fences": self.fences,
            "limits": {
                "processes": limits.processes,
                "scratch_bytes": limits.scratch_bytes,
                "tmp_bytes": limits.tmp_bytes,
                "address_space_bytes": limits.address_space_bytes,
                "file_bytes": limits.file_bytes,
            },
        }
        def start(pipes: Pipes) -> ForkedStudent:
            with self._lock:
                if self.dead:
                    raise TemplateUnavailable("the grader's template has ended")
                self._students[student.ident] = student
                ends = [pipes.stdin_read, pipes.log_write, pipes.channel_write]
                socket.send_fds(self.control, [json.dumps(request).encode()], ends)
            if not student.forked.wait(FORK_SECONDS) or student.inner is None:
                raise TemplateUnavailable("the grader's template did not fork the student")
            assert self.process is not None
            student.pid = host_pid(self.process.pid, student.inner)
            if student.pid is None:
                raise TemplateUnavailable("the student's process is not under the template")
            student.pidfd = os.pidfd_open(student.pid)
            assert run.cgroup is not None
            run.cgroup.add(student.pid)  # before "go": everything it starts is counted there
            return student

        def stop(_: Any) -> None:
            student.kill()

        # The run wrapper's fourth way to start a run: no user id of its own (the template's),
        # its own cgroup and pipes, given back once every process of the student has ended.
        with RunScope(limits) as run:
            assert run.cgroup is not None
            request["limits"]["memory_capped"] = run.cgroup.active  # see student_tree.py
            try:
                outcome = run.supervise(start, _GO + stdin, wall_seconds, stop)
            finally:
                student.kill()
                if student.inner is not None:
                    student.ended.wait(END_SECONDS)  # every process of the student has ended
                student.close()
                with self._lock:
                    self._students.pop(student.ident, None)
        result = run.result(outcome, wall_seconds, sandboxed=True,
                            limits=limits_note(run.cgroup, limits), isolation=ISOLATION)  # fmt: skip
        return dataclasses.replace(result, uid=self.uid)

    @property
    def uid(self) -> int | None:
        """The user id the template and its students run as (``None``: the grader's own)."""
        return self._scope.uid if self._scope is not None else None

    # ----------------------------------------------------------------- the end
    def close(self) -> None:
        """End the template and every student it still has; give back its user id."""
        self.dead = True
        try:
            self.control.close()
        except OSError:
            pass
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.process.wait(timeout=END_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        self._undo()

    def _undo(self) -> None:
        if self._scope is not None:
            scope, self._scope = self._scope, None
            scope.__exit__(None, None, None)  # the user id last: every process of it ended
        let_go(self._copy)
