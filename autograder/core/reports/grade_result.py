"""The grade of one submission: per-part scores from the grader's judges, and its status.

Scores come from :func:`autograder.core.judging.part_scoring.judge_part`, in the grader's own process, on what the
sandboxed notebook returned. A front end records them (nbgrader's gradebook for ``grade-all``,
read back and checked by :mod:`autograder.nbgrader.gradebook_check`).

``status`` is ``"graded"`` when every part could be judged, otherwise why not (the table of
docs/grading.md, "Statuses"): ``"unreadable: ..."`` (not a notebook), ``"error: ..."`` (the
sandboxed run ended early, the grader failed on this submission, or the gradebook disagrees),
``"timeout: ..."`` (the run passed the sandbox's wall clock), ``"tampered: ..."`` (records or
lines the runner and the probes do not write, a broken seal, a changed environment),
``"unsandboxed: ..."`` (graded with ``--no-sandbox``: scores, never a grade) and ``"not graded:
..."`` (interrupted, or lost on a cluster, before it was graded). A result that is not
``graded`` keeps its partial scores for the instructor to review, but reports never show them
as a bare grade (:mod:`autograder.core.reports`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autograder.core.course.points import CoursePoints
from autograder.core.course.totals import count_total

__all__ = ["NOT_RUN", "GradeResult", "PartScore"]

#: The isolation a result reports when nothing of the file ran (:attr:`GradeResult.ran`).
NOT_RUN = "not run"
#: Statuses of a file that never ran: not a notebook, or never handed to a sandbox.
_NEVER_RAN = ("unreadable", "not graded")


@dataclass(frozen=True)
class PartScore:
    """The score of one autograded part."""

    score: float
    max: float
    feedback: str

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "max": self.max, "feedback": self.feedback}


#: What a part's feedback says (:mod:`autograder.core.judging`) when some of its checks did not
#: finish, and the note the grades CSV gives it.
_UNFINISHED = (
    ("did not finish", "a check ran past its time limit (an endless loop?)"),
    ("not run:", "checks were not run after others ran past their time limit"),
    ("no result:", "the notebook stopped before its checks ran"),
)


def _unfinished_notes(parts: dict[str, PartScore]) -> list[str]:
    """One note per part whose checks did not all finish, in part order (the row's notes must
    name every such part, not just the first error of a cell)."""
    notes = []
    for key, part in parts.items():
        why = [text for marker, text in _UNFINISHED if f"-- {marker}" in part.feedback]
        if why:
            notes.append(f"part {key} did not finish: {'; '.join(why)}")
    return notes


@dataclass
class GradeResult:
    """The grade of one submission, as ``python -m autograder grade --json`` prints it."""

    student: str
    parts: dict[str, PartScore] = field(default_factory=dict)
    status: str = "graded"
    #: repairs and warnings for the instructor (restored cells, missing outputs...)
    notes: list[str] = field(default_factory=list)
    #: whether the notebook ran in the bubblewrap sandbox (False: a plain subprocess)
    sandboxed: bool = True
    #: how it was isolated: "bubblewrap", "container" (a fresh user where bubblewrap cannot
    #: start, :mod:`autograder.core.isolation.container`) or "none"
    isolation: str = "bubblewrap"
    #: manually graded cells: grade_id -> max points (scored later, by hand)
    manual: dict[str, float] = field(default_factory=dict)
    #: the points nbgrader gave a manually graded cell by itself: an answer left as the stub
    #: scores 0 and needs no grading (grade_id -> points; the other cells wait for a grader)
    hand_scores: dict[str, float] = field(default_factory=dict)
    source: str = ""  #: the submitted file
    seconds: float = 0.0
    #: where the time went: "sandbox", "judge", "agent", "record", "probe:<part>" (seconds)
    timings: dict[str, float] = field(default_factory=dict)
    #: the saved agent played by the grader (``autograder.core.agent_play.settings.agent_outcome``:
    #: verified and claimed scores, flag, digest, replay strip), or None when not played
    agent: dict[str, Any] | None = None

    @property
    def graded(self) -> bool:
        return self.status == "graded"

    @property
    def ran(self) -> bool:
        """Whether any of the file ran: not for an ``unreadable`` file (not a notebook) nor one
        ``not graded`` (interrupted, or lost on a cluster, before a result came back): such a
        result reports :data:`NOT_RUN` as its isolation, never a sandbox it did not run in."""
        return not self.status.startswith(_NEVER_RAN)

    @property
    def points(self) -> CoursePoints:
        """The course's points as this result knows them: its parts' maxima (the course's bonus
        parts among them), the hand-graded cells' and the verified agent's."""
        auto = {key: part.max for key, part in self.parts.items()}
        return CoursePoints(auto, dict(self.manual), agent=self.agent_max)

    @property
    def total(self) -> float:
        """The autograded points, the hand-graded ones known so far (:attr:`hand_scores`) and
        the verified agent's (:attr:`agent_points`), counted as every report counts a total
        (:func:`~autograder.core.course.totals.count_total`)."""
        auto = {key: part.score for key, part in self.parts.items()}
        return count_total(self.points, auto, self.hand_scores, self.agent_points).total

    @property
    def agent_points(self) -> float:
        """The points the verified agent earned (0 unless the course gives some)."""
        return float((self.agent or {}).get("points") or 0.0)

    @property
    def agent_max(self) -> float:
        """The points the course gives the verified agent (0 unless it gives some)."""
        return float((self.agent or {}).get("max_points") or 0.0)

    @property
    def waiting(self) -> list[str]:
        """The manually graded cells that wait for a grader (not scored by nbgrader itself)."""
        return [name for name in self.manual if name not in self.hand_scores]

    @property
    def autograded_max(self) -> float:
        """The points of every autograded part except the bonus ones."""
        return self.points.autograded

    @property
    def max_total(self) -> float:
        """Full marks, as ``grades.csv`` counts them (:attr:`CoursePoints.full_marks`): the
        autograded parts without the bonus, the points graded by hand (part 8, known once
        nbgrader recorded the notebook) and the agent's."""
        return self.points.full_marks

    def unfinished_notes(self) -> list[str]:
        """One note per part whose checks did not all finish (an endless loop, a crash)."""
        return _unfinished_notes(self.parts)

    def as_dict(self) -> dict[str, Any]:
        """``{"total", "max_total", "status", "notes", "sandboxed", "isolation", "parts",
        "agent"}`` (the agent without its replay strip and fingerprint; ``isolation``
        :data:`NOT_RUN` for a file that never ran, whose ``sandboxed`` is false)."""
        return {
            "total": self.total,
            "max_total": self.max_total,
            "status": self.status,
            "notes": "; ".join([*self.notes, *self.unfinished_notes()]),
            "sandboxed": self.sandboxed,
            "isolation": self.isolation if self.ran else NOT_RUN,
            "parts": {key: part.as_dict() for key, part in self.parts.items()},
            "agent": None if self.agent is None else {
                key: value for key, value in self.agent.items()
                if key not in ("replay_png", "fingerprint")
            },
        }  # fmt: skip

    def to_plain(self) -> dict[str, Any]:
        """Every field as plain data (JSON), for :meth:`from_plain` on another machine."""
        return {
            "student": self.student,
            "parts": {key: part.as_dict() for key, part in self.parts.items()},
            "status": self.status,
            "notes": list(self.notes),
            "sandboxed": self.sandboxed,
            "isolation": self.isolation,
            "manual": dict(self.manual),
            "hand_scores": dict(self.hand_scores),
            "source": self.source,
            "seconds": self.seconds,
            "timings": dict(self.timings),
            "agent": self.agent,
        }

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> GradeResult:
        """The result :meth:`to_plain` described."""
        parts = {
            str(key): PartScore(float(part["score"]), float(part["max"]), str(part["feedback"]))
            for key, part in dict(data.get("parts", {})).items()
        }
        return cls(
            student=str(data["student"]),
            parts=parts,
            status=str(data.get("status", "graded")),
            notes=[str(note) for note in data.get("notes", [])],
            sandboxed=bool(data.get("sandboxed", True)),
            isolation=str(data.get("isolation", "bubblewrap")),
            manual={str(k): float(v) for k, v in dict(data.get("manual", {})).items()},
            hand_scores={str(k): float(v) for k, v in dict(data.get("hand_scores", {})).items()},
            source=str(data.get("source", "")),
            seconds=float(data.get("seconds", 0.0)),
            timings={str(k): float(v) for k, v in dict(data.get("timings", {})).items()},
            agent=dict(data["agent"]) if data.get("agent") else None,
        )
