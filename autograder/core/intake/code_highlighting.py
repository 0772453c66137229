"""Which languages the trusted side highlights: the course's, never one a student names.

nbconvert highlights code with the pygments lexer a *name* picks: a fenced block's language in
a markdown cell (```` ```mcschema ````), the notebook's ``metadata.language_info``
(``pygments_lexer``, else ``name``) for every code cell, and a cell's ``magics_language``
(``%%ruby``). Every such name in a submission is the student's, and pygments has lexers that
never return on a few characters (``mcschema`` on ``<!--``) or take super-linear time. Lexing
runs in the grader's own process (the feedback, nbgrader's autograde, formgrader), some of it
while a lock other gradings wait for is held. So:

* only the lexers of :data:`SAFE_LANGUAGES` (Python, IPython, plain text: the course's) ever
  run on student text; a block in any other language is shown as plain, escaped text
  (:class:`SafeRenderer`, :func:`safe_highlight_language`). Even the course's lexers are
  super-linear on some text (IPython's on a line of dots: 20,000 take 11 s, each position
  scanning to the line's end for a ``?``): a fenced block named ``ipython`` is highlighted with
  the Python lexer, and a block longer than :data:`MAX_HIGHLIGHTED` is shown as plain text;
* :func:`course_languages` gives a submission the release's kernel and language metadata and
  drops the cells' ``magics_language`` before anything renders it, so what nbgrader stores and
  formgrader shows names the course's language only.

The sizes are capped where the notebook is read
(:data:`autograder.core.intake.submission_file.MAX_SOURCE_CHARS`, and
:data:`autograder.core.intake.student_markdown.MAX_MARKDOWN_CELL` a markdown cell), so each rendering
is linear in text of bounded length.
"""

from __future__ import annotations

import copy
from typing import Any

from nbconvert.filters.markdown_mistune import IPythonRenderer
from nbformat import NotebookNode

__all__ = [
    "SAFE_LANGUAGES",
    "SafeRenderer",
    "course_languages",
    "fence_language",
    "safe_highlight_language",
]

#: Names whose pygments lexers may run on a student's text (linear; the course's own).
SAFE_LANGUAGES = frozenset({"python", "python3", "py", "ipython", "ipython3", "text"})
#: The longest fenced block of student text that is highlighted; a longer one is plain text.
MAX_HIGHLIGHTED = 2_000
#: Names of IPython's lexer, which is quadratic on some lines: such blocks get Python's.
_IPYTHON = frozenset({"ipython", "ipython3"})
#: Notebook metadata the release decides (the kernel and the language of its code cells).
_LANGUAGE_METADATA = ("kernelspec", "language_info")


def fence_language(info: str | None) -> str:
    """The language a fenced block's info string names, as nbconvert reads it (``""``: none)."""
    words = (info or "").strip().split(maxsplit=1)
    return words[0] if words else ""


def safe_highlight_language(language: str | None) -> str | None:
    """``language`` when its lexer may run on student text, else ``None``."""
    name = str(language or "").strip().lower()
    return name if name in SAFE_LANGUAGES else None


class SafeRenderer(IPythonRenderer):
    """nbconvert's markdown renderer whose fenced blocks are highlighted only in a language of
    :data:`SAFE_LANGUAGES`, with Python's lexer for IPython's, and only up to
    :data:`MAX_HIGHLIGHTED` characters; any other block is shown as escaped text (its language
    kept as the ``<code>`` element's class). A block of another language is added to
    :attr:`refused`, a block nbconvert's own renderer would highlight otherwise (an IPython or a
    long one) to :attr:`rewritten`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused: list[str] = []
        self.rewritten: list[str] = []

    def block_code(self, code: str, info: str | None = None) -> str:
        language = fence_language(info)
        if not language or language.startswith("mermaid"):
            return super().block_code(code, info)
        if safe_highlight_language(language):
            if len(code) > MAX_HIGHLIGHTED:
                self.rewritten.append(language[:40])
                return super(IPythonRenderer, self).block_code(code, info)
            if language.lower() in _IPYTHON:
                self.rewritten.append(language[:40])
                return super().block_code(code, "python3")
            return super().block_code(code, info)
        self.refused.append(language[:40])
        # mistune's own plain block: the code escaped, no lexer
        return super(IPythonRenderer, self).block_code(code, info)


def _named_language(metadata: Any) -> str:
    """The lexer name nbconvert takes from a notebook's metadata (``""``: none)."""
    info = metadata.get("language_info") if isinstance(metadata, dict) else None
    if not isinstance(info, dict):
        return ""
    return str(info.get("pygments_lexer") or info.get("name") or "")


def course_languages(nb: NotebookNode, release: NotebookNode) -> list[str]:
    """Give ``nb`` the release's kernel and language metadata and drop every cell's
    ``magics_language``, in place; a note when the student's named a lexer that may not run."""
    notes = []
    named = _named_language(nb.metadata)
    if named and not safe_highlight_language(named):
        notes.append(
            f"the notebook's metadata names the language {named[:40]!r}: shown as Python, the "
            "course's language"
        )
    for key in _LANGUAGE_METADATA:
        if key in release.metadata:
            nb.metadata[key] = copy.deepcopy(release.metadata[key])
        else:
            nb.metadata.pop(key, None)
    for cell in nb.cells:
        metadata = cell.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("magics_language", None)
    return notes
