"""The suite's order: the test files that take longest run first.

pytest-xdist runs each test file on one worker (``--dist loadfile``, pyproject.toml). By
default it hands out the files with the most tests first, so the longest file
(``test_platforms.py``, five minutes on 2 cores, 14 tests) started when the other worker had
little left, which then waited for it. With ``--no-loadscope-reorder`` (pyproject.toml) it
hands them out in the order collected, which this hook sets: the long files run beside each
other and the short ones fill in after them, so that both workers finish at about the same
time. The order of the tests within a file is unchanged; files not named here follow in their
usual order.

Each worker computes with one torch thread. Torch starts a thread a core in every process, so
two workers on two cores ran four threads that spun waiting for each other: a test file of
small in-process probes took two to three times the CPU beside the other worker than alone.
Processes the tests start (graders, sandboxes, training runs, kernels) keep their own settings.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The longest test files, longest first (per-file times on 2 cores: docs/benchmarks.md).
LONGEST_FIRST = (
    "test_platforms.py",
    "test_grading_sandbox.py",
    "test_cluster_grading.py",
    "test_train_cli.py",
    "test_notebooks.py",
    "test_semester.py",
    "test_agent_play.py",
    "test_run_limits.py",
    "test_template_isolation.py",
    "test_formgrader_browser.py",
)


def pytest_configure(config):
    """One torch thread in each xdist worker when there are several (see the docstring)."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.path)).name, len(rank)))
