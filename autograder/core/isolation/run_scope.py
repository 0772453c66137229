"""One run's resources and how they are given back, for every isolation mode.

A run of any mode (bubblewrap, container, unsandboxed) holds the same things: a user id of its
own (a :class:`~.leases.UidLease`, where the grader can switch users) with a staging folder in
root's folder (a bubblewrap template, :mod:`.template`, holds them in a scope of its own for its
whole life; each student forked from it has a scope without them), a cgroup (:mod:`.cgroups`: memory, processes, CPU accounting) and the pipes to
the job (:class:`~.supervision.Pipes`). :class:`RunScope` takes them in that order and gives
them back in the reverse one, however the run ends (the job's result, a grader error, a
``KeyboardInterrupt``), every step even when an earlier one fails:

1. ``stop_user``: the mode's own end of everything the user started (container mode kills the
   whole user, for a process that left the cgroup);
2. the pipes closed, the cgroup removed, the staging folder deleted;
3. ``clear_user``: what the user may have left outside the staging folder (container mode: its
   files in shared folders, its System V IPC);
4. the user id given back (:meth:`~.leases.UidLease.end` ends every process of the user first),
   so no later run meets anything of this one.

The modes differ only in how they build the job's view and command; that stays in their
modules, and each calls :meth:`RunScope.supervise` and :meth:`RunScope.result`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from autograder.core.isolation.cgroups import Cgroup, run_name
from autograder.core.isolation.contract import SandboxLimits, SandboxResult
from autograder.core.isolation.cpu_meter import CpuMeter
from autograder.core.isolation.leases import UidLease, root_folder
from autograder.core.isolation.supervision import JobInput, Pipes, RunEnd, supervise

__all__ = ["RunScope"]


class RunScope:
    """The resources of one run (see the module docstring), as a context manager.

    Args:
        limits: the run's limits (its cgroup's and :func:`~.supervision.supervise`'s).
        staging: ``(kind, mode)`` of the run's staging folder (:meth:`~.leases.UidLease.staging`),
            which also leases the run a user id; ``None``: no user of its own (bubblewrap
            started by a plain user, inside its own user namespace).
        cgroup_prefix: the start of the cgroup's name (container mode names its own).
        stop_user: called with the user id first when the run ends.
        clear_user: called with the user id after the staging folder is gone, before the id
            is given back.
    """

    def __init__(
        self,
        limits: SandboxLimits,
        staging: tuple[str, int] | None = None,
        cgroup_prefix: str = "",
        stop_user: Callable[[int], None] | None = None,
        clear_user: Callable[[int], None] | None = None,
    ) -> None:
        self.limits = limits
        self._staging_kind = staging
        self._cgroup_prefix = cgroup_prefix
        self._stop_user, self._clear_user = stop_user, clear_user
        self.lease: UidLease | None = None
        self.staging: Path | None = None
        self.cgroup: Cgroup | None = None
        self.pipes: Pipes | None = None
        self._stack: ExitStack | None = None

    @property
    def uid(self) -> int | None:
        """The run's own user id, or ``None`` where it has none."""
        return self.lease.uid if self.lease is not None else None

    def __enter__(self) -> RunScope:
        with ExitStack() as stack:  # what is taken is given back if a later step fails
            if self._staging_kind is not None:
                self.lease = UidLease(root_folder())
                stack.callback(self.lease.end)
                if self._clear_user is not None:
                    stack.callback(self._clear_user, self.lease.uid)
                kind, mode = self._staging_kind
                self.staging = self.lease.staging(kind, mode)
                stack.callback(shutil.rmtree, self.staging, ignore_errors=True)
            name = run_name() if self.uid is None else f"{run_name()}-{self.uid}"
            self.cgroup = Cgroup(f"{self._cgroup_prefix}{name}", self.limits)
            stack.callback(self.cgroup.remove)
            self.pipes = Pipes()
            stack.callback(self.pipes.close)
            if self._stop_user is not None and self.uid is not None:
                stack.callback(self._stop_user, self.uid)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        assert self._stack is not None
        self._stack.__exit__(*exc_info)

    def supervise(
        self,
        popen: dict[str, Any] | Callable[[Pipes], Any],
        stdin: bytes | JobInput,
        wall_seconds: float,
        stop: Callable[[Any], None],
        meter: CpuMeter | None = None,
    ) -> RunEnd:
        """:func:`~.supervision.supervise` on this run's pipes, limits and cgroup (``popen``:
        a command's arguments, or what starts the run's first process on the pipes, such as a
        student forked from a template)."""
        assert self.pipes is not None and self.cgroup is not None
        return supervise(
            self.pipes, popen, stdin, wall_seconds, self.limits, self.cgroup, stop, meter
        )

    def result(
        self, outcome: RunEnd, wall_seconds: float, *, sandboxed: bool, limits: str, isolation: str
    ) -> SandboxResult:
        """The :class:`~.contract.SandboxResult` of ``outcome``, with this run's user id."""
        return SandboxResult(
            **vars(outcome),
            sandboxed=sandboxed,
            limits=limits,
            uid=self.uid,
            wall_seconds=wall_seconds,
            isolation=isolation,
        )
