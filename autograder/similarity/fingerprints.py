"""A part's code as fingerprints that survive renaming, reordering, comments and whitespace.

Student code is read as text, never as code: Python's :mod:`tokenize` splits it into tokens
(nothing is imported, compiled or run; a cell that does not tokenize to the end keeps the tokens
read so far), in time linear in the text. Comments and layout are dropped as they are read, and
only then is the part cut (:data:`MAX_PART_CHARS` characters of code, :data:`MAX_TOKENS`
tokens), so that a long comment never pushes the code out of what is compared (at most
:data:`MAX_READ_CHARS` characters are read, a whole notebook's worth). The tokens are normalised
so that what a copier changes cheaply stops mattering:

* comments, blank lines and the layout of a line are dropped (only the logical structure stays:
  a line's end and its indentation are tokens);
* a name is kept as written only when it means the same in every solution (a
  :class:`Vocabulary`): Python's keywords and builtins, the names the release's imports bind
  (``torch``, ``nn``, ``np``, ``EnvRunner``), the names the release's cells define (the stubs:
  ``Policy``, ``A2C``, ``make_model``), what the student's own ``from ... import`` brings in
  unrenamed, and, after a dot, the attributes of the libraries the release imports (``.detach``,
  ``.mean``, ``.append``). Every other name (a local variable, a parameter, an attribute the
  student chose, a helper's name) becomes ``V``, so renaming ``trajectory``, ``key`` or
  ``self.gamma`` changes nothing;
* every string literal becomes ``S`` (docstrings and messages are cheap to reword).

Two kinds of fingerprint come out, as 64-bit hashes of token runs (BLAKE2b: the same in every
run, so that a report made again is the same), with the source lines they cover:

* **winnowed k-grams** (Schleimer, Wilkerson and Aiken's winnowing, as MOSS uses): the hash of
  every run of :data:`K` tokens, of which each window of :data:`WINDOW` consecutive hashes keeps
  its smallest, so that any match of at least ``K + WINDOW - 1`` tokens is found;
* **statement hashes**: one per logical line of at least :data:`MIN_LINE_TOKENS` tokens (its
  indentation left out), so that statements moved around, or into another block, still match.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from dataclasses import dataclass

__all__ = [
    "K",
    "MAX_PART_CHARS",
    "MAX_READ_CHARS",
    "MAX_TOKENS",
    "MIN_LINE_TOKENS",
    "WINDOW",
    "Fingerprints",
    "TopLevel",
    "Vocabulary",
    "course_vocabulary",
    "fingerprint",
    "normalised_tokens",
    "top_level_names",
]

#: Characters of one part's code (comments and layout not counted) that are compared: the
#: course's longest solution part is about 3,000; more is padding, and is cut so that every
#: step stays linear and small.
MAX_PART_CHARS = 40_000
#: Characters read at most, comments included: a whole notebook's cells
#: (:data:`autograder.core.intake.submission_file.MAX_SOURCE_CHARS`).
MAX_READ_CHARS = 250_000
#: Tokens of one part that are compared.
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
#: Types whose attributes mean the same in every solution, besides the imported modules'.
_API_TYPES = (list, dict, tuple, set, str, int, float, bool)
_API_TYPE_NAMES = (
    ("torch", "Tensor"),
    ("torch.nn", "Module"),
    ("torch.optim", "Optimizer"),
    ("torch.distributions", "Categorical"),
    ("numpy", "ndarray"),
    ("numpy.random", "Generator"),
)


@dataclass(frozen=True)
class Vocabulary:
    """The names kept as written (module docstring): ``names`` anywhere, ``attributes`` after
    a dot."""

    names: frozenset[str] = frozenset()
    attributes: frozenset[str] = frozenset()


def _raw_tokens(source: str):
    """``(type, text, line)`` of ``source``'s code until its end, the first error, or the cap:
    comments and layout are skipped before anything is counted."""
    reader = io.StringIO(source[:MAX_READ_CHARS]).readline
    count = chars = 0
    try:
        for token in tokenize.generate_tokens(reader):
            if token.type in _SKIPPED:
                continue
            count, chars = count + 1, chars + len(token.string)
            if count > MAX_TOKENS or chars > MAX_PART_CHARS:
                return
            yield token.type, token.string, token.start[0]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return  # an unfinished string or bracket: the tokens so far


def _imported(tokens: list[tuple[int, str, int]]) -> set[str]:
    """The names ``from M import a, b`` and ``import m.n`` statements bring in unrenamed (an
    ``as`` alias is the writer's own name)."""
    found: set[str] = set()
    line: list[str] = []
    for kind, text, _ in [*tokens, (tokenize.NEWLINE, "", 0)]:
        if kind != tokenize.NEWLINE:
            if kind in (tokenize.NAME, tokenize.OP):
                line.append(text)
            continue
        if line[:1] == ["from"] and "import" in line:
            names = line[line.index("import") + 1 :]
            found.update(
                name
                for at, name in enumerate(names)
                if name.isidentifier() and name != "as"
                and (at + 1 >= len(names) or names[at + 1] != "as")
                and (at == 0 or names[at - 1] != "as")
            )  # fmt: skip
        elif line[:1] == ["import"]:
            found.update(name for name in line[1:2] if name.isidentifier())
        line = []
    return found


def normalised_tokens(
    source: str, known: Vocabulary = Vocabulary()
) -> list[tuple[str, int]]:
    """``(token, line)`` of ``source`` as :mod:`this module <autograder.similarity.fingerprints>`
    normalises them; ``known``: the names kept as written (:func:`course_vocabulary`)."""
    raw = list(_raw_tokens(source))
    names = known.names | _imported(raw)
    tokens: list[tuple[str, int]] = []
    after_dot = False
    for kind, text, line in raw:
        if kind == tokenize.NAME:
            if after_dot:
                kept = text in known.attributes or text in _KEPT
            else:
                kept = text in _KEPT or text in names
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


@dataclass(frozen=True)
class TopLevel:
    """What a cell's code binds at its top level, and the names it uses (not after a dot)."""

    defined: frozenset[str]  #: ``def`` and ``class`` names
    imported: frozenset[str]  #: names its imports bind (``np`` of ``import numpy as np``)
    assigned: frozenset[str]  #: plain assignments' targets (``HIDDEN = 512``)
    used: frozenset[str]

    @property
    def binds(self) -> frozenset[str]:
        return self.defined | self.imported | self.assigned


def _binds(statement: list[tuple[int, str, bool]]) -> tuple[str, set[str]]:
    """``(kind, names)`` a top-level statement (its tokens, each with whether it follows a
    dot) binds: ``"defined"``, ``"imported"`` or ``"assigned"``."""
    texts = [text for _, text, _ in statement]
    first = texts[0]
    if first in ("def", "class") and len(texts) > 1:
        return "defined", {texts[1]}
    if first in ("import", "from"):
        bound = set()
        clauses = texts[texts.index("import") + 1 :] if "import" in texts else []
        clause: list[str] = []
        for text in [*clauses, ","]:
            if text != ",":
                clause.append(text)
                continue
            names = [t for t in clause if t.isidentifier()]
            if "as" in names and names.index("as") + 1 < len(names):
                bound.add(names[names.index("as") + 1])
            elif names:
                bound.add(names[0])
            clause = []
        return "imported", bound
    if first in keyword.kwlist:
        return "assigned", set()
    depth, targets = 0, []
    for at, (kind, text, after_dot) in enumerate(statement):
        if kind == tokenize.OP and text in "([{":
            depth += 1
        elif kind == tokenize.OP and text in ")]}":
            depth -= 1
        elif kind == tokenize.OP and text in ("=", ":") and depth == 0:
            return "assigned", set(targets)
        elif kind == tokenize.NAME and depth == 0 and not after_dot:
            following = statement[at + 1][1] if at + 1 < len(statement) else ""
            if following not in (".", "["):  # x.y = 1 and x[0] = 1 bind no name
                targets.append(text)
    return "assigned", set()


def top_level_names(source: str) -> TopLevel:
    """What ``source`` binds at its top level and uses (:class:`TopLevel`), read as tokens."""
    bound: dict[str, set[str]] = {"defined": set(), "imported": set(), "assigned": set()}
    used: set[str] = set()
    depth, after_dot = 0, False
    statement: list[tuple[int, str, bool]] = []
    for kind, text, _ in _raw_tokens(source):
        if kind in (tokenize.INDENT, tokenize.DEDENT):
            depth += 1 if kind == tokenize.INDENT else -1
            continue
        if kind == tokenize.NEWLINE:
            if statement:
                what, names = _binds(statement)
                bound[what] |= names
            statement, after_dot = [], False
            continue
        if kind == tokenize.NAME and not after_dot:
            used.add(text)
        if depth == 0:
            statement.append((kind, text, after_dot))
        after_dot = kind == tokenize.OP and text == "."
    if statement:  # a last line without its end
        what, names = _binds(statement)
        bound[what] |= names
    binds = set().union(*bound.values())
    return TopLevel(
        frozenset(bound["defined"]),
        frozenset(bound["imported"]),
        frozenset(bound["assigned"] - bound["defined"] - bound["imported"]),
        frozenset(used - binds),
    )


def _public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("__")}


