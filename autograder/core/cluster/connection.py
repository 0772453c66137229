"""Reaching the grading cluster's scheduler, and the errors a cluster grading can end with.

``distributed`` is an optional dependency (``pip install -e '.[cluster]'``), imported only when
a scheduler is given (:func:`scheduler_address`: ``--scheduler`` or ``A2C_DASK_SCHEDULER``).
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "CONNECT_SECONDS",
    "SCHEDULER_VARIABLE",
    "ClusterError",
    "WorkerRefused",
    "connect",
    "distributed_module",
    "scheduler_address",
]

SCHEDULER_VARIABLE = "A2C_DASK_SCHEDULER"  #: the scheduler's address when --scheduler is left out
CONNECT_SECONDS = 10.0  #: how long to try reaching the scheduler


class ClusterError(RuntimeError):
    """The cluster cannot grade: no ``distributed``, an unreachable scheduler, a worker refused."""


class WorkerRefused(ClusterError):
    """A worker cannot grade at all (no sandbox, another instructor package); raised on it."""


def scheduler_address(given: str | None = None) -> str | None:
    """``given``, else ``$A2C_DASK_SCHEDULER``; ``None`` (grade on this machine) when neither."""
    return (given or os.environ.get(SCHEDULER_VARIABLE, "")).strip() or None


def distributed_module() -> Any:
    """The ``distributed`` package, or :class:`ClusterError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            "grading on a cluster needs Dask distributed, which is not installed here: "
            "pip install -e '.[cluster]' (or leave out --scheduler and "
            f"{SCHEDULER_VARIABLE} to grade on this machine)"
        ) from None
    return distributed


def connect(address: str, timeout: float = CONNECT_SECONDS, security: Any = None) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (with ``security``, a
    ``distributed.security.Security``, for a ``tls://`` one:
    :mod:`autograder.core.cluster.security`); :class:`ClusterError` if none answers within
    ``timeout`` seconds."""
    distributed = distributed_module()
    try:
        return distributed.Client(
            address, timeout=timeout, set_as_default=False, security=security
        )
    except (OSError, TimeoutError) as error:
        tls = (
            " and that it was started with the same certificates (--tls-cert, --tls-key)"
            if security is not None
            else ""
        )
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
            f"({type(error).__name__}: {str(error)[:200]}): check that `dask scheduler` runs "
            f"there{tls}, and that this machine can reach its host and port (firewall, VPN, SSH "
            f"tunnel); leave out --scheduler and {SCHEDULER_VARIABLE} to grade on this machine"
        ) from None
