"""``python -m autograder cluster-certificates DIR``, and the cluster ``grade-all`` and ``regrade``
grade on (``--scheduler``, ``--certificates``, ``--insecure-cluster``).

With ``--scheduler`` (or ``A2C_DASK_SCHEDULER``) the submissions are graded on that Dask
cluster and recorded here (:mod:`autograder.core.cluster`; ``pip install -e '.[cluster]'``),
which speaks TLS with the certificate ``cluster-certificates`` makes (``--certificates``, or
``A2C_DASK_CERTIFICATES``); a plain ``tcp://`` scheduler is refused unless it is on this
machine's loopback or ``--insecure-cluster`` is given (:mod:`autograder.core.cluster.security`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["add_cluster_options", "add_parser", "cluster_session", "run"]


def add_parser(commands: Any) -> None:
    """The ``cluster-certificates`` command."""
    certificates = commands.add_parser(
        "cluster-certificates",
        help="make the TLS certificate that secures a grading cluster (docs/cluster.md)",
    )
    certificates.add_argument(
        "folder", type=Path, help="a new folder for cert.pem and key.pem (closed to others)"
    )
    certificates.set_defaults(run=run)


def add_cluster_options(sub: argparse.ArgumentParser, helps: bool = True) -> None:
    """``--scheduler``, ``--certificates`` and ``--insecure-cluster`` on ``sub`` (``helps``:
    with their full help; else "as for grade-all")."""
    sub.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="grade on this Dask distributed cluster, secured with TLS (tls://10.0.0.5:8786, "
        "with --certificates; plain tcp:// only on 127.0.0.1; default: $A2C_DASK_SCHEDULER, "
        "else this machine); needs pip install -e '.[cluster]'"
        if helps
        else "as for grade-all",
    )
    sub.add_argument(
        "--certificates",
        type=Path,
        default=None,
        metavar="DIR",
        help="the cluster's TLS certificates, made by `python -m autograder "
        "cluster-certificates DIR` (default: $A2C_DASK_CERTIFICATES)"
        if helps
        else "as for grade-all",
    )
    sub.add_argument(
        "--insecure-cluster",
        action="store_true",
        help="allow a plain tcp:// scheduler on another machine: anyone who reaches it can read "
        "the hidden tests and change the grades (a network only you can reach)"
        if helps
        else "as for grade-all",
    )


def run(args: argparse.Namespace) -> int:
    """Make the certificates in ``args.folder`` and say how to start the cluster with them."""
    from autograder.core.cluster.security import make_certificates

    cert, key = make_certificates(args.folder)
    flags = f"--tls-ca-file {cert} --tls-cert {cert} --tls-key {key}"
    print(
        f"{cert} and {key} written (only your user can read them). Copy the folder to the "
        "scheduler's and the workers' machines (scp -rp), nowhere else, and start them with "
        f"TLS:\n  dask scheduler --protocol tls --port 8786 --dashboard-address 127.0.0.1:8787 "
        f"{flags}\n  dask worker tls://SCHEDULER_HOST:8786 --no-dashboard --preload "
        f"autograder.core.cluster.worker {flags}\nthen grade with: python -m autograder grade-all ... "
        f"--scheduler tls://SCHEDULER_HOST:8786 --certificates {args.folder}"
    )
    return 0


@contextlib.contextmanager
def cluster_session(args: argparse.Namespace) -> Iterator[Any]:
    """A client of ``--scheduler`` (or of the scheduler the environment names) for the command's
    time, closed after it; None when no scheduler is named (grading stays on this machine)."""
    from autograder.core.cluster.connection import scheduler_address

    address = scheduler_address(args.scheduler)
    client = _cluster_client(address, args) if address else None
    try:
        yield client
    finally:
        if client is not None:
            client.close()


def _cluster_client(address: str, args: argparse.Namespace) -> Any:
    """A client of the scheduler at ``address``, by the rule of
    :func:`~autograder.core.cluster.security.check_scheduler_address`."""
    import os

    from autograder.core.cluster.connection import connect
    from autograder.core.cluster.security import (
        CERTIFICATES_VARIABLE,
        check_listening,
        check_scheduler_address,
        cluster_security,
        scheduler_sockets,
    )

    named = args.certificates or os.environ.get(CERTIFICATES_VARIABLE, "").strip() or None
    certificates = Path(named).expanduser() if named else None
    address, warning = check_scheduler_address(address, certificates, args.insecure_cluster)
    if warning:
        print(warning, file=sys.stderr)
    tls = address.startswith("tls://")
    client = connect(address, security=cluster_security(certificates) if tls else None)
    if not tls and not args.insecure_cluster:  # where it really listens, not what was typed
        try:
            check_listening(address, client.run_on_scheduler(scheduler_sockets))
        except BaseException:
            client.close()
            raise
    return client
