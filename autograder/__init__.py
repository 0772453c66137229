"""Hidden autograder of the A2C course kit: grades every part against the reference.

* :mod:`autograder.core.judges`: per part, the cases drawn for a grading and the judges that compare
  what came back with the reference;
* :mod:`autograder.sandboxed.grading_runtime`: what runs next to the student's code (harness, probes, fixtures,
  records), shown to the sandbox read-only as the package ``grading_runtime``;
* :mod:`autograder.core.judging`: the plan of probe steps from a secret seed, the judging of their
  records, and :func:`~autograder.core.judging.grade_part` for an instructor's own notebook;
* :mod:`autograder.core.sandbox`: runs a submission's notebook in a throw-away bubblewrap sandbox;
* :mod:`autograder.nbgrader.grader`: grades submissions (sandbox, judging, nbgrader gradebook, feedback).

The package imports ``solutions.reference`` and ``course_lib``; nothing imports it back, and
nothing of it but :mod:`autograder.sandboxed.grading_runtime` is ever visible to the student's code.
"""

from autograder.core.judging import grade_part, run_part

__all__ = ["grade_part", "run_part"]
