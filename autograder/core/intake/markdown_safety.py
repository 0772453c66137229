"""Make a student's markdown safe to show in a browser, in linear time, without false alarms.

Feedback pages and formgrader render a notebook's markdown with nbconvert's mistune renderer,
which passes raw HTML through, and load MathJax. :func:`sanitize_markdown` renders a cell the
same way (:func:`render_markdown`: attachments are named, not embedded) and reads every tag of
the result once (:func:`clean_html`, a single pass; mistune escapes every ``<`` of plain text,
code and math, so each ``<`` left is a tag):

* a tag is kept only when its name is on :data:`ALLOWED_TAGS`, written back in a canonical form
  with the attributes :data:`ALLOWED_ATTRIBUTES` lists whose URLs (``href``, ``src``) are
  relative or have a scheme of :data:`ALLOWED_SCHEMES` (as a browser reads them: entities
  decoded, spaces and control characters ignored); a well-formed comment is dropped (it shows
  nothing); any other tag or declaration is shown as text (its ``<`` become ``&lt;``);
* MathJax commands that make links or load code (``\\href``, ``\\require``, ...) lose their
  backslash's power;
* a fenced code block in a language whose lexer may not run on student text
  (:mod:`autograder.core.intake.code_highlighting`: pygments has lexers that never return) is rendered
  as plain text, so that the cell, written back as HTML, names no lexer to any later renderer.

A cell where nothing was active is left as written (its markdown and math render as the
student wrote them, and no note is added). A cell where something was is replaced by the
cleaned HTML on one line (so markdown cannot re-read it) and :data:`NOTE` (or
:data:`CODE_NOTE`, for code blocks alone). Each tag is read at
most :data:`MAX_TAG` characters ahead, so the cost is linear in the cell, whatever its tags.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import html
import re
import secrets
from typing import Any

from autograder.core.intake.code_highlighting import SafeRenderer

__all__ = [
    "ALLOWED_ATTRIBUTES",
    "ALLOWED_SCHEMES",
    "ALLOWED_TAGS",
    "CODE_NOTE",
    "COMMON_ATTRIBUTES",
    "MAX_TAG",
    "NOTE",
    "CHECKED",
    "clean_html",
    "is_checked",
    "mark_checked",
    "render_markdown",
    "safe_url",
    "sanitize_markdown",
]

ALLOWED_TAGS = frozenset(
    {
        *("a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3"),
        *("h4", "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub"),
        *("sup", "table", "tbody", "td", "th", "thead", "tr", "ul"),
    }
)
#: Attributes a tag may keep: these, and :data:`COMMON_ATTRIBUTES` on any allowed tag.
ALLOWED_ATTRIBUTES = {"a": ("href",), "img": ("src", "alt", "width", "height")}
#: Inert attributes nbconvert's own rendering writes (heading ids, code classes) and tables use.
COMMON_ATTRIBUTES = ("id", "class", "title", "align", "colspan", "rowspan")
ALLOWED_SCHEMES = frozenset({"http", "https", "mailto", "attachment"})
#: A tag not closed within this many characters is shown as text, with what follows it up to
#: that length.
MAX_TAG = 4096
#: Appended (as markdown) to a cell the pass changed.
NOTE = (
    "\n\n*[The grader removed active HTML (a script, an event handler or an unsafe link) from "
    "this cell before showing it; the file as submitted is kept in received/.]*"
)
#: Appended to a cell whose code blocks name a language the grader does not highlight.
CODE_NOTE = (
    "\n\n*[The grader shows this cell's code blocks in languages other than Python as plain "
    "text; the file as submitted is kept in received/.]*"
)

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
_SPACE = " \t\n\r\f"
_MATHJAX = re.compile(r"\\(href|url|require|class|cssId|style|unicode|html|data)\b")
_SCHEME_WINDOW = 256


def safe_url(url: str) -> bool:
    """Whether ``url`` is relative or has an allowed scheme, as a browser would read it
    (entities decoded, backslashes, spaces and control characters ignored)."""
    text = html.unescape(url[:_SCHEME_WINDOW]).replace("\\", "")
    text = "".join(ch for ch in text if ord(ch) > 0x20 and ch != "\x7f").lower()
    for index, ch in enumerate(text):
        if ch == ":":
            return text[:index] in ALLOWED_SCHEMES
        if ch in "/?#":
            return True
    return len(url) <= _SCHEME_WINDOW  # padding hid where the scheme ends: refused


def _attributes(text: str, start: int, end: int) -> list[tuple[str, str]] | None:
    """The attributes in ``text[start:end]`` (the inside of a tag after its name), or ``None``
    when they are not plain HTML attributes."""
    found, i = [], start
    while i < end:
        if text[i] in _SPACE or text[i] == "/":
            i += 1
            continue
        j = i
        while j < end and text[j] not in _SPACE and text[j] not in "/=":
            if text[j] in "\"'<`":
                return None
            j += 1
        name = text[i:j].lower()
        while j < end and text[j] in _SPACE:
            j += 1
        value = ""
        if j < end and text[j] == "=":
            j += 1
            while j < end and text[j] in _SPACE:
                j += 1
            if j < end and text[j] in "\"'":
                close = text.find(text[j], j + 1, end)
                if close < 0:
                    return None
                value, j = text[j + 1 : close], close + 1
            else:
                k = j
                while k < end and text[k] not in _SPACE:
                    if text[k] in "\"'<=`":
                        return None
                    k += 1
                value, j = text[j:k], k
        found.append((name, html.unescape(value)))
        i = j
    return found


def _tag_end(text: str, start: int) -> int:
    """The index of the ``>`` that ends the tag opened at ``start`` (quotes respected), or -1
    when there is none in the :data:`MAX_TAG` characters that follow."""
    limit = min(len(text), start + MAX_TAG)
    i = start + 1
    while i < limit:
        ch = text[i]
        if ch == ">":
            return i
        if ch in "\"'":
            i = text.find(ch, i + 1, limit)
            if i < 0:
                return -1
        i += 1
    return -1


def _escaped(text: str, start: int, end: int) -> tuple[str, int, bool]:
    """``text[start:end]`` shown as text: every ``<`` in it escaped (a tag inside a refused one
    must not come back to life)."""
    return text[start:end].replace("<", "&lt;"), end, True


def _tag(text: str, start: int) -> tuple[str, int, bool] | None:
    """What replaces the ``<`` at ``start``: ``(replacement, next index, changed)``, or ``None``
    when it opens nothing (``a < b``). Each character is read a bounded number of times: a
    refused tag is escaped whole, and a tag never closed escapes the next :data:`MAX_TAG`."""
    nxt = text[start + 1 : start + 2]
    closing = nxt == "/"
    if not (nxt.isascii() and nxt.isalpha()) and nxt not in ("/", "!", "?"):
        return None
    if text.startswith("<!--", start):  # a comment shows nothing: dropped
        close = text.find("-->", start + 4, start + MAX_TAG)
        body = text[start + 4 : close]
        if close >= 0 and "--" not in body and not body.startswith((">", "->")):
            return "", close + 3, False
    end = _tag_end(text, start)
    if end < 0:  # never closed: it could take the page's next tag with it
        return _escaped(text, start, min(len(text), start + MAX_TAG))
    name = _NAME.match(text, start + 1 + closing)
    after = name.end() if name else end
    if name is None or nxt in ("!", "?") or name.group().lower() not in ALLOWED_TAGS:
        return _escaped(text, start, end + 1)
    if after < end and text[after] not in _SPACE and text[after] != "/":
        return _escaped(text, start, end + 1)
    tag = name.group().lower()
    if closing:
        return f"</{tag}>", end + 1, text[after:end].strip() != ""
    attributes = _attributes(text, after, end)
    if attributes is None:
        return _escaped(text, start, end + 1)
    allowed = (*ALLOWED_ATTRIBUTES.get(tag, ()), *COMMON_ATTRIBUTES)
    kept = [
        (key, value)
        for key, value in attributes
        if key in allowed and (key not in ("href", "src") or safe_url(value))
    ]
    out = "".join(f' {key}="{html.escape(value, quote=True)}"' for key, value in kept)
    return f"<{tag}{out}>", end + 1, len(kept) != len(attributes)


def render_markdown(source: str) -> tuple[str, list[str], list[str]]:
    """``source`` as nbconvert renders a markdown cell (only the course's languages highlighted,
    :class:`~autograder.core.intake.code_highlighting.SafeRenderer`), the attachments it names
    (``attachment:plot.png`` is left as a link, not embedded) and the code blocks' languages
    shown as plain text, or highlighted otherwise than nbconvert's own renderer would (listed
    as ``rewritten:<language>``)."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    named: list[str] = []

    class _Renderer(SafeRenderer):
        def _embed_image_or_attachment(self, src: str) -> str:
            if src.startswith("attachment:"):
                named.append(src[len("attachment:") :])
            return src

    renderer = _Renderer(escape=False)
    html = MarkdownWithMath(renderer=renderer).render(source)
    return html, named, renderer.refused + [f"rewritten:{name}" for name in renderer.rewritten]


