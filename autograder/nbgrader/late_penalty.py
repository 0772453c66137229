"""The late penalty: none unless the instructor configures one, then a fixed rule per assignment.

``grade-all --course DIR --late-penalty RULE`` sets the rule; it is kept in the course
(``<course>/late_penalty.txt``) and later runs into that course use it. ``--late-penalty none``
switches it off again. A rule reads ``PERCENT%/UNIT`` with an optional cap, ``,max=PERCENT%``:

* ``10%/day``: 10% of full marks (1.5 of 15 points) per started day after the deadline;
* ``2%/hour,max=30%``: 2% per started hour, never more than 30% of full marks.

The penalty is a number of **points**, computed from the submission's minutes late
(:mod:`autograder.nbgrader.submission_times`) and full marks only, never from the score, so it does not
move when part 8 is graded later; a student's total is ``max(0, raw total - penalty)``. It is
computed again from the submission's own time at every run (the rows of ``grades.csv``, the
gradebook's ``late_submission_penalty``, which ``nbgrader export``, ``generate_feedback`` and
the kit's ``export`` read), so a regrade or a resubmission never applies it twice: a
resubmission is penalised by its own time, and an unchanged rule gives unchanged numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = [
    "LATE_LINE",
    "RULE_FILE",
    "LatePenalty",
    "course_late_penalty",
    "parse_late_penalty",
    "record_penalties",
]

#: Where a course keeps its rule.
RULE_FILE = "late_penalty.txt"
#: How the penalty line starts in the comment of part 8's cell (formgrader shows it).
LATE_LINE = "Late submission:"
_UNITS = {"hour": 60, "day": 24 * 60, "week": 7 * 24 * 60}
_RULE = re.compile(
    r"(?P<percent>\d+(\.\d+)?)\s*%\s*/\s*(?P<unit>hour|day|week)"
    r"(\s*,\s*max\s*=\s*(?P<cap>\d+(\.\d+)?)\s*%)?"
)
_COMMENT_LINE = re.compile(r"^" + re.escape(LATE_LINE) + r"[^\n]*\n?", re.MULTILINE)


@dataclass(frozen=True)
class LatePenalty:
    """``percent`` of full marks per started ``unit`` late, at most ``cap`` percent."""

    percent: float
    unit: str
    cap: float = 100.0

    def points(self, minutes_late: int, full_marks: float) -> float:
        """The points taken off a submission ``minutes_late`` minutes after the deadline."""
        if minutes_late <= 0:
            return 0.0
        units = math.ceil(minutes_late / _UNITS[self.unit])
        share = min(self.cap, self.percent * units, 100.0)
        return round(share * full_marks / 100.0, 6)

    def rule(self) -> str:
        """The rule as given on the command line (``10%/day,max=50%``)."""
        text = f"{self.percent:g}%/{self.unit}"
        return text + (f",max={self.cap:g}%" if self.cap < 100.0 else "")

    def describe(self) -> str:
        """``10% of full marks per started day late, at most 50%``."""
        text = f"{self.percent:g}% of full marks per started {self.unit} late"
        return text + (f", at most {self.cap:g}%" if self.cap < 100.0 else "")


def parse_late_penalty(text: str) -> LatePenalty | None:
    """The rule ``text`` (module docstring); ``None`` for ``none``.

    Raises:
        ValueError: not a rule (the message shows the form), or a percentage above 100.
    """
    cleaned = str(text).strip().lower()
    if cleaned in ("none", "0", "0%"):
        return None
    match = _RULE.fullmatch(cleaned)
    if match is None:
        raise ValueError(
            f"--late-penalty {text!r} is not a rule: give PERCENT%/UNIT with UNIT hour, day or "
            "week, optionally capped, e.g. 10%/day or 2%/hour,max=30% (percent of full marks "
            "per started unit after the deadline), or none."
        )
    percent = float(match["percent"])
    cap = float(match["cap"]) if match["cap"] else 100.0
    if percent <= 0 or percent > 100 or cap > 100:
        raise ValueError(
            f"--late-penalty {text!r}: percentages are of full marks, above 0 and at most 100."
        )
    return LatePenalty(percent, match["unit"], cap)


def course_late_penalty(given: str | None, course_root: Path | None) -> LatePenalty | None:
    """The rule of this run: ``given`` (then kept in the course; ``none`` removes it), else
    the course's, else ``None`` (no penalty)."""
    kept = Path(course_root) / RULE_FILE if course_root is not None else None
    if given is not None:
        rule = parse_late_penalty(given)
        if kept is not None:
            if rule is None:
                kept.unlink(missing_ok=True)
            else:
                kept.write_text(rule.rule() + "\n", encoding="utf-8")
        return rule
    if kept is None or not kept.is_file():
        return None
    with kept.open(encoding="utf-8") as handle:
        return parse_late_penalty(handle.read(200))


def record_penalties(
    db_url: str,
    assignment: str,
    notebook: str,
    penalties: dict[str, tuple[float, str]],
    comment_cell: str | None,
) -> None:
    """Store each student's penalty (points) in the gradebook, and say so in part 8's comment.

    ``penalties`` is ``{student: (points, line)}``: the points go into the notebook's
    ``late_submission_penalty`` (``nbgrader export`` and ``generate_feedback`` subtract it),
    replacing what was there; ``line`` (starting with :data:`LATE_LINE`, empty for none)
    replaces the previous such line at the end of the comment of ``comment_cell``, which
    formgrader shows beside the score field, since formgrader's totals are the raw score.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with gradebook_session(), Gradebook(db_url) as gradebook:
        for student, (points, line) in penalties.items():
            try:
                submitted = gradebook.find_submission_notebook(notebook, assignment, student)
            except MissingEntry:
                continue
            submitted.late_submission_penalty = points or None
            if comment_cell is None:
                continue
            for comment in submitted.comments:
                if comment.name != comment_cell:
                    continue
                kept = _COMMENT_LINE.sub("", comment.manual_comment or "").strip()
                text = "\n".join(filter(None, [kept, line]))
                comment.manual_comment = text or None
        gradebook.db.commit()
