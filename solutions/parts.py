"""The graded parts of the course notebook: the one list the builder, the reference and the grader read.

``PARTS`` maps each part key (the ``grade_id`` of its solution cell, and ``test_<key>`` of its
graded cell) to the name the student defines there, in notebook order. Bonus parts count in a
student's total but not in the full marks.
"""

__all__ = ["BONUS_PARTS", "PARTS"]

PARTS = {
    "model": "make_model",
    "policy": "Policy",
    "compute_value_targets": "ComputeValueTargets",
    "merge_time_batch": "MergeTimeBatch",
    "a2c": "A2C",
    "gae": "ComputeGAE",
}
BONUS_PARTS = frozenset({"gae"})
