"""One student's row of ``grades.csv``, typed: its numbers stay numbers until the CSV is written.

A :class:`GradeRow` is made from a grading (:func:`~.grades_csv.result_row`) or read from an
existing ``grades.csv`` once (:meth:`GradeRow.from_cells`), changed as the class's reports
change it (part 8 read from the gradebook, a late penalty, a regrade's kept data), counted with
the course's one rule (:meth:`GradeRow.count`, :func:`autograder.core.course.totals.count_total`)
and turned into the CSV's text cells only when a file is written (:meth:`GradeRow.cells`): no
total is ever read back from text to be counted again.

The columns (:data:`HEAD`, then the parts, part 8, the verified agent's columns
(:data:`AGENT_COLUMNS`) where the grader played agents, :data:`TAIL`), and what a cell holds:
points as :func:`points_cell` writes them, part 8 ``not graded yet`` until it is graded (never
0), empty score and total cells for a row that is not ``graded`` (its provisional total is in
``notes``). A column the grader does not write (added by hand), or a cell of the grader's own
that holds text it cannot read as its kind, is kept as it was (:attr:`GradeRow.extra`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields

from autograder.core.course.points import NOT_GRADED_YET, CoursePoints
from autograder.core.course.totals import count_total
from autograder.core.reports.safe_text import points_text
from solutions.parts import PARTS

__all__ = [
    "AGENT_COLUMNS",
    "HEAD",
    "TAIL",
    "AgentColumns",
    "GradeRow",
    "number_in",
    "points_cell",
]

HEAD = ["student", "status", "total", "max_total"]
TAIL = ["submitted_at", "submitted_from", "minutes_late", "raw_total", "late_penalty"]
TAIL += ["sandboxed", "notes"]
TAIL += ["file", "received", "graded_at"]
#: The columns of the verified agent score (:mod:`.agent_board`), in the CSV's order.
AGENT_COLUMNS = [
    "agent_score", "agent_std", "agent_games", "agent_steps", "agent_capped", "claimed_score",
    "agent_flag", "agent_points", "agent_digest",
]  # fmt: skip
#: The text columns of a row, kept as they are.
_TEXT = ("student", "status", "submitted_at", "submitted_from", "sandboxed", "notes", "file")
_TEXT += ("received", "graded_at")


def number_in(text: str | None) -> float | None:
    """The number a CSV cell holds, or ``None`` (empty, ``not graded yet``)."""
    try:
        return float(text or "")
    except (TypeError, ValueError):
        return None


def points_cell(value: float | None) -> str:
    """Points as the CSV writes them (up to six decimals, no trailing zeros); ``""`` for none."""
    return "" if value is None else f"{round(value, 6):g}"


def _whole(text: str) -> int | None:
    value = number_in(text)
    return int(value) if value is not None and value == int(value) else None


def _one_decimal(value: float | None) -> str:
    return "" if value is None else f"{float(value):.1f}"


@dataclass
class AgentColumns:
    """The verified agent's columns of a row (:mod:`.agent_board` fills them from a grading)."""

    score: float | None = None  #: the grader's mean raw score over its own games
    std: float | None = None  #: their spread
    games: int | None = None
    steps: int | None = None
    capped: int | None = None  #: games stopped at the protocol's step cap
    claimed: float | None = None  #: the score the notebook claims
    flag: str = ""  #: "claim above verified", "no verified score", or ""
    points: float | None = None  #: the agent's points, where the course gives some
    digest: str = ""  #: the weights' SHA-256

    def cells(self) -> dict[str, str]:
        whole = {"agent_games": self.games, "agent_steps": self.steps}
        whole["agent_capped"] = self.capped
        return {
            "agent_score": _one_decimal(self.score),
            "agent_std": _one_decimal(self.std),
            **{name: "" if value is None else str(value) for name, value in whole.items()},
            "claimed_score": _one_decimal(self.claimed),
            "agent_flag": self.flag,
            "agent_points": "" if self.points is None else points_text(self.points),
            "agent_digest": self.digest,
        }

    @classmethod
    def from_cells(cls, cells: Mapping[str, str]) -> AgentColumns | None:
        """The columns a CSV row holds (None when every one is empty: no agent played)."""
        if not any(cells.get(name) for name in AGENT_COLUMNS):
            return None
        return cls(
            number_in(cells.get("agent_score")),
            number_in(cells.get("agent_std")),
            _whole(cells.get("agent_games", "")),
            _whole(cells.get("agent_steps", "")),
            _whole(cells.get("agent_capped", "")),
            number_in(cells.get("claimed_score")),
            cells.get("agent_flag", ""),
            number_in(cells.get("agent_points")),
            cells.get("agent_digest", ""),
        )


