"""The feedback page the grader makes alone, where nbgrader's could not be made in time.

It shows only the grader's own numbers and the parts' feedback, every string escaped, and says
why the full page (the student's notebook rendered) is missing.
"""

from __future__ import annotations

import html

__all__ = ["plain_feedback_page"]


def plain_feedback_page(student: str, total: float, max_total: float,
                        parts: dict[str, tuple[float, float, str]], reason: str) -> str:  # fmt: skip
    """A feedback page made by the grader alone, without the notebook's text: the scores of
    ``parts`` (``{name: (score, points, feedback)}``) and why the full page is missing. Every
    string is escaped."""
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{score:.2f} / {points:g}</td>"
        f"<td><pre>{html.escape(text)}</pre></td></tr>"
        for name, (score, points, text) in parts.items()
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>Feedback: {html.escape(student)}</title></head><body>"
        f"<h1>Feedback for {html.escape(student)}</h1>"
        f"<p>Autograded total: {total:.2f} / {max_total:g}</p>"
        f"<p>{html.escape(reason)}</p>"
        f"<table><tr><th>part</th><th>points</th><th>feedback</th></tr>{rows}</table>"
        "</body></html>\n"
    )
