"""Reports of a grading run: the per-part table, the grades CSV and the score distributions.

* :func:`format_table` is what ``python -m autograder grade`` prints for one submission;
* :func:`write_grades_csv` writes ``grades.csv``: ``student, status, total, max_total, <one
  column per part>, sandboxed, notes, file``, one row per student (ungraded files too). A row
  whose status is not ``graded`` leaves the score columns empty: its provisional scores are in
  ``notes``, so that no spreadsheet sum takes them for a grade;
* :func:`summary_table` and :func:`save_histogram` describe how each part was scored over all
  submissions (mean, min, median, max and the share of full marks), to spot a part everybody
  fails, which is often a problem with the notebook or the checks rather than with the students.
"""

from __future__ import annotations

import csv
import statistics
import textwrap
from collections.abc import Sequence
from pathlib import Path

from .results import GradeResult

__all__ = ["format_table", "part_keys", "save_histogram", "summary_table", "write_grades_csv"]


def part_keys(results: Sequence[GradeResult]) -> list[str]:
    """Every part key seen, in the order of first appearance (the notebook's order)."""
    keys: list[str] = []
    for result in results:
        keys += [key for key in result.parts if key not in keys]
    return keys


def format_table(result: GradeResult, feedback: bool = True) -> str:
    """One submission's scores, a row per part, then (optionally) each part's feedback.

    Scores of a result that is not ``graded`` are marked ``*`` and the table says why.
    """
    lines = [f"student: {result.student}   status: {result.status}"]
    if not result.sandboxed:
        lines.append("WARNING: NOT SANDBOXED: the notebook ran with your user's rights")
    mark = "" if result.graded else "*"
    width = max([len("part"), *map(len, result.parts)])
    lines.append(f"{'part':<{width}}  {'score':>7}  {'max':>5}")
    for key, part in result.parts.items():
        lines.append(f"{key:<{width}}  {part.score:>6.2f}{mark:1}  {part.max:>5g}")
    lines.append(f"{'total':<{width}}  {result.total:>6.2f}{mark:1}  {result.max_total:>5g}")
    if not result.graded:
        lines.append(f"* NOT A GRADE ({result.status.split(':')[0]}): review the notebook first")
    for name, points in result.manual.items():
        lines.append(f"(+ {name}: {points:g} points graded by hand, see autograder/README.md)")
    for note in result.notes:
        lines.append(f"note: {note}")
    if feedback:
        for key, part in result.parts.items():
            lines.append(f"\n--- {key} ---")
            lines.append(part.feedback or "(no feedback printed)")
    return "\n".join(lines)


def write_grades_csv(results: Sequence[GradeResult], path: Path) -> Path:
    """Write the grades CSV (columns in the module docstring); returns ``path``."""
    keys = part_keys(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["student", "status", "total", "max_total", *keys, "sandboxed", "notes", "file"]
        )
        for result in sorted(results, key=lambda r: r.student):
            notes = list(result.notes)
            scores = [f"{result.parts[key].score:g}" if key in result.parts else "" for key in keys]
            total = f"{result.total:g}" if result.parts else ""
            if not result.graded:
                if result.parts:
                    notes.insert(0, f"provisional total {result.total:g} (not a grade)")
                scores, total = [""] * len(keys), ""
            writer.writerow(
                [
                    result.student,
                    result.status,
                    total,
                    f"{result.max_total:g}" if result.parts else "",
                    *scores,
                    "yes" if result.sandboxed else "NO",
                    "; ".join(notes),
                    result.source,
                ]
            )
    return path


def summary_table(results: Sequence[GradeResult]) -> str:
    """Per-part score distribution over the graded submissions."""
    graded = [result for result in results if result.parts and result.graded]
    header = f"{'part':<24}{'max':>5}{'mean':>7}{'min':>7}{'median':>8}{'max':>7}{'full':>7}"
    lines = [f"{len(graded)} graded submission(s) of {len(results)}", header]
    for key in [*part_keys(graded), "total"]:
        if key == "total":
            scores = [result.total for result in graded]
            top = max((result.max_total for result in graded), default=0.0)
        else:
            scores = [result.parts[key].score for result in graded if key in result.parts]
            top = max(result.parts[key].max for result in graded if key in result.parts)
        if not scores:
            continue
        full = sum(score >= top - 1e-9 for score in scores) / len(scores)
        lines.append(
            f"{key:<24}{top:>5g}{statistics.fmean(scores):>7.2f}{min(scores):>7.2f}"
            f"{statistics.median(scores):>8.2f}{max(scores):>7.2f}{full:>6.0%} "
        )
    return "\n".join(lines)


def save_histogram(results: Sequence[GradeResult], path: Path) -> Path:
    """A PNG with one histogram of scores per part (and the total); returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graded = [result for result in results if result.parts and result.graded]
    keys = [*part_keys(graded), "total"]
    columns = min(4, len(keys))
    rows = -(-len(keys) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.6 * rows), squeeze=False)
    for axis, key in zip(axes.flat, keys, strict=False):
        if key == "total":
            scores = [result.total for result in graded]
        else:
            scores = [result.parts[key].score for result in graded if key in result.parts]
        axis.hist(scores, bins=10)
        axis.set_title(textwrap.shorten(key, 24), fontsize=9)
        axis.set_xlabel("points")
    for axis in list(axes.flat)[len(keys) :]:
        axis.set_visible(False)
    figure.suptitle(f"score distributions ({len(graded)} submissions)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
