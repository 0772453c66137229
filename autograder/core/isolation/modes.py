"""Which isolation a grading run gets, and running the job in it.

Two modes isolate a notebook's run from the grader: bubblewrap (:mod:`.bubblewrap`), wherever
it can make its namespaces, and, where it cannot and the grader is root (a grading platform's
container), a fresh unprivileged user with limits and, where the kernel has it, Landlock
(:mod:`.container`). ``A2C_ISOLATION`` (``auto``, the default; ``bubblewrap``; ``container``)
insists on one. Where neither can hold, grading is refused with the ways out.
``isolate=False`` (``--no-sandbox``) is neither: a plain process (:mod:`.unsandboxed`), never
a grade.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.isolation import bubblewrap, container, unsandboxed
from autograder.core.isolation.contract import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)
from autograder.core.isolation.supervision import CHANNEL_VARIABLE

__all__ = ["BUBBLEWRAP", "CONTAINER", "ISOLATION_VARIABLE", "require_isolation", "run_isolated"]

ISOLATION_VARIABLE = "A2C_ISOLATION"  #: auto (default), bubblewrap or container
BUBBLEWRAP, CONTAINER = "bubblewrap", container.CONTAINER


def require_isolation() -> str:
    """``"bubblewrap"`` where it starts, else ``"container"`` where this process is root, or
    the mode ``A2C_ISOLATION`` names; raises :class:`~.contract.SandboxUnavailable`, with the
    ways out, when the one wanted cannot hold."""
    wanted = os.environ.get(ISOLATION_VARIABLE, "auto").strip().lower() or "auto"
    if wanted not in ("auto", BUBBLEWRAP, CONTAINER):
        raise SandboxUnavailable(
            f"{ISOLATION_VARIABLE} must be auto, bubblewrap or container, not {wanted!r}"
        )
    if wanted != CONTAINER and bubblewrap.bwrap_works():
        return BUBBLEWRAP
    if wanted == BUBBLEWRAP:
        bubblewrap.require_sandbox()  # raises, saying how to install bubblewrap
    if not container.container_works():
        if wanted == CONTAINER:
            raise SandboxUnavailable(
                f"{ISOLATION_VARIABLE}=container needs the grader to run as root on Linux"
            )
        raise SandboxUnavailable(container.unavailable_message())
    container.check_environment()
    container.check_closed()
    return CONTAINER


def run_isolated(
    argv: Sequence[str],
    readonly: Mapping[str, Path],
    env: Mapping[str, str],
    stdin: bytes,
    wall_seconds: float,
    limits: SandboxLimits = DEFAULT_LIMITS,
    isolate: bool = True,
) -> SandboxResult:
    """Run ``argv`` (paths inside) fed ``stdin``, in the mode :func:`require_isolation` picks
    (``isolate=False``: a plain process); the result's ``isolation`` says which. The arguments
    are :func:`.bubblewrap.run_bubblewrap`'s."""
    if not isolate:
        return unsandboxed.run_unsandboxed(argv, readonly, env, stdin, wall_seconds, limits)
    if require_isolation() == CONTAINER:
        return container.run_in_container(
            argv, readonly, env, stdin, wall_seconds, limits, CHANNEL_VARIABLE
        )
    return bubblewrap.run_bubblewrap(argv, readonly, env, stdin, wall_seconds, limits)
