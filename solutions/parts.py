"""The course's parts and files: the one leaf the builder, the reference and the grader read.

It imports nothing of the kit, so anything may import it: the notebook builder
(:mod:`solutions.build_notebooks`), the training code and the grader (which imports no builder
for these constants).

* :data:`PARTS` maps each graded part's key (the ``grade_id`` of its solution cell, and
  ``test_<key>`` of its graded cell) to the name the student defines there, in notebook order;
  :data:`BONUS_PARTS` count in a student's total but not in full marks.
* The notebook is nbgrader's notebook :data:`NOTEBOOK` of the assignment :data:`ASSIGNMENT` (the
  folder name under ``source/``, ``release/``, ``submitted/<student>/``...), and the name the
  grader recognises in a submitted file's name.
* Where the notebooks are in this repository: :data:`SOURCE_NOTEBOOK` (the nbgrader source, with
  the solutions and the hidden tests), :data:`RELEASE_NOTEBOOK` (generated from it: what
  students get) and :data:`REFERENCE` (the solution code the builder copies into the source).
"""

from pathlib import Path

__all__ = [
    "ASSIGNMENT",
    "BONUS_PARTS",
    "NOTEBOOK",
    "PARTS",
    "REFERENCE",
    "RELEASE_NOTEBOOK",
    "ROOT",
    "SOURCE_NOTEBOOK",
]

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

#: The repository's root (the folder of ``solutions/``).
ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "solutions" / "reference.py"
SOURCE_NOTEBOOK = ROOT / "solutions" / f"{NOTEBOOK}.ipynb"
RELEASE_NOTEBOOK = ROOT / "notebooks" / f"{NOTEBOOK}.ipynb"
