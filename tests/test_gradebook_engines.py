"""nbgrader's gradebook sessions share one SQLAlchemy engine per gradebook while the grader
records (``autograder.nbgrader.course.gradebook_session``), and lose nothing by it."""

from __future__ import annotations

import warnings

from nbgrader.api import Gradebook

from autograder.nbgrader.course import gradebook_session
from autograder.nbgrader.gradebook_schema import use_in_process_version

use_in_process_version()  # a new gradebook without an `alembic` process, as the grader makes it


def _students(url: str) -> list[str]:
    with Gradebook(url) as gradebook:
        return sorted(student.id for student in gradebook.students)


def test_sessions_share_an_engine_only_while_recording(tmp_path):
    warnings.simplefilter("ignore")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with gradebook_session():
        with Gradebook(url) as first, Gradebook(url) as second:
            assert first.engine is second.engine
    with Gradebook(url) as first, Gradebook(url) as second:
        assert first.engine is not second.engine


def test_a_gradebook_made_again_at_the_same_path_is_opened_afresh(tmp_path):
    warnings.simplefilter("ignore")
    path = tmp_path / "gradebook.db"
    url = f"sqlite:///{path}"
    with gradebook_session():
        with Gradebook(url) as gradebook:
            gradebook.add_student("ann")
        assert _students(url) == ["ann"]
        path.unlink()  # an instructor starts the course again in the same folder
        assert _students(url) == []
        with Gradebook(url) as gradebook:
            gradebook.add_student("bob")
    assert _students(url) == ["bob"]  # written to the new file, seen by a separate engine
