"""Submission intake: who a file belongs to, archives, and the markdown the grader shows.

Each attack on intake is a test here: a classmate's folder inside a student's own upload
(``submitted/<classmate>/...``), invented students, a folder whose name cleans to nothing, a
zip bomb, markdown whose tags cost the sanitizer the square of their number, a notebook of
tens of thousands of cells, and pasted images (an honest notebook that must still grade).
The last test grades such a class for real through ``python -m autograder grade-all``.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.core.intake import archives as archives_module
from autograder.core.intake import collect as collect_module
from autograder.core.intake import markdown_safety
from autograder.core.intake.collect import collect, student_id
from autograder.core.intake.markdown_safety import NOTE, clean_html, sanitize_markdown
from autograder.core.intake.student_markdown import safe_markdown
from autograder.core.intake.submission_file import (
    MAX_CELLS,
    MAX_SOURCE_CHARS,
    UnreadableNotebook,
    parse_notebook,
)
from autograder.nbgrader.preprocessors import sanitize_markdown as sanitize_markdown_pass
from autograder.nbgrader.preprocessors.sanitize_markdown import SanitizeMarkdown
from tests.submissions.course import course_submission

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "notebooks" / "a2c.ipynb"


def _write(path: Path, text: str = "{}", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny) PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


# --- who a file belongs to -------------------------------------------------------------------


def _exchange_with_planted_folders(course: Path) -> None:
    """Alice's honest upload; Mallory's upload holding a newer `submitted/alice/...`, invented
    students and a folder that cleans to nothing; and a top-level folder `---`."""
    _write(course / "submitted/alice/a2c/a2c.ipynb", mtime=1e9)
    mallory = course / "submitted/mallory/a2c"
    _write(mallory / "a2c.ipynb", mtime=1e9)
    _write(mallory / "submitted/alice/x/a2c.ipynb", mtime=2e9)
    for index in range(30):
        _write(mallory / f"submitted/zz-fake{index}/x/a2c.ipynb", mtime=1.5e9)
    _write(mallory / "submitted/---/x/a2c.ipynb", mtime=1.5e9)
    _write(course / "submitted/---/a2c/a2c.ipynb", mtime=1e9)


def _check_planted(subs, problems, top: Path) -> None:
    students = {s.student: s for s in subs}
    unnamed = [name for name in students if name.startswith("unnamed-")]
    assert sorted(students) == sorted(["alice", "mallory", *unnamed]) and len(unnamed) == 1
    assert students["alice"].path == top / "alice/a2c/a2c.ipynb"  # her own file, untouched
    assert all(p.student in ("", "mallory") for p in problems), problems
    assert all("submitted/mallory/a2c/" in str(p.path) for p in problems if p.student)
    assert all(collect_module._PLAIN.fullmatch(name) for name in students)


def test_an_upload_names_no_classmate_and_invents_no_student(tmp_path: Path) -> None:
    """Is `submitted/<classmate>/...` inside Mallory's upload Mallory's, whatever the layout?"""
    course = tmp_path / "course"
    _exchange_with_planted_folders(course)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # The course folder, its submitted/ folder, and both zipped.
    _check_planted(*collect([course], scratch), course / "submitted")
    _check_planted(*collect([course / "submitted"], scratch), course / "submitted")
    archive = tmp_path / "exchange.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted(course.rglob("*.ipynb")):
            info = zipfile.ZipInfo(path.relative_to(course).as_posix(), (2020, 1, 1, 0, 0, 0))
            if "mallory/a2c/submitted/alice" in info.filename:
                info.date_time = (2030, 1, 1, 0, 0, 0)
            bundle.writestr(info, "{}")
    subs, problems = collect([archive], scratch)
    assert sorted(s.student for s in subs if not s.student.startswith("unnamed-")) == [
        "alice",
        "mallory",
    ]
    alice = next(s for s in subs if s.student == "alice")
    assert alice.origin.endswith("exchange.zip:submitted/alice/a2c/a2c.ipynb")
    assert all(p.student != "alice" for p in problems)


@pytest.mark.parametrize(
    ("relative", "root", "expected"),
    [
        ("submitted/erin/a2c/a2c.ipynb", "", "erin"),
        ("submitted/erin/a2c/submitted/bob/x/a2c.ipynb", "", "erin"),
        ("erin/a2c/a2c.ipynb", "submitted", "erin"),
        ("a2c/a2c.ipynb", "submitted/erin", "erin"),
        ("a2c.ipynb", "submitted/erin/a2c", "erin"),
        ("erin/submitted/bob/x/a2c.ipynb", "", "erin"),
        ("a2c/a2c.ipynb", "", "a2c"),
    ],
)
def test_only_the_layout_names_the_student(
    tmp_path: Path, relative: str, root: str, expected: str
) -> None:
    """The first folder below what the instructor gave (or below nbgrader's submitted/)."""
    base = tmp_path / root if root else tmp_path
    assert student_id(base / relative, base) == expected


def test_a_name_that_cleans_to_nothing_gets_a_plain_generated_id(tmp_path: Path) -> None:
    """`---` and `***` are two students with plain ids, not a stop and not one student."""
    first = student_id(tmp_path / "---" / "a2c.ipynb", tmp_path)
    second = student_id(tmp_path / "***" / "a2c.ipynb", tmp_path)
    assert first.startswith("unnamed-") and second.startswith("unnamed-") and first != second
    assert student_id(tmp_path / "submitted/---/a2c/a2c.ipynb") == first


# --- archives --------------------------------------------------------------------------------


def test_a_zip_bomb_is_refused_while_unpacking(tmp_path: Path) -> None:
    """A 60 MB member (a few KB packed) is counted as it is written and stopped at 50 MB."""
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("zed/a2c.ipynb", b"\0" * (60 * 1024**2))
        bundle.writestr("amy/a2c.ipynb", "{}")
    assert archive.stat().st_size < 1024**2
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subs, problems = collect([archive], scratch)
    assert [s.student for s in subs] == ["amy"]
    (bomb,) = problems
    assert bomb.origin.endswith("bomb.zip:zed/a2c.ipynb") and "more than 50 MB" in bomb.reason
    written = sum(path.stat().st_size for path in scratch.rglob("*") if path.is_file())
    assert written < 1024  # the partial member was removed


def test_an_archive_stops_unpacking_at_its_budget(tmp_path: Path, monkeypatch) -> None:
    """Past the archive's byte budget, members are reported, not unpacked."""
    monkeypatch.setattr(archives_module, "MAX_ARCHIVE_BYTES", 3000)
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for name in ("ann", "ben", "cat"):
            bundle.writestr(f"{name}/a2c.ipynb", "x" * 1400)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subs, problems = collect([archive], scratch)
    assert [s.student for s in subs] == ["ann", "ben"]
    assert len(problems) == 1 and "more than" in problems[0].reason


# --- markdown --------------------------------------------------------------------------------

HOSTILE = (
    "Curve: rose to $\\log A$.\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
    "[a](javascript:alert(3)) [b](jav&#x61;script:alert(4)) <javascript:alert(5)>\n\n"
    '<x title="<script>alert(6)</script>">t</x> <a href="jav\tascript:alert(7)">l</a> '
    "$\\href{javascript:alert(8)}{m}$ <b"
    f'\n\n<a href="{"&#9;" * 80}javascript:alert(9)">padded</a>'
)


def test_markdown_keeps_nothing_active_and_touches_nothing_else() -> None:
    """Every active construct goes; math, code and ordinary HTML are left as written."""
    clean = sanitize_markdown(HOSTILE)
    assert clean is not None and clean.endswith(NOTE)
    lowered = clean.lower()
    for bad in ("<script", "onerror", "<x ", "\\href"):
        assert bad not in lowered, bad
    assert re.search(r"(href|src)=[^>]*script", lowered) is None, clean
    assert "$\\log A$" in clean and "Curve: rose" in clean
    for safe in (
        "YOUR ANSWER HERE",
        "The score **rose** to $600$ after [10M](https://x.org) steps, $\\log A$ and $a<b$.",
        "Code: `x<y` and `<script>`, ![plot](attachment:image.png) <b>bold</b> <!-- note -->",
        "```python\nhtml = '<script>alert(1)</script>'\n```",
    ):
        assert sanitize_markdown(safe) is None, safe
    for notebook in (RELEASE, ROOT / "solutions" / "a2c.ipynb"):
        nb = nbformat.read(notebook, as_version=4)
        cells = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
        assert [sanitize_markdown(source) for source in cells] == [None] * len(cells)


def test_a_cleaned_cell_stays_clean_when_cleaned_again() -> None:
    """The stored (cleaned) cell goes through nbgrader's SanitizeMarkdown unchanged."""
    clean = sanitize_markdown(HOSTILE)
    assert sanitize_markdown(clean) is None
    cell = nbformat.v4.new_markdown_cell(clean)
    out, _ = SanitizeMarkdown().preprocess_cell(cell, {}, 0)
    assert out.source == clean


def _seconds(function, text: str) -> float:
    """The least CPU time of 5 calls (this process's: other work on the machine adds none)."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        function(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["<a><b><i>x", "<b><i><em><strong>x</p>", '<div><a x="<a x="'])
def test_sanitizing_costs_time_linear_in_the_tags(unit: str) -> None:
    """4 times the tags: about 4 times the time (bleach's html5lib took about 16 times)."""
    small, large = unit * 2000, unit * 8000
    ratio = _seconds(clean_html, "<div>" + large) / max(_seconds(clean_html, "<div>" + small), 1e-4)
    assert ratio < 8, ratio
    # a 20 KB cell or more: under a second idle (longer than what a process keeps, so each of
    # the 5 calls renders it)
    assert len(unit * 2000) > markdown_safety.CACHED_CELL_CHARS
    assert _seconds(sanitize_markdown, unit * 2000) < 5


def test_course_cells_stay_as_released_and_student_cells_are_cleaned() -> None:
    """No note on the course's cells; the student's answer cleaned with one note."""
    release = nbformat.read(RELEASE, as_version=4)
    nb = course_submission(replace={"discussion": HOSTILE})
    before = [cell.source for cell in nb.cells]
    notes = safe_markdown(nb, release)
    changed = [i for i, cell in enumerate(nb.cells) if cell.source != before[i]]
    (index,) = changed
    assert nb.cells[index].metadata["nbgrader"]["grade_id"] == "discussion"
    assert notes == [f"markdown cell {index}: active HTML removed before showing it"]


@pytest.mark.slow
def test_pasted_images_are_kept_others_dropped_and_the_notebook_renders() -> None:
    """A pasted PNG stays; a GIF, fake PNG and a missing name are dropped with a note."""
    from nbconvert import HTMLExporter

    release = nbformat.read(RELEASE, as_version=4)
    nb = course_submission(
        replace={
            "discussion": "Curves:\n\n![image.png](attachment:image.png)\n\n"
            "![anim.gif](attachment:anim.gif) ![fake](attachment:fake.png) "
            "![gone](attachment:gone.png)"
        }
    )
    cell = next(
        c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "discussion"
    )
    png = base64.b64encode(_png()).decode()
    cell["attachments"] = {
        "image.png": {"image/png": png},
        "anim.gif": {"image/gif": base64.b64encode(b"GIF89a").decode()},
        "fake.png": {"image/png": base64.b64encode(b"<script>alert(1)</script>").decode()},
    }
    notes = safe_markdown(nb, release)
    assert cell.attachments == {"image.png": {"image/png": png}}
    assert any("anim.gif" in note and "fake.png" in note for note in notes), notes
    assert "attachment:image.png" in cell.source and "attachment:gone.png" not in cell.source
    html, _ = HTMLExporter().from_notebook_node(nb)  # nbconvert: no "missing attachment"
    assert f"data:image/png;base64,{png}" in html


def test_oversized_markdown_is_left_out_with_a_note() -> None:
    """A 200,000-character answer is replaced by a note, not rendered."""
    release = nbformat.read(RELEASE, as_version=4)
    nb = course_submission(replace={"discussion": "<b>x</b>" * 25_000})
    notes = safe_markdown(nb, release)
    assert any("200000 characters, not shown" in note for note in notes)


def test_markdown_that_renders_slowly_stops_at_the_notebooks_time_budget(monkeypatch) -> None:
    """Student cells that each take 0.3 s to render, with a 0.5 s budget: the first ones are
    rendered, every later one is left out with a note, and the course's cells stay as released."""
    from autograder.core.intake import student_markdown

    def slow(source: str) -> str:
        time.sleep(0.3)
        return source

    monkeypatch.setattr(student_markdown, "MARKDOWN_SECONDS", 0.5)
    monkeypatch.setattr(student_markdown, "sanitize_markdown", slow)
    release = nbformat.read(RELEASE, as_version=4)
    nb = course_submission()
    released = {cell.source for cell in release.cells if cell.cell_type == "markdown"}
    for number in range(6):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"My note {number}: $V(s)$"))
    course_cells = {i: c.source for i, c in enumerate(nb.cells) if c.source in released}
    started = time.perf_counter()
    notes = safe_markdown(nb, release)
    assert time.perf_counter() - started < 1.8  # the budget and a cell or two, not all 7
    mine = [cell.source for cell in nb.cells[-6:]]
    kept = [source for source in mine if source.startswith("My note")]
    assert 1 <= len(kept) <= 3 and mine[: len(kept)] == kept  # rendered in order, then cut
    assert all("took more than 0.5 s" in source for source in mine[len(kept) :])
    assert sum("took too long to render" in note for note in notes) >= 6 - len(kept)
    assert all(nb.cells[i].source == source for i, source in course_cells.items())


