"""The course's exporters override private parts of nbconvert: the versions they were written
against, and the private names they rely on.

:class:`~autograder.nbgrader.exporters.preprocessed_once.PreprocessedOnce` replaces
``Exporter._preprocess`` (and calls ``_preprocessors`` and ``_validate_preprocessor``);
:class:`~autograder.nbgrader.exporters.feedback.FeedbackExporter` replaces
``HTMLExporter.from_notebook_node`` (and calls ``_init_resources`` and ``_nb_metadata``).
None of these is nbconvert's public API, so an upgrade of nbconvert or nbgrader must be a
decision: this test fails first, and says what to read again.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

from nbconvert.exporters import Exporter, HTMLExporter, TemplateExporter

#: The versions the overrides were read against (requirements.txt pins nbgrader, which brings nbconvert).
WRITTEN_AGAINST = {"nbconvert": "7.17.2", "nbgrader": "0.9.6"}

_READ_AGAIN = (
    "the course's exporters override private nbconvert methods "
    "(autograder/nbgrader/exporters/preprocessed_once.py: Exporter._preprocess; "
    "autograder/nbgrader/exporters/feedback.py: HTMLExporter.from_notebook_node). "
    "Read those methods in the new version, compare, then update WRITTEN_AGAINST in {file}"
)


def test_nbconvert_and_nbgrader_are_the_versions_the_overrides_were_written_against() -> None:
    installed = {name: version(name) for name in WRITTEN_AGAINST}
    assert installed == WRITTEN_AGAINST, (
        f"installed {installed}, the overrides were written against {WRITTEN_AGAINST}: "
        + _READ_AGAIN.format(file=__file__)
    )


def test_the_private_names_the_overrides_use_still_exist() -> None:
    exporter = HTMLExporter()
    used = {
        "Exporter._preprocess": callable(getattr(Exporter, "_preprocess", None)),
        "Exporter._validate_preprocessor": callable(
            getattr(Exporter, "_validate_preprocessor", None)
        ),
        "Exporter._init_resources": callable(getattr(Exporter, "_init_resources", None)),
        "Exporter._preprocessors": isinstance(getattr(exporter, "_preprocessors", None), list),
        "TemplateExporter._nb_metadata": hasattr(exporter, "_nb_metadata"),
    }
    missing = [name for name, present in used.items() if not present]
    assert not missing, f"nbconvert no longer has {missing}: " + _READ_AGAIN.format(file=__file__)
    # The override keeps _preprocess's signature: (nb, resources) -> (nb, resources).
    assert list(inspect.signature(Exporter._preprocess).parameters) == ["self", "nb", "resources"]
    assert "from_notebook_node" in vars(TemplateExporter)
