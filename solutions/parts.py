"""The graded parts of the course notebook: the one list the builder, the reference and the grader read.

The notebook is nbgrader's notebook :data:`NOTEBOOK` of the assignment :data:`ASSIGNMENT` (the
folder name under ``source/``, ``release/``, ``submitted/<student>/``...), and the name the
grader recognises in a submitted file's name.

``PARTS`` maps each part key (the ``grade_id`` of its solution cell, and ``test_<key>`` of its
graded cell) to the name the student defines there, in notebook order. Bonus parts count in a
student's total but not in the full marks.
"""

__all__ = ["ASSIGNMENT", "BONUS_PARTS", "NOTEBOOK", "PARTS"]

#: The assignment's id in nbgrader, and its folder under ``source/``, ``release/``...
ASSIGNMENT = "a2c"
#: The notebook's name in the assignment (without .ipynb): nbgrader's notebook id.
NOTEBOOK = "a2c"

PARTS = {
    "model": "make_model",
    "policy": "Policy",
    "compute_value_targets": "ComputeValueTargets",
    "merge_time_batch": "MergeTimeBatch",
    "a2c": "A2C",
    "gae": "ComputeGAE",
}
BONUS_PARTS = frozenset({"gae"})
