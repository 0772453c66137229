"""Grading on a real local Dask cluster: a ``dask scheduler`` process and two ``dask worker``
processes (``--nworkers 1 --nthreads 1``, on 127.0.0.1 only), secured with TLS by the
certificate ``python -m autograder cluster-certificates`` makes, driven by ``grade-all
--scheduler tls://... --certificates DIR``. The class is small (each real grading takes seconds
on a 2-core machine): copies of the reference (full marks), of the untouched release (0), of a
notebook whose ``act`` raises (policy 0, the rest full) and of the corpus's ``reach_scheduler``
attack, under different student names. A client without the certificate is refused.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.core.cluster.security import cluster_security, make_certificates
from autograder.core.isolation.bubblewrap import bwrap_works
from tests.submissions.course import course_submission
from tests.submissions.hostile import hostile_submission
from tests.test_grading_sandbox import FULL, RELEASE, ROOT

distributed = pytest.importorskip("distributed")  # CI installs it (requirements.txt)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BIN = Path(sys.executable).parent
ZERO = dict.fromkeys(FULL, 0.0)
NO_POLICY = {**FULL, "policy": 0}
BROKEN_ACT = (
    "def _broken_act(self, inputs):\n    raise RuntimeError('bug')\nPolicy.act = _broken_act"
)
SLEEP = "import time as _time\n_time.sleep(8)"
ENV = {**os.environ, "A2C_GRADER_TIME_SCALE": "3"}  # a loaded 2-core machine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalCluster:
    """A scheduler and ``workers`` worker processes on 127.0.0.1; :meth:`stop` ends them all."""

    def __init__(
        self,
        folder: Path,
        workers: int,
        worker_env: dict[str, str] | None = None,
        certificates: Path | None = None,
    ):
        scheme = "tls" if certificates is not None else "tcp"
        self.address = f"{scheme}://127.0.0.1:{_free_port()}"
        self.certificates = certificates
        tls: tuple[str, ...] = ()
        if certificates is not None:
            cert, key = str(certificates / "cert.pem"), str(certificates / "key.pem")
            tls = ("--protocol", "tls", "--tls-ca-file", cert, "--tls-cert", cert, "--tls-key", key)
        self.procs: list[subprocess.Popen] = []
        folder.mkdir(parents=True, exist_ok=True)
        try:
            self._start(
                folder,
                "scheduler",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                self.address.rsplit(":", 1)[1],
                "--no-dashboard",
                *tls,
            )
            for index in range(workers):
                self._start(
                    folder,
                    f"worker{index}",
                    "worker",
                    self.address,
                    "--host",
                    "127.0.0.1",
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--preload",
                    "autograder.core.cluster.worker",
                    "--local-directory",
                    str(folder / f"scratch{index}"),
                    *tls,
                    env=worker_env,
                )
            security = cluster_security(certificates) if certificates is not None else None
            self.client = distributed.Client(
                self.address, timeout=60, set_as_default=False, security=security
            )
            self.client.wait_for_workers(workers, timeout=180)
        except BaseException:
            self.stop()
            raise

    def _start(self, folder: Path, log: str, *args: str, env: dict[str, str] | None = None):
        with (folder / f"{log}.log").open("wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [str(BIN / "dask"), *args],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env or ENV,
                    cwd=folder,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        if getattr(self, "client", None) is not None:
            self.client.close(timeout=10)
        for proc in reversed(self.procs):  # workers first, then the scheduler
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two workers and a scheduler, all with the certificate the kit's command made."""
    assert bwrap_works(), "the workers grade in the bubblewrap sandbox"
    folder = tmp_path_factory.mktemp("cluster")
    made = subprocess.run(
        [sys.executable, "-m", "autograder", "cluster-certificates", "certificates"],
        cwd=folder, capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    assert made.returncode == 0 and "dask scheduler --protocol tls" in made.stdout, made.stderr
    certificates = folder / "certificates"
    assert stat.S_IMODE(certificates.stat().st_mode) == 0o700
    assert stat.S_IMODE((certificates / "key.pem").stat().st_mode) == 0o600
    local = LocalCluster(folder, workers=2, certificates=certificates)
    yield local
    local.stop()


def _argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "autograder", "grade-all", "inbox", "--out", *args]


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 400):
    return subprocess.run(
        _argv(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or ENV,
    )


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "grades.csv").open() as table:
        return list(csv.DictReader(table))


