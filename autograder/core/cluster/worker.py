"""What a Dask worker runs: one submission's assessment, with an Assessor like the instructor's.

A worker runs :func:`assess_task`: :meth:`~autograder.core.assessor.Assessor.assess` (the
sandboxed run and the judgement against the reference). It builds its own
:class:`~autograder.core.assessor.Assessor` once per process and grading settings
(:func:`assessor_settings`), from the release notebook's bytes and the course, whole, as plain
data (its points, agent settings and every limit: the instructor's ``--timeout`` and agent cap
hold there too), sent with the task (no nbgrader runs there), after checking that its instructor package (``autograder``, ``solutions``,
``course_lib``) has the very files of the instructor's; it refuses (:class:`WorkerRefused`)
where the sandbox cannot start, unless ``--no-sandbox`` was given, and in container mode where
nothing fences the notebook off the network (:func:`check_worker_isolation`).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import socket
import threading
from typing import Any

import nbformat

from autograder.core.assessor import Assessor
from autograder.core.cluster.connection import WorkerRefused
from autograder.core.course.settings import Course
from autograder.core.isolation import SandboxUnavailable
from autograder.core.isolation.held_folders import held_folder, let_go
from autograder.core.package_digest import package_files

__all__ = ["assess_task", "assessor_settings", "check_worker_isolation"]

_ASSESSORS: dict[str, Assessor] = {}
_ASSESSORS_LOCK = threading.Lock()


def assessor_settings(assessor: Assessor, isolate: bool | None = None) -> dict[str, Any]:
    """What a worker needs to build an Assessor like the instructor's (plain data: the release,
    the course whole, :meth:`~autograder.core.course.settings.Course.to_plain`); ``isolate``
    (when given) instead of the instructor's own: the workers sandbox, this machine need not."""
    return {
        "source": nbformat.writes(assessor.release).encode(),
        "course": assessor.course.to_plain(),
        "isolate": assessor.isolate if isolate is None else isolate,
        "package": package_files(),
    }


def _build_assessor(settings: dict[str, Any], where: str) -> Assessor:
    theirs, ours = settings["package"], package_files()
    if theirs != ours:
        changed = sorted(n for n in theirs.keys() | ours.keys() if theirs.get(n) != ours.get(n))
        raise WorkerRefused(
            f"{where}: its instructor package differs from the instructor's in {len(changed)} "
            f"file(s) ({', '.join(changed[:5])}): install the same version of the course kit on "
            "every worker (pip install -e '.[cluster]' from the same commit) and restart them"
        )
    if settings["isolate"]:
        check_worker_isolation(where)
    folder = held_folder("a2c-worker-")  # a killed worker's is removed by the next to start
    atexit.register(let_go, folder)
    try:
        return Assessor(
            nbformat.reads(settings["source"].decode(), as_version=4),
            folder / "grading",
            Course.from_plain(settings["course"], "the instructor's course"),
            isolate=settings["isolate"],
        )
    except SandboxUnavailable as error:
        raise WorkerRefused(f"{where} cannot start the sandbox: {error}") from None
    except Exception as error:  # noqa: BLE001 - said to the instructor, with the worker's name
        raise WorkerRefused(
            f"{where} could not set up grading: {type(error).__name__}: {str(error)[:500]}"
        ) from None


def check_worker_isolation(where: str) -> None:
    """Raise :class:`WorkerRefused` where this worker would grade in container mode without a
    network fence (:func:`~autograder.core.isolation.container.network_fence`): the student's
    code would reach the scheduler, and through it every worker's grading."""
    from autograder.core.isolation import CONTAINER, require_isolation
    from autograder.core.isolation.container import network_fence

    try:
        mode = require_isolation()
    except SandboxUnavailable as error:
        raise WorkerRefused(f"{where} cannot start the sandbox: {error}") from None
    if mode == CONTAINER and not network_fence():
        raise WorkerRefused(
            f"{where} would grade in container mode (bubblewrap cannot start there) with nothing "
            "to keep the notebook off the network (no Landlock TCP rule: Linux 6.7 or later; no "
            "network namespace): its code could reach the scheduler and change every worker's "
            "grading. Give the worker bubblewrap (user namespaces), or a kernel with Landlock "
            "ABI 4, or run it where root may make a network namespace"
        )


def _worker_assessor(settings: dict[str, Any], where: str) -> Assessor:
    """This process's Assessor for ``settings``, built on first use."""
    plain = {key: value for key, value in settings.items() if key not in ("source", "package")}
    key = hashlib.sha256(
        json.dumps(plain, sort_keys=True).encode() + hashlib.sha256(settings["source"]).digest()
    ).hexdigest()
    with _ASSESSORS_LOCK:
        if key not in _ASSESSORS:
            _ASSESSORS[key] = _build_assessor(settings, where)
        return _ASSESSORS[key]


def assess_task(
    data: bytes,
    student: str,
    name: str,
    settings: dict[str, Any],
    agent_file: bytes | None = None,
    memory: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The task a worker runs: ``Assessor.assess`` of one file's bytes (and of the saved agent's
    file handed in beside it), as plain data.

    Raises:
        WorkerRefused: this worker cannot grade (see the message); never because of ``data``.
    """
    from distributed import get_worker

    worker = get_worker()
    assessor = _worker_assessor(settings, f"worker {worker.address} on {socket.gethostname()}")
    # One thread a notebook, Dask's own convention (its nannies set OMP_NUM_THREADS=1): a worker
    # cannot see the other workers on its machine, and the cluster's threads are its cores.
    plain = assessor.assess(
        data, student, name, threads=1, agent_file=agent_file, memory=memory
    ).to_plain()
    plain["worker"] = worker.address
    return plain
