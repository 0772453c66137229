"""The similar-submissions report on generated classes.

A class of 30 (tests/submissions/generated_class.py): 30 students write every part
independently, except: s07 hands in a lightly edited copy of s03's ``a2c`` (renamed, reordered,
commented, re-spaced, a constant changed); s11 and s12 both paste the release's own code (its
longest code cell) as their ``policy``; every student writes ``merge_time_batch`` the one way the
whole class writes it; s20's earlier file copied s21's ``gae`` but the file that counts
(grades.csv's ``received``) is s20's own. Only s03 and s07, on ``a2c``, may be flagged.

A class of 16 with copies made as students make them (tests/submissions/copied_class.py): four
copiers, twelve who wrote their own; the report is held against copydetect on the same class.
Sections of three: byte-identical notebooks flagged, independent ones not, both said too small.
"""

from __future__ import annotations

import csv
import itertools
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder.cli import main
from autograder.similarity.fingerprints import (
    MAX_TOKENS,
    Vocabulary,
    course_vocabulary,
    fingerprint,
    normalised_tokens,
)
from autograder.similarity.pair_pages import pair_file_name
from autograder.similarity.report import part_sources, similarity_report
from solutions.build_notebooks import RELEASE_NOTEBOOK
from solutions.parts import PARTS
from tests.submissions.copied_class import COPIES, OWN, class_notebooks
from tests.submissions.generated_class import (
    disguise,
    everyone_alike,
    student_parts,
    write_class,
    write_notebooks,
)
from tests.submissions.hostile import REPORT_ATTACKS

