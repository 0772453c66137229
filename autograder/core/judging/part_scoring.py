"""A part's score from the records of its probe steps: sub-check verdicts, gating and feedback.

Each *judge* (:mod:`.parts`) compares what a probe step observed with the reference.
:func:`judge_part` turns a part's records (decoded by :mod:`.channel`) into a
:class:`PartResult` in the trusted process, which never runs student code.

Sub-checks that only ask a property (shapes, "no graph", "inputs unchanged"...) are *gated*:
they earn their share only when the part's gate sub-checks, which compare values with the
reference on the secret cases, passed. Judging never raises on what came back: a record that
is not what the probes write, or a judge that trips over it, fails that sub-check with a
reason and marks the part ``malformed``.
"""

from __future__ import annotations

import numbers
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.core.judging.channel import RecordError, validate_record
from autograder.core.judging.parts import PART_NAMES, part_module, subchecks
from autograder.core.judging.parts.subcheck import CheckFailed, SubCheck
from autograder.core.reports.safe_text import points_text

__all__ = [
    "FAILED",
    "HELD",
    "PASSED",
    "TAMPERED",
    "UNREADABLE",
    "PartResult",
    "SubResult",
    "check_points",
    "judge_part",
]


#: How a sub-check's line starts: it earned its points, failed, or holds but waits for the part's
#: values to be right (a gated property: :mod:`autograder.core.judging.parts.subcheck`).
PASSED, FAILED, HELD = "PASS", "FAIL", "NOT CREDITED YET"


@dataclass(frozen=True)
class SubResult:
    """The outcome of one sub-check, with its share of the points."""

    key: str
    title: str
    points: float  #: what this sub-check is worth
    passed: bool
    message: str
    #: the property holds, but earns nothing until the part's gate sub-checks pass
    held: bool = False

    @property
    def label(self) -> str:
        return PASSED if self.passed else HELD if self.held else FAILED


@dataclass(frozen=True)
class PartResult:
    """The graded outcome of one part."""

    part_key: str
    score: float  #: points earned, a float in [0, max_points]
    max_points: float
    subresults: tuple[SubResult, ...]
    #: some observation was not what the probes write: forged or damaged in the student's process
    malformed: bool = False
    #: some record says the runtime's seal was broken (a patched probe table or runtime)
    tampered: bool = False

    def feedback(self) -> str:
        """The text shown under the graded cell: a header and one line per sub-check."""
        name = PART_NAMES.get(self.part_key, self.part_key)
        score, top = points_text(self.score), points_text(self.max_points)
        lines = [f"Part '{self.part_key}' ({name}): {score} / {top} points"]
        for sub in self.subresults:
            line = f"  {sub.label} [{sub.points:.2f} pt] {sub.title}"
            if not sub.passed:
                line += f" -- {sub.message}"
            lines.append(textwrap.fill(line, width=110, subsequent_indent=" " * 9))
        return "\n".join(lines)


def check_points(points: Any) -> float:
    if isinstance(points, bool) or not isinstance(points, numbers.Real) or not points >= 0:
        raise ValueError(
            f"points must be a number >= 0 (the cell's nbgrader points), got {points!r}."
        )
    if not np.isfinite(float(points)):
        raise ValueError(f"points must be finite, got {points!r}.")
    return float(points)


UNREADABLE = "unreadable result"
TAMPERED = "the grading runtime was changed in the notebook's process"
#: Exceptions a judge raises when an observation is not what the probe writes.
_MALFORMED = (
    RecordError,
    KeyError,
    TypeError,
    ValueError,
    IndexError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)


def _cases_of(check: SubCheck, steps: Mapping[str, dict[str, Any]]) -> list[tuple[str, Any]]:
    """``(step key, case)`` of ``check`` in a plan's steps of its part."""
    chosen = []
    for spec in check.cases.split("+"):
        name, _, index = spec.partition(":")
        prefix = f"{check.probe}.{name}."
        if index:
            keys = [prefix + index]
        else:
            keys = sorted(
                (key for key in steps if key.startswith(prefix) and key[len(prefix) :].isdigit()),
                key=lambda key: int(key[len(prefix) :]),
            )
        chosen += [(key, steps[key]["case"] if key in steps else None) for key in keys]
    return chosen


