"""What the grader shows people: the per-part table, and text made safe to print or to open.

* :func:`format_table` is what ``python -m autograder grade`` prints for one submission;
* :func:`printable` strips control characters and terminal escapes from text that came from a
  submission (student ids, file names, notes, feedback), so that a notebook cannot draw a
  fake ``status: graded`` line, clear the screen or retitle the terminal;
* :func:`csv_cell` neutralises a CSV cell that a spreadsheet would run as a formula;
* :func:`points_text` writes points as students read them (at most two decimals; the grades
  CSV keeps more).

The grades CSV, the summary and the histogram of ``grade-all`` are :mod:`autograder.nbgrader.class_reports`.
"""

from __future__ import annotations

import re

from autograder.core.judges import BONUS_PARTS
from autograder.core.results import GradeResult

__all__ = ["csv_cell", "format_table", "points_text", "printable"]

#: CSI / OSC / other ESC sequences, then any C0 or C1 control character but tab and newline.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` without terminal escapes and control characters (tab and newline kept).

    Carriage returns go too (``\\r`` would let a line overwrite what was printed before it), as
    do Unicode line separators and bidirectional overrides.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", str(text)))


def points_text(points: float) -> str:
    """Points as students read them: at most two decimals (``0.92``, ``1``, ``11.18``)."""
    return f"{round(float(points), 2):g}"


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet runs as a formula.

    A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (and is not a
    plain number) gets a leading ``'``, which spreadsheets show as text; control characters are
    removed. Applying it twice changes nothing more.
    """
    text = str(value)
    if _NUMBER.fullmatch(text):
        return text
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", text)


def format_table(result: GradeResult, feedback: bool = True) -> str:
    """One submission's scores, a row per part, then (optionally) each part's feedback.

    Scores of a result that is not ``graded`` are marked ``*`` and the table says why. Every
    piece of text that came from the submission passes through :func:`printable`.
    """
    lines = [f"student: {printable(result.student)}   status: {printable(result.status)}"]
    if not result.sandboxed:
        lines.append("WARNING: NOT SANDBOXED: the notebook ran outside the sandbox (the notes say with whose rights)")
    mark = "" if result.graded else "*"
    label = "total" + (" so far" if result.waiting else "")
    width = max([len("part"), len(label), *map(len, result.parts), *map(len, result.manual)])
    lines.append(f"{'part':<{width}}  {'score':>7}  {'max':>5}")
    for key, part in result.parts.items():
        lines.append(f"{key:<{width}}  {part.score:>6.2f}{mark:1}  {part.max:>5g}")
    for name, points in result.manual.items():
        if name in result.hand_scores:
            score = result.hand_scores[name]
            lines.append(
                f"{name:<{width}}  {score:>6.2f}{mark:1}  {points:>5g}  left as the stub: "
                "scored by nbgrader, needs no grading"
            )
        else:
            lines.append(
                f"{name:<{width}}  {'-':>7}  {points:>5g}  not graded yet (part 8, by hand)"
            )
    lines.append(f"{label:<{width}}  {result.total:>6.2f}{mark:1}  {result.max_total:>5g}")
    if not result.graded:
        lines.append(f"* NOT A GRADE ({printable(result.status.split(':')[0])}): review first")
    bonus = [key for key in result.parts if key in BONUS_PARTS]
    if bonus:
        lines.append(
            f"(bonus: {', '.join(bonus)}; its points count in the total, above full marks)"
        )
    if result.manual:
        waits = "; the total leaves out part 8 until it is graded (grade-all --course, then "
        waits += "formgrader)"
        lines.append(
            f"full marks: {result.max_total:g} = {result.autograded_max:g} autograded + "
            f"{sum(result.manual.values()):g} graded by hand{waits if result.waiting else ''}"
        )
    for note in [*result.notes, *result.unfinished_notes()]:
        lines.append(f"note: {printable(note)}")
    if feedback:
        for key, part in result.parts.items():
            lines.append(f"\n--- {key} ---")
            lines.append(printable(part.feedback) or "(no feedback printed)")
    return "\n".join(lines)
