"""``python -m autograder.platforms.prairielearn``: grade one submission as the external grader."""

import sys

from autograder.platforms.prairielearn.run_grader import main

sys.exit(main())
