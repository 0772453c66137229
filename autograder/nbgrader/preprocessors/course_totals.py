"""The course's one set of totals for the feedback page (template ``a2c_feedback``).

Full marks = autograded points without the bonus + part 8 + the verified agent's points where
the course gives some (read from the grader's record in the autograded notebook, never from
the gradebook, which has no cell for them), the bonus counted above full marks, and part 8
shown as *not graded yet* (never 0) until formgrader has a score for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

__all__ = ["CourseTotals"]

_AUTO_KINDS = ("autograded", "bonus")


class CourseTotals(Preprocessor):
    """After nbgrader's ``GetGrades``: the course's totals in ``resources["a2c"]`` (feedback).

    ``{"score", "raw_score", "late_penalty", "full_marks", "final", "pending", "parts":
    [{"name", "score", "points", "kind"}], "explain"}``: ``raw_score`` counts every graded
    point (the bonus included), ``score`` is it less the gradebook's late penalty
    (:mod:`autograder.nbgrader.late_penalty`; never below 0), ``final``
    is true once no hand-graded cell waits for formgrader, and a waiting cell's ``score`` is
    ``None`` (the template says *not graded yet*).
    """

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        from autograder.core.course.totals import count_total
        from autograder.nbgrader.class_reports.hand_scores import manual_scores
        from autograder.nbgrader.preprocessors.trusted_scores import AGENT_POINTS_KEY

        points = _release_points(nb, resources)
        meta = resources.get("nbgrader", {})
        student = meta.get("student", "")
        hand = manual_scores(meta["db_url"], [student]).get(student, {}) if meta else {}
        parts = []
        for cell in nb.cells:
            info = cell.get("metadata", {}).get("nbgrader", {})
            grade_id = str(info.get("grade_id") or "")
            key = grade_id[len("test_") :] if grade_id.startswith("test_") else ""
            if key in points.auto:
                kind = "bonus" if key in points.bonus else "autograded"
                info["points"] = points.auto[key]  # the bonus's own points, not the gradebook's 0
                score = float(info.get("score") or 0.0)
                parts.append(
                    {"name": key, "score": score, "points": points.auto[key], "kind": kind}
                )
            elif grade_id in points.manual:
                parts.append(
                    {
                        "name": grade_id,
                        "score": hand.get(grade_id),
                        "points": points.manual[grade_id],
                        "kind": "part 8, graded by hand",
                    }
                )
        if points.agent:  # the grader's record of the verified agent (TrustedScores), else 0
            earned = nb.get("metadata", {}).get(AGENT_POINTS_KEY)
            score = float(earned) if isinstance(earned, (int, float)) else 0.0
            parts.append(
                {"name": "agent", "score": min(score, points.agent), "points": points.agent,
                 "kind": "verified agent score"}  # fmt: skip
            )
        late = float(meta.get("late_penalty") or 0.0) if meta else 0.0
        auto = {part["name"]: part["score"] for part in parts if part["kind"] in _AUTO_KINDS}
        agent = next((part["score"] for part in parts if part["name"] == "agent"), None)
        total = count_total(points, auto, hand, agent, late)
        resources["a2c"] = {
            "score": total.total,
            "raw_score": total.raw,
            "late_penalty": total.late_penalty,
            "full_marks": total.full_marks,
            "final": not total.pending,
            "pending": list(total.pending),
            "parts": parts,
            "explain": points.explain(),
        }
        return nb, resources


def _release_points(nb: NotebookNode, resources: dict[str, Any]) -> Any:
    """The course's points, from the release notebook of the course being converted (in the
    gradebook, and so in the autograded notebook, the bonus part is worth 0: extra credit)."""
    from autograder.core.course.points import course_points

    folder = Path(str(resources.get("metadata", {}).get("path") or "."))
    if len(folder.resolve().parents) > 2:  # <course>/autograded/<student>/<assignment>
        name = str(resources.get("metadata", {}).get("name") or "")
        release = folder.resolve().parents[2] / "release" / folder.resolve().name / f"{name}.ipynb"
        if release.is_file():
            import nbformat

            return course_points(nbformat.read(release, as_version=4))
    return course_points(nb)
