"""nbgrader preprocessors of the course: scores come from the grader's record, never from cells.

``python -m autograder`` runs the student's notebook in a sandbox and judges every part in its
own, trusted process (:mod:`autograder.nbgrader.grader`). It then hands the notebook to
``nbgrader autograde`` only to fill the gradebook, with execution switched off
(``autograder/nbgrader/config.py``):

* :class:`TrustedScores` replaces the outputs of every autograded cell by the grader's record
  for that part, one stdout stream (the feedback) and one float result (the points), which
  nbgrader's ``SaveAutoGrades`` then saves. Whatever the student's code printed or displayed in
  those cells is gone. Without a record (``--TrustedScores.record=...``, which only the grader
  passes) it stops nbgrader with an error, so running ``nbgrader autograde`` by hand cannot
  grade a notebook's own outputs.
* :class:`SaveExtraCredit` records the bonus part's points as nbgrader's *extra credit* (the
  bonus cell is worth 0 in the gradebook, :func:`bonus_as_extra_credit`), so that formgrader,
  nbgrader's gradebook and ``nbgrader export`` count full marks as the course does (15, not 17)
  and the bonus in the student's score.
* :class:`HideGradedTracebacks` cuts the traceback of an error in a graded cell to its last
  line in the feedback HTML (a traceback quotes the cell's source, hidden lines included).
* :class:`GraderOnlyExporter` is the exporter of ``nbgrader autograde`` in this course. Run by
  hand (or by formgrader's *Autograde* button, which calls the same converter) without the
  grader's record, it refuses when nbgrader creates it, which is before nbgrader removes
  anything: ``autograded/<student>`` and the gradebook stay as the grader left them, even with
  ``--force``.
* :class:`SanitizeMarkdown` makes the markdown cells a student could edit safe to show in a
  browser (formgrader renders the stored notebook's markdown as HTML, unsanitized): scripts,
  event handlers, ``javascript:`` links and other active HTML are removed
  (:mod:`autograder.core.markdown_safety`; the grader already did it before recording, see
  :mod:`autograder.core.student_markdown`, so this is a second line).
* :class:`CourseTotals` and :class:`FeedbackExporter` (template ``a2c_feedback``) give the
  feedback HTML the course's one set of totals: full marks = autograded points without the
  bonus + part 8, the bonus counted above full marks, and part 8 shown as *not graded yet*
  (never 0) until formgrader has a score for it.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache, pass_context
from jinja2.bccache import Bucket
from nbconvert.exporters import HTMLExporter, NotebookExporter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode, validator
from nbformat.v4 import new_output
from traitlets import Bool, Unicode

from autograder.core.code_highlighting import SafeRenderer, safe_highlight_language
from autograder.core.markdown_safety import sanitize_markdown
from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = [
    "FEEDBACK_TEMPLATES",
    "CourseTotals",
    "FeedbackExporter",
    "GraderOnlyExporter",
    "HideGradedTracebacks",
    "SanitizeMarkdown",
    "SaveExtraCredit",
    "TrustedScores",
    "bonus_as_extra_credit",
    "error_line",
    "nbgrader_templates",
    "sanitize_markdown",
    "strip_ansi",
]

#: The folder of this course's nbconvert templates (``a2c_feedback``), and nbgrader's (whose
#: ``feedback`` template ours extends).
FEEDBACK_TEMPLATES = Path(__file__).resolve().with_name("templates")


def nbgrader_templates() -> Path:
    """nbgrader's formgrader template folder (``feedback/``, ``formgrade/``)."""
    import nbgrader

    return Path(nbgrader.__file__).resolve().parent / "server_extensions/formgrader/templates"


