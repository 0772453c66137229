"""Does a message hand the student a line of the answer?

A hint names the idea ("remove the value head's output axis only"), not the line that does it
(``.squeeze(-1)``). :func:`answer_lines_in` finds the code a message quotes that is part of a
working answer: every call with a module or method prefix (``F.log_softmax(logits, dim=-1)``,
``.squeeze(-1)``, ``torch.no_grad()``) and every call in backticks, kept when it stands, spaces
aside, in a line of an answer: the solution cells of ``solutions/a2c.ipynb`` (parts 1 to 7) or
a valid answer of the corpus (``tests/buggy_parts.py``). Formulas the notebook states
(``softmax(logits)``) are no line of code and pass.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "solutions" / "a2c.ipynb"
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
#: A call with a dotted prefix (``torch.no_grad()``, ``.squeeze(-1)``); a chain of calls gives
#: each of its calls.
_DOTTED_CALL = re.compile(r"(?:[A-Za-z_]\w*)?(?:\.[A-Za-z_]\w*)+\([^()]*\)")
_BACKTICKS = re.compile(r"`([^`]*\([^`]*)`")


def _normal(text: str) -> str:
    return re.sub(r"\s+", "", text.split("#")[0])


@functools.cache
def answer_code() -> frozenset[str]:
    """Every line of a working answer, without spaces and comments."""
    from tests.buggy_parts import CORPUS

    lines = []
    for cell in json.loads(SOURCE.read_text(encoding="utf-8"))["cells"]:
        for block in _SOLUTION.findall("".join(cell["source"])):
            lines += block.splitlines()
    for entry in CORPUS:
        if not entry.fails:
            lines += entry.source().splitlines()
    return frozenset(line for line in map(_normal, lines) if line)


def answer_lines_in(message: str) -> list[str]:
    """The pieces of ``message`` that are code of a working answer (empty: none)."""
    found = []
    for span in [*_DOTTED_CALL.findall(message), *_BACKTICKS.findall(message)]:
        code = _normal(span)
        if len(code) >= 6 and any(code in line for line in answer_code()):
            found.append(span)
    return found
