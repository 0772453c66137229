"""Who may talk to the grading cluster: Dask's own TLS, with a certificate the kit makes.

A Dask scheduler runs what any client sends it, and the workers hold the reference and the
hidden tests and compute the grades: whoever reaches an open scheduler can read the tests or
change every grade. So a grading cluster speaks TLS with mutual authentication (Dask's
:class:`distributed.security.Security`, ``tls://`` addresses): the scheduler, every worker and
the instructor's ``grade-all`` present the course's certificate, and a process without its key
is refused at the handshake.

* :func:`make_certificates` (``python -m autograder cluster-certificates DIR``) writes a new
  self-signed certificate and its key into ``DIR`` (made ``0700``, the files ``0600``): the
  certificate is its own authority, so only holders of ``key.pem`` join. Copy the folder to the
  machines that run the scheduler and the workers (``scp -rp``), nowhere else.
* :func:`cluster_security` reads such a folder into a ``Security`` for ``grade-all`` (or for
  ``dask-jobqueue``'s ``security=``), after checking that the key is closed to other users.
* :func:`check_scheduler_address` is ``grade-all``'s rule: a ``tls://`` scheduler needs the
  certificates; a plain ``tcp://`` one only on this machine's loopback (an SSH tunnel, a
  scheduler on this machine), unless the instructor passes ``--insecure-cluster``, which then
  says what it exposes;
* :func:`check_listening` is the same rule on where a plain scheduler really listens, which
  the address typed does not tell: ``dask scheduler`` started with its defaults listens on
  every interface, and ``tcp://127.0.0.1:8786`` reaches it as well as anyone on the network
  does. ``grade-all`` asks the scheduler for its listening sockets
  (:func:`scheduler_sockets`, run there) once connected, and refuses unless every one is on a
  loopback.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "CERTIFICATE",
    "CERTIFICATES_VARIABLE",
    "KEY",
    "ClusterSecurityError",
    "check_listening",
    "check_scheduler_address",
    "cluster_security",
    "insecure_warning",
    "make_certificates",
    "scheduler_sockets",
]

CERTIFICATE, KEY = "cert.pem", "key.pem"  #: the files of a certificates folder
CERTIFICATES_VARIABLE = "A2C_DASK_CERTIFICATES"  #: the folder when --certificates is left out
VALID_DAYS = 400  #: a certificate's life: a semester's grading with room to spare
_NAME = "a2c-grading-cluster"


class ClusterSecurityError(ValueError):
    """Certificates missing, open to others, or an address this kit will not use."""


def make_certificates(folder: Path, days: int = VALID_DAYS) -> tuple[Path, Path]:
    """Write a new self-signed certificate and its key (EC P-256) into the new or empty
    ``folder`` (mode ``0700``, files ``0600``); the certificate's and the key's paths.

    Raises:
        ClusterSecurityError: ``folder`` holds files already (never overwritten).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise ClusterSecurityError(
            f"{folder} is not empty: give a new folder (certificates are never overwritten; "
            "the cluster's processes use the ones they were started with)"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _NAME)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(_NAME)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    written = []
    for file_name, data in (
        (KEY, key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )),
        (CERTIFICATE, cert.public_bytes(serialization.Encoding.PEM)),
    ):  # fmt: skip
        path = folder / file_name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        written.append(path)
    return written[1], written[0]


def _check_closed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / CERTIFICATE, folder / KEY
    for path in (cert, key):
        if not path.is_file():
            raise ClusterSecurityError(
                f"{path} is missing: make the cluster's certificates with `python -m autograder "
                "cluster-certificates DIR` and pass that folder (--certificates DIR)"
            )
    mode = os.stat(key).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ClusterSecurityError(
            f"{key} can be read by other users (mode {stat.S_IMODE(mode):o}): whoever reads it "
            f"can join the grading cluster; chmod 600 {key} (and 700 its folder)"
        )
    return cert, key


