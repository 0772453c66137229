"""The stand-in for ``torch._dynamo`` that spares a grading torch.compile's import.

Each check runs in a fresh interpreter: whether ``torch._dynamo`` is loaded is process-wide.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANDBOXED = ROOT / "autograder" / "sandboxed"

TRAIN = textwrap.dedent(
    """
    import json, sys
    if sys.argv[1] == "stand-in":
        from grading_runtime import eager_torch
        assert eager_torch.install()
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizers = [torch.optim.Adam(model[0].parameters(), lr=1e-2),
                  torch.optim.RMSprop(model[2].parameters(), lr=1e-2, alpha=0.99, eps=1e-5)]
    for step in range(5):
        for optimizer in optimizers:
            optimizer.zero_grad()
        loss = model(torch.randn(16, 4)).square().mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        for optimizer in optimizers:
            optimizer.step()
    loaded = type(sys.modules.get("torch._dynamo")).__name__
    print(json.dumps({"loaded": loaded, "params": [p.tolist() for p in model.parameters()]}))
    """
)


def _run(code: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=SANDBOXED,  # ``grading_runtime`` as the sandbox imports it
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_optimizers_compute_the_same_without_loading_torch_compile():
    real = _run(TRAIN, "real")
    stand_in = _run(TRAIN, "stand-in")
    assert real["loaded"] == "module"  # torch itself loads it for the first optimizer
    assert stand_in["loaded"] == "_DynamoStandIn"
    assert stand_in["params"] == real["params"]  # bit for bit


def test_anything_else_of_torch_dynamo_loads_the_real_module():
    code = textwrap.dedent(
        """
        import inspect, json, sys
        from grading_runtime import eager_torch
        eager_torch.install()
        import torch
        torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1).step()
        before = type(sys.modules["torch._dynamo"]).__name__
        # What torch does while it imports (torch.library asks inspect for a frame's module,
        # which asks every module for __file__): it must not load the real package mid-import.
        inspect.getmodule(lambda: 0, "/nowhere.py")
        torch.testing.assert_close(torch.ones(2), torch.ones(2))  # imports torch.distributed
        walked = type(sys.modules["torch._dynamo"]).__name__
        import torch._dynamo.config as config  # a submodule: the real package loads first
        same = torch._dynamo.config is config is sys.modules["torch._dynamo.config"]
        origin = config.__spec__.origin.rsplit("/", 1)[-1]
        compiling = torch._dynamo.is_compiling()
        doubled = torch.compile(lambda x: 2 * x, backend="eager")(torch.ones(2)).tolist()
        print(json.dumps({"before": before, "walked": walked, "same": same, "origin": origin,
                          "after": type(sys.modules["torch._dynamo"]).__name__,
                          "attribute": type(torch._dynamo).__name__, "compiling": compiling,
                          "doubled": doubled, "again": eager_torch.install()}))
        """
    )
    seen = _run(code)
    assert seen["before"] == seen["walked"] == "_DynamoStandIn"
    assert seen["same"] and seen["origin"] == "config.py"  # loaded once, by the real package
    assert seen["after"] == seen["attribute"] == "module"
    assert seen["compiling"] is False and seen["doubled"] == [2.0, 2.0]
    assert seen["again"] is False  # the real module stays


def test_the_judging_alone_keeps_torch_as_it_is():
    """Importing the judging and computing the reference's side installs nothing: only the
    sandbox's executor and an :class:`~autograder.core.assessor.Assessor` (a grading process)
    install the stand-in; an instructor's notebook that grades its own parts keeps torch."""
    code = textwrap.dedent(
        """
        import json, sys
        from autograder.core.judging.plan import make_plan, prepare_references
        prepare_references(make_plan(1))
        print(json.dumps({"loaded": type(sys.modules.get("torch._dynamo")).__name__}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["loaded"] == "module"


def test_the_sandboxed_executor_builds_the_students_optimizer_with_the_stand_in():
    """The executor installs it before the first cell: a student's ``A2C`` builds its optimizer
    in a cell (or in a probe step), and that cell does not pay for torch.compile's import."""
    cell = (
        "import sys, torch\n"
        "torch.optim.Adam(torch.nn.Linear(2, 2).parameters())\n"
        "print('LOADED', type(sys.modules['torch._dynamo']).__name__)\n"
    )
    request = json.dumps({"op": "run", "source": cell, "seq": 1}) + "\n"
    code = textwrap.dedent(
        """
        import os, subprocess, sys
        read, write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.getcwd()}  # grading_runtime, as the sandbox shows it
        done = subprocess.run([sys.executable, "bin/executor.py", str(write)], input=sys.argv[1],
                              capture_output=True, text=True, pass_fds=(write,), timeout=240,
                              env=env)
        os.close(write)
        import json
        reply = os.read(read, 65536).decode()
        print(json.dumps({"out": done.stdout, "err": done.stderr[-2000:], "reply": reply}))
        """
    )
    seen = _run(code, request)
    assert '"error": null' in seen["reply"], seen
    assert "LOADED _DynamoStandIn" in seen["out"], seen