_REFUSAL = (
    "This course grades with `python -m autograder grade-all ... --course {course}`: the "
    "student's code runs in a sandbox and the scores come from the grader. `nbgrader "
    "autograde` (and formgrader's Autograde button) would grade whatever the notebook's cells "
    "display, so it stops here, before nbgrader removes anything: autograded/ and the "
    "gradebook are as the grader left them. To grade a student again, run python -m autograder "
    "grade-all on the file (kept as received in {course}/received/<student>/) with --course."
)

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def error_line(output: dict[str, Any]) -> str:
    """``"ZeroDivisionError: division by zero"`` for an ``error`` output; no source lines."""
    name = strip_ansi(str(output.get("ename", "Error")))
    value = strip_ansi(str(output.get("evalue", ""))).strip()
    return f"{name}: {value}" if value else name


def _graded_code(cell: NotebookNode) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution"):
        return meta.get("grade_id")
    return None


class TrustedScores(Preprocessor):
    """Set every autograded cell's outputs from the grader's record (see the module docstring)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)
    record = Unicode(
        "", help="JSON file {grade_id: {score, feedback}} written by python -m autograder"
    ).tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        if not self.record or not Path(self.record).is_file():
            raise RuntimeError(
                "This course grades with `python -m autograder grade-all` (the student's code runs "
                "in a sandbox, the scores come from the grader): `nbgrader autograde` alone "
                "would grade whatever the notebook's cells display."
            )
        scores = json.loads(Path(self.record).read_text(encoding="utf-8"))
        extra = resources.setdefault("a2c_extra_credit", {})
        for cell in nb.cells:
            grade_id = _graded_code(cell)
            if grade_id is None:
                continue
            entry = scores.get(grade_id, {"score": 0.0, "feedback": "not graded: no record"})
            score = float(entry["score"])
            if _is_extra_credit(cell):  # the bonus: 0 of 0 here, its points as extra credit
                extra[grade_id], score = score, 0.0
            cell.outputs = [
                new_output("stream", name="stdout", text=str(entry["feedback"]) + "\n"),
                new_output(
                    "execute_result",
                    data={"text/plain": repr(score)},
                    execution_count=cell.get("execution_count"),
                ),
            ]
        return nb, resources


def _is_extra_credit(cell: NotebookNode) -> bool:
    """A bonus part's test cell whose gradebook maximum is 0 (:func:`bonus_as_extra_credit`)."""
    from autograder.core.judges import BONUS_PARTS

    meta = cell.get("metadata", {}).get("nbgrader", {})
    grade_id = str(meta.get("grade_id") or "")
    bonus = grade_id.startswith("test_") and grade_id[len("test_") :] in BONUS_PARTS
    return bonus and float(meta.get("points") or 0.0) == 0.0


def bonus_as_extra_credit(db_url: str, assignment: str, notebook: str) -> None:
    """Give each bonus part's test cell a maximum of 0 in the gradebook (idempotent).

    nbgrader (formgrader, its gradebook, ``nbgrader export``) sums every grade cell's maximum
    into full marks, so the 2-point bonus would make them 17; nbgrader's own way of scoring
    above full marks is *extra credit*, which :class:`SaveExtraCredit` records for the bonus.
    """
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.core.judges import BONUS_PARTS

    with gradebook_session(), Gradebook(db_url) as gradebook:
        for key in sorted(BONUS_PARTS):
            try:
                cell = gradebook.find_grade_cell(f"test_{key}", notebook, assignment)
                source = gradebook.find_source_cell(f"test_{key}", notebook, assignment)
            except MissingEntry:
                continue
            if cell.max_score == 0.0:
                continue
            # nbgrader's checksum of a locked cell covers its points: keep the two in step
            if source.checksum == _checksum(source, cell.max_score):
                source.checksum = _checksum(source, 0.0)
            cell.max_score = 0.0
        gradebook.db.commit()


def _checksum(source: Any, points: float) -> str:
    """nbgrader's checksum of a test cell (a stored ``SourceCell``) worth ``points``."""
    from nbformat.v4 import new_code_cell
    from nbgrader.utils import compute_checksum

    meta = {"grade": True, "solution": False, "locked": bool(source.locked)}
    meta.update(grade_id=source.name, points=points)
    cell = new_code_cell(source.source, metadata={"nbgrader": meta})
    return compute_checksum(cell)


