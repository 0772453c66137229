"""What ``python -m autograder grade`` prints for one submission: the per-part table.

Every piece of text that came from the submission passes through
:func:`~.safe_text.printable`. The grades CSV, the summary and the histogram of ``grade-all``
are :mod:`autograder.nbgrader.class_reports`.
"""

from __future__ import annotations

from autograder.core.reports.grade_result import GradeResult
from autograder.core.reports.safe_text import printable

__all__ = ["format_table"]


def format_table(result: GradeResult, feedback: bool = True) -> str:
    """One submission's scores, a row per part, then (optionally) each part's feedback.

    Scores of a result that is not ``graded`` are marked ``*`` and the table says why. Every
    piece of text that came from the submission passes through :func:`printable`.
    """
    lines = [f"student: {printable(result.student)}   status: {printable(result.status)}"]
    if not result.ran:
        lines.append("not run: nothing of this file ran (in a sandbox or out of one)")
    elif not result.sandboxed:
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
    bonus = [key for key in result.parts if key in result.points.bonus]
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
