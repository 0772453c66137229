"""Real notebooks graded the way an instructor grades: ``python -m autograder grade-all``.

Every notebook runs in the bubblewrap sandbox (CI installs it; without it these tests fail,
they do not skip). One class's worth of submissions is graded once (module fixture) and read
by several tests: the reference twice (a folder and a zip, Colab names), the untouched release,
a notebook whose parts misbehave each in its own way, one with deleted, duplicated and edited
cells, an unreadable file, and the hostile corpus (``tests/submissions/hostile.py``): attacks
that would have earned points if the grader ran next to the student's code, each with every
stub left unimplemented. The attacks meant to outlast their own grading are graded apart, one
at a time, each followed by an honest submission that must get its exact grade.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import site
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.core.isolation.bubblewrap import bwrap_works
from autograder.core.package_digest import NOTEBOOK_OUTPUTS
from tests.submissions.course import MISBEHAVING, course_submission
from tests.submissions.hostile import (
    ATTACKS,
    COSTLY,
    NOTEBOOK_ATTACKS,
    PERSISTENT,
    hostile_submission,
)

pytestmark = [pytest.mark.rom, pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "notebooks" / "a2c.ipynb"
FULL = {
    "model": 1,
    "policy": 2,
    "compute_value_targets": 3,
    "merge_time_batch": 2,
    "a2c": 4,
    "gae": 2,
}
TOKEN = f"a2c-hostile-{uuid.uuid4().hex[:12]}"


def _cli(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "A2C_GRADER_TIME_SCALE": "3"},  # a loaded 2-core machine
    )


def _rows(out: Path) -> dict[str, dict[str, str]]:
    return {row["student"]: row for row in csv.DictReader((out / "grades.csv").open())}


def _points(row: dict[str, str]) -> dict[str, float]:
    """The part scores of a row: its columns when graded, else read from the provisional note."""
    if row["status"] == "graded":
        return {key: float(row[key]) for key in FULL}
    return {}


def _snapshot() -> dict[str, str]:
    """Digests of the checkout's code and the Python environment's file list (less what running
    a course notebook in its own folder writes there, as a test beside this one may: the
    grader's own digest leaves those out too)."""
    found = {}
    for folder in ("autograder", "solutions", "course_lib", "notebooks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.name.endswith(NOTEBOOK_OUTPUTS):
                continue
            if path.is_file() and "__pycache__" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    for directory in {*site.getsitepackages(), sys.prefix}:
        for path in sorted(Path(directory).glob("*")):
            if path.suffix in (".pth", ".py") or path.name.startswith("sitecustomize"):
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _survivors() -> list[str]:
    """Command lines of live processes that carry the attacks' token."""
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if TOKEN in cmdline and str(os.getpid()) != proc.name:
            alive.append(cmdline)
    return alive


@pytest.fixture(scope="module")
def loopback_server():
    """A TCP server on the host's loopback that counts the connections it gets."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    hits: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    hits.append(conn.recv(100))
                except OSError:
                    hits.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_bubblewrap_sandbox_is_available():
    """Can the sandbox start here? (Debian: apt-get install -y bubblewrap; .ci/run does.)"""
    assert bwrap_works(), "bubblewrap is missing or cannot create namespaces"


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, loopback_server):
    assert bwrap_works(), "the hostile notebooks must only ever run inside the sandbox"
    port, _ = loopback_server
    folder = tmp_path_factory.mktemp("class")
    inbox = folder / "inbox"
    (inbox / "carol").mkdir(parents=True)
    nbformat.write(course_submission(), inbox / "alice.ipynb")
    (inbox / "carol" / "a2c (1).ipynb").write_bytes(RELEASE.read_bytes())
    nbformat.write(course_submission(**MISBEHAVING), inbox / "mallory.ipynb")
    repaired = course_submission()
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in repaired.cells]
    twin = nbformat.from_dict(json.loads(json.dumps(repaired.cells[ids.index("test_a2c")])))
    twin["id"] = "a2c-twin"
    repaired.cells.insert(ids.index("test_a2c"), twin)
    repaired.cells[ids.index("check_model")].source = "print('OK everything')"
    del repaired.cells[ids.index("test_policy")]
    nbformat.write(repaired, inbox / "dave.ipynb")
    (inbox / "garbage.ipynb").write_text("this is not json")
    for attack in [*ATTACKS, *NOTEBOOK_ATTACKS]:
        if attack not in PERSISTENT:
            nb = hostile_submission(attack, token=TOKEN, port=str(port), marker="/tmp/none")
            nbformat.write(nb, inbox / f"h_{attack}.ipynb")
    with zipfile.ZipFile(folder / "more.zip", "w") as bundle:
        bundle.writestr("Copy of a2c - bob.ipynb", nbformat.writes(course_submission()))
    before = _snapshot()
    done = _cli("grade-all", "inbox", "more.zip", "--out", "out", "--jobs", "2", cwd=folder)
    assert (folder / "out" / "grades.csv").is_file(), done.stderr[-3000:]
    return done, _rows(folder / "out"), folder / "out", before


def test_reference_full_marks_release_zero_identical_regrades(graded_class):
    """Reference 14 of 12 twice alike (folder and zip, Colab names); untouched release 0."""
    done, rows, _, _ = graded_class
    assert done.returncode == 1 and "garbage" in done.stderr, done.stderr[-3000:]
    assert rows["garbage"]["status"].startswith("unreadable")
    for name in ("alice", "bob"):
        assert rows[name]["status"] == "graded" and rows[name]["sandboxed"] == "yes", rows[name]
        assert _points(rows[name]) == FULL and rows[name]["total"] == "14"
        assert rows[name]["max_total"] == "15"  # full marks: 12 autograded + 3 for part 8 by hand
    assert rows["bob"]["file"].endswith("more.zip:Copy of a2c - bob.ipynb")
    assert rows["carol"]["status"] == "graded" and _points(rows["carol"]) == dict.fromkeys(
        FULL, 0.0
    )
    # part 8 left as the stub: scored 0 by nbgrader, no grading, as with --course
    assert rows["carol"]["discussion"] == "0" and rows["alice"]["discussion"] == "not graded yet"


def test_misbehaviours_cost_only_their_own_part(graded_class):
    """Stderr flood, a raising act, patched comparisons, a wrong merge, sys.exit: each apart."""
    _, rows, _, _ = graded_class
    mallory = rows["mallory"]
    assert mallory["status"] == "graded", mallory
    points = _points(mallory)
    for part in ("model", "compute_value_targets", "a2c", "gae"):
        assert points[part] == FULL[part], (part, mallory)
    assert points["policy"] == 0.0
    assert 0.0 < points["merge_time_batch"] < FULL["merge_time_batch"]


def test_deleted_duplicated_and_edited_cells_are_repaired(graded_class):
    """Deleted test cell restored, duplicate graded once, edited locked cell put back."""
    _, rows, _, _ = graded_class
    dave = rows["dave"]
    assert dave["status"] == "graded" and _points(dave) == FULL, dave
    assert "restored deleted cells: test_policy" in dave["notes"]
    assert "duplicated cells" in dave["notes"] and "test_a2c" in dave["notes"]
    assert "restored edited locked cells: check_model" in dave["notes"]


@pytest.mark.parametrize("attack", [a for a in [*ATTACKS, *NOTEBOOK_ATTACKS] if a not in PERSISTENT])
def test_hostile_notebook_gains_nothing(graded_class, attack):
    """With every stub unimplemented, does the attack earn 0 points, visibly?"""
    _, rows, out, _ = graded_class
    row = rows[f"h_{attack}"]
    if row["status"] == "graded":
        assert _points(row) == dict.fromkeys(FULL, 0.0), row
    else:  # flagged, with its (zero) provisional total in the notes and no bare number
        assert row["status"].startswith("tampered") and row["total"] == "", row
        assert "provisional total 0 (not a grade)" in row["notes"], row
    assert row["sandboxed"] == "yes"
    html = (out / "feedback" / f"h_{attack}.html").read_text(encoding="utf-8")
    # The attack's source is shown escaped (&lt;script&gt;); its output must not be there at all.
    assert "<script>document.title = 'FORGED-SCRIPT'" not in html
    assert "HIDDEN TESTS" not in html


def test_a_lexer_the_student_names_never_runs_in_the_grader(graded_class):
    """Fenced blocks in lexers that never return or take super-linear time, and the notebook's
    language set to one, graded by grade-all --jobs 2 with feedback: the class's grades.csv is
    written (every classmate graded), each attack's feedback shows the text unhighlighted and
    its row says why."""
    _, rows, out, _ = graded_class
    assert rows["alice"]["status"] == "graded" and _points(rows["alice"]) == FULL
    fence, metadata = rows["h_lexer_fence"], rows["h_lexer_metadata"]
    assert "code blocks in languages other than Python shown as text" in fence["notes"], fence
    assert "names the language 'mcschema'" in metadata["notes"], metadata
    for name in ("h_lexer_fence", "h_lexer_metadata"):
        html = (out / "feedback" / f"{name}.html").read_text(encoding="utf-8")
        assert "&lt;!--" in html and "hl-mcschema" not in html


def test_a_patched_probe_table_is_tampered(graded_class):
    """A cell that replaced the runtime's probe table (a zero-weight Nature-DQN reported for the
    model, the policy's outputs recomputed with the fixture network) is ``tampered``, with 0."""
    _, rows, _, _ = graded_class
    row = rows["h_forge_probes"]
    assert row["status"].startswith("tampered") and row["total"] == "", row
    assert "provisional total 0 (not a grade)" in row["notes"], row


def test_hostile_class_left_the_machine_as_it_was(graded_class, loopback_server):
    """No file of the checkout or the environment changed; nothing reached the host's network."""
    _, _, _, before = graded_class
    assert _snapshot() == before
    assert loopback_server[1] == []
    assert _survivors() == []


def test_persistent_attacks_then_honest_grades_are_exact(tmp_path):
    """After each attack that tries to outlast its grading, is an honest notebook graded exactly?"""
    assert bwrap_works(), "the hostile notebooks must only ever run inside the sandbox"
    marker = tmp_path / "outlived.txt"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for index, attack in enumerate(PERSISTENT):
        nb = hostile_submission(attack, token=TOKEN, port="9", marker=str(marker))
        nbformat.write(nb, inbox / f"a{index}_attack_{attack}.ipynb")
        nbformat.write(course_submission(), inbox / f"a{index}_honest.ipynb")
    before = _snapshot()
    done = _cli("grade-all", "inbox", "--out", "out", "--jobs", "1", "--no-feedback", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _survivors() == []
    rows = _rows(tmp_path / "out")
    for index, attack in enumerate(PERSISTENT):
        attacked, honest = rows[f"a{index}_attack_{attack}"], rows[f"a{index}_honest"]
        assert attacked["status"] == "graded" and _points(attacked) == dict.fromkeys(FULL, 0.0)
        assert honest["status"] == "graded" and _points(honest) == FULL, honest
    time.sleep(8)  # the outliving attack writes 6 s after its start, if it still lives
    assert not marker.exists()
    assert _survivors() == []
    assert _snapshot() == before


@pytest.mark.parametrize("attack", list(COSTLY))
def test_attacks_on_time_cost_one_budget_and_say_why(tmp_path, monkeypatch, attack):
    """A notebook that ignores interrupts and hangs on replay, or that tries to kill its
    supervisor, earns nothing and is graded (its runner ended the run, not the wall clock)
    within one budget (one cell limit and a reserve); the notes say why parts were not run."""
    from autograder.core.assessor import WALL_MARGIN
    from autograder.nbgrader.grader import Grader

    # Time scale 1: these attacks earn nothing whatever the load, and ignore_interrupt spends
    # its whole budget (one cell limit and the reserve), which the scale would triple.
    monkeypatch.setenv("A2C_GRADER_TIME_SCALE", "1")
    path = tmp_path / f"{attack}.ipynb"
    nbformat.write(hostile_submission(attack, token=TOKEN), path)
    with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=15) as grader:
        result = grader.grade(path, attack)
        budget = grader.budget(1.0)
    assert result.status == "graded", (result.status, result.notes)
    assert all(part.score == 0.0 for part in result.parts.values()), result.parts
    assert result.timings["sandbox"] < budget + WALL_MARGIN, result.timings
    stopped = [note for note in result.notes if note.startswith("run stopped: ")]
    if attack == "kill_runner":  # out of its reach: the runner lived on and probed every part
        assert not stopped and {f"probe:{part}" for part in FULL} <= set(result.timings)
    else:
        assert stopped, result.notes
    assert _survivors() == []


def test_cells_that_fork_cpu_burners_are_stopped_at_the_runs_cpu_cap(tmp_path):
    """The corpus's ``fork_burners`` in a reference notebook's model cell, graded with a run
    CPU cap of 20 s: the four spinning processes (out of the executor's process group) count
    against it, the run is stopped there, long before its cell limit and budget, the result says
    why and is no grade, and nothing is left running. As root the run's cgroup (cpuacct on
    cgroup v1) counts them; as a plain user, its process tree (the class tests run both ways)."""
    from autograder.core.course.limits import Limits
    from autograder.nbgrader.grader import Grader
    from tests.submissions.hostile import FORK_BURNERS

    path = tmp_path / "burn.ipynb"
    nbformat.write(course_submission(append={"model": FORK_BURNERS}), path)
    limits = Limits().with_changes({"sandbox.cpu_seconds": 20.0})
    with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=100, limits=limits) as grader:
        result = grader.grade(path, "burn")
    assert result.status.startswith("timeout: the notebook's processes used up the CPU"), (
        result.status, result.notes,
    )  # fmt: skip
    assert result.timings["sandbox"] < 90, result.timings
    assert _survivors() == []


def test_a_recursion_frame_sent_to_the_runner_stops_nothing(tmp_path):
    """A reference notebook whose model cell writes 4 KB of nested JSON to the runner (the
    corpus's ``recursion_frame``): the runner reads past it, every part is graded in full and
    no process is left. Run as root and as a plain user (the class tests are, see the report)."""
    from autograder.nbgrader.grader import Grader
    from tests.submissions.hostile import ATTACKS

    path = tmp_path / "deep.ipynb"
    nbformat.write(course_submission(append={"model": ATTACKS["recursion_frame"]}), path)
    with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=60) as grader:
        result = grader.grade(path, "deep")
    assert result.status == "graded", (result.status, result.notes)
    assert {key: part.score for key, part in result.parts.items()} == FULL, result.notes
    assert _survivors() == []