def clean_html(text: str) -> tuple[str, bool]:
    """``text`` (HTML) with every tag checked (see the module docstring), and whether anything
    active was removed."""
    parts, last, changed = [], 0, False
    start = text.find("<")
    while start >= 0:
        replaced = _tag(text, start)
        if replaced is None:  # "<" before a space or digit: text already
            start = text.find("<", start + 1)
            continue
        new, after, active = replaced
        if new != text[start:after]:
            parts += [text[last:start], new]
            last = after
        changed |= active
        start = text.find("<", after)
    parts.append(text[last:])
    return "".join(parts), changed


#: How many cells' answers :func:`sanitize_markdown` keeps, and the longest cell it keeps.
CACHED_CELLS = 256
CACHED_CELL_CHARS = 16 * 1024


def sanitize_markdown(source: str) -> str | None:
    """Safe markdown for ``source`` (see the module docstring), or ``None`` when it is safe as
    written. A cell whose code blocks any later renderer would highlight otherwise (an IPython
    or a long block, whose lexer is slow on some text: formgrader renders the recorded notebook
    with nbconvert's own renderer) is recorded as its rendering too, with no note.

    The answer depends on ``source`` alone, so a process keeps the answers for the last
    :data:`CACHED_CELLS` cells of at most :data:`CACHED_CELL_CHARS` characters: a class's
    notebooks mostly hold the release's own markdown cells, unchanged, and each is rendered once
    a process (the grader's, a feedback child's) instead of once a student. A longer cell is
    rendered every time, so what is kept stays small whatever students write.
    """
    if type(source) is not str or len(source) > CACHED_CELL_CHARS:
        return _sanitized(source)
    return _kept(source)


