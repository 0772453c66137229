"""Hidden autograder of the A2C course kit: grades every part against the reference.

* :mod:`autograder.checks`: per part, the probes that run the student's code and the judges that
  compare what came back with the reference;
* :mod:`autograder.hidden`: the plan of probe steps, the judging of their records, and
  :func:`~autograder.hidden.grade_part` for an instructor's own notebook;
* :mod:`autograder.sandbox`: runs a submission's notebook in a throw-away bubblewrap sandbox;
* :mod:`autograder.pipeline`: grades submissions (sandbox, judging, nbgrader gradebook, feedback).

The package imports ``solutions.reference`` and ``course_lib``; nothing imports it back, and
nothing of it is ever visible to the student's code.
"""

from .hidden import grade_part, run_part

__all__ = ["grade_part", "run_part"]