def test_an_honest_hanging_cell_costs_only_its_time(tmp_path, monkeypatch):
    """A reference notebook whose model cell ends in an endless loop (it answers SIGINT) is
    interrupted at the cell limit, and every part is still graded in full: the budget's
    reserve is left for the rest. The grader is started as ``nohup`` or a script's background
    job would start it, with SIGINT ignored, which its children inherit."""
    from autograder.nbgrader.grader import Grader

    monkeypatch.setenv("A2C_GRADER_TIME_SCALE", "3")
    path = tmp_path / "loop.ipynb"
    nbformat.write(course_submission(append={"model": "while True:\n    pass"}), path)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=15) as grader:
            result = grader.grade(path, "loop")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.status == "graded", (result.status, result.notes)
    assert {key: part.score for key, part in result.parts.items()} == FULL, result.notes
    assert any("ran past the 15 s limit (interrupted)" in note for note in result.notes)
    assert not any(note.startswith("run stopped") for note in result.notes), result.notes


def test_feedback_names_no_host_path_or_user(tmp_path):
    """A notebook that puts what it can read of the machine (its mount table, user id, the
    environment's paths, install records) into its errors gets them quoted in its feedback with
    nothing of the machine's layout left in."""
    import re

    from autograder.nbgrader.grader import Grader

    path = tmp_path / "nosy.ipynb"
    nbformat.write(hostile_submission("report_host_paths"), path)
    with Grader(ROOT / "solutions" / "a2c.ipynb", timeout=60) as grader:
        result = grader.grade(path, "nosy")
        workdir = str(grader.workdir)
    texts = [result.status, *result.notes, *(part.feedback for part in result.parts.values())]
    text = "\n".join(texts)
    assert "LEAK: " in result.parts["model"].feedback, result.parts["model"].feedback
    for host in {str(ROOT), sys.prefix, str(Path(sys.prefix).resolve()), workdir}:
        assert host not in text, host
    assert not re.search(r"\b18[0-9]{5}\b|a2c-grading", text), text  # no sandbox user id


