"""Text from a submission made safe to print or to open, and points written as students read them.

* :func:`printable` strips control characters and terminal escapes from text that came from a
  submission (student ids, file names, notes, feedback), so that a notebook cannot draw a
  fake ``status: graded`` line, clear the screen or retitle the terminal;
* :func:`csv_cell` neutralises a CSV cell that a spreadsheet would run as a formula;
* :func:`points_text` writes points as students read them (at most two decimals; the grades
  CSV keeps more).
"""

from __future__ import annotations

import re

__all__ = ["csv_cell", "points_text", "printable"]

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


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell no spreadsheet runs as a formula.

    A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (and is not a
    plain number) gets a leading ``'``, which spreadsheets show as text; control characters are
    removed. Applying it twice changes nothing more.
    """
    text = str(value)
    if _NUMBER.fullmatch(text):
        return text
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", text)
