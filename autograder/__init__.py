"""Hidden autograder of the A2C course kit: grades every part against the reference.

* :mod:`autograder.checks`: per part, the cases drawn for a grading and the judges that compare
  what came back with the reference;
* :mod:`autograder.runtime`: what runs next to the student's code (harness, probes, fixtures,
  records), shown to the sandbox read-only as the package ``grading_runtime``;
* :mod:`autograder.judging`: the plan of probe steps from a secret seed, the judging of their
  records, and :func:`~autograder.judging.grade_part` for an instructor's own notebook;
* :mod:`autograder.sandbox`: runs a submission's notebook in a throw-away bubblewrap sandbox;
* :mod:`autograder.pipeline`: grades submissions (sandbox, judging, nbgrader gradebook, feedback).

The package imports ``solutions.reference`` and ``course_lib``; nothing imports it back, and
nothing of it but :mod:`autograder.runtime` is ever visible to the student's code.
"""

from .judging import grade_part, run_part

__all__ = ["grade_part", "run_part"]