class SaveExtraCredit(Preprocessor):
    """After nbgrader's ``SaveAutoGrades``: each bonus part's score as the cell's extra credit.

    The bonus cell is worth 0 in the gradebook (:func:`bonus_as_extra_credit`), so its score is
    0 and the grader's points (:class:`TrustedScores` kept them) are its extra credit: nbgrader
    counts them in the student's score, never in full marks.
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        from nbgrader.api import Gradebook

        extra = resources.get("a2c_extra_credit", {})
        meta = resources["nbgrader"]
        if not extra:
            return nb, resources
        with gradebook_session(), Gradebook(meta["db_url"]) as gradebook:
            for grade_id, score in extra.items():
                grade = gradebook.find_grade(
                    grade_id, meta["notebook"], meta["assignment"], meta["student"]
                )
                grade.auto_score, grade.extra_credit = 0.0, float(score)
                grade.needs_manual_grade = False
            gradebook.db.commit()
        return nb, resources


class HideGradedTracebacks(Preprocessor):
    """Cut every traceback in a graded cell to one line (``ename: evalue``)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        graded = bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade", False))
        if graded and cell.get("cell_type") == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [error_line(output)]
        return cell, resources


class CheckCellMetadata(Preprocessor):
    """nbgrader's ``CheckCellMetadata`` (the cells' nbgrader metadata against nbgrader's schema
    and rules, grade ids unique), each distinct metadata of a cell type checked once per
    process: a class's notebooks share them, and nbgrader's check compiles its JSON schema
    again for every cell. Metadata that fails is never kept, so it fails every time."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        import traceback

        from nbgrader.nbgraderformat import ValidationError

        try:
            _kept_metadata_checks()().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources


#: (cell type, the metadata as JSON) of each cell metadata found valid, at most 4096.
_VALID_METADATA: set[tuple[str, str]] = set()


@cache
def _kept_metadata_checks() -> Any:
    """nbgrader's metadata validator, each valid metadata checked once (made on first use)."""
    from nbgrader.nbgraderformat import MetadataValidator

    class KeptMetadataChecks(MetadataValidator):
        def validate_cell(self, cell: NotebookNode) -> None:
            meta = cell.get("metadata", {}).get("nbgrader")
            if meta is None or meta.get("cell_type", cell.cell_type) != cell.cell_type:
                super().validate_cell(cell)  # nbgrader's own (and its cell-type warning)
                return
            key = (str(cell.cell_type), json.dumps(meta, sort_keys=True, default=repr))
            if key not in _VALID_METADATA:
                super().validate_cell(cell)
                if len(_VALID_METADATA) < 4096:
                    _VALID_METADATA.add(key)

    return KeptMetadataChecks


class PreprocessedOnce:
    """The preprocessing of the course's two exporters (:class:`GraderOnlyExporter`,
    :class:`FeedbackExporter`): the preprocessors run on nbconvert's copy of the notebook, and
    the result is checked against nbformat's schema once, after the last of them.

    nbconvert's ``from_notebook_node`` deep-copies the notebook before it preprocesses it, and
    its ``_preprocess`` copies that copy again; it then checks the whole notebook after each
    preprocessor (a dozen times a recording). Together that was a quarter of a recording's
    time, for nothing a reader sees: an invalid notebook is still refused (the message names the
    last preprocessor), and autograde's notebook is checked again when nbformat writes it.
    """

    def _preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        resources = copy.deepcopy(resources)  # preprocessors write into it; the caller's stays
        _, nb = validator.normalize(nb)  # a normalised copy, as nbconvert's own step makes
        preprocessor = None
        for preprocessor in self._preprocessors:  # type: ignore[attr-defined]
            nb, resources = preprocessor(nb, resources)
        self._validate_preprocessor(nb, preprocessor)  # type: ignore[attr-defined]
        return nb, resources


