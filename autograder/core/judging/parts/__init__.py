"""The hidden checks of each graded part, one module per part key.

Every module holds ``SUBCHECKS``, a tuple of :class:`~autograder.core.judging.parts.subcheck.SubCheck` (which
probe runs the student's code on which cases, and how the observation is judged against the
reference), ``draw_cases(rng)`` (this grading's cases, drawn from the secret seed) and
``GATE`` (the sub-checks that compare values, which the gated ones wait for). The student's
candidate always runs with fixtures, never with the student's other parts, so one wrong part
never costs points in another.

========================= ================================ ============================
part key                  candidate                        module
========================= ================================ ============================
``model``                 the function ``make_model``      :mod:`.model`
``policy``                the class ``Policy``             :mod:`.policy`
``compute_value_targets`` the class ``ComputeValueTargets`` :mod:`.compute_value_targets`
``merge_time_batch``      the class ``MergeTimeBatch``     :mod:`.merge_time_batch`
``a2c``                   the class ``A2C``                :mod:`.a2c`
``gae``                   the class ``ComputeGAE``         :mod:`.gae`
========================= ================================ ============================

Shared: :mod:`.base` (the SubCheck record, reference observations, comparisons) and
:mod:`.returns` (cases for the value-target parts). The probes and fixtures themselves are the
grading runtime, :mod:`autograder.sandboxed.grading_runtime`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from autograder.core.judging.parts.subcheck import SubCheck
from solutions.parts import BONUS_PARTS, PARTS

__all__ = ["BONUS_PARTS", "PART_KEYS", "PART_NAMES", "part_module", "subchecks"]

#: The student's name each part key grades (the course's one list, ``solutions.parts``).
PART_NAMES = PARTS
PART_KEYS = tuple(PART_NAMES)


def part_module(part_key: str) -> ModuleType:
    """The checks module of ``part_key`` (imported on first use)."""
    if part_key not in PART_NAMES:
        raise ValueError(
            f"Unknown part key {part_key!r}: expected one of {', '.join(map(repr, PART_KEYS))} "
            "(the grade_id of the notebook's solution cell)."
        )
    return importlib.import_module(f"{__name__}.{part_key}")


def subchecks(part_key: str) -> tuple[SubCheck, ...]:
    """The sub-checks of ``part_key``."""
    return part_module(part_key).SUBCHECKS
