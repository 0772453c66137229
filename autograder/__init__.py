"""Hidden autograder of the A2C course kit: grades every part against the reference.

The grader's rooms (docs/design.md, section 2):

* :mod:`autograder.core`: the grading core, which knows nothing of nbgrader or of a platform:
  :mod:`~autograder.core.assessor` (one submission: repair, plan, sandboxed run, judgement,
  result as plain data) over :mod:`~autograder.core.isolation` (running student code where it
  cannot reach the grader), :mod:`~autograder.core.judging` (the plan of probe steps from a
  secret seed, the decoding of what came back, the judges of each part),
  :mod:`~autograder.core.intake` (finding, reading and repairing submissions, keeping what they
  showed safely), :mod:`~autograder.core.reports` (the grade and what people are shown of it)
  and :mod:`~autograder.core.cluster` (grading on Dask);
* :mod:`autograder.sandboxed`: all the sandbox is shown of the grader, laid out as mounted;
* the front ends: :mod:`autograder.nbgrader` (``grade``, ``grade-all``, the course, its
  reports and export) and :mod:`autograder.platforms` (Gradescope, PrairieLearn);
  :mod:`autograder.cli` is ``python -m autograder``, one parser of the commands of
  :mod:`autograder.commands` (a module each).

The package imports ``solutions.reference`` and ``course_lib``; nothing imports it back, and
nothing of it but :mod:`autograder.sandboxed` is ever visible to the student's code.
"""

import sys

# jsonschema, which nbformat imports, builds 39 parsers at import time when the optional
# rfc3987-syntax package is installed (Jupyter's event schemas bring it): about 2.5 s of CPU at
# the start of every grader process, for URI format checks that nothing here runs (nbformat
# validates with fastjsonschema, nbgrader's metadata schema checks no formats). Unless jsonschema
# is already imported, the grader's process goes without that package.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
