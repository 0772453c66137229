"""``python -m autograder.platforms.gradescope``: grade one submission as Gradescope's run_autograder."""

import sys

from autograder.platforms.gradescope.run_autograder import main

sys.exit(main())