def test_no_student_markdown_is_rendered_twice_or_by_ipythons_lexer(monkeypatch) -> None:
    """The corpus's ``evicted_markdown``: three answers with an ``ipython3`` fence of 19,000
    dots, on which IPython's lexer takes seconds, then 520 short cells. The grader renders each
    once, with Python's lexer for the fences (IPython's never runs), and records the three as
    their rendering, so no later renderer (formgrader, the feedback) meets the fence; nbgrader's
    own pass, under the gradebook's lock, then renders none of the 523 cells (the grader marked
    each), and a cell it did not mark (a forged mark, or the cell changed after) it does."""
    import ipython_pygments_lexers

    from tests.submissions.hostile import NOTEBOOK_ATTACKS

    def never(*args, **kwargs):
        raise AssertionError("IPython's lexer ran on student text")

    monkeypatch.setattr(ipython_pygments_lexers.IPython3Lexer, "get_tokens_unprocessed", never)
    release = nbformat.read(RELEASE, as_version=4)
    nb = course_submission()
    NOTEBOOK_ATTACKS["evicted_markdown"](nb)
    safe_markdown(nb, release)
    slow = [cell for cell in nb.cells if "." * 1000 in cell.source]
    assert len(slow) == 3 and all(c.source.startswith("<div>") and "```" not in c.source
                                  for c in slow)  # fmt: skip
    recorded = nbformat.reads(nbformat.writes(nb), as_version=4)  # as nbgrader reads it
    rendered, checked = [], []
    monkeypatch.setattr(
        markdown_safety, "render_markdown", lambda s: rendered.append(s) or ("", [], [])
    )
    real = sanitize_markdown_pass.sanitize_markdown
    monkeypatch.setattr(
        sanitize_markdown_pass, "sanitize_markdown", lambda s: checked.append(s) or real(s)
    )
    for index, cell in enumerate(recorded.cells):
        SanitizeMarkdown().preprocess_cell(cell, {}, index)
    assert rendered == [] and checked == []
    recorded.cells[-1].source = "changed after the grader checked it"
    recorded.cells[-2].metadata[markdown_safety.CHECKED] = "0" * 64
    for index, cell in enumerate(recorded.cells[-2:]):
        SanitizeMarkdown().preprocess_cell(cell, {}, index)
    # both checked again; the forged mark's text is one this process already rendered (its
    # answer is kept), the changed text is new
    assert checked == [recorded.cells[-2].source, "changed after the grader checked it"]
    assert rendered == ["changed after the grader checked it"]


