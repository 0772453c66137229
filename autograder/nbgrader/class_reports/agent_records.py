"""What the class's output folder keeps of each student's agent, between runs (``<out>/agents/``).

* ``key``: the class's secret for the weights' fingerprints (32 random bytes, made on first
  use, readable by the instructor only): the entries of the weights that are compared to find
  copies (:mod:`autograder.core.agent_play.fingerprint`) are drawn from it, so a student who read
  the grader does not know them;
* ``<student>.json``: the agent outcome recorded for the student at the grading that counts
  (:func:`autograder.core.agent_play.settings.agent_outcome`: the verified score, the digest,
  the seeds, the replay strip, the fingerprint).

:meth:`AgentRecords.memory` is what a grading of that student is given
(:meth:`autograder.core.assessor.Assessor.assess`'s ``memory``): the key, and the outcome
recorded before, whose verified score a grading of the same weights on the same protocol keeps
(``regrade`` after a fix; a resubmission with the same agent draws no new games).
:meth:`AgentRecords.copies` finds the same agent handed in by several students, from the
fingerprints (compare the weights, not their hash).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autograder.core.agent_play.fingerprint import (
    fingerprint_values,
    named_same,
    value_distances,
)
from autograder.core.reports.grade_result import GradeResult

__all__ = ["AgentRecords"]

_STUDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: A recorded outcome larger than this is not read back (a replay strip is about 100 kB).
MAX_RECORD_BYTES = 4 * 1024**2


class AgentRecords:
    """``<out>/agents/``: the class's key and each student's recorded agent outcome."""

    def __init__(self, out: Path) -> None:
        self.folder = Path(out) / "agents"

    def key(self, make: bool = True) -> bytes:
        """The class's key, made (mode ``0600``) on first use (``b""`` where there is none and
        ``make`` is false: a dry run writes nothing)."""
        path = self.folder / "key"
        if not make:
            return bytes.fromhex(path.read_text(encoding="ascii").strip()) if path.is_file() else b""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return bytes.fromhex(path.read_text(encoding="ascii").strip())
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32))
        return bytes.fromhex(path.read_text(encoding="ascii").strip())

    def previous(self, student: str) -> dict[str, Any] | None:
        """The agent outcome recorded for ``student``, or None."""
        path = self.folder / f"{student}.json"
        if not _STUDENT.fullmatch(student) or not path.is_file() or path.is_symlink():
            return None
        try:
            if path.stat().st_size > MAX_RECORD_BYTES:
                return None
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        return found if isinstance(found, dict) else None

    def memory(self, student: str, make: bool = True) -> dict[str, Any]:
        """What a grading of ``student`` is given: the class's key (made unless ``make`` is
        false) and the outcome recorded."""
        return {"key": self.key(make).hex(), "previous": self.previous(student)}

    def keep(self, results: Iterable[GradeResult]) -> None:
        """Record the agent outcome of each of ``results`` (a student graded again: the new
        one; a grading without an agent: none)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for result in results:
            if not _STUDENT.fullmatch(result.student or ""):
                continue
            path = self.folder / f"{result.student}.json"
            if result.agent is None:
                path.unlink(missing_ok=True)
                continue
            temporary = path.with_name(path.name + ".tmp")
            temporary.write_text(json.dumps(result.agent), encoding="utf-8")
            temporary.replace(path)

    def copies(self, students: Iterable[str]) -> list[list[str]]:
        """The groups (each sorted, at least two) of ``students`` who handed in the same agent:
        the same weights' digest, or fingerprints :func:`same_agent` names alike."""
        prints, values = {}, {}
        for student in sorted(set(students)):
            outcome = self.previous(student) or {}
            if outcome.get("digest") or outcome.get("fingerprint"):
                prints[student] = outcome
                values[student] = fingerprint_values(outcome.get("fingerprint"))
        names = list(prints)
        group = {name: name for name in names}

        def top(name: str) -> str:
            while group[name] != name:
                name = group[name]
            return name

        for index, first in enumerate(names):
            for second in names[index + 1 :]:
                digest = prints[first].get("digest")
                same = bool(digest) and digest == prints[second].get("digest")
                a, b = values[first], values[second]
                if same or (a is not None and b is not None and named_same(value_distances(a, b))):
                    group[top(second)] = top(first)
        found: dict[str, list[str]] = {}
        for name in names:
            found.setdefault(top(name), []).append(name)
        return sorted(members for members in found.values() if len(members) > 1)