def _scores(row: dict[str, str]) -> dict[str, float]:
    return {key: float(row[key]) for key in FULL}


def _class(inbox: Path, names: dict[str, str]) -> None:
    """Write one notebook per student: ``"reference"``, ``"release"``, ``"no_policy"``,
    ``"slow"`` (the reference, whose model cell sleeps 8 s: a kill lands mid-grading) or
    ``"attack"`` (the corpus's ``reach_scheduler``)."""
    inbox.mkdir(parents=True)
    for student, kind in names.items():
        if kind == "release":
            shutil.copyfile(RELEASE, inbox / f"{student}.ipynb")
        elif kind == "attack":
            nbformat.write(hostile_submission("reach_scheduler"), inbox / f"{student}.ipynb")
        else:
            append = {"no_policy": {"policy": BROKEN_ACT}, "slow": {"model": SLEEP}}
            nb = course_submission(append=append.get(kind))
            nbformat.write(nb, inbox / f"{student}.ipynb")


def test_cluster_grades_the_class_like_the_local_pool(cluster, tmp_path):
    """Five students through two Dask workers over TLS get the scores the local pool gives each
    kind (the suite's local gradings assert the same: full marks, 0, the policy's 0), one row
    each (two identical notebooks under two names), feedback written here (a machine without
    bwrap), and a progress bar that shows the workers; the notebook that tries to reach the
    scheduler and patch the workers gets 0, and so does no one else's grade change."""
    by_kind = {"reference": FULL, "release": ZERO, "no_policy": NO_POLICY, "attack": ZERO}
    names = {"alice": "reference", "bob": "reference", "carol": "release", "erin": "no_policy"}
    names["mallory"] = "attack"  # finds the scheduler's address, connects, patches the workers
    _class(tmp_path / "inbox", names)
    no_bwrap = {**ENV, "PATH": str(BIN)}  # the instructor's machine needs no sandbox
    done = _cli(
        "out", "--scheduler", cluster.address, "--certificates", str(cluster.certificates),
        cwd=tmp_path, env=no_bwrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows(tmp_path / "out")
    assert sorted(row["student"] for row in rows) == sorted(names)
    for row in rows:
        assert row["status"] == "graded" and row["sandboxed"] == "yes", row
        assert _scores(row) == by_kind[names[row["student"]]], row
        # the release and the attack (the release plus code) leave part 8 as the stub: 0
        stub = names[row["student"]] in ("release", "attack")
        assert row["discussion"] == ("0" if stub else "not graded yet"), row
        assert (tmp_path / "out" / "feedback" / f"{row['student']}.html").is_file()
    assert "workers" in done.stderr and "busy" in done.stderr  # the progress bar


def test_regrade_on_the_cluster_records_only_who_moved(cluster, tmp_path):
    """``regrade --scheduler``: after a2c's points go from 4 to 6 in the source, the kept files
    are assessed again on the workers; the reference's a2c moves to 6, the release's 0 stays
    and its row is left as it was (graded_at included) but for full marks, 17 in every row (the
    dry run's writing nothing is tested without a cluster, tests/test_regrading.py)."""
    _class(tmp_path / "inbox", {"alice": "reference", "carol": "release"})
    cert = ("--scheduler", cluster.address, "--certificates", str(cluster.certificates))
    no_bwrap = {**ENV, "PATH": str(BIN)}  # the instructor's machine needs no sandbox
    first = _cli("out", "--no-feedback", *cert, cwd=tmp_path, env=no_bwrap)
    assert first.returncode == 0, first.stderr[-3000:]
    before = {row["student"]: row for row in _rows(tmp_path / "out")}
    source = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    for cell in source.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_a2c":
            cell.metadata["nbgrader"]["points"] = 6
    nbformat.write(source, tmp_path / "changed.ipynb")
    argv = [sys.executable, "-m", "autograder", "regrade", "out", "--source", "changed.ipynb"]
    done = subprocess.run(
        [*argv, "--no-feedback", *cert], cwd=tmp_path, capture_output=True, text=True,
        timeout=400, env=no_bwrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 of 2 student(s) changed" in done.stdout and "(a2c 4 -> 6)" in done.stdout, done.stdout
    assert "replaced alice" in done.stdout and "carol:" not in done.stdout
    after = {row["student"]: row for row in _rows(tmp_path / "out")}
    assert (after["alice"]["a2c"], after["alice"]["status"]) == ("6", "graded")
    assert after["carol"] == {**before["carol"], "max_total": "17"}  # full marks 15 -> 17
    assert "full marks 15 -> 17 in every row" in done.stdout


@pytest.mark.rom
def test_regrade_on_the_cluster_keeps_the_agents_file_and_verified_score(cluster, tmp_path):
    """A course that gives the agent points, graded on the workers: alice's agent came as
    a2c_agent.json beside her notebook, bob's in its output. ``regrade --scheduler`` with
    nothing changed moves nobody: the workers get alice's agent from the copy kept beside her
    received notebook (without it she would lose her agent points) and both students' recorded
    verified scores (a new draw would move their agent points)."""
    from tests.test_regrading import _source_with_agent_points, agent_class

    agent_class(tmp_path / "inbox")
    source = _source_with_agent_points(tmp_path)
    cert = ("--scheduler", cluster.address, "--certificates", str(cluster.certificates))
    no_bwrap = {**ENV, "PATH": str(BIN)}
    first = _cli("out", "--no-feedback", "--source", str(source), *cert, cwd=tmp_path,
                 env=no_bwrap)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    before = {row["student"]: row for row in _rows(tmp_path / "out")}
    # the workers play the grader's 8 games of 1,000 steps: the untrained agent scores some
    # points there, which it would lose with its agent (alice) or a new draw would move
    assert all(float(row["agent_points"]) > 0 for row in before.values()), before
    argv = [sys.executable, "-m", "autograder", "regrade", "out", "--source", str(source)]
    done = subprocess.run(
        [*argv, "--no-feedback", *cert], cwd=tmp_path, capture_output=True, text=True,
        timeout=400, env=no_bwrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "0 of 2 student(s) changed" in done.stdout, done.stdout
    after = {row["student"]: row for row in _rows(tmp_path / "out")}
    assert after == before


def test_the_cluster_refuses_whoever_lacks_its_certificate(cluster, tmp_path):
    """A TLS client that trusts the cluster but has no certificate of its own, one with
    another certificate and a plain TCP client are refused at the TLS scheduler; grade-all
    refuses a tls:// scheduler without --certificates and a plain tcp:// one off this machine,
    unless --insecure-cluster, which says what it exposes."""
    port = int(cluster.address.rsplit(":", 1)[1])
    trusting = ssl.create_default_context(cafile=str(cluster.certificates / "cert.pem"))
    trusting.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with trusting.wrap_socket(raw) as tls:  # TLS 1.3: the refusal comes on the read
                tls.sendall(b"\x00" * 64)
                refused = tls.recv(64) == b""
        except (ssl.SSLError, ConnectionError):
            refused = True
    assert refused, "a TLS client without the cluster's certificate was answered"
    other = tmp_path / "other"
    make_certificates(other)
    for address, security in (
        (cluster.address, cluster_security(other)),
        (f"tcp://127.0.0.1:{port}", None),
    ):
        with pytest.raises((OSError, TimeoutError)):
            distributed.Client(address, timeout=5, set_as_default=False, security=security)
    _class(tmp_path / "inbox", {"zoe": "release"})
    no_certificates = _cli("out", "--scheduler", cluster.address, cwd=tmp_path, timeout=120)
    assert no_certificates.returncode == 2, no_certificates.stderr[-2000:]
    assert "speaks TLS: pass the cluster's certificates" in no_certificates.stderr
    remote = "tcp://192.0.2.1:8786"  # not this machine: refused before any connection
    refused = _cli("out", "--scheduler", remote, cwd=tmp_path, timeout=120)
    assert refused.returncode == 2 and "refusing the plain tcp:// scheduler" in refused.stderr
    allowed = _cli("out", "--scheduler", remote, "--insecure-cluster", cwd=tmp_path, timeout=120)
    assert "--insecure-cluster" in allowed.stderr and "change every grade" in allowed.stderr
    assert allowed.returncode == 1 and "cannot reach the Dask scheduler" in allowed.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_plain_scheduler_listening_beyond_the_loopback_is_refused_at_its_loopback(tmp_path):
    """``dask scheduler`` started with its defaults listens on every interface: grade-all,
    given its loopback address ``tcp://127.0.0.1:P``, asks where it really listens and refuses
    it (exit 2, nothing graded); the same scheduler started with ``--host 127.0.0.1`` is
    accepted by the check, and ``--insecure-cluster`` lets the instructor take the risk."""
    from autograder.core.cluster.security import (
        ClusterSecurityError,
        check_listening,
        scheduler_sockets,
    )

    _class(tmp_path / "inbox", {"zoe": "release"})
    for host, refused in ((None, True), ("127.0.0.1", False)):
        port = _free_port()
        args = [str(BIN / "dask"), "scheduler", "--port", str(port), "--no-dashboard"]
        args += ["--host", host] if host else []
        log = (tmp_path / f"scheduler-{port}.log").open("wb")
        scheduler = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=ENV, start_new_session=True
        )
        try:
            address = f"tcp://127.0.0.1:{port}"
            client = distributed.Client(address, timeout=60, set_as_default=False)
            try:
                hosts = client.run_on_scheduler(scheduler_sockets)
            finally:
                client.close()
            if refused:
                with pytest.raises(ClusterSecurityError, match="every interface"):
                    check_listening(address, hosts)
                done = _cli("out", "--scheduler", address, cwd=tmp_path, timeout=120)
                assert done.returncode == 2, done.stderr[-2000:]
                assert "it listens on every interface, not only on the loopback" in done.stderr
                assert not (tmp_path / "out" / "grades.csv").exists()
            else:
                assert hosts == ["127.0.0.1"]
                check_listening(address, hosts)
        finally:
            os.killpg(scheduler.pid, signal.SIGTERM)
            scheduler.wait(timeout=30)
            log.close()


def _alone_on(client, student: str, timeout: float = 240) -> str:
    """The worker whose only task is ``student``'s grading, once it has run a moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker, keys in client.processing().items():
            if len(keys) == 1 and f"-{student}-" in str(keys[0]):
                time.sleep(1.5)  # into the grading
                if [str(k) for k in client.processing().get(worker, [])] == [str(keys[0])]:
                    return worker
        time.sleep(0.2)
    raise AssertionError(f"{student}'s grading never ran alone on a worker")


def test_a_killed_worker_costs_a_retry_never_a_student(cluster, tmp_path):
    """SIGKILL the worker grading b, twice, then the one grading c, once: b is `not graded`
    (KilledWorker), c is graded on another worker, and every student has exactly one row."""
    names = {"a": "release", "b": "slow", "c": "slow", "d": "no_policy"}
    expected = {"a": ZERO, "c": FULL, "d": NO_POLICY}
    _class(tmp_path / "inbox", names)
    cluster.client.wait_for_workers(2, timeout=180)
    with (tmp_path / "stderr.txt").open("w") as err:
        argv = _argv("out", "--no-feedback", "--scheduler", cluster.address)
        argv += ["--certificates", str(cluster.certificates)]
        grading = subprocess.Popen(
            argv, cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            for student in ("b", "b", "c"):
                worker = _alone_on(cluster.client, student)
                pid = cluster.client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)  # the worker process, mid-grading
            assert grading.wait(timeout=400) == 1  # b is not graded
        finally:
            if grading.poll() is None:
                grading.kill()
    stderr = (tmp_path / "stderr.txt").read_text()
    rows = _rows(tmp_path / "out")
    assert sorted(row["student"] for row in rows) == sorted(names), rows  # none lost or doubled
    by_name = {row["student"]: row for row in rows}
    assert by_name["b"]["status"].startswith("not graded: its grading killed 2 workers")
    assert "KilledWorker" in by_name["b"]["status"] and "not graded: b" in stderr
    for student, scores in expected.items():
        assert by_name[student]["status"] == "graded", (by_name[student], stderr[-2000:])
        assert _scores(by_name[student]) == scores, by_name[student]


def test_a_worker_without_bubblewrap_refuses_unless_no_sandbox(tmp_path):
    """A worker whose PATH has no `bwrap`: a clear refusal naming it, no grade; with
    --no-sandbox it grades, and the row says unsandboxed."""
    # the venv's tools only: no bwrap (and no container mode, which root would otherwise use)
    bare = {**ENV, "PATH": str(BIN), "A2C_ISOLATION": "bubblewrap"}
    broken = LocalCluster(tmp_path / "cluster", workers=1, worker_env=bare)
    try:
        _class(tmp_path / "inbox", {"zoe": "reference"})
        refused = _cli("out", "--no-feedback", "--scheduler", broken.address, cwd=tmp_path)
        assert refused.returncode == 1, refused.stderr[-3000:]
        assert "cannot start the sandbox" in refused.stderr and "bubblewrap" in refused.stderr
        assert "worker tcp://127.0.0.1:" in refused.stderr
        (row,) = _rows(tmp_path / "out")
        assert row["status"].startswith("not graded: grading stopped (WorkerRefused"), row
        assert row["total"] == ""

        argv = ("out2", "--no-feedback", "--no-sandbox", "--scheduler", broken.address)
        allowed = _cli(*argv, cwd=tmp_path)
        (row,) = _rows(tmp_path / "out2")
        assert row["status"].startswith("unsandboxed") and row["sandboxed"] == "NO", row
        assert "NOT SANDBOXED" in row["notes"], allowed.stderr[-2000:]
    finally:
        broken.stop()


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path):
    """A2C_DASK_SCHEDULER names a port nobody listens on: exit 1 within the connect timeout,
    the message names the address, and no grade is written."""
    _class(tmp_path / "inbox", {"zoe": "release"})
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    env = {**ENV, "A2C_DASK_SCHEDULER": address}
    done = _cli("out", cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"cannot reach the Dask scheduler at {address}" in done.stderr
    assert time.monotonic() - start < 60
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_worker_refuses_container_mode_without_a_network_fence(monkeypatch):
    """A worker where bubblewrap cannot start would grade in container mode; where the kernel
    has no Landlock TCP rule (before Linux 6.7) and no network namespace can be made, the
    notebook could connect to the scheduler: the worker refuses, saying why and what to do.
    With a fence it grades."""
    from autograder.core import isolation
    from autograder.core.cluster import worker
    from autograder.core.cluster.connection import WorkerRefused
    from autograder.core.isolation import container
    from autograder.core.package_digest import package_files

    monkeypatch.setattr(isolation, "require_isolation", lambda: "container")
    monkeypatch.setattr(container, "network_fence", lambda: "")
    with pytest.raises(WorkerRefused, match="container mode .* off the network"):
        worker.check_worker_isolation("worker tcp://10.0.0.7:4000")
    settings = {"isolate": True, "package": package_files()}
    with pytest.raises(WorkerRefused, match="Landlock"):
        worker._build_assessor(settings, "worker tcp://10.0.0.7:4000")
    for fence in ("landlock", "network namespace"):
        monkeypatch.setattr(container, "network_fence", lambda fence=fence: fence)
        worker.check_worker_isolation("worker tcp://10.0.0.7:4000")


def test_certificates_stay_closed_and_are_never_overwritten(tmp_path):
    """The kit's certificate folder is the owner's only; a key other users can read is refused
    (whoever reads it joins the cluster), and a folder that holds files is never written over."""
    from autograder.core.cluster.security import ClusterSecurityError

    cert, key = make_certificates(tmp_path / "tls")
    assert (stat.S_IMODE(os.stat(tmp_path / "tls").st_mode), stat.S_IMODE(os.stat(key).st_mode)) == (
        0o700,
        0o600,
    )
    assert cluster_security(tmp_path / "tls").require_encryption
    before = key.read_bytes()
    with pytest.raises(ClusterSecurityError, match="not empty"):
        make_certificates(tmp_path / "tls")
    assert key.read_bytes() == before and cert.is_file()
    key.chmod(0o644)
    with pytest.raises(ClusterSecurityError, match="can be read by other users"):
        cluster_security(tmp_path / "tls")
