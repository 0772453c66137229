"""The feedback page's exporter (``autograder.nbgrader.exporters.feedback.FeedbackExporter``) against nbconvert's.

The course's exporter keeps rendered cells by source and leaves out nbconvert's BeautifulSoup
pass over the page; the page must say exactly what nbconvert's says. Tiny notebooks, no
sandbox, no gradebook.
"""

from __future__ import annotations

import base64
import copy

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from autograder.nbgrader.exporters.feedback import (
    NO_ALT_TEXT,
    FeedbackExporter,
    with_image_alt_text,
)
from tests.submissions.hostile import SLOW_LEXERS, hostile_submission

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()


def _notebook(answer: str = "My answer: the advantage is $A = R - V(s)$.") -> nbformat.NotebookNode:
    cells = [
        new_markdown_cell(
            "# Part 1\n\nThe return $G_t = \\sum_k \\gamma^k r_{t+k}$, *discounted*."
        ),
        new_markdown_cell(
            'An image: <img src="https://example.org/x.png">, and ![a plot](plot.png)'
        ),
        new_code_cell(
            "import numpy as np\nx = np.arange(3)\nprint(x * 2)",
            outputs=[
                new_output("stream", name="stdout", text="[0 2 4]\n"),
                new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
            ],
        ),
        new_markdown_cell(answer),
        new_code_cell("def f(x):\n    return x < 3 and x > 1  # <img> in code"),
    ]
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index}"  # the same notebook twice gives the same page
    nb = new_notebook(cells=cells)
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    return nb


def _pages(nb: nbformat.NotebookNode) -> tuple[str, str]:
    ours, _ = FeedbackExporter(template_name="classic").from_notebook_node(nb)
    theirs, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    return ours, theirs


def test_the_page_is_nbconverts_page_without_the_second_parse():
    ours, theirs = _pages(_notebook())
    # nbconvert's page is its template's output parsed and written again by BeautifulSoup:
    # the same parse of ours gives it back, character for character.
    assert str(BeautifulSoup(ours, features="html.parser")) == theirs
    assert ours.count(f'alt="{NO_ALT_TEXT}"') == 2  # the output's PNG and the raw <img>
    assert 'alt="a plot"' in ours


def test_kept_cells_never_leak_into_another_students_page():
    first, _ = _pages(_notebook())
    second, theirs = _pages(_notebook("Another answer: $V(s)$ is the critic's estimate."))
    assert "Another answer" in second and "My answer" not in second
    assert "My answer" in first
    assert str(BeautifulSoup(second, features="html.parser")) == theirs
    again, _ = _pages(_notebook())
    assert again == first


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("<img src='a.png'>", f"<img alt=\"{NO_ALT_TEXT}\" src='a.png'>"),
        ('<IMG src="a.png"/>', f'<IMG alt="{NO_ALT_TEXT}" src="a.png"/>'),
        ('<img alt="" src="a.png">', '<img alt="" src="a.png">'),
        ('<img src="a.png" alt>', '<img src="a.png" alt>'),
        ('<img src="a.png" ALT="x">', '<img src="a.png" ALT="x">'),
        ('<image src="a.png">', '<image src="a.png">'),
        ("<imgx>", "<imgx>"),
    ],
)
def test_image_alt_text(tag, expected):
    assert with_image_alt_text(f"<p>{tag}</p>") == f"<p>{expected}</p>"


def _course_exporter(name: str, tmp_path):
    from traitlets.config import Config

    from autograder.nbgrader.exporters.feedback import FeedbackExporter
    from autograder.nbgrader.exporters.grader_only import GraderOnlyExporter

    if name == "FeedbackExporter":
        return FeedbackExporter(template_name="classic")
    record = tmp_path / "record.json"  # the grader's record, without which it refuses
    record.write_text("{}")
    return GraderOnlyExporter(config=Config({"TrustedScores": {"record": str(record)}}))