def _decoded_layout(text: str) -> dict:
    """What ``encode_host_layout`` sent, encoded and in pieces, in the errors feedback quotes."""
    import base64
    import re
    import zlib

    pieces = {}
    for index, count, piece in re.findall(r"LAYOUT\s+(\d+)/(\d+):(.*?):END", text, re.DOTALL):
        pieces[int(index)] = re.sub(r"\s", "", piece)  # feedback wraps long lines
        total = int(count)
    assert pieces and set(pieces) == set(range(total)), f"pieces missing: {text[:600]}"
    blob = "".join(pieces[index] for index in range(total))
    return json.loads(zlib.decompress(base64.b64decode(blob)))


@pytest.mark.skipif(os.getuid() != 0, reason="the neutral layout is built by a grader run as root")
def test_nothing_of_the_host_layout_reaches_the_sandbox(tmp_path):
    """A notebook that walks everything it can read (mount table, /proc/self, sys.path, module
    files and their compiled copies, install records, its environment) and reports it encoded,
    past the exact-string filter, learns no host folder and no host user id: the sandbox shows
    only neutral paths."""
    private_tmp = tmp_path / f"private-tmp-{uuid.uuid4().hex[:8]}"
    private_tmp.mkdir()
    nbformat.write(hostile_submission("encode_host_layout"), tmp_path / "nosy.ipynb")
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", "nosy.ipynb", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "A2C_GRADER_TIME_SCALE": "3", "TMPDIR": str(private_tmp)},
    )
    report = json.loads(done.stdout)
    assert report["sandboxed"] is True and report["total"] == 0.0, report
    sent = _decoded_layout(report["parts"]["model"]["feedback"])
    # The walk happened (it found this many folders), and what it sent was the news.
    assert sent["seen"] > 50 and sent["prefix"] == "/opt/venv", sent
    paths, numbers = set(sent["paths"]), {int(n, 16) for n in sent["ids"].split(",") if n}
    import sysconfig

    built_for = Path(sysconfig.get_config_var("prefix"))  # named by the installation's files
    host = {ROOT, Path(sys.prefix), private_tmp, Path("/run/a2c-grading"), Path(sys.base_prefix)}
    host |= {built_for} if built_for.parts[:2] != ("/", "usr") else set()
    host = {str(path) for path in host} | {str(path.resolve()) for path in host}
    for found in paths:  # a host folder, or a folder above one (below the top level)
        for path in host:
            above = path.startswith(found + "/") and found.count("/") > 1
            assert not (found == path or above), (found, path)
    assert not [n for n in numbers if 1_800_000 <= n < 1_900_000], sorted(numbers)
    assert 65534 in numbers  # the sandbox's own user id, as it sees it


