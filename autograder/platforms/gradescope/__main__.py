"""``python -m autograder.gradescope``: grade one submission as Gradescope's run_autograder."""

import sys

from autograder.gradescope.run_autograder import main

sys.exit(main())