def _sanitized(source: str) -> str | None:
    """:func:`sanitize_markdown` without the cache."""
    rendered, _, shown = render_markdown(source)
    refused = [name for name in shown if not name.startswith("rewritten:")]
    clean, changed = clean_html(rendered)
    clean, commands = _MATHJAX.subn(r"\\;\1", clean)
    if not (changed or commands or shown):
        return None
    note = (NOTE if changed or commands else "") + (CODE_NOTE if refused else "")
    # One line: markdown shows an HTML block as it is up to the first blank line.
    return "<div>" + clean.strip().replace("\r", "").replace("\n", "&#10;") + "</div>" + note


#: :func:`_sanitized` with the answers of the last :data:`CACHED_CELLS` cells kept (as the
#: feedback exporter keeps its renderings: :mod:`autograder.nbgrader.exporters.feedback`).
_kept = functools.lru_cache(maxsize=CACHED_CELLS)(_sanitized)


#: Cell metadata of a markdown cell that this process made safe: an HMAC of its source with a key
#: of this process, which no notebook can know. nbgrader's own pass (:class:`~autograder.nbgrader.
#: preprocessors.sanitize_markdown.SanitizeMarkdown`, a second line run under the gradebook's
#: lock) leaves a marked cell as it is instead of rendering it again.
CHECKED = "a2c_markdown_checked"
_KEY = secrets.token_bytes(32)


def _digest(source: str) -> str:
    return hmac.new(_KEY, source.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def mark_checked(cell: Any) -> None:
    """Mark ``cell`` (a markdown cell just made safe, as it now is) as checked here."""
    cell.setdefault("metadata", {})[CHECKED] = _digest(str(cell.get("source", "")))


def is_checked(cell: Any) -> bool:
    """Whether ``cell`` is, as it is now, a cell this process made safe (:func:`mark_checked`)."""
    metadata = cell.get("metadata")
    mark = metadata.get(CHECKED) if isinstance(metadata, dict) else None
    return isinstance(mark, str) and hmac.compare_digest(mark, _digest(str(cell.get("source", ""))))
