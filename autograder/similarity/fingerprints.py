"""A part's code as fingerprints that survive renaming, reordering, comments and whitespace.

Student code is read as text, never as code: Python's :mod:`tokenize` splits it into tokens
(nothing is imported, compiled or run; a cell that does not tokenize to the end keeps the tokens
read so far), in time linear in the text, which is cut at :data:`MAX_PART_CHARS` and
:data:`MAX_TOKENS` first. The tokens are normalised so that what a copier changes cheaply stops
mattering:

* comments, blank lines and the layout of a line are dropped (only the logical structure stays:
  a line's end and its indentation are tokens);
* every name the course does not give (a local variable, a parameter, a helper's name) becomes
  ``V``; names the release's own code uses (``torch``, ``nn``, ``Policy``, ``values``), Python's
  keywords and builtins, and attribute names after a dot (``.detach``, ``.mean``) are kept,
  since they say what the code does;
* every string literal becomes ``S`` (docstrings and messages are cheap to reword).

Two kinds of fingerprint come out, as Python's own 64-bit hashes of token tuples (fast, and the
same within one process, where every part of a report is fingerprinted), with the source lines
they cover:

* **winnowed k-grams** (Schleimer, Wilkerson and Aiken's winnowing, as MOSS uses): the hash of
  every run of :data:`K` tokens, of which each window of :data:`WINDOW` consecutive hashes keeps
  its smallest, so that any match of at least ``K + WINDOW - 1`` tokens is found;
* **statement hashes**: one per logical line of at least :data:`MIN_LINE_TOKENS` tokens (its
  indentation left out), so that statements moved around, or into another block, still match.
"""

from __future__ import annotations

import builtins
import io
import keyword
import tokenize
from dataclasses import dataclass

__all__ = [
    "K",
    "MAX_PART_CHARS",
    "MAX_TOKENS",
    "MIN_LINE_TOKENS",
    "WINDOW",
    "Fingerprints",
    "course_names",
    "fingerprint",
    "normalised_tokens",
]

#: Characters of one part's code that are read (the course's longest solution part is about
#: 3,000; more is padding, and is cut so that every step stays linear and small).
MAX_PART_CHARS = 40_000
#: Tokens of one part that are read.
MAX_TOKENS = 8_000
#: Tokens per k-gram, and k-gram hashes per winnowing window.
K, WINDOW = 10, 5
#: A logical line shorter than this (``return V``) gives no statement hash.
MIN_LINE_TOKENS = 5
_KEPT = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_STRING_STARTS = {tokenize.STRING, getattr(tokenize, "FSTRING_START", -1)}
#: The rest of an f-string (Python 3.12+): one ``S`` already stands for it.
_STRING_RESTS = {getattr(tokenize, "FSTRING_MIDDLE", -2), getattr(tokenize, "FSTRING_END", -2)}
_STRUCTURE = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}


def _raw_tokens(source: str):
    """``(type, text, line)`` of ``source`` (capped) until its end or the first error."""
    reader = io.StringIO(source[:MAX_PART_CHARS]).readline
    try:
        for count, token in enumerate(tokenize.generate_tokens(reader)):
            if count >= MAX_TOKENS:
                return
            yield token.type, token.string, token.start[0]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return  # an unfinished string or bracket: the tokens so far


def normalised_tokens(source: str, known: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :mod:`this module <autograder.similarity.fingerprints>`
    normalises them; ``known``: the names the course gives (kept as written)."""
    tokens: list[tuple[str, int]] = []
    after_dot = False
    for kind, text, line in _raw_tokens(source):
        if kind in _SKIPPED:
            continue
        if kind == tokenize.NAME:
            kept = after_dot or text in _KEPT or text in known
            tokens.append((text if kept else "V", line))
        elif kind in _STRING_STARTS:
            tokens.append(("S", line))
        elif kind in _STRING_RESTS:
            continue
        elif kind in _STRUCTURE:
            tokens.append((_STRUCTURE[kind], line))
        else:
            tokens.append((text, line))
        after_dot = kind == tokenize.OP and text == "."
    return tokens


def course_names(sources: list[str]) -> frozenset[str]:
    """Every name the release's code cells use (kept as written when normalising)."""
    names: set[str] = set()
    for source in sources:
        names.update(text for kind, text, _ in _raw_tokens(source) if kind == tokenize.NAME)
    return frozenset(names)


@dataclass(frozen=True)
class Fingerprints:
    """A part's fingerprints: ``{hash: (first line, last line)}`` (the first place it occurs)."""

    lines: dict[int, tuple[int, int]]

    def __len__(self) -> int:
        return len(self.lines)


def _winnow(tokens: list[tuple[str, int]], found: dict[int, tuple[int, int]]) -> None:
    texts = [text for text, _ in tokens]
    hashes = [hash(tuple(texts[i : i + K])) for i in range(len(texts) - K + 1)]
    chosen = -1
    for start in range(max(0, len(hashes) - WINDOW + 1)):
        window = hashes[start : start + WINDOW]
        smallest = min(window)
        best = start + WINDOW - 1 - window[::-1].index(smallest)  # the rightmost, as MOSS
        if best != chosen:
            chosen = best
            found.setdefault(smallest, (tokens[best][1], tokens[best + K - 1][1]))
    if 0 < len(hashes) < WINDOW:  # shorter than one window: its smallest k-gram
        best = hashes.index(min(hashes))
        found.setdefault(hashes[best], (tokens[best][1], tokens[best + K - 1][1]))


def _statements(tokens: list[tuple[str, int]], found: dict[int, tuple[int, int]]) -> None:
    line_tokens: list[tuple[str, int]] = []
    for text, line in tokens:
        if text == ";":
            if len(line_tokens) >= MIN_LINE_TOKENS:
                value = hash(tuple(t for t, _ in line_tokens))
                found.setdefault(value, (line_tokens[0][1], line))
            line_tokens = []
        elif text not in ("{", "}"):
            line_tokens.append((text, line))


def fingerprint(source: str, known: frozenset[str] = frozenset()) -> Fingerprints:
    """The :class:`Fingerprints` of one part's ``source`` (``known``: :func:`course_names`)."""
    tokens = normalised_tokens(source, known)
    found: dict[int, tuple[int, int]] = {}
    _winnow(tokens, found)
    _statements(tokens, found)
    return Fingerprints(found)
