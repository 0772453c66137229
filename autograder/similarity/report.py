"""``python -m autograder similarity OUT``: pairs of students whose graded parts are unusually alike.

It reads the files ``grade-all`` kept in ``OUT/received/`` (each student's file that counts,
as ``grades.csv``'s ``received`` column names it: a resubmission replaces the earlier one) and
the release notebook students were given, fingerprints each graded part's code
(:mod:`autograder.similarity.fingerprints`: text only, never imported or run), scores every pair
part by part against the class's own distribution (:mod:`autograder.similarity.class_scores`),
and writes into ``OUT/similarity/``: ``index.html`` (the class's distribution per part and the
flagged pairs, most alike first), ``pairs/<a>--<b>.html`` (the pair's code side by side, shared
lines marked; :mod:`autograder.similarity.pair_pages`) for the first :data:`MAX_PAGES` pairs, and
``similarity.csv`` (every flagged pair and part).

A student's part is everything the part runs: the code cell whose nbgrader ``grade_id`` is the
part's key (the last one, as nbgrader keeps the last of duplicated cells), and every cell the
student added or changed that defines a name it uses, or redefines one of its own, following
those cells' names in turn (``class A2C(_Mine): pass`` in the part's cell and ``class _Mine``
in a cell above: both are compared, as the grader runs both). Names the release itself binds
(``np``, ``torch``) are not followed. It runs on the instructor's machine; nothing in it
reaches a student.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from autograder.core.intake.submission_file import UnreadableNotebook, parse_notebook, read_bytes
from autograder.core.reports.safe_text import csv_cell
from autograder.similarity.class_scores import PartDistribution, score_part
from autograder.similarity.fingerprints import (
    Fingerprints,
    Vocabulary,
    course_vocabulary,
    fingerprint,
    top_level_names,
)
from autograder.similarity.pair_pages import (
    PairFinding,
    index_page,
    pair_file_name,
    pair_page,
    too_small_line,
    z_text,
)
from solutions.parts import PARTS, RELEASE_NOTEBOOK

__all__ = ["MAX_PAGES", "REPORT_FOLDER", "part_sources", "similarity_report"]

#: Pair pages written at most (the index and the CSV list every flagged pair).
MAX_PAGES = 200
#: The folder of OUT the report goes to.
REPORT_FOLDER = "similarity"


def _text(cell: Mapping) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(map(str, source))


def part_sources(
    nb: Mapping, release: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()
) -> dict[str, str]:
    """``{part key: code}`` of a notebook's graded parts, each with the cells it uses (module
    docstring). ``release``: the release's code cells (never the student's own), ``known``: the
    names the release binds (not followed)."""
    cells = [cell for cell in nb.get("cells", []) if cell.get("cell_type") == "code"]
    parts: dict[str, int] = {}
    for at, cell in enumerate(cells):
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        key = meta.get("grade_id") if isinstance(meta, dict) else None
        if key in PARTS:
            parts[key] = at
    own = {
        at: top_level_names(_text(cell))
        for at, cell in enumerate(cells)
        if at not in parts.values() and _text(cell).strip() not in release
    }
    found = {}
    for key, at in parts.items():
        part = top_level_names(_text(cells[at]))
        wanted, chosen = set(part.used | part.binds) - known, set()
        while wanted:
            new = {i for i, top in own.items() if i not in chosen and top.binds & wanted}
            chosen |= new
            wanted = set().union(*(own[i].used for i in new)) - known if new else set()
        pieces = [
            (f"# (cell {i + 1}, used by this part)\n" if i != at else "") + _text(cells[i])
            for i in sorted(chosen | {at})
        ]
        found[key] = "\n\n".join(pieces)
    return found


def _release(path: Path) -> tuple[Vocabulary, frozenset[int], frozenset[str]]:
    """The names the release's code keeps as written, its fingerprints (left out of every
    part) and its code cells."""
    nb = nbformat.read(path, as_version=4)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    known = course_vocabulary(code)
    given: set[int] = set()
    for source in code:  # the stubs and every other cell students are given
        given.update(fingerprint(source, known).lines)
    return known, frozenset(given), frozenset(source.strip() for source in code)


def _class(
    out: Path, release: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """``({student: {part: code}}, problems)`` from ``out/grades.csv``'s received files."""
    sources: dict[str, dict[str, str]] = {}
    problems = []
    grades = out / "grades.csv"
    if not grades.is_file():
        raise FileNotFoundError(f"{grades} does not exist: give the --out folder of grade-all.")
    kept = (out / "received").resolve()
    with grades.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("student") and row.get("received")]
    for row in tqdm(rows, desc="reading notebooks", unit="notebook", file=sys.stderr):
        path = (out / row["received"]).resolve()
        if not path.is_relative_to(kept):
            problems.append(f"{row['student']}: {row['received']} is not in {kept}")
            continue
        try:
            notebook = parse_notebook(read_bytes(path), path.name)
            sources[row["student"]] = part_sources(notebook, release, known)
        except (UnreadableNotebook, OSError) as error:
            problems.append(f"{row['student']}: {str(error).splitlines()[0]}")
    return sources, problems


