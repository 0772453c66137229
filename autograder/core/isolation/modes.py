"""Which isolation a grading run gets, and running the job in it.

Two modes isolate a notebook's run from the grader: bubblewrap (:mod:`autograder.core.sandbox`),
wherever it can make its namespaces, and, where it cannot and the grader is root (a grading
platform's container), a fresh unprivileged user with limits and, where the kernel has it,
Landlock (:mod:`autograder.core.container_isolation`). ``A2C_ISOLATION`` (``auto``, the default;
``bubblewrap``; ``container``) insists on one. Where neither can hold, grading is refused with
the ways out. ``isolate=False`` (``--no-sandbox``) is neither: a plain process, never a grade.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core import container_isolation, sandbox
from autograder.core.sandbox import DEFAULT_LIMITS, SandboxLimits, SandboxResult, SandboxUnavailable

__all__ = ["ISOLATION_VARIABLE", "require_isolation", "run_isolated"]

ISOLATION_VARIABLE = "A2C_ISOLATION"  #: auto (default), bubblewrap or container
BUBBLEWRAP, CONTAINER = "bubblewrap", container_isolation.CONTAINER


def require_isolation() -> str:
    """``"bubblewrap"`` where it starts, else ``"container"`` where this process is root, or
    the mode ``A2C_ISOLATION`` names; raises :class:`~autograder.core.sandbox.SandboxUnavailable`,
    with the ways out, when the one wanted cannot hold."""
    wanted = os.environ.get(ISOLATION_VARIABLE, "auto").strip().lower() or "auto"
    if wanted not in ("auto", BUBBLEWRAP, CONTAINER):
        raise SandboxUnavailable(
            f"{ISOLATION_VARIABLE} must be auto, bubblewrap or container, not {wanted!r}"
        )
    if wanted != CONTAINER and sandbox.bwrap_works():
        return BUBBLEWRAP
    if wanted == BUBBLEWRAP:
        sandbox.require_sandbox()  # raises, saying how to install bubblewrap
    if not container_isolation.container_works():
        if wanted == CONTAINER:
            raise SandboxUnavailable(
                f"{ISOLATION_VARIABLE}=container needs the grader to run as root on Linux"
            )
        raise SandboxUnavailable(container_isolation.unavailable_message())
    container_isolation.check_environment()
    container_isolation.check_closed()
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
    """:func:`autograder.core.sandbox.run_in_sandbox`, in the mode :func:`require_isolation` picks
    (``isolate=False``: a plain process); the result's ``isolation`` says which."""
    if isolate and require_isolation() == CONTAINER:
        return container_isolation.run_in_container(
            argv, readonly, env, stdin, wall_seconds, limits, sandbox.CHANNEL_VARIABLE
        )
    return sandbox.run_in_sandbox(
        argv, readonly, env, stdin, wall_seconds, limits=limits, isolate=isolate
    )
