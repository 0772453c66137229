"""Grade the one notebook a grading platform hands over (Gradescope, PrairieLearn).

A platform runs the grader once per submission, as root, in a container of its own, with the
submission in a folder and the course's files next to it. This module is what both front ends
(:mod:`.gradescope`, :mod:`.prairielearn`) share at grading time:

* :func:`close_folders` takes other users' permissions from the platform's copy of the course
  and its results folder before any student code runs (container mode then refuses nothing
  and shows nothing of them: :mod:`autograder.core.isolation.container`);
* :func:`find_notebook` picks the submitted ``.ipynb`` (a bounded walk);
* :func:`grade_notebook` grades it with the grading core's
  :class:`~autograder.core.assessor.Assessor`, as ``grade`` and ``grade-all`` do (secret cases,
  plain-data records, judged in this process), against the release and the course the bundle
  carries (:func:`~.bundle_contents.bundled_course`: the release made by nbgrader's
  ``generate_assignment`` when the bundle was built, the course read then with the
  instructor's limits): no gradebook and no nbgrader run at grading time;
* :func:`part_rows` lists the result per part, the bonus and the part graded by hand marked;
  :func:`summary` the first lines of the platform's output;
* :func:`write_json` writes the platform's results file atomically, as root, after grading:
  whatever the notebook did, the file holds this grader's result.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.platforms.bundle_contents import KIT_ROOT, bundled_course

__all__ = [
    "PartRow",
    "close_folders",
    "find_notebook",
    "grade_notebook",
    "part_rows",
    "summary",
    "write_json",
]

MAX_ENTRIES = 10_000  #: entries of a submission folder looked at for its notebook


@dataclass(frozen=True)
class PartRow:
    """One line of a platform's results: an autograded part, the bonus or part 8."""

    key: str
    name: str
    score: float
    max_score: float
    output: str
    bonus: bool = False
    manual: bool = False  #: graded by hand on the platform: no score here


def close_folders(folders: Iterable[Path]) -> list[Path]:
    """Make ``folders`` (created when missing) root's alone, with the reference and the judges
    wherever Python imports them from; returns what was closed."""
    from autograder.core.isolation.container import close_grader_files

    paths = []
    for folder in folders:
        Path(folder).mkdir(parents=True, exist_ok=True)
        paths.append(Path(folder).resolve())
    return close_grader_files(paths)


def find_notebook(folder: Path, preferred: str = "a2c.ipynb") -> tuple[Path | None, str]:
    """The submitted notebook under ``folder`` and ``""``, or ``None`` and why not.

    ``preferred`` wins wherever it is; otherwise there must be exactly one ``.ipynb``. Links
    are not followed and at most :data:`MAX_ENTRIES` entries are looked at.
    """
    found: list[Path] = []
    seen = 0
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            return None, f"more than {MAX_ENTRIES} files submitted: submit the notebook alone"
        for name in sorted(files):
            path = Path(current) / name
            if (
                name.endswith(".ipynb")
                and not path.is_symlink()
                and ".ipynb_checkpoints" not in path.parts
            ):
                found.append(path)
    preferred_ones = [path for path in found if path.name == preferred]
    if preferred_ones:
        return preferred_ones[0], ""
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, f"no notebook (.ipynb) in the submission: submit {preferred}"
    names = ", ".join(str(path.relative_to(folder)) for path in found[:5])
    return None, f"several notebooks ({names}) and none named {preferred}: submit {preferred} alone"


def grade_notebook(path: Path, student: str) -> Any:
    """Grade ``path`` as ``grade`` does (the sandbox, else container mode); a
    :class:`~autograder.core.reports.grade_result.GradeResult`. Raises
    :class:`~autograder.core.isolation.SandboxUnavailable` when student code cannot be isolated."""
    import shutil

    from autograder.core.assessor import Assessor
    from autograder.core.intake.submission_file import (
        UnreadableNotebook,
        agent_file_beside,
        read_bytes,
    )
    from autograder.core.reports.grade_result import GradeResult

    release, course = bundled_course(KIT_ROOT)  # the course as the instructor read it
    workdir = Path(tempfile.mkdtemp(prefix="a2c-grading-"))
    try:
        assessor = Assessor(release, workdir / "sandbox", course, isolate=True)
        try:
            submitted = read_bytes(path)
        except UnreadableNotebook as error:
            return GradeResult(
                student, status=f"unreadable: {error}", source=str(path), sandboxed=False
            )
        agent_file = agent_file_beside(Path(path))
        result = assessor.assess(submitted, student, Path(path).name, agent_file=agent_file).result
        result.source = str(path)
        # The parts graded by hand are the platform's to score: their points, the course's.
        result.manual = dict(course.points.manual)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def part_rows(result: Any) -> list[PartRow]:
    """The result per autograded part, in the notebook's order, then each part graded by hand
    (its points are the platform's to give). A result that is not ``graded`` scores 0 in every
    row; its feedback stays, for the student and the instructor to read."""
    from autograder.core.judging.parts import PART_NAMES

    graded = result.status == "graded"
    rows = []
    for key, part in result.parts.items():
        bonus = key in result.points.bonus
        name = f"{key} ({PART_NAMES.get(key, key)})" + (" - bonus" if bonus else "")
        rows.append(
            PartRow(key, name, part.score if graded else 0.0, part.max, part.feedback, bonus)
        )
    for key, points in result.manual.items():
        rows.append(
            PartRow(
                key,
                f"{key} - graded by hand",
                0.0,
                float(points),
                f"{points:g} points, graded by hand by the course staff (not by the autograder)",
                manual=True,
            )
        )
    return rows


def summary(result: Any) -> str:
    """The first lines of a platform's output: status, isolation, total, part 8, the verified
    agent score and notes."""
    from autograder.core.reports.safe_text import points_text

    bonus = sum(row.max_score for row in part_rows(result) if row.bonus)
    lines = [
        f"status: {result.status}",
        f"isolation: {result.isolation}",
        f"autograded: {points_text(result.total)} points (full marks "
        f"{points_text(result.points.graded_here)}"
        + (f", the verified agent's {points_text(result.agent_max)} included" if result.agent_max else "")
        + (f"; the bonus adds up to {points_text(bonus)})" if bonus else ")"),
    ]
    lines += [
        f"part 8 ({name}, {points_text(points)} points): graded by hand by the course staff, "
        "not by the autograder; not in this score"
        for name, points in result.manual.items()
    ]
    from autograder.core.agent_play.feedback import agent_line

    if agent_line(result.agent):
        lines.append(agent_line(result.agent))
    notes = [*result.notes, *result.unfinished_notes()]
    if notes:
        lines.append("notes:")
        lines += [f"- {note}" for note in notes[:30]]
    return "\n".join(lines)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` through a new file renamed over it (never through a link a
    notebook could have left)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2)
        out.write("\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