RELEASE_CODE = max(
    (c.source for c in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells
     if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") not in PARTS),
    key=len,
)  # fmt: skip
VOCABULARY = course_vocabulary(
    [c.source for c in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
)
MARKER = Path("/tmp/a2c-similarity-ran")
HOSTILE = REPORT_ATTACKS["escape_page"].replace("{marker}", str(MARKER))  # in s03's and s07's a2c


def _class(size: int = 30) -> tuple[dict, dict]:
    students = {f"s{n:02d}": student_parts(seed=n) for n in range(size)}
    for number, parts in enumerate(students.values()):
        parts["merge_time_batch"] = everyone_alike(number)
    students["s07"]["a2c"] = disguise(students["s03"]["a2c"], seed=7)
    for student in ("s11", "s12"):
        students[student]["policy"] = RELEASE_CODE
    students["s03"]["a2c"] += "\n" + HOSTILE
    students["s07"]["a2c"] += "\n" + HOSTILE
    earlier = {"s20": {**students["s20"], "gae": students["s21"]["gae"]}}
    return students, earlier


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = write_class(tmp_path_factory.mktemp("similar") / "grading-output", *_class())
    started = time.perf_counter()
    text = similarity_report(out)
    seconds = time.perf_counter() - started
    with (out / "similarity" / "similarity.csv").open(newline="") as handle:
        flagged = list(csv.DictReader(handle))
    return {"out": out, "text": text, "flagged": flagged, "seconds": seconds}


def test_only_the_copied_part_of_the_copied_pair_is_flagged(report):
    assert [(r["student_a"], r["student_b"], r["part"]) for r in report["flagged"]] == [
        ("s03", "s07", "a2c")
    ]
    assert float(report["flagged"][0]["similarity"]) >= 0.7
    assert "30 submission(s), 1 pair(s) with a part unusually alike" in report["text"]
    assert "s03 and s07: a2c" in report["text"]


def test_the_pair_page_shows_both_sides_marked_and_escaped(report):
    folder = report["out"] / "similarity"
    page = (folder / "pairs" / "s03--s07.html").read_text(encoding="utf-8")
    assert page.count("<mark>") >= 10 and "renamed_0_" in page  # s07's names, s03's lines
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;&lt;!--" in page
    assert "<img" not in page and "<!--" not in page and "</td><script" not in page
    assert '<h2>a2c <span class="flag">flagged</span></h2>' in page
    assert "<h2>model</h2>" in page  # the pair's other parts, for comparison
    assert "<h2>merge_time_batch" not in page  # what the whole class writes: not scored
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert 'href="pairs/s03--s07.html"' in index and "<script" not in index
    assert sorted(p.name for p in (folder / "pairs").iterdir()) == ["s03--s07.html"]
    assert not MARKER.exists()  # read as text, never run


def test_a_student_id_never_names_a_pair_page_outside_pairs(tmp_path):
    pairs = tmp_path / "similarity" / "pairs"
    name = pair_file_name(REPORT_ATTACKS["escape_path"], "s01")
    assert "/" not in name and not name.startswith(".") and name.endswith(".html")
    assert (pairs / name).resolve().parent == pairs.resolve()


def test_fingerprints_ignore_names_comments_spacing_and_keep_moved_statements():
    code = student_parts(seed=1)["a2c"]
    plain = fingerprint(code, VOCABULARY)
    renamed = disguise(code, seed=3)
    assert [t for t, _ in normalised_tokens("a  =  b # c\n")] == ["V", "=", "V", ";"]
    known = Vocabulary(frozenset({"out"}), frozenset({"detach"}))
    assert [t for t, _ in normalised_tokens("out = x.detach()\n", known)] == [
        "out", "=", "V", ".", "detach", "(", ")", ";",
    ]  # fmt: skip
    shared = set(plain.lines) & set(fingerprint(renamed, VOCABULARY).lines)
    assert len(shared) >= 0.7 * len(plain)
    other = fingerprint(student_parts(seed=2)["a2c"], VOCABULARY)
    assert len(set(plain.lines) & set(other.lines)) <= 0.1 * len(plain)


def test_code_that_does_not_tokenize_or_is_huge_is_read_in_linear_capped_time():
    assert len(fingerprint('x = foo(1)\ny = "unterminated\n')) >= 0
    huge = "value = value + 1\n" * 200_000  # 3.6 MB of code in one part
    started = time.perf_counter()
    tokens = normalised_tokens(huge)
    fingerprint(huge)
    assert len(tokens) <= MAX_TOKENS
    assert time.perf_counter() - started < 30  # capped: a fraction of a second when idle


def test_the_command_writes_the_report_and_says_where(report, capsys):
    assert main(["similarity", str(report["out"])]) == 0
    printed = capsys.readouterr().out
    assert "s03 and s07: a2c" in printed
    assert f"report: {report['out'] / 'similarity' / 'index.html'}" in printed
    assert main(["similarity", str(report["out"] / "nowhere")]) == 1
    assert "give the --out folder of grade-all" in capsys.readouterr().err


# --- copies made as students make them, held against an independent detector --------------------


@pytest.fixture(scope="module")
def copied(tmp_path_factory):
    """The report on tests/submissions/copied_class.py's class of 16 (four copiers)."""
    notebooks = class_notebooks()
    out = write_notebooks(tmp_path_factory.mktemp("copied") / "grading-output", notebooks)
    text = similarity_report(out)
    with (out / "similarity" / "similarity.csv").open(newline="") as handle:
        flagged = {(r["student_a"], r["student_b"], r["part"]): r for r in csv.DictReader(handle)}
    return {"notebooks": notebooks, "out": out, "text": text, "flagged": flagged}


def test_copies_as_students_make_them_are_flagged_and_independent_work_is_not(copied):
    """Renamed names with reordered branches; reordered statements, comments, a docstring, dead
    code, lines split and joined; a copy moved into a helper cell; a copy after a 40,000-character
    comment: each is flagged on its part, and no pair of independent solutions is."""
    expected = {(original, copier, key) for copier, (original, key, _, _) in COPIES.items()}
    assert set(copied["flagged"]) == expected
    for row in copied["flagged"].values():
        assert float(row["similarity"]) >= 0.6 and float(row["z"]) >= 10, row
    assert "16 submission(s), 4 pair(s) with a part unusually alike" in copied["text"]
    assert "too small" not in copied["text"]


def test_the_ranking_holds_against_copydetect(copied, tmp_path):
    """copydetect (an independent, maintained winnowing detector) on the same class, each
    student's whole code with the release's as boilerplate: the pairs it ranks highest are the
    pairs flagged here."""
    from copydetect import CodeFingerprint, compare_files

    def code(nb) -> str:
        return "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")

    (tmp_path / "release.py").write_text(code(nbformat.read(RELEASE_NOTEBOOK, as_version=4)))
    release = CodeFingerprint(str(tmp_path / "release.py"), 25, 1, language="py")
    boilerplate = np.array(sorted(release.hashes))
    prints = {}
    for student, nb in copied["notebooks"].items():
        (tmp_path / f"{student}.py").write_text(code(nb))
        prints[student] = CodeFingerprint(
            str(tmp_path / f"{student}.py"), 25, 1, boilerplate=boilerplate, language="py"
        )
    ranked = sorted(
        (
            (-max(compare_files(prints[a], prints[b])[1]), a, b)
            for a, b in itertools.combinations(sorted(prints), 2)
        ),
    )
    top = {(a, b) for _, a, b in ranked[: len(COPIES)]}
    assert top == {(a, b) for a, b, _ in copied["flagged"]}


def test_names_the_course_does_not_give_are_renamed_away():
    """`key`, `value`, `trajectory` and an attribute the student chose mean nothing: renaming
    them leaves the tokens as they were; the course's and torch's names stay."""
    original = OWN["s00"]["merge_time_batch"]
    renamed = (original.replace("key", "name").replace("value", "entry")
               .replace("trajectory", "traj").replace("merged", "out"))  # fmt: skip
    tokens = [t for t, _ in normalised_tokens(original, VOCABULARY)]
    assert tokens == [t for t, _ in normalised_tokens(renamed, VOCABULARY)]
    assert {"torch", "np", "isinstance", "stack", "reshape", "items"} <= set(tokens)
    assert not {"key", "value", "trajectory", "merged"} & set(tokens)
    assert [t for t, _ in normalised_tokens("self.gammma = g\n", VOCABULARY)][:3] == ["V", ".", "V"]


def test_a_part_is_compared_with_the_cells_it_uses_and_past_any_comment(copied):
    """s14's a2c cell is `class A2C(_Mine): pass`; the helper cell above is part of its code.
    s15's code after a 40,000-character comment is compared (the comment is dropped first)."""
    release = {c.source.strip() for c in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells}
    helper = part_sources(copied["notebooks"]["s14"], frozenset(release), VOCABULARY.names)
    assert "class _Mine:" in helper["a2c"] and helper["a2c"].rstrip().endswith("pass")
    assert "class _Mine" not in helper["merge_time_batch"]  # only the part that uses it
    after = part_sources(copied["notebooks"]["s15"], frozenset(release), VOCABULARY.names)
    assert len(after["a2c"]) > 40_000 and len(fingerprint(after["a2c"], VOCABULARY)) >= 40


def test_a_section_too_small_to_measure_flags_near_identical_parts_and_says_so(tmp_path):
    """Byte-identical notebooks in a class of three are flagged on every part they wrote; three
    students who each wrote their own flag nothing; both reports say the section is too small to
    be scored against itself."""
    notebooks = class_notebooks()
    same = write_notebooks(
        tmp_path / "same", {"ann": notebooks["s00"], "ben": notebooks["s00"], "cho": notebooks["s01"]}
    )
    text = similarity_report(same)
    assert "3 submission(s), 1 pair(s) with a part unusually alike" in text
    assert "A class of 3 is too small to be scored against itself" in text
    line = next(line for line in text.splitlines() if line.startswith("  ann and ben:"))
    for key in ("compute_value_targets", "merge_time_batch", "a2c"):
        assert f"{key} 1.00 (near-identical; class too small for z)" in line
    index = (same / "similarity" / "index.html").read_text()
    assert "too small to be scored against itself" in index
    own = write_notebooks(
        tmp_path / "own", {name: notebooks[name] for name in ("s00", "s01", "s02")}
    )
    text = similarity_report(own)
    assert "3 submission(s), 0 pair(s)" in text and "too small" in text
