"""Hidden autograder of the A2C course kit: checks every graded part against the reference.

* :func:`autograder.hidden.grade_part` is what a graded notebook cell calls; it prints
  feedback and returns the points earned (nbgrader's partial credit).
* :mod:`autograder.checks` holds the sub-checks of each part, one module per part key.
* :mod:`autograder.sandbox` runs student code quietly, under a time limit, without raising.

The package imports ``solutions.reference`` (the reference parts) and ``course_lib``; nothing
imports it back.
"""

from .hidden import grade_part, run_part

__all__ = ["grade_part", "run_part"]
