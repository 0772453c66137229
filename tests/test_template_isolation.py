"""The template's promise: nothing of one student's process is ever seen by the next.

A grading process forks every student's sandbox from one template
(:mod:`autograder.core.isolation.template`). These tests play students of one template, each a
job of cells run as the grader runs a notebook's (the runner, the executor forked warm): one
leaves everything it can behind (globals, ``sys.modules``, patched library functions, files in
every folder it may write, the environment, threads, child processes in sessions of their own,
System V IPC) and the next student of the same template checks, cell by cell, that it sees none
of it and that its random generators draw afresh; another tries to signal, trace or read the
template and the processes around it. The template then still serves students, and no process
of an ended student is left under it. A class graded through the template gives the same
``grades.csv`` as the same class graded with every Python started afresh (``A2C_TEMPLATE=off``).

Every test runs real bubblewrap and a real template (it fails, not skips, without them).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.core.isolation import templates
from autograder.core.isolation.contract import DEFAULT_LIMITS
from autograder.core.isolation.template import ISOLATION, Template, TemplateUnavailable
from autograder.core.sandbox_view import KIT_RELEASE, job_env, setup_modules, write_view
from tests.submissions.course import MISBEHAVING, course_submission
from tests.submissions.hostile import IPC_KEY, hostile_submission

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "left-by-the-first-student"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """One template of this process, for the kit's own view (as a grading command makes it)."""
    view = write_view(tmp_path_factory.mktemp("view"))
    modules = setup_modules(json.loads(KIT_RELEASE.read_text()))
    found = templates.template_for(
        view.key, view.bin_inside, view.readonly, job_env(), DEFAULT_LIMITS, modules
    )
    assert found is not None, "no template could be started here (see standard error)"
    yield found
    templates.close_templates()


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` on the host."""
    found, todo = set(), [pid]
    while todo:
        here = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{here}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{here}/task/{task}/children") as children:
                    kids = {int(kid) for kid in children.read().split()}
            except OSError:
                continue
            todo += sorted(kids - found)
            found |= kids
    return found


def _student(template: Template, *cells: str, seconds: float = 60.0):
    """Run ``cells`` as one student of ``template``: ``(the cells' channel events, the log)``."""
    job = {
        "cells": [
            {"index": index, "source": textwrap.dedent(source), "part": None, "name": None}
            for index, source in enumerate(cells)
        ],
        "steps": {},
        "time_scale": 3.0,
        "timeout": seconds,
        "budget_seconds": seconds * len(cells),
        "wall_factor": 2.0,
    }
    ran = template.run(
        job_env(), json.dumps(job).encode(), seconds * len(cells) + 60, DEFAULT_LIMITS
    )
    assert ran.isolation == ISOLATION and ran.sandboxed
    events = []
    for line in ran.channel:
        message = json.loads(line)
        if message.get("event") == "cell":
            events.append(message)
    assert len(events) == len(cells), (events, ran.output[-3000:])
    return events, ran.output


def _draws(output: str) -> list[float]:
    line = next(line for line in output.splitlines() if line.startswith("DRAWS "))
    return json.loads(line.removeprefix("DRAWS "))


DRAW = """
import json, random, numpy, torch
print("DRAWS " + json.dumps([random.random(), float(numpy.random.rand()), float(torch.rand(1))]), flush=True)
"""

LEAVE = [
    # globals, modules, and library functions the probes rely on
    f"""
    import builtins, sys, types, numpy, torch, course_lib
    import grading_runtime.harness as harness
    builtins.LEFT = course_lib.LEFT = harness.LEFT = torch.LEFT = "{TOKEN}"
    sys.modules["left_module"] = types.ModuleType("left_module")
    numpy.allclose = lambda *args, **kwargs: True
    torch.allclose = lambda *args, **kwargs: True
    sys.path.insert(0, "/tmp/{TOKEN}")
    """,
    # files in every folder a student may write
    f"""
    import os
    for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd()):
        with open(os.path.join(folder, "{TOKEN}"), "w") as file:
            file.write("{TOKEN}")
    for path in ("/grader/lib/{TOKEN}", "/usr/{TOKEN}"):
        try:
            open(path, "w").write("x")
        except OSError:
            pass
        else:
            raise AssertionError(path + " was writable")
    """,
    # the environment
    f"""
    import os
    os.environ["LEFT"] = "{TOKEN}"
    os.putenv("LEFT_PUT", "{TOKEN}")
    """,
    # random states: seeded to a known state, as a student who wants the next one's draws would
    """
    import random, numpy, torch
    random.seed(7); numpy.random.seed(7); torch.manual_seed(7)
    """,
    DRAW,
    # a thread, child processes (one in a session of its own, one forked twice), System V IPC
    f"""
    import os, subprocess, threading, time
    def _keep_writing():
        while True:
            with open("/tmp/{TOKEN}-thread", "a") as file:
                file.write("x")
            time.sleep(0.05)
    threading.Thread(target=_keep_writing, name="{TOKEN}", daemon=False).start()
    subprocess.Popen(["sleep", "600"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(600)
        os._exit(0)
    """,
    f"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget({IPC_KEY}, 1 << 20, 0o1666)
    assert segment >= 0, ctypes.get_errno()
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"{TOKEN}", {len(TOKEN)})
    assert libc.msgget({IPC_KEY}, 0o1666) >= 0 and libc.semget({IPC_KEY}, 1, 0o1666) >= 0
    """,
]

CHECK = [
    f"""
    import builtins, sys, numpy, torch, course_lib
    import grading_runtime.harness as harness
    for owner in (builtins, course_lib, harness, torch):
        assert not hasattr(owner, "LEFT"), owner
    assert "left_module" not in sys.modules
    assert not numpy.allclose(1.0, 2.0) and not torch.allclose(torch.zeros(1), torch.ones(1))
    assert not any("{TOKEN}" in entry for entry in sys.path)
    """,
    f"""
    import os
    for folder in ("/tmp", "/dev/shm", os.path.expanduser("~"), os.getcwd()):
        left = [name for name in os.listdir(folder) if "{TOKEN}" in name]
        assert not left, (folder, left)
    assert os.listdir("/tmp") == [] and os.listdir("/dev/shm") == [], "not a fresh /tmp"
    """,
    f"""
    import os, subprocess
    assert "LEFT" not in os.environ and "LEFT_PUT" not in os.environ
    assert "{TOKEN}" not in subprocess.run(["env"], capture_output=True, text=True).stdout
    """,
    DRAW,
    f"""
    import os, threading
    assert not [t for t in threading.enumerate() if t.name == "{TOKEN}"]
    assert [p for p in os.listdir("/proc") if p.isdigit()] == ["1"], os.listdir("/proc")
    """,
    f"""
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    for table in ("shm", "msg", "sem"):
        lines = open("/proc/sysvipc/" + table).read().splitlines()
        assert len(lines) == 1, (table, lines)  # the header alone
    assert libc.shmget({IPC_KEY}, 0, 0) == -1 and ctypes.get_errno() == errno.ENOENT
    """,
]


def test_the_next_student_of_a_template_sees_nothing_the_first_left(template):
    """A student leaves globals, modules, patched functions, files, the environment, seeded
    generators, a thread, processes and System V IPC; the next student of the same template
    sees none of it, and draws other random numbers than the first (and than a third)."""
    before = _descendants(template.process.pid)
    left, left_log = _student(template, *LEAVE)
    assert all(event["ok"] for event in left), left
    # Everything the first student started has ended with its run: nothing more under the
    # template than before (its thread, its session leaders, the twice-forked process).
    assert _descendants(template.process.pid) == before
    checked, checked_log = _student(template, *CHECK)
    failed = [(CHECK[event["index"]].strip()[:80], event["error"]) for event in checked
              if not event["ok"]]  # fmt: skip
    assert not failed, failed
    _, third_log = _student(template, DRAW)
    first, second, third = _draws(left_log), _draws(checked_log), _draws(third_log)
    for drawn in zip(first, second, third, strict=True):  # random, numpy, torch: each afresh
        assert len(set(drawn)) == 3, (first, second, third)
    # The seeded state of the first student (seed 7 everywhere) is not the next one's.
    import random

    import numpy
    import torch

    random.seed(7)
    numpy.random.seed(7)
    torch.manual_seed(7)
    seeded = [random.random(), float(numpy.random.rand()), float(torch.rand(1))]
    assert first == pytest.approx(seeded)
    assert all(a != b for a, b in zip(second, seeded, strict=True))


ATTACK = [
    """
    import os
    assert os.getpid() == 1 and os.getppid() == 0, (os.getpid(), os.getppid())
    assert [p for p in os.listdir("/proc") if p.isdigit()] == ["1"], os.listdir("/proc")
    """,
    # signal every pid there could be, the whole namespace and its own group
    """
    import os, signal
    reached, own = [], {int(task) for task in os.listdir("/proc/self/task")}  # its threads
    for pid in sorted(set(range(2, 4096)) - own):
        try:
            os.kill(pid, 0)
            reached.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            reached.append(pid)
    assert not reached, reached
    try:
        os.kill(-1, signal.SIGKILL)  # every process it may signal but itself
    except ProcessLookupError:
        pass  # there is none
    else:
        raise AssertionError("kill(-1) reached a process")
    """,
    # trace, read another process's memory, enter or make namespaces, mount
    """
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    refused = {}
    for name, call in {
        "ptrace": lambda: libc.ptrace(16, 2, None, None),  # PTRACE_ATTACH
        "process_vm_readv": lambda: libc.process_vm_readv(2, None, 0, None, 0, 0),
        "unshare": lambda: libc.unshare(0x10000000),  # CLONE_NEWUSER
        "setns": lambda: libc.setns(0, 0),
        "mount": lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None),
    }.items():
        result = call()
        refused[name] = (result, ctypes.get_errno())
    assert all(result == -1 and code == errno.EPERM for result, code in refused.values()), refused
    status = open("/proc/self/status").read()
    assert "\\nCapEff:\\t0000000000000000" in status and "\\nSeccomp:\\t2" in status
    """,
    # a file system the template or the grader could read back
    """
    import os
    for path in ("/grader/bin/template.py", "/grader/lib/course_lib/__init__.py"):
        try:
            open(path, "a").write("# changed")
        except OSError:
            pass
        else:
            raise AssertionError(path + " was writable")
    """,
]


def test_a_student_cannot_signal_trace_or_reach_the_template(template):
    """A student sees no other process (pids 2 to 4095, its own threads aside, answer nothing;
    ``kill(-1)`` reaches nobody), cannot trace, read another's memory, mount or make namespaces, nor change the
    view; the template lives on and serves the next student."""
    before = _descendants(template.process.pid)
    events, log = _student(template, *ATTACK)
    failed = [(ATTACK[event["index"]].strip()[:60], event["error"]) for event in events
              if not event["ok"]]  # fmt: skip
    assert not failed, (failed, log[-2000:])
    assert template.alive and _descendants(template.process.pid) == before
    again, _ = _student(template, "assert 1 + 1 == 2")
    assert again[0]["ok"], again


def test_a_forked_student_sees_the_environment_and_arguments_of_a_fresh_one(template, tmp_path):
    """What a student's code can read of how it is run (its environment, ``sys.argv``, its
    working folder) is the same forked from the template as started afresh: nothing tells
    one from the other, nor names the channel (a scripted agent once keyed on that)."""
    from autograder.core.isolation.bubblewrap import run_bubblewrap
    from autograder.core.sandbox_view import job_argv

    cell = """
    import json, os, sys
    print("SEEN " + json.dumps([dict(os.environ), sys.argv, os.getcwd()]), flush=True)
    """
    _, forked_log = _student(template, cell)
    view = write_view(tmp_path / "view")
    job = {"cells": [{"index": 0, "source": textwrap.dedent(cell), "part": None, "name": None}],
           "steps": {}, "time_scale": 3.0, "timeout": 60.0, "budget_seconds": 60.0,
           "wall_factor": 2.0}  # fmt: skip
    fresh = run_bubblewrap(job_argv(), view.readonly, job_env(), json.dumps(job).encode(), 300)

    def seen(output):
        line = next(line for line in output.splitlines() if line.startswith("SEEN "))
        return json.loads(line.removeprefix("SEEN "))

    forked, started = seen(forked_log), seen(fresh.output)
    assert forked[1:] == started[1:]
    names = set(forked[0]) | set(started[0])
    differ = {n: (forked[0].get(n), started[0].get(n)) for n in names
              if forked[0].get(n) != started[0].get(n)}  # fmt: skip
    assert not differ, differ
    assert "A2C_CHANNEL_FD" not in seen(forked_log)[0]


@pytest.mark.skipif(os.getuid() != 0, reason="a student's memory cgroup needs a root grader")
def test_what_a_student_writes_in_memory_is_capped_by_its_own_cgroup(template):
    """A root grader's students write their folders into ramfs (no mount option names a host
    user id) charged to their own memory cgroup: writing past the run's memory ends that
    student's run, not the template, and the next student runs."""
    from autograder.core.isolation.contract import SandboxLimits

    small = SandboxLimits(memory_bytes=192 * 1024**2)
    job = {"cells": [{"index": 0, "part": None, "name": None, "source": textwrap.dedent("""
    import os, re
    owners = set(re.findall(r"[ug]id=(\\d+)", open("/proc/self/mountinfo").read()))
    assert owners <= {"0", "65534"}, owners  # no host user id in a mount's options
    block = os.urandom(1 << 20) * 16
    for number in range(24):  # 384 MiB in files of 16 MiB, twice the run's memory
        with open(f"/tmp/fill{number}", "wb") as file:
            file.write(block)
    print("WROTE IT ALL", flush=True)
    """)}], "steps": {}, "time_scale": 3.0, "timeout": 60.0, "budget_seconds": 60.0,
           "wall_factor": 2.0}  # fmt: skip
    ran = template.run(job_env(), json.dumps(job).encode(), 300, small)
    assert "WROTE IT ALL" not in ran.output, ran.output[-2000:]
    assert template.alive
    again, _ = _student(template, "assert 1 + 1 == 2")
    assert again[0]["ok"], again


def test_students_of_one_template_run_at_once_apart(template):
    """Two students at the same time: each sees only itself (its /proc, its /tmp)."""
    import threading

    cell = f"""
    import os, time
    open("/tmp/{TOKEN}-" + str(os.getpid()), "w").write("x")
    time.sleep(2)
    assert [p for p in os.listdir("/proc") if p.isdigit()] == ["1"]
    assert len(os.listdir("/tmp")) == 1, os.listdir("/tmp")
    """
    results = {}

    def one(name):
        results[name] = _student(template, cell)[0]

    threads = [threading.Thread(target=one, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(events[0]["ok"] for events in results.values()), results


def test_without_a_template_runs_start_afresh(monkeypatch, capsys, tmp_path):
    """``A2C_TEMPLATE=off`` asks for no template; one that cannot start is said once and
    every run of that view then starts afresh (no template is asked again)."""
    monkeypatch.setenv(templates.TEMPLATE_VARIABLE, "off")
    assert templates.template_for("k", "/grader/bin", {}, {}, DEFAULT_LIMITS) is None
    monkeypatch.delenv(templates.TEMPLATE_VARIABLE)
    tries = []

    def refuse(*args, **kwargs):
        tries.append(args)
        raise TemplateUnavailable("no nested user namespaces here")

    monkeypatch.setattr(templates, "Template", refuse)
    key = f"refused-{os.getpid()}"
    assert templates.template_for(key, "/grader/bin", {}, {}, DEFAULT_LIMITS) is None
    assert templates.template_for(key, "/grader/bin", {}, {}, DEFAULT_LIMITS) is None
    assert len(tries) == 1
    assert capsys.readouterr().err.count("no nested user namespaces here") == 1


@pytest.mark.rom
@pytest.mark.timeout(1800)
def test_a_class_through_the_template_gets_the_grades_of_a_cold_grading(tmp_path):
    """The same class (the reference, a notebook whose parts misbehave, two hostile ones),
    graded with ``--jobs 2`` through the template and with every Python started afresh:
    the same ``grades.csv``, scores and notes."""
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    notebooks = {
        "reference": course_submission(),
        "misbehaving": course_submission(**MISBEHAVING),
        "leave_ipc": hostile_submission("leave_ipc"),
        "detect_grading": hostile_submission("detect_grading"),
    }
    for name, nb in notebooks.items():
        nbformat.write(nb, submissions / f"{name}.ipynb")
    rows = {}
    for mode in ("template", "off"):
        out = tmp_path / f"out-{mode}"
        env = {**os.environ, "A2C_GRADER_TIME_SCALE": "3", templates.TEMPLATE_VARIABLE: mode}
        done = subprocess.run(
            [sys.executable, "-m", "autograder", "grade-all", str(submissions), "--jobs", "2",
             "--out", str(out)],
            cwd=tmp_path, capture_output=True, text=True, timeout=1500, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "grading without a template" not in done.stderr, done.stderr[-3000:]
        with (out / "grades.csv").open() as file:
            rows[mode] = {row["student"]: row for row in csv.DictReader(file)}
    timing = {"graded_at", "received"}  # when; the rest must match
    for student, row in rows["off"].items():
        warm = {key: value for key, value in rows["template"][student].items() if key not in timing}
        cold = {key: value for key, value in row.items() if key not in timing}
        assert warm == cold, student
    assert rows["off"]["reference"]["status"].startswith("graded")


@pytest.mark.rom
def test_where_no_template_is_had_the_run_starts_before_the_grader_needs_it(monkeypatch, tmp_path):
    """``A2C_TEMPLATE=off``: the command's early start begins the notebook's fresh run (its
    imports) before the grader has its assessor, and returns once that run's process waits;
    the assessor's grading takes that run, once, and grades as a fresh run does."""
    from autograder.core import assessor
    from autograder.core.isolation import early_start
    from autograder.core.sandbox_view import warm_start

    monkeypatch.setenv(templates.TEMPLATE_VARIABLE, "off")
    thread = warm_start()
    assert len(early_start._pending) == 1, "no run was started early"
    ((job, _, _),) = early_start._pending.values()
    # why: test_a_grading_command_goes_on_once_its_template_is_launched
    assert job.waiting.is_set(), "warm_start returned before the early run's process started"
    thread.join(timeout=120)
    grader = assessor.Assessor(KIT_RELEASE, tmp_path / "work")
    done = grader.assess((ROOT / "solutions" / "a2c.ipynb").read_bytes(), "ref").result
    assert not early_start._pending, "the grading did not take the run started early"
    assert (done.status, done.total, done.isolation) == ("graded", 14.0, "bubblewrap"), done.notes


def test_a_run_started_early_takes_only_a_job_of_its_own_terms():
    """A run started early with one environment and limits never runs a job that asks for
    others (a course's own memory limit, more threads): it ends unused, having read an empty
    job, and the caller starts its own; a job of the same terms (its CPU cap aside) is fed."""
    from autograder.core.isolation import early_start
    from autograder.core.isolation.contract import SandboxLimits

    def run(job):
        read, write = os.pipe()
        job.write(write)  # closes it once written
        with os.fdopen(read, "rb") as pipe:
            return pipe.read()

    env, key = job_env(1), f"terms-{os.getpid()}"
    for asked_env, asked_limits, fed in (
        (job_env(2), DEFAULT_LIMITS, False),
        (env, SandboxLimits(memory_bytes=1024**3), False),
        (env, SandboxLimits(cpu_seconds=99.0), True),
    ):
        early_start.start_early(key, run, env, DEFAULT_LIMITS)
        job, future, _ = early_start._pending[key]
        given = early_start.give(key, b"the job", 60.0, asked_env, asked_limits)
        assert given == (b"the job" if fed else None)
        assert future.result(timeout=10) == (b"the job" if fed else b"")


def test_a_grading_command_goes_on_once_its_template_is_launched(monkeypatch):
    """``warm_start`` (a grading command's first call) returns once the template's process
    runs, before its imports end: the view's copy and the launch are Python of the calling
    process, and left to a thread behind the command's own imports (torch's libraries load
    holding the interpreter's lock) they took seconds, so the grading waited for the
    template; waiting for its imports too would lose the overlap."""
    from autograder.core.sandbox_view import warm_start

    monkeypatch.setattr(templates, "_templates", {})  # this test's own template, started anew
    before = _descendants(os.getpid())
    thread = warm_start()
    try:
        started = []
        for pid in _descendants(os.getpid()) - before:
            try:
                started.append(Path(f"/proc/{pid}/cmdline").read_bytes())
            except OSError:
                continue
        # as root, the launcher (which becomes bubblewrap); else bubblewrap itself
        launch = (b"template.py", b"root_launcher.py", b"bwrap")
        assert any(name in argv for argv in started for name in launch), started
        assert thread.is_alive(), "warm_start waited for the template's imports too"
        thread.join(timeout=240)
        (entry,) = templates._templates.values()
        assert entry.template is not None and entry.template.alive, entry.failure
    finally:
        thread.join(timeout=240)
        templates.close_templates()