@pytest.mark.parametrize("name", ["GraderOnlyExporter", "FeedbackExporter"])
def test_the_course_exporters_check_once_and_still_refuse_an_invalid_notebook(name, tmp_path):
    """The course's exporters preprocess one copy of the notebook (the caller's stays as it
    was) and check nbformat's schema once, after the last preprocessor: a notebook that a
    preprocessor made invalid is still refused."""
    nb = _notebook()
    before = nbformat.writes(nb)
    seen = []

    def look(notebook, resources):
        seen.append(notebook)
        return notebook, resources

    def spoil(notebook, resources):
        notebook.cells[2]["execution_count"] = "not a number"  # a code cell
        return notebook, resources

    exporter = _course_exporter(name, tmp_path)
    exporter.register_preprocessor(look, enabled=True)
    exporter.register_preprocessor(look, enabled=True)
    exporter.from_notebook_node(nb)
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0] is not nb
    assert nbformat.writes(nb) == before

    exporter = _course_exporter(name, tmp_path)
    exporter.register_preprocessor(spoil, enabled=True)
    exporter.register_preprocessor(look, enabled=True)
    with pytest.raises(nbformat.ValidationError):
        exporter.from_notebook_node(nb)
    assert nbformat.writes(nb) == before


@pytest.mark.timeout(120)  # mcschema's lexer never returns on "<!--": a hang fails here
@pytest.mark.parametrize("attack", ["lexer_fence", "lexer_metadata"])
def test_no_lexer_a_student_names_runs_in_the_grader(attack):
    """A fenced block in a lexer that never returns (or the notebook's language set to it):
    the feedback exporter renders the page as it is submitted, and formgrader's exporter
    (nbconvert's, with the course's configuration) the notebook the grader stores; each block
    shows its text, unhighlighted, and the stored notebook names the course's language."""
    from autograder.core.intake.code_highlighting import course_languages
    from autograder.core.intake.student_markdown import safe_markdown
    from autograder.nbgrader.config import c as course_config
    from tests.submissions.hostile import RELEASE

    submitted = hostile_submission(attack)
    ours, _ = FeedbackExporter(template_name="classic").from_notebook_node(submitted)
    assert "&lt;!--" in ours
    stored, release = copy.deepcopy(submitted), nbformat.read(RELEASE, as_version=4)
    notes = safe_markdown(stored, release) + course_languages(stored, release)
    assert stored.metadata["language_info"] == release.metadata["language_info"]
    assert not any("magics_language" in cell.metadata for cell in stored.cells)
    formgrader = HTMLExporter(config=course_config, template_name="classic")
    page, _ = formgrader.from_notebook_node(stored)
    assert "&lt;!--" in page and "hl-mcschema" not in page
    if attack == "lexer_fence":
        assert any("other than Python shown as text" in note for note in notes), notes
        assert all(f"language-{name}" in page for name in SLOW_LEXERS)
    else:
        assert any("mcschema" in note for note in notes), notes


@pytest.mark.timeout(120)
def test_formgraders_view_of_the_evicted_markdown_attack_lexes_no_student_fence(monkeypatch):
    """The corpus's ``evicted_markdown`` as the grader stores it, shown by formgrader's
    exporter (nbconvert's, the course's configuration) and by the feedback exporter: IPython's
    lexer, which takes seconds on its fences of dots, never sees them (it highlights the
    course's own code cells only), and the dots are shown."""
    import ipython_pygments_lexers

    from autograder.core.intake.code_highlighting import course_languages
    from autograder.core.intake.student_markdown import safe_markdown
    from autograder.nbgrader.config import c as course_config
    from tests.submissions.hostile import RELEASE

    lexed: list[str] = []
    original = ipython_pygments_lexers.IPython3Lexer.get_tokens_unprocessed

    def spy(self, text, *args, **kwargs):
        lexed.append(text)
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(ipython_pygments_lexers.IPython3Lexer, "get_tokens_unprocessed", spy)
    stored, release = hostile_submission("evicted_markdown"), nbformat.read(RELEASE, as_version=4)
    safe_markdown(stored, release)
    course_languages(stored, release)
    formgrader = HTMLExporter(config=course_config, template_name="classic")
    page, _ = formgrader.from_notebook_node(stored)
    feedback, _ = FeedbackExporter(template_name="classic").from_notebook_node(stored)
    assert "." * 1000 in page and "." * 1000 in feedback
    assert not any("." * 100 in text for text in lexed)
    control = nbformat.v4.new_notebook(metadata=stored.metadata)  # the spy sees such a fence
    control.cells.append(nbformat.v4.new_markdown_cell("```ipython3\nprobe = 1\n```"))
    formgrader.from_notebook_node(control)
    assert any("probe = 1" in text for text in lexed)