def test_without_the_sandbox_every_result_says_so(tmp_path):
    """Where bubblewrap cannot start (here: --no-sandbox), is grading still right, and loud?
    A grader that is not root refuses --no-sandbox (the notebook would run with its rights)."""
    nbformat.write(course_submission(), tmp_path / "zoe.ipynb")
    done = _cli("grade", "zoe.ipynb", "--json", "--no-sandbox", cwd=tmp_path)
    if os.getuid() != 0:
        assert done.returncode == 2 and "--no-sandbox" in done.stderr, done.stderr[-2000:]
        return
    report = json.loads(done.stdout)
    assert report["sandboxed"] is False and "NOT SANDBOXED" in report["notes"]
    assert report["status"].startswith("unsandboxed") and report["total"] == 14.0, report
    assert done.returncode == 1  # never a grade
    assert {key: part["score"] for key, part in report["parts"].items()} == FULL


def _as_user(uid: int, argv: list[str], cwd: Path, env: dict[str, str]):
    """``argv`` run as the host user ``uid`` (no account needed) by the sandbox's launcher, with
    the Python installation, the environments and the checkout reachable even inside a folder
    closed to others (root's home)."""
    import shutil
    import tempfile

    from autograder.core.isolation.job_view import python_dirs, reachable
    from autograder.core.isolation.supervision import through_root_launcher

    staging = Path(tempfile.mkdtemp(prefix="as-user-", dir="/tmp"))
    staging.chmod(0o755)
    keep: list[int] = []
    plan = {"binds": [], "copies": [], "uid": uid}
    plan.update(reachable([*python_dirs(), ROOT], staging))
    command = through_root_launcher(plan, argv, keep)
    try:
        return subprocess.run(
            command, cwd=cwd, env=env, pass_fds=keep, capture_output=True, text=True, timeout=900
        )
    finally:
        for fd in keep:
            os.close(fd)
        shutil.rmtree(staging, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="the test makes a user of its own (CI runs as root)")
