"""What the course's private nbconvert override saves: one copy, one schema check.

Run from the repository root::

    python -m benchmarks.nbconvert_override              # about half a minute
    python -m benchmarks.nbconvert_override --rounds 20

:class:`autograder.nbgrader.exporters.preprocessed_once.PreprocessedOnce` replaces nbconvert's
private ``Exporter._preprocess`` in the course's two exporters: nbconvert copies the notebook
before preprocessing and checks the whole notebook against nbformat's schema after *each*
preprocessor; the override copies once and checks once, after the last. This script runs the
same notebook (the solution notebook, or ``--notebook``) through the same preprocessors, as many
as a recording runs (``--preprocessors``, a dozen by default; each returns the notebook as it
came, so only nbconvert's own work is timed), with nbconvert's method and with the override,
alternating, and prints the CPU seconds of each, per notebook, and their ratio. A class of N
notebooks runs the recording's two exporters once each per notebook (``autograde`` and the
feedback page), so the saving per notebook is about twice the difference printed.

Timings are noisy on a shared machine: the ratio matters more than the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor

from autograder.nbgrader.exporters.preprocessed_once import PreprocessedOnce

ROOT = Path(__file__).resolve().parent.parent


class _Unchanged(Preprocessor):
    """A preprocessor that returns the notebook as it came (only nbconvert's work is timed)."""

    def preprocess(self, nb, resources):  # type: ignore[no-untyped-def]
        return nb, resources


class _Once(PreprocessedOnce, NotebookExporter):
    """nbconvert's notebook exporter with the course's override."""


def _exporter(cls: type[NotebookExporter], count: int) -> NotebookExporter:
    exporter = cls()
    for _ in range(count):
        exporter.register_preprocessor(_Unchanged(), enabled=True)
    return exporter


def _cpu(exporter: NotebookExporter, nb: nbformat.NotebookNode) -> float:
    start = time.process_time()
    exporter.from_notebook_node(nb)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=ROOT / "solutions" / "a2c.ipynb")
    parser.add_argument("--preprocessors", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    nb = nbformat.read(args.notebook, as_version=4)
    plain = _exporter(NotebookExporter, args.preprocessors)
    once = _exporter(_Once, args.preprocessors)
    _cpu(plain, nb), _cpu(once, nb)  # warm: imports, the schema's first compilation
    times: dict[str, list[float]] = {"nbconvert": [], "override": []}
    for _ in range(args.rounds):
        times["nbconvert"].append(_cpu(plain, nb))
        times["override"].append(_cpu(once, nb))
    before, after = (statistics.median(times[k]) for k in ("nbconvert", "override"))
    size = args.notebook.stat().st_size / 1e6
    print(
        f"{args.notebook.name} ({size:.2f} MB, {len(nb.cells)} cells), "
        f"{args.preprocessors} preprocessors, median CPU of {args.rounds} rounds, one export:"
    )
    print(f"  nbconvert's _preprocess: {before * 1000:8.1f} ms")
    print(f"  PreprocessedOnce:        {after * 1000:8.1f} ms")
    print(f"  ratio {after / before:.2f}; saved {(before - after) * 1000:.1f} ms an export")


if __name__ == "__main__":
    main()