def cluster_security(folder: Path) -> Any:
    """A ``distributed.security.Security`` with the certificate of ``folder``, encryption
    required, for a client (``grade-all``) or a cluster manager (dask-jobqueue's
    ``security=``).

    Raises:
        ClusterSecurityError: a file is missing, or the key can be read by other users.
    """
    from distributed.security import Security

    cert, key = _check_closed(Path(folder).expanduser())
    paths = {f"tls_{role}_{kind}": str(path) for role in ("client", "scheduler", "worker")
             for kind, path in (("cert", cert), ("key", key))}  # fmt: skip
    return Security(tls_ca_file=str(cert), require_encryption=True, **paths)


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def insecure_warning(address: str) -> str:
    """What ``--insecure-cluster`` exposes, said to the instructor."""
    return (
        f"warning: --insecure-cluster: the scheduler at {address} speaks plain TCP and runs "
        "whatever any client that reaches it sends: anyone on that network (a student on the "
        "campus network included) can read the reference and the hidden tests on the workers "
        "and change every grade they compute. Use it only on a network that only you can "
        "reach; otherwise make certificates (python -m autograder cluster-certificates DIR) "
        "and start the cluster with TLS (docs/cluster.md)"
    )


def check_scheduler_address(
    address: str, certificates: Path | None, insecure: bool
) -> tuple[str, str]:
    """``grade-all``'s rule for a scheduler's ``address`` (module docstring): the address as
    Dask reads it and a warning to show (``""``: none), or :class:`ClusterSecurityError`
    saying what to do instead."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    scheme = scheme.lower()
    host = rest.rsplit(":", 1)[0] if ":" in rest else rest
    if scheme == "tls":
        if certificates is None:
            raise ClusterSecurityError(
                f"the scheduler at {address} speaks TLS: pass the cluster's certificates "
                f"(--certificates DIR, or ${CERTIFICATES_VARIABLE}), the folder made by "
                "`python -m autograder cluster-certificates DIR`"
            )
        return f"tls://{rest}", ""
    if scheme != "tcp":
        raise ClusterSecurityError(
            f"scheduler address {address!r}: grade-all speaks tls:// (or tcp:// to this "
            f"machine's loopback), not {scheme}://"
        )
    if certificates is not None and not _loopback(host):
        raise ClusterSecurityError(
            "--certificates is given but the scheduler's address is plain tcp://: start the "
            "scheduler with TLS (docs/cluster.md) and give its tls:// address"
        )
    if not _loopback(host) and not insecure:
        raise ClusterSecurityError(
            f"refusing the plain tcp:// scheduler at {address}: it is not on this machine's "
            "loopback, so whoever reaches it could read the hidden tests and change the grades. "
            "Secure the cluster with TLS (python -m autograder cluster-certificates DIR; "
            "docs/cluster.md), reach it through an SSH tunnel on 127.0.0.1, or, on a network "
            "only you can reach, pass --insecure-cluster"
        )
    return f"tcp://{rest}", "" if _loopback(host) else insecure_warning(address)


def scheduler_sockets(dask_scheduler: Any = None) -> list[str]:
    """The hosts the scheduler's listening sockets are bound to (``0.0.0.0`` or ``::``: every
    interface); run on the scheduler (``Client.run_on_scheduler``), which passes itself as
    ``dask_scheduler``."""
    hosts: list[str] = []
    for listener in getattr(dask_scheduler, "listeners", []):
        server = getattr(listener, "tcp_server", None)
        sockets = list(getattr(server, "_sockets", {}).values()) if server is not None else []
        if sockets:
            hosts += [str(sock.getsockname()[0]) for sock in sockets]
        else:  # another kind of listener: where it says it listens
            hosts.append(str(listener.get_host_port()[0]))
    return hosts


def check_listening(address: str, hosts: list[str]) -> None:
    """Refuse (:class:`ClusterSecurityError`) a plain scheduler reached at ``address`` unless
    every host it listens on (``hosts``, :func:`scheduler_sockets`) is a loopback: listening
    beyond it, it runs whatever anyone on the network sends, whatever address was typed."""
    exposed = sorted({host for host in hosts if not _loopback(host)})
    if not hosts or exposed:
        named = {"every interface" if host in ("0.0.0.0", "::", "") else host for host in exposed}
        where = ", ".join(sorted(named)) or "nowhere it would say"
        raise ClusterSecurityError(
            f"refusing the plain tcp:// scheduler at {address}: it listens on {where}, not only "
            "on the loopback, so whoever reaches this machine could read the hidden tests and "
            "change the grades (a `dask scheduler` started without --host listens on every "
            "interface). Secure the cluster with TLS (python -m autograder cluster-certificates "
            "DIR; docs/cluster.md), or start the scheduler with `--host 127.0.0.1` (an SSH "
            "tunnel reaches it there), or, on a network only you can reach, pass "
            "--insecure-cluster"
        )
