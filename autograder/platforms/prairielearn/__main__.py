"""``python -m autograder.prairielearn``: grade one submission as the external grader."""

import sys

from autograder.prairielearn.run_grader import main

sys.exit(main())