def similarity_report(out: Path, release: Path = RELEASE_NOTEBOOK, pages: int = MAX_PAGES) -> str:
    """Write the report into ``out/similarity``; returns what it found, for the terminal.

    Raises:
        FileNotFoundError: ``out`` holds no ``grades.csv``.
    """
    out = Path(out)
    known, given, release_code = _release(Path(release))
    sources, problems = _class(out, release_code, known.names)
    prints: dict[str, dict[str, Fingerprints]] = {
        student: {key: fingerprint(code, known) for key, code in parts.items()}
        for student, parts in tqdm(
            sources.items(), desc="fingerprints", unit="notebook", file=sys.stderr
        )
    }
    scores = {
        key: score_part({s: p[key] for s, p in prints.items() if key in p}, given) for key in PARTS
    }
    distributions: dict[str, PartDistribution] = {k: v.distribution for k, v in scores.items()}
    pairs = sorted({pair for part in scores.values() for pair in part.flagged()})
    findings = []
    for a, b in pairs:
        parts = {key: found for key, part in scores.items() if (found := part.pair(a, b))}
        findings.append(PairFinding(a, b, parts))
    findings.sort(key=lambda f: (-len(f.flagged), -f.score[0], -f.score[1], f.a, f.b))
    folder = out / REPORT_FOLDER
    (folder / "pairs").mkdir(parents=True, exist_ok=True)
    for old in (folder / "pairs").glob("*.html"):
        old.unlink()  # pages of an earlier run whose pair is no longer flagged
    for finding in findings[:pages]:
        page = pair_page(finding, sources, prints, distributions)
        (folder / "pairs" / pair_file_name(finding.a, finding.b)).write_text(page, encoding="utf-8")
    shown = findings[:pages]
    index = index_page(shown, distributions, len(sources), len(findings) - len(shown))
    (folder / "index.html").write_text(index, encoding="utf-8")
    with (folder / "similarity.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student_a", "student_b", "part", "similarity", "z", "class_median"])
        for finding in findings:
            for key in finding.flagged:
                part = finding.parts[key]
                z = f"{part.z:.1f}" if math.isfinite(part.z) else ""  # a class too small
                cells = [finding.a, finding.b, key, f"{part.similarity:.3f}", z]
                cells.append(f"{distributions[key].median:.3f}")
                writer.writerow([csv_cell(cell) for cell in cells])
    lines = [f"{len(sources)} submission(s), {len(findings)} pair(s) with a part unusually alike"]
    if not all(d.measured for d in distributions.values()):
        lines.append(too_small_line(len(sources)))
    lines += [
        f"  {f.a} and {f.b}: "
        + ", ".join(f"{k} {f.parts[k].similarity:.2f} ({z_text(f.parts[k])})" for k in f.flagged)
        for f in findings[:20]
    ]
    if len(findings) > 20:
        lines.append(f"  ... {len(findings) - 20} more in {folder / 'similarity.csv'}")
    lines += [f"  not read: {problem}" for problem in problems]
    lines.append(f"report: {folder / 'index.html'}")
    return "\n".join(lines)
