"""What a grader process costs before it grades: no parser tables built for checks it never runs."""

from __future__ import annotations

import subprocess
import sys


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