def course_vocabulary(release_sources: list[str]) -> Vocabulary:
    """The :class:`Vocabulary` of a release whose code cells are ``release_sources``: the names
    its imports bind and its cells define (``def``, ``class``), and the attributes of what it
    imports (the release is the instructor's own notebook, so its imports are imported here; a
    student's never are)."""
    import importlib

    names: set[str] = set()
    attributes: set[str] = set()
    modules: set[str] = {"torch", "torch.nn", "torch.nn.functional", "numpy"}
    for source in release_sources:
        top = top_level_names(source)
        names |= top.defined | top.imported
        modules |= _module_paths(list(_raw_tokens(source)))
    for module_name in sorted(modules):
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - a name that is not an importable module
            continue
        attributes |= _public(module)
        names.add(module_name.split(".")[0])
    for holder, name in _API_TYPE_NAMES:
        try:
            attributes |= _public(getattr(importlib.import_module(holder), name))
        except Exception:  # noqa: BLE001 - a library without it
            continue
    for kind in _API_TYPES:
        attributes |= _public(kind)
    return Vocabulary(frozenset(names), frozenset(attributes))


def _module_paths(raw: list[tuple[int, str, int]]) -> set[str]:
    """The modules the release's ``import`` and ``from ... import`` statements name."""
    found: set[str] = set()
    line: list[str] = []
    for kind, text, _ in [*raw, (tokenize.NEWLINE, "", 0)]:
        if kind != tokenize.NEWLINE:
            line.append(text)
            continue
        if line[:1] in (["import"], ["from"]):
            path: list[str] = []
            for text in line[1:]:
                if text in ("import", "as", ","):
                    break
                path.append(text)
            found.add("".join(path))
            if line[0] == "from" and "import" in line:  # from torch import nn: torch.nn too
                found.update(
                    "".join(path) + "." + name for name in line[line.index("import") + 1 :]
                    if name.isidentifier() and name != "as"
                )  # fmt: skip
        line = []
    return found