def test_a_long_or_ipython_fence_is_highlighted_only_as_python_or_not_at_all() -> None:
    """A short ``ipython`` block is highlighted with Python's lexer; a Python block longer than
    2,000 characters is shown as plain, escaped text; neither keeps its fence for a renderer
    that would lex it otherwise; a short Python block stays as written."""
    short = sanitize_markdown("```ipython3\nx = 1  # %magic\n```")
    assert short is not None and '<span class="n">x</span>' in short and "```" not in short
    long = sanitize_markdown("```python\n" + "y = 2\n" * 500 + "```")
    assert long is not None and "<span" not in long and "y = 2" in long
    assert sanitize_markdown("```python\nz = 3\n```") is None


def test_a_notebook_of_too_many_cells_is_refused_before_parsing() -> None:
    """50,000 one-character cells: refused with the limit named, in well under a second."""
    cells = [
        {"cell_type": "markdown", "id": f"c{index}", "metadata": {}, "source": "x"}
        for index in range(50_000)
    ]  # written as JSON directly: nbformat would validate every cell first (tens of seconds)
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    data = json.dumps(notebook).encode()
    start = time.perf_counter()
    with pytest.raises(UnreadableNotebook, match=f"more than the {MAX_CELLS}"):
        parse_notebook(data, "many.ipynb")
    assert time.perf_counter() - start < 5


