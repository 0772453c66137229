"""When each submission was handed in, the assignment's deadline, and how late it was.

**The submission time** of a notebook is, first found wins, and only from what the platform or
the exchange wrote, never from a file the student made:

1. the ``timestamp.txt`` nbgrader's exchange writes into the folder it makes for each
   submission (``submitted/<student>/a2c/timestamp.txt``, as the layout of
   :mod:`autograder.core.intake.collect` finds it: :attr:`~autograder.core.intake.collect.Submission.exchange`):
   the time the student pressed *Submit*. A ``timestamp.txt`` anywhere else (beside a notebook
   in a per-student upload, in a sub-folder of the student's own assignment folder, which
   nbgrader copies whole) is the student's, and never read;
2. the time an LMS archive records for the notebook's member (a zip stores local time without
   a time zone: it is read in the deadline's time zone, else as UTC);
3. the file's modification time on this machine (a download or a copy can change it).

A file of a Canvas download is the exception: Canvas writes every member of its zip with the
time the zip was made, so neither rule 2 nor rule 3 says when it was handed in. Its time is
unknown, and whether it was late is what Canvas says in its name (``_LATE_``, against the
student's own due date in Canvas, extensions included): ``submitted_from`` is ``Canvas: late``
or ``Canvas: on time``, ``minutes_late`` is ``0`` when on time and empty when late (the
minutes are unknown, so no late penalty of this kit applies: Canvas's own late policy can).

The grades CSV's ``submitted_from`` column says which source each time came from.

**The deadline** is per assignment and lives in the course: ``grade-all --deadline
2026-03-01T23:59+01:00 --course DIR`` stores it as the gradebook's due date of ``a2c``
(formgrader and ``nbgrader export`` show it); later runs into that course use it. Without a
course, ``--deadline`` applies to that run only.

**Minutes late** are whole minutes after the deadline, rounded up (one second late is 1), 0 when
on time. The grades CSV, the summary and formgrader (the submission's timestamp in the
gradebook, beside the due date) show them. Points are taken off only under a late penalty
the instructor configures (:mod:`autograder.nbgrader.late_penalty`).
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.nbgrader.gradebook_session import gradebook_session

__all__ = [
    "CANVAS_LATE",
    "CANVAS_ON_TIME",
    "EXCHANGE",
    "FILE_TIME",
    "ZIP_MEMBER",
    "SubmissionTime",
    "course_deadline",
    "minutes_late",
    "parse_deadline",
    "record_times",
    "submission_time",
]

#: The most bytes read from a ``timestamp.txt`` (nbgrader writes about 30).
_TIMESTAMP_BYTES = 200
#: Where a submission's time came from (the grades CSV's ``submitted_from``).
EXCHANGE, ZIP_MEMBER, FILE_TIME = "nbgrader exchange", "zip member time", "file time"
#: A Canvas download's file: no time, Canvas's word on lateness (module docstring).
CANVAS_LATE, CANVAS_ON_TIME = "Canvas: late", "Canvas: on time"


@dataclass(frozen=True)
class SubmissionTime:
    """A submission's time (aware, UTC; ``None`` when unknown: a Canvas download) and where it
    was read from."""

    when: datetime | None
    source: str  #: :data:`EXCHANGE`, :data:`ZIP_MEMBER`, :data:`FILE_TIME` or Canvas's

    def iso(self) -> str:
        if self.when is None:
            return ""
        return self.when.astimezone(timezone.utc).replace(microsecond=0).isoformat()

    def minutes_late(self, deadline: datetime | None) -> str:
        """The grades CSV's ``minutes_late``: whole minutes after ``deadline`` (``""`` without
        one); for a Canvas file ``0`` when Canvas says on time, ``""`` when late (unknown)."""
        if self.when is None:
            return "0" if self.source == CANVAS_ON_TIME else ""
        return str(minutes_late(self.when, deadline)) if deadline is not None else ""


def parse_deadline(text: str) -> datetime:
    """The deadline ``text`` (ISO 8601 with its time zone) as an aware datetime.

    Raises:
        ValueError: not an ISO date and time, or no time zone (``23:59`` where?).
    """
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--deadline {text!r} is not a date and time: give ISO 8601 with the time zone, "
            "e.g. 2026-03-01T23:59+01:00 (or ...Z for UTC)."
        ) from None
    if when.tzinfo is None:
        raise ValueError(
            f"--deadline {text!r} has no time zone: add it, e.g. {text.strip()}+01:00 "
            "(or Z for UTC)."
        )
    return when


def _nbgrader_timestamp(folder: Path) -> datetime | None:
    path = folder / "timestamp.txt"
    if not path.is_file() or path.is_symlink():
        return None
    with path.open("rb") as handle:
        text = handle.read(_TIMESTAMP_BYTES).decode("utf-8", "replace").strip()
    from nbgrader.utils import parse_utc

    try:
        when = parse_utc(text)
    except (ValueError, OverflowError):
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when


def _zip_member_time(origin: str, zone: timezone | None) -> datetime | None:
    archive, sep, member = origin.rpartition(".zip:")
    if not sep:
        return None
    try:
        with zipfile.ZipFile(archive + ".zip") as handle:
            stamp = handle.getinfo(member).date_time
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    try:
        return datetime(*stamp, tzinfo=zone or timezone.utc)
    except ValueError:  # a zero or impossible date in the archive
        return None


def submission_time(
    path: Path,
    origin: str = "",
    deadline: datetime | None = None,
    mtime: float | None = None,
    exchange: Path | None = None,
    lms_late: bool | None = None,
) -> SubmissionTime:
    """The time the notebook at ``path`` was handed in (rules in the module docstring).

    ``origin`` is how :mod:`autograder.core.intake.collect` names a file found in an archive
    (``<archive>.zip:<member>``); ``deadline`` gives a zip's local times their time zone;
    ``mtime`` is the file's modification time as collected (read from ``path`` otherwise);
    ``exchange`` the folder nbgrader's exchange made for the submission, the only one whose
    ``timestamp.txt`` is read; ``lms_late`` Canvas's LATE mark of a Canvas download's file
    (:attr:`~autograder.core.intake.collect.Submission.lms_late`), whose time is unknown.
    """
    if lms_late is not None:
        return SubmissionTime(None, CANVAS_LATE if lms_late else CANVAS_ON_TIME)
    path = Path(path)
    found = _nbgrader_timestamp(Path(exchange)) if exchange is not None else None
    if found is not None:
        return SubmissionTime(found, EXCHANGE)
    zone = deadline.tzinfo if deadline is not None else None
    found = _zip_member_time(origin, zone) if origin else None  # type: ignore[arg-type]
    if found is not None:
        return SubmissionTime(found, ZIP_MEMBER)
    when = path.stat().st_mtime if mtime is None else mtime
    return SubmissionTime(datetime.fromtimestamp(when, tz=timezone.utc), FILE_TIME)


def minutes_late(when: datetime, deadline: datetime | None) -> int:
    """Whole minutes ``when`` is after ``deadline``, rounded up; 0 when on time or none."""
    if deadline is None:
        return 0
    seconds = (when - deadline).total_seconds()
    return max(0, math.ceil(seconds / 60.0))


def course_deadline(db_url: str, assignment: str, given: datetime | None) -> datetime | None:
    """The deadline of ``assignment``: ``given`` (then stored in the gradebook as its due
    date), else the due date the gradebook holds, else ``None``."""
    from nbgrader.api import Gradebook

    with gradebook_session(), Gradebook(db_url) as gradebook:
        if given is not None:
            naive = given.astimezone(timezone.utc).replace(tzinfo=None)  # nbgrader stores UTC
            gradebook.update_or_create_assignment(assignment, duedate=naive)
            return given
        try:
            due = gradebook.find_assignment(assignment).duedate
        except Exception:  # noqa: BLE001 - nbgrader's MissingEntry: no assignment yet
            return None
    return due.replace(tzinfo=timezone.utc) if due is not None else None


def record_times(
    course_root: Path, db_url: str, assignment: str, times: dict[str, SubmissionTime]
) -> None:
    """Store each student's submission time in the course: the gradebook's timestamp
    (formgrader shows it) and ``submitted/<student>/<assignment>/timestamp.txt``, which
    formgrader compares with it to tell an autograded submission (they must be equal)."""
    from nbgrader.api import Gradebook, MissingEntry

    with gradebook_session(), Gradebook(db_url) as gradebook:
        for student, stamp in times.items():
            if stamp.when is None:  # unknown (a Canvas download): nbgrader's own time stays
                continue
            try:
                submission = gradebook.find_submission(assignment, student)
            except MissingEntry:
                continue
            naive = stamp.when.astimezone(timezone.utc).replace(tzinfo=None)
            submission.timestamp = naive
            folder = Path(course_root) / "submitted" / student / assignment
            if folder.is_dir():
                text = naive.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"
                (folder / "timestamp.txt").write_text(text + "\n", encoding="utf-8")
        gradebook.db.commit()