@dataclass(frozen=True)
class Fingerprints:
    """A part's fingerprints: ``{hash: (first line, last line)}`` (the first place it occurs)."""

    lines: dict[int, tuple[int, int]]

    def __len__(self) -> int:
        return len(self.lines)


def _stable_hash(tokens: list[str]) -> int:
    """A 64-bit hash of ``tokens`` that is the same in every process and run (Python's own
    ``hash`` of strings changes with each process), so that a report made again is the same."""
    digest = hashlib.blake2b("\x1f".join(tokens).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little", signed=True)


def _winnow(tokens: list[tuple[str, int]], found: dict[int, tuple[int, int]]) -> None:
    texts = [text for text, _ in tokens]
    hashes = [_stable_hash(texts[i : i + K]) for i in range(len(texts) - K + 1)]
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
                value = _stable_hash([t for t, _ in line_tokens])
                found.setdefault(value, (line_tokens[0][1], line))
            line_tokens = []
        elif text not in ("{", "}"):
            line_tokens.append((text, line))


def fingerprint(source: str, known: Vocabulary = Vocabulary()) -> Fingerprints:
    """The :class:`Fingerprints` of one part's ``source`` (``known``: :func:`course_vocabulary`)."""
    tokens = normalised_tokens(source, known)
    found: dict[int, tuple[int, int]] = {}
    _winnow(tokens, found)
    _statements(tokens, found)
    return Fingerprints(found)