# --- a class graded for real -----------------------------------------------------------------

PART_8 = (
    "My score rose to 300; the entropy fell from about $\\log A$ to 1.2.\n\n"
    "![image.png](attachment:image.png)"
)


@pytest.mark.rom
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_grade_all_keeps_each_grade_with_its_student(tmp_path: Path) -> None:
    """`grade-all` on an exchange with planted folders and a pasted image: Alice keeps 14,
    nobody is invented, `---` is graded under a plain id, the image is kept and graded."""
    from autograder.core.isolation.bubblewrap import bwrap_works

    assert bwrap_works(), "grading runs in the sandbox (apt-get install -y bubblewrap)"
    exchange = tmp_path / "exchange" / "submitted"
    honest = course_submission(replace={"discussion": PART_8})
    cell = next(c for c in honest.cells if c.cell_type == "markdown" and "attachment:" in c.source)
    cell["attachments"] = {"image.png": {"image/png": base64.b64encode(_png()).decode()}}
    nbformat.write(honest, _write(exchange / "alice/a2c/a2c.ipynb"))
    os.utime(exchange / "alice/a2c/a2c.ipynb", (1e9, 1e9))
    mallory = exchange / "mallory/a2c"
    _write(mallory / "a2c.ipynb", RELEASE.read_text(), mtime=1e9)
    _write(mallory / "submitted/alice/x/a2c.ipynb", RELEASE.read_text(), mtime=2e9)
    _write(mallory / "submitted/zz-fake1/x/a2c.ipynb", RELEASE.read_text(), mtime=2e9)
    costly = "<script>alert(1)</script>" + "<b><i><em><strong>x</p>" * 740  # 17 KB
    nbformat.write(
        course_submission(replace={"discussion": costly}), _write(exchange / "---/a2c/a2c.ipynb")
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade-all", "exchange", "--out", "out"]
        + ["--course", "course", "--jobs", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1400,
        env={**os.environ, "A2C_GRADER_TIME_SCALE": "3"},  # a loaded 2-core machine
    )
    assert done.returncode in (0, 1) and (tmp_path / "out/grades.csv").is_file(), done.stderr
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "out/grades.csv").open())}
    unnamed = [name for name in rows if name.startswith("unnamed-")]
    assert sorted(rows) == sorted(["alice", "mallory", *unnamed]) and len(unnamed) == 1, rows
    alice = rows["alice"]
    assert alice["status"] == "graded" and alice["total"] == "14", alice
    assert "duplicate" not in alice["notes"] and "attachments left out" not in alice["notes"]
    other = rows[unnamed[0]]
    assert other["status"] == "graded" and other["total"] == "14", other
    assert "active HTML removed" in other["notes"]
    page = (tmp_path / f"out/feedback/{unnamed[0]}.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "The grader removed active HTML" in page
    assert rows["mallory"]["status"] == "graded"
    html = (tmp_path / "out/feedback/alice.html").read_text(encoding="utf-8")
    assert "removed active HTML" not in html and "$\\log A$" in html
    stored = tmp_path / "course/autograded/alice/a2c/a2c.ipynb"
    kept = nbformat.read(stored, as_version=4)
    answer = next(c for c in kept.cells if "attachment:image.png" in c.get("source", ""))
    assert set(answer.attachments) == {"image.png"} and "My score rose" in answer.source


def test_the_agents_video_reaches_the_grader_as_still_frames(tmp_path: Path) -> None:
    """record_video's result, as a notebook saves it: the PNG of stills passes the filter."""
    from IPython.core.formatters import DisplayFormatter

    from autograder.core.intake.student_outputs import NO_VIDEO, keep_submitted_outputs
    from course_lib.video import VideoResult, still_frames

    frames = [np.full((210, 160, 3), level, dtype=np.uint8) for level in range(0, 250, 10)]
    path = tmp_path / "a2c_agent.gif"
    path.write_bytes(b"GIF89a")
    result = VideoResult(path, 300.0, 24, len(frames), True, still_frames(frames))
    data, _ = DisplayFormatter().format(result)
    data["image/png"] = base64.b64encode(data["image/png"]).decode()  # as the kernel sends it
    shown = nbformat.v4.new_output("execute_result", data=data, execution_count=3)
    nb = course_submission()
    last = next(
        c for c in reversed(nb.cells) if c.cell_type == "code" and "record_video(" in c.source
    )
    last.outputs = [shown]
    assert keep_submitted_outputs(nb) == []
    kept = last.outputs[1]["data"]
    assert set(kept) == {"text/plain", "image/png"} and "<video" not in str(last.outputs)
    assert base64.b64decode(kept["image/png"]).startswith(b"\x89PNG")
    assert keep_submitted_outputs(course_submission()) == [NO_VIDEO]


def test_a_notebook_of_too_much_cell_text_is_refused() -> None:
    """A 1 MB code cell (the feedback page would highlight it under nbgrader's lock): refused."""
    nb = course_submission(append={"model": "x = 1  # padding\n" * 60_000})
    with pytest.raises(UnreadableNotebook, match=f"more than the {MAX_SOURCE_CHARS}"):
        parse_notebook(nbformat.writes(nb).encode(), "big.ipynb")
    assert parse_notebook(nbformat.writes(course_submission()).encode()).cells


def test_outputs_past_the_notebooks_budget_are_dropped_with_a_note() -> None:
    """300 outputs of 10,000 characters: the first million characters kept, the rest noted."""
    from autograder.core.intake.repair import graded_part
    from autograder.core.intake.student_outputs import MAX_TOTAL_TEXT, keep_submitted_outputs

    nb = course_submission()
    code = [c for c in nb.cells if c.cell_type == "code" and not graded_part(c)]
    assert len(code) >= 6
    for cell in code[:6]:
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text="y" * 10_000) for _ in range(50)
        ]
    notes = keep_submitted_outputs(nb)
    kept = sum(len(o.get("text", "")) for c in nb.cells for o in c.get("outputs", []))
    assert MAX_TOTAL_TEXT - 10_000 < kept <= MAX_TOTAL_TEXT + 10_000
    assert any("outputs not kept" in note for note in notes), notes