def _verdict(
    check: SubCheck, steps: Mapping[str, dict[str, Any]], records: Mapping[str, Any]
) -> tuple[bool, str, bool]:
    """(passed, message, malformed) of one sub-check."""
    cases = _cases_of(check, steps)
    if not cases or any(case is None for _, case in cases):
        return False, "not judged: this check is missing from the plan", False
    for key, case in cases:
        record = records.get(key)
        if record is None:
            return (
                False,
                "no result: the notebook stopped or was stopped before this check ran",
                False,
            )
        try:
            record = validate_record(record)
        except RecordError as error:
            return False, f"{UNREADABLE} ({error})", True
        if record.get("tampered"):
            return False, f"{TAMPERED} ({str(record.get('error', ''))[:300]})", True
        if record.get("missing"):
            return False, "not defined: the notebook does not define this name", False
        if not record["ok"]:
            return False, str(record.get("error", "failed"))[:2000], False
        try:
            check.judge(record["observation"], case)
        except CheckFailed as failure:
            return False, str(failure)[:4000], False
        except _MALFORMED as error:
            # Not what the probe writes: the student's process forged or damaged it.
            return False, f"{UNREADABLE} ({type(error).__name__}: {str(error)[:300]})", True
        except Exception as error:  # noqa: BLE001 - one part's judging never stops the class
            return False, f"the grader could not judge this check ({type(error).__name__})", False
    return True, "", False


def _judge(
    part_key: str, records: Mapping[str, Any], max_points: float, plan: Mapping[str, Any]
) -> PartResult:
    checks = subchecks(part_key)
    steps = {step["key"]: step for step in plan["parts"][part_key]}
    if not isinstance(records, Mapping):
        records = {}
    verdicts = {check.key: _verdict(check, steps, records) for check in checks}
    gate = part_module(part_key).GATE
    gate_open = all(verdicts[key][0] for key in gate)
    titles = {check.key: check.title for check in checks}
    failed_gate = [f'"{titles[key]}"' for key in gate if not verdicts[key][0]]
    closed = (
        "your code has this property; its points count once the part's values are right, "
        f"and {' and '.join(failed_gate)} did not pass"
    )
    total_weight = sum(check.weight for check in checks)
    results = []
    for check in checks:
        passed, message, _ = verdicts[check.key]
        held = check.gated and passed and not gate_open
        if held:
            passed, message = False, closed
        share = max_points * check.weight / total_weight
        results.append(SubResult(check.key, check.title, share, passed, message, held))
    earned = sum(result.points for result in results if result.passed)
    score = min(max_points, max(0.0, round(float(earned), 6)))
    malformed = any(verdict[2] for verdict in verdicts.values())
    tampered = any(verdict[1].startswith(TAMPERED) for verdict in verdicts.values())
    return PartResult(part_key, float(score), max_points, tuple(results), malformed, tampered)


def judge_part(
    part_key: str, records: Mapping[str, Any], points: float, plan: Mapping[str, Any]
) -> PartResult:
    """Score ``part_key`` from the records of its probe steps (keyed by step key) on ``plan``.

    Never raises: whatever the records hold, a failure becomes that part's feedback.
    """
    try:
        max_points = check_points(points)
    except ValueError:
        max_points = 0.0
    try:
        return _judge(part_key, records, max_points, plan)
    except Exception as error:  # noqa: BLE001 - one part's judging never stops the class
        sub = SubResult(
            "judging",
            "judging",
            max_points,
            False,
            f"the grader could not judge this part ({type(error).__name__})",
        )
        return PartResult(part_key, 0.0, max_points, (sub,), malformed=False)