def test_a_grader_that_is_not_root_never_runs_a_notebook_unsandboxed():
    """A normal user, who can write their own environment and home, grades a notebook that
    plants a .pth and a sitecustomize with --no-sandbox: the grader refuses (the notebook would
    run with that user's rights), nothing is written, and a stub graded next in the sandbox, as
    that user, gets 0, forked from the template that user's grader started."""
    import shutil
    import sysconfig
    import tempfile

    uid = 1_790_000 + os.getpid() % 10_000  # outside the sandbox's user ids
    home = Path(tempfile.mkdtemp(prefix="a2c-user-", dir="/tmp"))
    try:
        home.chmod(0o755)
        venv = home / "venv"  # the user's own environment: the kit and its packages by .pth
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site_dir = next((venv / "lib").glob("python3*/site-packages"))
        # The user's own copy of the kit, as a non-root instructor has (this checkout may sit in
        # a folder closed to other users, such as `mktemp -d`).
        kit = home / "kit"
        for package in ("autograder", "solutions", "course_lib"):
            shutil.copytree(ROOT / package, kit / package, ignore=shutil.ignore_patterns("__pycache__"))
        (site_dir / "kit.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{kit}\n")
        nbformat.write(hostile_submission("write_environment", token=TOKEN), home / "w.ipynb")
        (home / "stub.ipynb").write_bytes(RELEASE.read_bytes())
        (home / "tmp").mkdir()
        for path in [home, *home.rglob("*")]:
            os.lchown(path, uid, uid)
        env = {
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "PATH": f"{venv / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin",  # alembic
            "A2C_GRADER_TIME_SCALE": "3",
        }
        python = str(venv / "bin" / "python")
        grade = [python, "-m", "autograder", "grade"]
        done = _as_user(uid, [*grade, "w.ipynb", "--no-sandbox"], home, env)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "only a grader started as root" in done.stderr, done.stderr
        planted = [path for path in home.rglob("*") if path.is_file() and TOKEN in path.name]
        planted += [path for path in site_dir.iterdir() if path.name == "sitecustomize.py"]
        assert planted == [] and _survivors() == []
        done = _as_user(uid, [*grade, "stub.ipynb", "--json"], home, env)
        report = json.loads(done.stdout or "{}")
        assert report.get("status") == "graded" and report["total"] == 0.0, (report, done.stderr)
        assert report["sandboxed"] is True and TOKEN not in done.stderr
        # the warm interpreters hold for a plain user too: the student forked from this
        # process's template, which the plain user's own bubblewrap started
        assert report["isolation"] == "bubblewrap-template", report
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="only a root grader runs the notebook as another user")
def test_after_an_unsandboxed_attack_nothing_persists(tmp_path):
    """A notebook graded with --no-sandbox that writes a .pth, a sitecustomize and the grader's
    files changes nothing (it ran as an unprivileged user of its own), so a stub graded next,
    in the sandbox, gets 0."""
    nbformat.write(hostile_submission("write_environment", token=TOKEN), tmp_path / "w.ipynb")
    (tmp_path / "a2c.ipynb").write_bytes(RELEASE.read_bytes())  # the name students submit
    before = _snapshot()
    done = _cli("grade", "w.ipynb", "--json", "--no-sandbox", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert report["status"].startswith("unsandboxed") and report["total"] == 0.0, report
    assert _snapshot() == before
    assert _survivors() == []
    done = _cli("grade", "a2c.ipynb", "--json", cwd=tmp_path)  # no --student needed
    report = json.loads(done.stdout)
    assert report["status"] == "graded" and report["total"] == 0.0, report
    assert TOKEN not in done.stderr
