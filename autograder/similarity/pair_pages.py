"""The similarity report as pages: an index of the flagged pairs, and one page per pair.

Each pair's page shows, part by part, the two students' code side by side with the lines that
hold shared fingerprints marked, and the part's similarity, z and the class's median. Every
piece of student text (code, ids) is HTML-escaped, and the pages load nothing (no script, no
style sheet from elsewhere), so a page opened in the instructor's browser shows code and runs
none.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autograder.similarity.class_scores import (
    MIN_CLASS,
    NEAR_IDENTICAL,
    PairPart,
    PartDistribution,
)
from autograder.similarity.fingerprints import Fingerprints

__all__ = ["PairFinding", "index_page", "pair_file_name", "pair_page", "z_text", "too_small_line"]

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:.2em .5em;vertical-align:top}"
    ".side{display:flex;gap:1em}.side>div{flex:1;min-width:0}"
    "pre{background:#f7f7f7;padding:.5em;overflow-x:auto;font-size:85%}"
    "mark{background:#ffe08a}.flag{color:#a00;font-weight:bold}"
)


@dataclass(frozen=True)
class PairFinding:
    """A pair with at least one flagged part: its parts (flagged or not) and their code."""

    a: str
    b: str
    parts: Mapping[str, PairPart]

    @property
    def flagged(self) -> list[str]:
        return [key for key, part in self.parts.items() if part.flagged]

    @property
    def score(self) -> tuple[float, float]:
        """How the index ranks pairs: the flagged parts' similarity, then their z (where the
        class was measured), summed."""
        flagged = [self.parts[key] for key in self.flagged]
        z = sum(part.z for part in flagged if math.isfinite(part.z))
        return sum(part.similarity for part in flagged), z


def z_text(part: PairPart) -> str:
    """A part's z as the report prints it (none where the class was too small to measure)."""
    return f"z {part.z:.1f}" if math.isfinite(part.z) else "near-identical; class too small for z"


def pair_file_name(a: str, b: str) -> str:
    """The pair page's file name: the two ids with anything but letters, digits, ``.``, ``_``
    and ``-`` as ``_`` (ids from ``grades.csv`` are that already; a hand-edited one cannot
    name a path outside ``pairs/``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{a}--{b}").lstrip(".") + ".html"


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def _marked(source: str, lines: set[int]) -> str:
    out = []
    for number, line in enumerate(source.splitlines(), start=1):
        text = f"{number:4d}  {html.escape(line)}"
        out.append(f"<mark>{text}</mark>" if number in lines else text)
    return "<pre>" + "\n".join(out) + "</pre>"


def _lines(prints: Fingerprints, shared: frozenset[int]) -> set[int]:
    found: set[int] = set()
    for value in shared:
        first, last = prints.lines.get(value, (0, -1))
        found.update(range(first, last + 1))
    return found


def pair_page(
    finding: PairFinding,
    sources: Mapping[str, Mapping[str, str]],
    prints: Mapping[str, Mapping[str, Fingerprints]],
    distributions: Mapping[str, PartDistribution],
) -> str:
    """The HTML page of one pair (``sources``/``prints``: student -> part -> code/fingerprints)."""
    a, b = html.escape(finding.a), html.escape(finding.b)
    body = [
        f"<h1>{a} and {b}</h1>",
        "<p>Parts most alike first; marked lines hold code both "
        "wrote alike after renaming, reordering and comments are set aside (the release's "
        "own code and what much of the class writes are left out).</p>",
    ]
    order = sorted(finding.parts, key=lambda key: -finding.parts[key].similarity)
    for key in order:
        part, spread = finding.parts[key], distributions[key]
        flag = ' <span class="flag">flagged</span>' if part.flagged else ""
        body.append(
            f"<h2>{html.escape(key)}{flag}</h2><p>similarity {part.similarity:.2f} (class median "
            f"{spread.median:.2f}, {z_text(part)}, {len(part.shared)} shared fingerprint(s))</p>"
        )
        columns = []
        for student in (finding.a, finding.b):
            lines = _lines(prints[student][key], part.shared)
            columns.append(
                f"<div><h3>{html.escape(student)}</h3>"
                f"{_marked(sources[student].get(key, ''), lines)}</div>"
            )
        body.append('<div class="side">' + "".join(columns) + "</div>")
    return _page(f"{finding.a} and {finding.b}", "".join(body))


def too_small_line(students: int) -> str:
    """What the report says of a class too small to be measured against itself."""
    return (
        f"A class of {students} is too small to be scored against itself (fewer than "
        f"{MIN_CLASS} submissions): no z, nothing set aside as the class's common code, and a "
        f"part is flagged only when near-identical (similarity {NEAR_IDENTICAL:.2f} or more). "
        "A part with one natural solution can be that alike by itself: read both."
    )


def index_page(
    findings: Sequence[PairFinding],
    distributions: Mapping[str, PartDistribution],
    students: int,
    left_out: int,
) -> str:
    """The report's index: the class's distribution per part, then the flagged pairs."""
    rows = "".join(
        f"<tr><td>{html.escape(key)}</td><td>{d.pairs}</td><td>{d.median:.2f}</td>"
        f"<td>{d.scale:.2f}</td></tr>"
        for key, d in distributions.items()
    )
    body = [
        "<h1>Similar submissions</h1>",
        f"<p>{students} submission(s); {len(findings)} pair(s) with a part unusually alike"
        + (
            f" (the first {len(findings)} shown, {left_out} more in similarity.csv)"
            if left_out
            else ""
        )
        + ". A flag is a reason to read both notebooks, not a finding of copying.</p>",
        *(
            [f"<p>{html.escape(too_small_line(students))}</p>"]
            if not all(d.measured for d in distributions.values())
            else []
        ),
        "<table><tr><th>part</th><th>pairs scored</th><th>median similarity</th>"
        f"<th>spread</th></tr>{rows}</table>",
        "<h2>Pairs</h2><table><tr><th>pair</th><th>flagged parts (similarity, z)</th></tr>",
    ]
    for finding in findings:
        parts = ", ".join(
            f"{html.escape(k)} ({finding.parts[k].similarity:.2f}, {z_text(finding.parts[k])})"
            for k in finding.flagged
        )
        link = html.escape(f"pairs/{pair_file_name(finding.a, finding.b)}", quote=True)
        body.append(
            f'<tr><td><a href="{link}">{html.escape(finding.a)} and {html.escape(finding.b)}</a>'
            f"</td><td>{parts}</td></tr>"
        )
    body.append("</table>")
    return _page("Similar submissions", "".join(body))
