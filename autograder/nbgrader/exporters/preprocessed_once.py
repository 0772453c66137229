"""The course's exporters preprocess one copy of the notebook and check it once.
"""

from __future__ import annotations

import copy
from typing import Any

from nbformat import NotebookNode, validator

__all__ = ["PreprocessedOnce"]


class PreprocessedOnce:
    """The preprocessing of the course's two exporters (:class:`GraderOnlyExporter`,
    :class:`FeedbackExporter`): the preprocessors run on nbconvert's copy of the notebook, and
    the result is checked against nbformat's schema once, after the last of them.

    nbconvert's ``from_notebook_node`` deep-copies the notebook before it preprocesses it, and
    its ``_preprocess`` copies that copy again; it then checks the whole notebook after each
    preprocessor (a dozen times a recording). That costs a third of a recording's CPU
    (``benchmarks/nbconvert_override.py``, docs/benchmarks.md) for nothing a reader sees: an
    invalid notebook is still refused (the message names the last preprocessor), and
    autograde's notebook is checked again when nbformat writes it. ``_preprocess`` is private to
    nbconvert: tests/test_nbconvert_overrides.py pins the versions this was written against.
    """

    def _preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        resources = copy.deepcopy(resources)  # preprocessors write into it; the caller's stays
        _, nb = validator.normalize(nb)  # a normalised copy, as nbconvert's own step makes
        preprocessor = None
        for preprocessor in self._preprocessors:  # type: ignore[attr-defined]
            nb, resources = preprocessor(nb, resources)
        self._validate_preprocessor(nb, preprocessor)  # type: ignore[attr-defined]
        return nb, resources