class GraderOnlyExporter(PreprocessedOnce, NotebookExporter):
    """``nbgrader autograde``'s exporter in this course: only the grader may create it.

    nbgrader's converter creates its exporter in ``start()``, before it looks at any student
    folder (``init_destination`` removes ``autograded/<student>`` with ``--force``, and on any
    later failure). Without the grader's record (``TrustedScores.record``, which only
    :func:`autograder.nbgrader.course.autograde` passes) this raises, so nothing is removed.
    """

    def __init__(self, config: Any = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        record = self.config.get("TrustedScores", {}).get("record", "")
        if not record or not Path(str(record)).is_file():
            from nbgrader.converters.base import NbGraderException

            course = self.config.get("CourseDirectory", {}).get("root", "") or "."
            message = _REFUSAL.format(course=Path(course).resolve())
            self.log.error(message)  # nbgrader's command line exits without printing it
            raise NbGraderException(message)


class SanitizeMarkdown(Preprocessor):
    """Replace each editable markdown cell that holds active HTML by its cleaned rendering."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        locked = cell.get("metadata", {}).get("nbgrader", {}).get("locked", False)
        if cell.get("cell_type") == "markdown" and not locked:
            clean = sanitize_markdown(str(cell.get("source", "")))
            if clean is not None:
                cell.source = clean
        return cell, resources


class CourseTotals(Preprocessor):
    """After nbgrader's ``GetGrades``: the course's totals in ``resources["a2c"]`` (feedback).

    ``{"score", "raw_score", "late_penalty", "full_marks", "final", "pending", "parts":
    [{"name", "score", "points", "kind"}], "explain"}``: ``raw_score`` counts every graded
    point (the bonus included), ``score`` is it less the gradebook's late penalty
    (:mod:`autograder.nbgrader.late_penalty`; never below 0), ``final``
    is true once no hand-graded cell waits for formgrader, and a waiting cell's ``score`` is
    ``None`` (the template says *not graded yet*).
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        from autograder.nbgrader.class_reports import manual_scores

        points = _release_points(nb, resources)
        meta = resources.get("nbgrader", {})
        student = meta.get("student", "")
        hand = manual_scores(meta["db_url"], [student]).get(student, {}) if meta else {}
        parts = []
        for cell in nb.cells:
            info = cell.get("metadata", {}).get("nbgrader", {})
            grade_id = str(info.get("grade_id") or "")
            key = grade_id[len("test_") :] if grade_id.startswith("test_") else ""
            if key in points.auto:
                kind = "bonus" if key in points.bonus else "autograded"
                info["points"] = points.auto[key]  # the bonus's own points, not the gradebook's 0
                score = float(info.get("score") or 0.0)
                parts.append(
                    {"name": key, "score": score, "points": points.auto[key], "kind": kind}
                )
            elif grade_id in points.manual:
                parts.append(
                    {
                        "name": grade_id,
                        "score": hand.get(grade_id),
                        "points": points.manual[grade_id],
                        "kind": "part 8, graded by hand",
                    }
                )
        pending = [part["name"] for part in parts if part["score"] is None]
        late = float(meta.get("late_penalty") or 0.0) if meta else 0.0
        raw = round(sum(part["score"] or 0.0 for part in parts), 6)
        resources["a2c"] = {
            "score": round(max(0.0, raw - late), 6),
            "raw_score": raw,
            "late_penalty": late,
            "full_marks": points.full_marks,
            "final": not pending,
            "pending": pending,
            "parts": parts,
            "explain": points.explain(),
        }
        return nb, resources


def _release_points(nb: NotebookNode, resources: dict[str, Any]) -> Any:
    """The course's points, from the release notebook of the course being converted (in the
    gradebook, and so in the autograded notebook, the bonus part is worth 0: extra credit)."""
    from autograder.core.course_points import course_points

    folder = Path(str(resources.get("metadata", {}).get("path") or "."))
    if len(folder.resolve().parents) > 2:  # <course>/autograded/<student>/<assignment>
        name = str(resources.get("metadata", {}).get("name") or "")
        release = folder.resolve().parents[2] / "release" / folder.resolve().name / f"{name}.ipynb"
        if release.is_file():
            import nbformat

            return course_points(nbformat.read(release, as_version=4))
    return course_points(nb)


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
    shown as plain text (:mod:`autograder.core.code_highlighting`)."""

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
