"""Run a grading job as a plain process (``--no-sandbox``): no isolation, never a grade.

For practice and debugging where no isolation holds. The job runs as a plain subprocess of a
user id of its own (one lease per run, :mod:`.leases`), who cannot write the environment, the
checkout or the grader's folders, on copies of the folders it is shown; the result says
``sandboxed=False`` and the grader reports that loudly. Only a grader started as root can give
the job that user: otherwise it refuses (:func:`require_unsandboxed_user`), since the job would
have the grader's rights.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.isolation.contract import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)
from autograder.core.isolation.job_view import outside_command, python_dirs, reachable
from autograder.core.isolation.run_scope import RunScope
from autograder.core.isolation.supervision import (
    CHANNEL_VARIABLE,
    apply_limits,
    through_root_launcher,
)

__all__ = ["require_unsandboxed_user", "run_unsandboxed"]


def require_unsandboxed_user() -> None:
    """Raise :class:`SandboxUnavailable` unless a notebook run without the sandbox would run as
    a user of its own: only a grader started as root can give it one. Run with the grader's own
    rights, a notebook could change anything that user can write (the environment, the user
    site, configuration in the home folder, the course, the grader's checkout) and, through it,
    every later grading; no check afterwards can be trusted, since that user can also rewrite
    the check."""
    if os.getuid() != 0:
        raise SandboxUnavailable(
            "--no-sandbox runs a notebook as a plain process, and only a grader started as root "
            "can run it as an unprivileged user of its own; as your user it could change your "
            "Python environment, your home folder and the course, and through them every later "
            "grading. Grade in the sandbox (install bubblewrap: sudo apt-get install -y "
            "bubblewrap), or start the grader as root (sudo) to grade without it."
        )


def run_unsandboxed(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    stdin: bytes,
    wall_seconds: float,
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> SandboxResult:
    """Run ``argv`` as a plain process of a user of its own, with the arguments of
    :func:`.bubblewrap.run_bubblewrap` (inside paths mapped to copies outside); never raises
    because of the command."""
    require_unsandboxed_user()
    with RunScope(limits, staging=("plain", 0o755)) as run:  # a cgroup: nothing outlives it
        assert run.staging is not None and run.uid is not None
        env = {**env, CHANNEL_VARIABLE: str(run.pipes.channel_write)}
        # A user id of its own, who cannot write the environment, the checkout or the grader's
        # folders; the grader's view copied.
        views: dict[str, str] = {}
        staging = run.staging
        work = staging / "work"
        launch = {"binds": [], "copies": [], "uid": run.uid}
        launch.update(reachable(python_dirs(), staging))
        for index, (inside, outside) in enumerate(readonly.items()):
            (staging / str(index)).mkdir(mode=0o755)
            launch["copies"].append([str(Path(outside).resolve()), str(staging / str(index))])
            views[inside] = str(staging / str(index))
        work.mkdir(mode=0o700)
        (work / "home").mkdir()
        for path in (work, work / "home"):
            os.chown(path, run.uid, run.uid)
        command, environment = outside_command(argv, env, views, work)
        command = through_root_launcher(launch, command, run.pipes.keep)

        def stop(process: subprocess.Popen) -> None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        cgroup = run.cgroup
        popen = {"args": command, "executable": None, "cwd": str(work), "env": environment}
        popen["preexec_fn"] = lambda: apply_limits(limits, cgroup)
        outcome = run.supervise(popen, stdin, wall_seconds, stop)
    return run.result(
        outcome,
        wall_seconds,
        sandboxed=False,
        limits="not sandboxed: no isolation",
        isolation="none",
    )
