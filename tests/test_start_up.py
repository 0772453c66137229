"""What a grader process costs around its work: no parser tables built for checks it never runs,
no final garbage collection over what its imports left."""

from __future__ import annotations

import gc
import runpy
import subprocess
import sys

import pytest


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
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused"


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
