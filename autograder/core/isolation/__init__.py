"""Isolation: running a grading job where the student's code cannot reach the grader.

The grading core asks for one thing, :func:`run_isolated` (a command, the folders it is shown,
its input, a wall clock, :class:`SandboxLimits`), and gets a :class:`SandboxResult` back; the
mode is picked here (:func:`require_isolation`) and reported in every result:

* :mod:`.modes`: which mode a run gets (bubblewrap, container, or a plain process on request);
* :mod:`.bubblewrap`: the bubblewrap sandbox, whose tree a root grader builds with
  :mod:`.root_launcher` (a standalone script), Python shown at neutral paths
  (:mod:`.python_layout`);
* :mod:`.container`: a fresh unprivileged user where bubblewrap cannot start and the grader is
  root, fenced with :mod:`.landlock` where the kernel has it, its IPC objects removed after
  the run (:mod:`.ipc_cleanup`);
* :mod:`.unsandboxed`: ``--no-sandbox``, a plain process of a user of its own (never a grade);
  :mod:`.environment_fingerprint` notices what such a run changed in the environment;
* what the modes share: the limits, result and refusal (:mod:`.contract`), pipes and the wall
  clock (:mod:`.supervision`), user ids and staging folders (:mod:`.leases`), cgroups
  (:mod:`.cgroups`), a user's processes (:mod:`.user_processes`), what the job is shown
  (:mod:`.job_view`);
* :mod:`.redaction`: host paths taken out of text that came from a run, a second line behind
  the isolation.
"""

from autograder.core.isolation.contract import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)
from autograder.core.isolation.modes import (
    BUBBLEWRAP,
    CONTAINER,
    ISOLATION_VARIABLE,
    require_isolation,
    run_isolated,
)

__all__ = [
    "BUBBLEWRAP",
    "CONTAINER",
    "DEFAULT_LIMITS",
    "ISOLATION_VARIABLE",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "require_isolation",
    "run_isolated",
]
