"""Text from a submission made safe to print or to open, and points written as students read them.

* :func:`printable` strips control characters and terminal escapes from text that came from a
  submission (student ids, file names, notes, feedback), so that a notebook cannot draw a
  fake ``status: graded`` line, clear the screen or retitle the terminal;
* :func:`csv_cell` neutralises a CSV cell that a spreadsheet would run as a formula, whatever
  it holds (:func:`csv_text` reads such a cell back);
* :func:`points_text` writes points as students read them (at most two decimals; the grades
  CSV keeps more).
"""

from __future__ import annotations

import re

__all__ = ["csv_cell", "csv_text", "points_text", "printable"]

#: CSI / OSC / other ESC sequences, then any C0 or C1 control character but tab and newline.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` without terminal escapes and control characters (tab and newline kept).

    Carriage returns go too (``\\r`` would let a line overwrite what was printed before it), as
    do Unicode line separators and bidirectional overrides.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", str(text)))


def points_text(points: float) -> str:
    """Points as students read them: at most two decimals (``0.92``, ``1``, ``11.18``)."""
    return f"{round(float(points), 2):g}"


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
#: What a spreadsheet never shows but that would hide how a cell begins: C0 and C1 controls but
#: tab and newline (a carriage return included), DEL, zero-width and bidirectional marks, line
#: and paragraph separators, the byte-order mark.
_INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)
#: The first characters that make a cell a formula (their full-width forms too, which some
#: spreadsheets read alike).
_FORMULA_START = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet runs as a formula.

    First every character a spreadsheet does not show is removed (control characters but tab
    and newline, zero-width and bidirectional marks: :data:`_INVISIBLE`), so that none can hide
    the cell's first character from the test that follows (``"\\x01=HYPERLINK(...)"``). Then a
    cell that is not a plain number and begins with ``=``, ``+``, ``-``, ``@`` or a tab, or with
    one of them after spaces and line breaks, gets a leading ``'``, which spreadsheets show as
    text. Applying it twice changes nothing more; :func:`csv_text` undoes it.
    """
    text = _INVISIBLE.sub("", str(value))
    if _NUMBER.fullmatch(text):
        return text
    if text[:1] == "\t" or text.lstrip(" \t\n")[:1] in _FORMULA_START:
        return "'" + text
    return text


def csv_text(cell: str) -> str:
    """The text :func:`csv_cell` made ``cell`` from: its quote mark taken off, where it added
    one (a CSV the kit wrote is read back before it is written again)."""
    if cell.startswith("'") and csv_cell(cell[1:]) == cell:
        return cell[1:]
    return cell