@dataclass
class GradeRow(Mapping[str, str]):
    """One student's row (see the module docstring). Read as a mapping, it is the text the CSV
    will hold (``row["total"]``): a view for people and tests, never read back to count."""

    student: str = ""
    status: str = ""
    max_total: float | None = None  #: full marks (none for a file nobody was named for)
    #: autograded part -> points (a ``graded`` row's), or None: its column is empty (a row
    #: that is not graded); an older notebook's parts too
    scores: dict[str, float | None] = field(default_factory=dict)
    #: hand-graded cell (part 8) -> points, or None while it is not graded yet; a cell of
    #: :attr:`hand_columns` not in it is empty (a row with nothing graded)
    hand: dict[str, float | None] = field(default_factory=dict)
    hand_columns: list[str] = field(default_factory=list)  #: the course's hand-graded cells
    agent: AgentColumns | None = None  #: the verified agent's columns, where it was played
    submitted_at: str = ""
    submitted_from: str = ""
    minutes_late: int | None = None
    raw_total: float | None = None  #: counted by :meth:`count`
    late_penalty: float | None = None  #: the points the late rule takes off (before counting)
    total: float | None = None  #: counted by :meth:`count`
    sandboxed: str = ""
    notes: str = ""
    file: str = ""
    received: str = ""
    graded_at: str = ""
    #: cells kept as they were: columns added by hand, and the grader's own cells that hold
    #: text it cannot read as their kind
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Rows are merged by student; a file nobody could be named for, by its file."""
        return self.student or f"file:{self.file}"

    @property
    def graded(self) -> bool:
        return self.status == "graded"

    @property
    def agent_points(self) -> float | None:
        return self.agent.points if self.agent is not None else None

    def copy(self) -> GradeRow:
        """A copy to change, this row kept as it is."""
        return copy.deepcopy(self)

    def merged_over(self, before: GradeRow) -> GradeRow:
        """This row (a new grading of the same student) with what it does not say taken from
        ``before``: the columns added by hand, an older notebook's parts, the agent's columns
        (a grading that did not play it) and the submission's time (a grading that has none)."""
        row = self.copy()
        row.extra.update({k: v for k, v in before.extra.items() if k not in row.extra})
        row.scores.update({k: v for k, v in before.scores.items() if k not in row.scores})
        if row.agent is None:
            row.agent = copy.deepcopy(before.agent)
        if not (row.submitted_at or row.submitted_from) and row.minutes_late is None:
            row.submitted_at, row.submitted_from = before.submitted_at, before.submitted_from
            row.minutes_late = before.minutes_late
        return row

    def pending(self) -> list[str]:
        """The hand-graded cells that are not graded yet."""
        return [name for name, value in self.hand.items() if value is None]

    def number(self, column: str) -> float | None:
        """The points of a part, a hand-graded cell, ``total`` or ``agent_points`` (None: none)."""
        if column == "total":
            return self.total
        if column == "agent_points":
            return self.agent_points
        if column in self.hand:
            return self.hand[column]
        return self.scores.get(column)

    def count(self, points: CoursePoints) -> None:
        """``raw_total``, ``late_penalty`` and ``total`` by the course's rule
        (:func:`~autograder.core.course.totals.count_total`: the autograded parts, the bonus
        included, part 8 so far and, where the course gives the agent points, the agent's, less
        the late penalty, never below 0); a row that is not ``graded`` has none. The note that
        part 8 is not graded yet leads the notes while it is not."""
        if not self.graded:
            self.total = self.raw_total = self.late_penalty = None
            return
        total = count_total(points, self.scores, self.hand, self.agent_points, self.late_penalty)
        self.raw_total, self.late_penalty, self.total = total.raw, total.late_penalty, total.total
        notes = [n for n in self.notes.split("; ") if n and NOT_GRADED_YET not in n]
        if total.pending:
            notes.insert(0, f"part 8 ({', '.join(total.pending)}) not graded yet: total without it")
        self.notes = "; ".join(notes)

    def cells(self) -> dict[str, str]:
        """The row as the CSV writes it: ``{column: text}`` (a cell of :attr:`extra` where the
        row has nothing of its own there)."""
        cells = {name: getattr(self, name) for name in _TEXT}
        cells["max_total"] = points_cell(self.max_total)
        for column, value in (("total", self.total), ("raw_total", self.raw_total)):
            cells[column] = points_cell(value)
        cells["late_penalty"] = points_cell(self.late_penalty)
        cells["minutes_late"] = "" if self.minutes_late is None else str(self.minutes_late)
        cells.update({key: points_cell(value) for key, value in self.scores.items()})
        cells.update(dict.fromkeys(self.hand_columns, ""))
        for name, value in self.hand.items():
            cells[name] = NOT_GRADED_YET if value is None else points_cell(value)
        if self.agent is not None:
            cells.update(self.agent.cells())
        for column, text in self.extra.items():
            if not cells.get(column):
                cells[column] = text
        return cells

    @classmethod
    def from_cells(cls, cells: Mapping[str, str], points: CoursePoints) -> GradeRow:
        """The row a CSV line holds (read once, then typed), for the course ``points``."""
        cells = {key: value or "" for key, value in cells.items() if key}
        row = cls(**{name: cells.get(name, "") for name in _TEXT})
        known = {f.name for f in fields(cls)} | {*AGENT_COLUMNS, *PARTS, *points.auto}
        known |= set(points.manual)
        row.extra = {key: value for key, value in cells.items() if key not in known}
        row.max_total = row._number(cells, "max_total")
        row.total, row.raw_total = row._number(cells, "total"), row._number(cells, "raw_total")
        row.late_penalty = row._number(cells, "late_penalty")
        late = cells.get("minutes_late", "")
        row.minutes_late = _whole(late)
        if late and row.minutes_late is None:
            row.extra["minutes_late"] = late
        for key in [*points.auto, *(key for key in PARTS if key not in points.auto)]:
            if key in cells:
                row.scores[key] = row._number(cells, key)
        row.hand_columns = [name for name in points.manual if name in cells]
        for name in points.manual:
            text = cells.get(name, "")
            if text == NOT_GRADED_YET:
                row.hand[name] = None
            elif (value := row._number(cells, name)) is not None:
                row.hand[name] = value
        row.agent = AgentColumns.from_cells(cells)
        return row

    def __getitem__(self, column: str) -> str:
        return self.cells()[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self.cells())

    def __len__(self) -> int:
        return len(self.cells())

    def _number(self, cells: Mapping[str, str], column: str) -> float | None:
        """The number in ``cells[column]``; text that is none is kept in :attr:`extra`."""
        text = cells.get(column, "")
        value = number_in(text)
        if text and value is None:
            self.extra[column] = text
        return value