def test_a_markdown_cell_is_rendered_once_a_process_and_what_is_kept_stays_small(
    monkeypatch,
) -> None:
    """The release's markdown, unchanged in every notebook of a class, is rendered once a
    process; the answer is the same as a fresh rendering's; a cell longer than what is kept is
    rendered each time, and no more than ``CACHED_CELLS`` answers are kept."""
    release = nbformat.read(RELEASE, as_version=4)
    sources = [cell.source for cell in release.cells if cell.cell_type == "markdown"]
    sources += [HOSTILE, "<b>long</b> " * (markdown_safety.CACHED_CELL_CHARS // 10)]
    fresh = [markdown_safety._sanitized(source) for source in sources]
    markdown_safety._kept.cache_clear()
    rendered = []
    real = markdown_safety.render_markdown
    monkeypatch.setattr(markdown_safety, "render_markdown", lambda s: rendered.append(s) or real(s))
    for _ in range(3):  # three students' notebooks
        assert [sanitize_markdown(source) for source in sources] == fresh
    assert sorted(rendered) == sorted(sources[:-1] + [sources[-1]] * 3)
    for index in range(markdown_safety.CACHED_CELLS + 50):
        sanitize_markdown(f"cell *{index}*")
    assert markdown_safety._kept.cache_info().currsize == markdown_safety.CACHED_CELLS
