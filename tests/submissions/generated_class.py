"""A generated class for the class tools (similarity, regrading, LMS files), without grading.

:func:`student_parts` draws one student's code for every graded part: independent students
draw different statements (calls, methods, constants, loops) under their own variable names,
so their parts share little beyond the release's stub and the course's names. :func:`disguise`
makes the lightly edited copy a copier hands in: every variable renamed, adjacent statements
swapped, comments added, spacing changed, one constant edited. :func:`write_class` writes a
class as ``grade-all`` leaves it in ``--out``: ``received/<student>/<time>-<n>.ipynb`` (the
release notebook with the student's code in each part's cell) and ``grades.csv`` naming each
student's file that counts.
"""

from __future__ import annotations

import csv
import random
import re
from collections.abc import Mapping
from pathlib import Path

import nbformat

from solutions.build_notebooks import RELEASE_NOTEBOOK
from solutions.parts import PARTS

__all__ = [
    "disguise",
    "everyone_alike",
    "notebook_of",
    "student_parts",
    "write_class",
    "write_notebooks",
]

_CALLS = [
    "sum",
    "mean",
    "amax",
    "cumsum",
    "flip",
    "softmax",
    "log_softmax",
    "clamp",
    "stack",
    "cat",
]
_METHODS = ["detach", "float", "clone", "exp", "abs", "sqrt", "tanh", "relu", "flatten", "numel"]
_NP = ["asarray", "concatenate", "zeros_like", "ones_like", "square", "log1p"]
_TEMPLATES = [
    "{a} = torch.{call}({b}, dim={k}) * {c}",
    "{a} = {b}.{method}() + {c}",
    "for {i} in range({n}):\n    {a}[{i}] = {b}[{i}] * {c} - {k}",
    "if {a} is None:\n    {a} = {b}.{method}()[{k}]",
    "{a} = np.{np}({b}) / ({c} + {k})",
    "{a}, {b} = {b}.{method}(), {a} * {c}",
    "while {a} < {n}:\n    {a} = {a} + {b}.{method}() * {c}",
    "{a} = [{b}[{i}] ** {k} for {i} in range({n})]",
]


def _statement(draw: random.Random, names: list[str]) -> str:
    a, b, i = draw.sample(names, 3)
    return draw.choice(_TEMPLATES).format(
        a=a, b=b, i=i, call=draw.choice(_CALLS), method=draw.choice(_METHODS),
        np=draw.choice(_NP), k=draw.randint(0, 9), c=draw.randint(10, 999), n=draw.randint(2, 64),
    )  # fmt: skip


def student_parts(seed: int, statements: int = 10) -> dict[str, str]:
    """One independent student's code of every part (the body of the stub's function)."""
    draw = random.Random(seed)
    names = [
        f"{draw.choice('xyzuvw')}{draw.choice(['val', 'buf', 'tmp', 'acc', 'out'])}{n}"
        for n in range(6)
    ]
    return {
        key: "\n".join(_statement(draw, names) for _ in range(statements)) + f"\nreturn {names[0]}"
        for key in PARTS
    }


def everyone_alike(seed: int) -> str:
    """The part every student writes alike (only the names differ): what the class's own
    distribution must not flag."""
    a, b = random.Random(seed).sample(["batch", "merged", "out", "flat", "rows", "steps"], 2)
    return (
        f"{a} = {{}}\nfor {b} in trajectory:\n"
        f"    if {b} == 'state':\n        continue\n"
        f"    if isinstance(trajectory[{b}][0], torch.Tensor):\n"
        f"        {a}[{b}] = torch.cat([x.reshape(1, *x.shape) for x in trajectory[{b}]]).flatten(0, 1)\n"
        f"    else:\n        {a}[{b}] = np.stack(trajectory[{b}]).reshape(-1, *trajectory[{b}][0].shape[1:])\n"
        f"trajectory.update({a})\nreturn trajectory"
    )


def disguise(code: str, seed: int) -> str:
    """A lightly edited copy of ``code``: renamed, two statements swapped, comments, spacing,
    one constant changed."""
    draw = random.Random(seed)
    names = sorted(set(re.findall(r"\b[xyzuvw](?:val|buf|tmp|acc|out)\d\b", code)))
    for number, name in enumerate(names):
        code = re.sub(rf"\b{name}\b", f"renamed_{number}_{draw.randint(0, 99)}", code)
    blocks = re.split(r"\n(?=\S)", code)  # top-level statements, with their bodies
    swap = draw.randrange(len(blocks) - 2)
    blocks[swap], blocks[swap + 1] = blocks[swap + 1], blocks[swap]
    blocks = [f"# step {n}: see the lecture\n{block}" for n, block in enumerate(blocks)]
    code = "\n\n".join(blocks).replace(" = ", "   =  ")
    return re.sub(r"\b(\d{2,3})\b", lambda m: str(int(m.group(1)) + 1), code, count=1)


def notebook_of(
    parts: Mapping[str, str], above: Mapping[str, str] | None = None
) -> nbformat.NotebookNode:
    """The release notebook with ``parts`` (key -> code: a method's body, put in place of the
    stub's ``raise NotImplementedError()``, or a whole cell when it starts with ``class`` or
    ``def``) and ``above`` (key -> a code cell the student added just above that part)."""
    nb = nbformat.read(RELEASE_NOTEBOOK, as_version=4)
    cells = []
    for cell in nb.cells:
        key = cell.metadata.get("nbgrader", {}).get("grade_id")
        if above and key in above:
            cells.append(nbformat.v4.new_code_cell(above[key]))
        if key in parts and parts[key].startswith(("class ", "def ")):
            cell.source = parts[key]
        elif key in parts:
            stub = re.search(r"^( *)raise NotImplementedError\(\)", cell.source, re.M)
            indent = stub.group(1)
            body = "\n".join(indent + line if line else line for line in parts[key].splitlines())
            cell.source = cell.source[: stub.start()] + body + cell.source[stub.end() :]
        cells.append(cell)
    nb.cells = cells
    return nb


def write_notebooks(
    out: Path,
    notebooks: Mapping[str, nbformat.NotebookNode],
    earlier: Mapping[str, nbformat.NotebookNode] | None = None,
) -> Path:
    """Write ``notebooks`` (id -> notebook) as grade-all's ``--out``; ``earlier`` (id ->
    notebook) adds an earlier file kept in ``received/`` that no longer counts. Returns ``out``."""
    rows = []
    for student, nb in sorted(notebooks.items()):
        folder = out / "received" / student
        folder.mkdir(parents=True, exist_ok=True)
        if earlier and student in earlier:
            nbformat.write(earlier[student], folder / "20260301T100000Z-000000000000.ipynb")
        path = folder / "20260302T100000Z-111111111111.ipynb"
        nbformat.write(nb, path)
        rows.append(
            {"student": student, "status": "graded", "received": str(path.relative_to(out))}
        )
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["student", "status", "received"])
        writer.writeheader()
        writer.writerows(rows)
    return out


def write_class(out: Path, students: Mapping[str, Mapping[str, str]], earlier=None) -> Path:
    """Write ``students`` (id -> part -> code) as grade-all's ``--out``; ``earlier`` (id -> part
    -> code) adds an earlier file kept in ``received/`` that no longer counts. Returns ``out``."""
    notebooks = {student: notebook_of(parts) for student, parts in students.items()}
    before = {student: notebook_of(parts) for student, parts in (earlier or {}).items()}
    return write_notebooks(out, notebooks, before)
