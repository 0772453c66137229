"""The feedback page's exporter: nbgrader's feedback HTML with the course's totals.

The course configuration selects :class:`FeedbackExporter` for ``generate_feedback`` with the
template ``a2c_feedback`` (:data:`FEEDBACK_TEMPLATES`), which extends nbgrader's feedback page
and shows what :class:`~autograder.nbgrader.preprocessors.course_totals.CourseTotals` put in
``resources["a2c"]``. Fenced code in a student's markdown and code cells is highlighted only in
the course's languages (:mod:`autograder.core.intake.code_highlighting`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, pass_context
from jinja2.bccache import Bucket
from nbconvert.exporters import HTMLExporter
from nbformat import NotebookNode

from autograder.core.intake.code_highlighting import SafeRenderer, safe_highlight_language
from autograder.nbgrader.exporters.preprocessed_once import PreprocessedOnce

__all__ = [
    "CACHE_SIZE",
    "FEEDBACK_TEMPLATES",
    "NO_ALT_TEXT",
    "FeedbackExporter",
    "nbgrader_templates",
    "with_image_alt_text",
]

#: The folder of this course's nbconvert templates (``a2c_feedback``), beside nbgrader's
#: (whose ``feedback`` template ours extends).
FEEDBACK_TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def nbgrader_templates() -> Path:
    """nbgrader's formgrader template folder (``feedback/``, ``formgrade/``)."""
    import nbgrader

    return Path(nbgrader.__file__).resolve().parent / "server_extensions/formgrader/templates"


class FeedbackExporter(PreprocessedOnce, HTMLExporter):
    """nbgrader's feedback HTML with the course's totals (template ``a2c_feedback``).

    The course configuration selects it for ``generate_feedback`` and sets its template (a
    class of its own, so that formgrader's HTML exporter keeps nbgrader's templates).

    Three savings over nbconvert's HTML exporter, the page unchanged for a reader:

    * A class's pages share most of their cells (the course's text, its locked code), so each
      rendered markdown cell and each highlighted code cell is kept by its source
      (:func:`_markdown_html`, :class:`_SharedHighlight`; at most :data:`CACHE_SIZE` of each, for
      the life of the process), and a page renders only what its student changed.
    * Each exporter compiles its templates (nbgrader's feedback page extends three of
      nbconvert's): the compiled code is kept for the process (:class:`_KeptTemplates`).
    * nbconvert parses the whole page again with BeautifulSoup (over a third of a page's time)
      to add an ``alt`` text to images without one and a ``tabindex`` to JupyterLab's cell
      wrappers, which this template (nbgrader's, classic) does not have. The page gets the
      ``alt`` texts from one linear pass (:func:`with_image_alt_text`) and is written as the
      template rendered it.
    """

    def _create_environment(self) -> Any:
        environment = super()._create_environment()
        environment.bytecode_cache = _COMPILED_TEMPLATES
        return environment

    @pass_context
    def markdown2html(self, context: Any, source: str) -> str:
        from nbconvert.filters.markdown_mistune import MarkdownWithMath

        cell = context.get("cell", {})
        # the notebook's folder only matters to images embedded from files
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        path = path if self.embed_images else ""
        settings = (self.embed_images, self.anchor_link_text, self.exclude_anchor_links)
        if not (cell.get("attachments") or self.lexer_options):
            return _markdown_html(source, str(path), settings)
        # not shared with other pages: HTMLExporter.markdown2html, with the safe renderer
        renderer = SafeRenderer(
            escape=False,
            attachments=cell.get("attachments", {}),
            embed_images=self.embed_images,
            path=path,
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options,
        )
        return MarkdownWithMath(renderer=renderer).render(source)

    def from_notebook_node(  # type: ignore[override]
        self, nb: NotebookNode, resources: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        # HTMLExporter.from_notebook_node's filters, then the template (its BeautifulSoup pass left out)
        from nbconvert.exporters.templateexporter import TemplateExporter
        from nbconvert.filters.highlight import Highlight2HTML
        from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

        langinfo = nb.metadata.get("language_info", {})
        named = langinfo.get("pygments_lexer", langinfo.get("name", None))
        lexer = safe_highlight_language(named) or ("ipython3" if named else None)
        highlight = self.filters.get(
            "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)
        )
        resources = self._init_resources(resources)
        filter_data_type = WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources
        )
        self.register_filter("highlight_code", _SharedHighlight(highlight))
        self.register_filter("filter_data_type", filter_data_type)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return with_image_alt_text(html), resources


class _KeptTemplates(BytecodeCache):
    """Compiled Jinja templates, kept in memory for the process. Jinja keys each by the
    template's name and checks it against the source's checksum: an edited template compiles
    again."""

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        code = self.code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


_COMPILED_TEMPLATES = _KeptTemplates()

#: How many rendered markdown cells and highlighted code cells a process keeps.
CACHE_SIZE = 2048

#: What nbconvert writes for an image without a description.
NO_ALT_TEXT = "No description has been provided for this image"

_IMG_TAG = re.compile(r"<img\b[^<>]*>", re.IGNORECASE)
_HAS_ALT = re.compile(r"\salt(?=[\s=/>])", re.IGNORECASE)


def with_image_alt_text(html: str) -> str:
    """``html`` with ``alt="..."`` (:data:`NO_ALT_TEXT`) in every ``<img>`` tag that has none:
    what nbconvert's BeautifulSoup pass adds, in one linear pass."""

    def add(match: re.Match[str]) -> str:
        tag = match.group(0)
        if _HAS_ALT.search(tag):
            return tag
        return f'{tag[:4]} alt="{NO_ALT_TEXT}"{tag[4:]}'

    return _IMG_TAG.sub(add, html)


@lru_cache(maxsize=CACHE_SIZE)
def _markdown_html(source: str, path: str, settings: tuple[Any, ...]) -> str:
    """nbconvert's rendering of one markdown cell (``HTMLExporter.markdown2html``), kept."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    embed_images, anchor_link_text, exclude_anchor_links = settings
    renderer = SafeRenderer(
        escape=False,
        attachments={},
        embed_images=embed_images,
        path=path,
        anchor_link_text=anchor_link_text,
        exclude_anchor_links=exclude_anchor_links,
    )
    return MarkdownWithMath(renderer=renderer).render(source)


class _SharedHighlight:
    """A ``highlight_code`` filter whose results are kept by source and highlighter settings;
    a language (or a cell's ``magics_language``) whose lexer may not run on student text is
    shown as plain text (:mod:`autograder.core.intake.code_highlighting`)."""

    def __init__(self, highlight: Any) -> None:
        self.highlight = highlight
        self.settings = (
            type(highlight).__qualname__,
            getattr(highlight, "pygments_lexer", None),
            repr(sorted(dict(getattr(highlight, "extra_formatter_options", {}) or {}).items())),
        )

    def __call__(self, source: str, language: str | None = None, metadata: Any = None) -> str:
        magics = (metadata or {}).get("magics_language")
        if magics is not None and not safe_highlight_language(str(magics)):
            magics = "text"
        if language is not None and not safe_highlight_language(language):
            language = "text"
        key = (self.settings, source, language, None if magics is None else str(magics))
        html = _HIGHLIGHTED.get(key)
        if html is None:
            html = self.highlight(source, language, {"magics_language": key[3]} if magics else None)
            if len(_HIGHLIGHTED) >= CACHE_SIZE:
                _HIGHLIGHTED.pop(next(iter(_HIGHLIGHTED)))  # the oldest
            _HIGHLIGHTED[key] = html
        return html


_HIGHLIGHTED: dict[tuple[Any, ...], str] = {}
