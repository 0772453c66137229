"""The similar-submissions report on a generated class (tests/submissions/generated_class.py).

30 students write every part independently, except: s07 hands in a lightly edited copy of s03's
``a2c`` (renamed, reordered, commented, re-spaced, a constant changed); s11 and s12 both paste
the release's own code (its longest code cell) as their ``policy``; every student writes
``merge_time_batch`` the one way the whole class writes it; s20's earlier file copied s21's ``gae`` but the file that
counts (grades.csv's ``received``) is s20's own. Only s03 and s07, on ``a2c``, may be flagged.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.similarity.fingerprints import (
    MAX_TOKENS,
    fingerprint,
    normalised_tokens,
)
from autograder.similarity.pair_pages import pair_file_name
from autograder.similarity.report import similarity_report
from solutions.build_notebooks import RELEASE_NOTEBOOK
from solutions.parts import PARTS
from tests.submissions.generated_class import (
    disguise,
    everyone_alike,
    student_parts,
    write_class,
)
from tests.submissions.hostile import REPORT_ATTACKS

RELEASE_CODE = max(
    (c.source for c in nbformat.read(RELEASE_NOTEBOOK, as_version=4).cells
     if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") not in PARTS),
    key=len,
)  # fmt: skip
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
    plain = fingerprint(code)
    renamed = disguise(code, seed=3)
    assert [t for t, _ in normalised_tokens("a  =  b # c\n")] == ["V", "=", "V", ";"]
    assert [t for t, _ in normalised_tokens("out = x.detach()\n", frozenset({"out"}))][:3] == [
        "out", "=", "V",
    ]  # fmt: skip
    shared = set(plain.lines) & set(fingerprint(renamed).lines)
    assert len(shared) >= 0.7 * len(plain)
    other = fingerprint(student_parts(seed=2)["a2c"])
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
