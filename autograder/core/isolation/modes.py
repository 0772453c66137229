"""Which isolation a grading run gets, and running the job in it.

Two modes isolate a notebook's run from the grader: bubblewrap (:mod:`.bubblewrap`), wherever
it can make its namespaces, and, where it cannot and the grader is root (a grading platform's
container), a fresh unprivileged user with limits and, where the kernel has it, Landlock
(:mod:`.container`). ``A2C_ISOLATION`` (``auto``, the default; ``bubblewrap``; ``container``)
insists on one. Where neither can hold, grading is refused with the ways out.
``isolate=False`` (``--no-sandbox``) is neither: a plain process (:mod:`.unsandboxed`), never
a grade. In bubblewrap a run given a :class:`~.template.Warm` is forked from this process's
template for that view (:mod:`.template`: isolation ``bubblewrap-template``) where one can be
had, and starts afresh otherwise; in either mode it takes the run started early for that view
(:mod:`.early_start`), where a grading command started one before its own imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core.isolation import (
    bubblewrap,
    container,
    early_start,
    template,
    templates,
    unsandboxed,
)
from autograder.core.isolation.contract import (
    DEFAULT_LIMITS,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
)
from autograder.core.isolation.supervision import CHANNEL_VARIABLE, JobInput

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
    stdin: bytes | JobInput,
    wall_seconds: float,
    limits: SandboxLimits = DEFAULT_LIMITS,
    isolate: bool = True,
    warm: template.Warm | None = None,
) -> SandboxResult:
    """Run ``argv`` (paths inside) fed ``stdin``, in the mode :func:`require_isolation` picks
    (``isolate=False``: a plain process); the result's ``isolation`` says which. The arguments
    are :func:`.bubblewrap.run_bubblewrap`'s; with ``warm`` (the view's key, where it shows the
    job's scripts, what the set-up imports), in bubblewrap, the job is forked from the
    process's template, when it has one, instead of ``argv``."""
    if not isolate:
        return unsandboxed.run_unsandboxed(argv, readonly, env, stdin, wall_seconds, limits)
    if warm is not None:  # a run started before its job (:mod:`.early_start`)
        ran = early_start.give(warm.key, stdin, wall_seconds, env, limits)
        if ran is not None:
            return ran
    if require_isolation() == CONTAINER:
        return container.run_in_container(
            argv, readonly, env, stdin, wall_seconds, limits, CHANNEL_VARIABLE
        )
    if warm is not None:
        found = templates.template_for(
            warm.key, warm.bin_inside, readonly, env, limits, warm.modules
        )
        if found is not None:
            try:
                return found.run(env, stdin, wall_seconds, limits)
            except template.TemplateUnavailable:
                pass  # it ended under this run: this one starts afresh, the next a new template
    return bubblewrap.run_bubblewrap(argv, readonly, env, stdin, wall_seconds, limits)
