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

import sys

# jsonschema, which nbformat imports, builds 39 parsers at import time when the optional
# rfc3987-syntax package is installed (Jupyter's event schemas bring it): about 2.5 s of CPU at
# the start of every grader process, for URI format checks that nothing here runs (nbformat
# validates with fastjsonschema, nbgrader's metadata schema checks no formats). Unless jsonschema
# is already imported, the grader's process goes without that package.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

from autograder.core.judging import grade_part, run_part  # noqa: E402

__all__ = ["grade_part", "run_part"]
