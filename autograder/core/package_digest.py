"""The digest of the grader's own files, to notice a change between two gradings.

:func:`package_files` hashes every file of ``autograder``, ``solutions`` and ``course_lib`` as
installed. The grader compares it before every grading with what it was when the grader started
(nothing a notebook run without the sandbox changed on disk is used by a later grading), and a
cluster compares each worker's with the instructor's.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from autograder.core.file_tree import read_tree
from course_lib.saved_agent import AGENT_FILE

__all__ = ["OWN_PACKAGES", "package_files"]

OWN_PACKAGES = ("autograder", "solutions", "course_lib")
#: What running ``solutions/a2c.ipynb`` in its own folder writes there (the training plot, the
#: agent's video, the saved agent): nothing the grader runs imports or reads these (a student's
#: agent is read from the submission's folder), so a self-learner's run beside a grader is no
#: change to the grader's files.
NOTEBOOK_OUTPUTS = (".png", ".mp4", ".gif", AGENT_FILE)


def package_files() -> dict[str, str]:
    """``{"package/relative/path": sha256}`` of the grader's own files, as installed."""
    found = {}
    for package in OWN_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in sorted(spec.submodule_search_locations or []) if spec else []:
            for name, data in read_tree(Path(folder)).items():
                if not name.endswith(NOTEBOOK_OUTPUTS):
                    found[f"{package}/{name}"] = hashlib.sha256(data).hexdigest()
    return found
