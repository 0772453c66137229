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


def test_a_gradebook_that_lost_a_table_gets_it_back_and_nothing_stays_swapped(tmp_path):
    """Within the grader's session nbgrader's schema is checked with one query per opening;
    a gradebook that lacks a table still gets it, and after the session nbgrader's own
    ``create_all`` is back."""
    import sqlite3

    from nbgrader.api import Base

    warnings.simplefilter("ignore")
    path = tmp_path / "gradebook.db"
    url = f"sqlite:///{path}"
    with gradebook_session():
        with Gradebook(url) as gradebook:
            gradebook.add_student("ann")
        with sqlite3.connect(path) as db:
            db.execute("DROP TABLE comment")
        with Gradebook(url):
            pass
        assert "create_all" in vars(Base.metadata)  # the session's one-query check
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "comment" in tables and set(Base.metadata.tables) <= tables
    assert "create_all" not in vars(Base.metadata)
    assert _students(url) == ["ann"]


def test_a_session_opened_inside_one_joins_it_and_warnings_stay_as_they_were(tmp_path):
    """A course preprocessor reads the gradebook while nbgrader runs in a session (the
    feedback's totals read part 8's hand score): the inner session joins the outer one instead
    of waiting for the lock it holds; the process's warning filters come back afterwards, as
    another thread (grade-all's reports) may rely on them."""
    import threading

    use_in_process_version()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    filters = list(warnings.filters)
    done = threading.Event()

    def nested() -> None:
        with gradebook_session(), Gradebook(url) as outer:
            outer.update_or_create_student("ada")
            with gradebook_session(), Gradebook(url) as inner:
                assert [student.id for student in inner.students] == ["ada"]
        done.set()

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done.is_set(), "the inner session waited for the outer one's lock"
    assert warnings.filters == filters
