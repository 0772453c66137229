"""What a grader process costs around its work: no parser tables built for checks it never runs,
no torch.compile import for optimizers it only steps, no idle torch threads, no stacks formatted
to seed devices it never starts, nbgrader imported while the first notebook runs rather than
before, no final garbage collection over what its imports left."""

from __future__ import annotations

import gc
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

RELEASE = Path(__file__).resolve().parent.parent / "notebooks" / "a2c.ipynb"


def _fresh_python(code: str) -> str:
    """What ``code`` prints, run in a new interpreter (what a process imports is its own)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_grader_process_skips_jsonschemas_uri_parsers_and_still_validates_notebooks():
    code = (
        "import sys, time; start = time.process_time()\n"
        "import autograder, nbformat, jsonschema\n"
        "assert sys.modules.get('rfc3987_syntax') is None, sys.modules.get('rfc3987_syntax')\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "broken = nbformat.v4.new_notebook(); broken['cells'] = [{'cell_type': 'nope'}]\n"
        "try:\n"
        "    nbformat.validate(broken)\n"
        "except nbformat.ValidationError:\n"
        "    print('refused')\n"
        "jsonschema.validate({'points': 2}, {'properties': {'points': {'type': 'number'}}})\n"
    )
    assert _fresh_python(code).strip() == "refused"


@pytest.mark.parametrize("outcome", [3, SystemExit(2)], ids=["returns", "usage error"])
def test_python_m_autograder_freezes_what_is_left_once_the_command_is_done(monkeypatch, outcome):
    """Does ``python -m autograder`` keep its exit status and leave the interpreter's final
    collections nothing to walk (the objects torch and nbgrader left are frozen)?"""
    import autograder.cli

    def command() -> int:
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(autograder.cli, "main", command)
    monkeypatch.delitem(sys.modules, "autograder.__main__", raising=False)
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as ended:
            runpy.run_module("autograder", run_name="__main__")  # python -m autograder
        assert ended.value.code == (2 if isinstance(outcome, BaseException) else 3)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_an_assessors_reference_side_builds_its_optimizers_without_torch_compile(tmp_path):
    """Once a process holds an assessor, does the reference's A2C (which builds torch optimizers
    on the grading's cases) leave torch.compile's machinery unloaded?"""
    code = (
        "import sys\n"
        "from autograder.core.assessor import Assessor\n"
        "from autograder.core.judging import make_plan, prepare_references\n"
        f"Assessor({str(RELEASE)!r}, {str(tmp_path / 'view')!r}, warm=False)\n"
        "prepare_references(make_plan(7))\n"
        "print(type(sys.modules['torch._dynamo']).__name__)\n"
    )
    assert _fresh_python(code).strip() == "_DynamoStandIn"


def test_the_grader_computes_on_one_torch_thread_and_gives_the_threads_back():
    """Inside ``one_torch_thread`` the calling thread has one torch thread; after it (an error
    included) the count it had."""
    import torch

    from autograder.core.judging.torch_threads import one_torch_thread

    before = torch.get_num_threads()
    torch.set_num_threads(2)  # not one (the suite's workers run on one): a count to give back
    try:
        with one_torch_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(ValueError), one_torch_thread():
            raise ValueError("a judge failed")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_seeding_a_probe_draws_torch_s_numbers_without_formatting_the_stack(monkeypatch):
    """Does ``seed_all`` give the numbers ``torch.manual_seed`` gives, without queueing a seeding
    (and formatting the stack) for accelerators the grading never starts?"""
    import traceback

    import torch

    from autograder.sandboxed.grading_runtime.seeding import seed_all

    torch.manual_seed(1234)
    expected = torch.rand(8)

    def no_stack(*args, **kwargs):
        raise AssertionError("the stack was formatted")

    monkeypatch.setattr(traceback, "format_stack", no_stack)
    seed_all(1234)
    assert torch.equal(torch.rand(8), expected)


def test_a_grading_command_imports_nbgrader_while_its_first_notebook_runs(tmp_path):
    """Are nbgrader, nbconvert and SQLAlchemy (what recording a grade needs) left out of what
    ``grade`` imports before its sandbox's run, and imported by the assessor's thread begun
    with the first run?"""
    code = (
        "import sys\n"
        "import autograder.cli, autograder.commands.grade\n"
        "import autograder.nbgrader.grader as grader\n"
        "from autograder.core.assessor import Assessor\n"
        "heavy = ('mistune', 'nbconvert', 'nbgrader', 'sqlalchemy')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
        f"assessor = Assessor({str(RELEASE)!r}, {str(tmp_path / 'view')!r}, warm=False,\n"
        "                    imports=grader.RECORDING_MODULES)\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
        "assessor._start_imports()  # what assess does before the sandbox's run\n"
        "assessor.wait_for_imports()\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    loaded = _fresh_python(code).split("\n")[:3]
    assert loaded == ["[]", "[]", str(["mistune", "nbconvert", "nbgrader", "sqlalchemy"])]
