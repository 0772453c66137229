"""The hidden checks of each graded part, one module per part key.

Every module holds ``SUBCHECKS``, a tuple of :class:`~autograder.checks.base.SubCheck`; the
student's candidate is always run against the *reference* implementations of the other parts
(or small stubs), so one wrong part never costs points in another.

========================= ============================== =====================================
part key                  candidate                      module
========================= ============================== =====================================
``model``                 the function ``make_model``    :mod:`autograder.checks.model`
``policy``                the class ``Policy``           :mod:`autograder.checks.policy`
``compute_value_targets`` the class ``ComputeValueTargets`` :mod:`.compute_value_targets`
``merge_time_batch``      the class ``MergeTimeBatch``   :mod:`autograder.checks.merge_time_batch`
``a2c``                   the class ``A2C``              :mod:`autograder.checks.a2c`
``gae``                   the class ``ComputeGAE``       :mod:`autograder.checks.gae`
========================= ============================== =====================================

Shared helpers: :mod:`.base` (the SubCheck record, comparisons), :mod:`.fakes` (stub models
and policies), :mod:`.returns` (synthetic trajectories for the value-target parts) and
:mod:`.a2c_bench` (networks, merged trajectories and one-step runs for the ``a2c`` part).
"""

from __future__ import annotations

import importlib

from .base import SubCheck

__all__ = ["BONUS_PARTS", "PART_KEYS", "PART_NAMES", "subchecks"]

#: The student's name each part key grades (what the notebook passes to ``grade_part``).
PART_NAMES = {
    "model": "make_model",
    "policy": "Policy",
    "compute_value_targets": "ComputeValueTargets",
    "merge_time_batch": "MergeTimeBatch",
    "a2c": "A2C",
    "gae": "ComputeGAE",
}
PART_KEYS = tuple(PART_NAMES)
#: Bonus parts: their points count in ``total`` but not in ``max_total``, so a student who
#: skips them can still reach full marks (nbgrader itself has no notion of bonus points).
BONUS_PARTS = frozenset({"gae"})


def subchecks(part_key: str) -> tuple[SubCheck, ...]:
    """The sub-checks of ``part_key`` (imported on first use)."""
    if part_key not in PART_NAMES:
        raise ValueError(
            f"Unknown part key {part_key!r}: expected one of {', '.join(map(repr, PART_KEYS))} "
            "(the grade_id of the notebook's solution cell)."
        )
    return importlib.import_module(f"{__name__}.{part_key}").SUBCHECKS
