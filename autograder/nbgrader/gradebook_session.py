"""How the kit opens nbgrader's gradebook: one session at a time in a process.

nbgrader keeps global state, SQLite may refuse a reader while another thread commits, and
``warnings`` filters belong to the whole process: every nbgrader call of the grader's and every
reading of a gradebook by the kit runs in :func:`gradebook_session`, under one lock, where
SQLAlchemy's deprecation noise about nbgrader's models is silenced and each gradebook keeps one
engine (:func:`one_engine_per_gradebook`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["GRADEBOOK_LOCK", "gradebook_session", "one_engine_per_gradebook"]

#: Held by every nbgrader call and gradebook session of this process (:func:`gradebook_session`):
#: nbgrader keeps global state, and SQLite may refuse a reader while another thread commits.
GRADEBOOK_LOCK = threading.Lock()


#: One SQLAlchemy engine per gradebook URL (and engine settings), for nbgrader's calls here.
_ENGINES: dict[tuple[str, str], Any] = {}


@contextmanager
def one_engine_per_gradebook() -> Iterator[None]:
    """nbgrader opens a new SQLAlchemy engine for each of the dozen gradebook sessions of one
    recording, and each new engine compiles every SQL statement again (a quarter of a
    recording's time). Within this, each gradebook gets one engine, which keeps its compiled
    statements. Each session still closes its connections (nbgrader disposes the engine when it
    closes a gradebook), so nothing stays open between calls, and a gradebook file made again
    is opened afresh. Each opening checks nbgrader's schema with one query
    (:func:`_create_missing_tables`). It swaps a function of nbgrader's module and a method of its
    schema: enter it only through :func:`gradebook_session`, which holds :data:`GRADEBOOK_LOCK`."""
    import nbgrader.api

    create_engine = nbgrader.api.create_engine

    def shared_engine(url: Any, **settings: Any) -> Any:
        key = (str(url), repr(sorted(settings.items())))
        if key not in _ENGINES:
            _ENGINES[key] = create_engine(url, **settings)
        return _ENGINES[key]

    nbgrader.api.create_engine = shared_engine
    metadata = nbgrader.api.Base.metadata
    metadata.create_all = _create_missing_tables(metadata)  # shadows the method, until below
    try:
        yield
    finally:
        nbgrader.api.create_engine = create_engine
        del metadata.create_all


def _create_missing_tables(metadata: Any) -> Any:
    """``metadata.create_all`` that asks SQLite once which tables exist and stops there when
    every table of nbgrader's schema does. nbgrader calls ``create_all`` each time it opens a
    gradebook (a dozen times a recording), and SQLAlchemy's own check asks for each of its
    tables in turn. A gradebook that lacks any table, or one that is not SQLite, gets
    SQLAlchemy's ``create_all`` as nbgrader calls it."""
    create_all = type(metadata).create_all
    wanted = set(metadata.tables)

    def create_missing(bind: Any, **settings: Any) -> None:
        if bind.dialect.name == "sqlite" and not settings:
            with bind.connect() as connection:
                tables = "SELECT name FROM sqlite_master WHERE type='table'"
                if wanted <= {name for (name,) in connection.exec_driver_sql(tables)}:
                    return
        create_all(metadata, bind=bind, **settings)

    return create_missing


_in_session = threading.local()  #: whether this thread is inside a gradebook session


@contextmanager
def gradebook_session() -> Iterator[None]:
    """Where the grader's nbgrader work and every gradebook reading of the kit run: under
    :data:`GRADEBOOK_LOCK`, with SQLAlchemy's deprecation noise about nbgrader's models silenced
    and one engine per gradebook (:func:`one_engine_per_gradebook`). ``warnings`` filters are
    the process's, so they are only changed here, under the lock. A session opened inside one
    (a course preprocessor that reads the gradebook while nbgrader runs it) joins it."""
    if getattr(_in_session, "active", False):
        yield
        return
    with GRADEBOOK_LOCK, warnings.catch_warnings(), one_engine_per_gradebook():
        warnings.simplefilter("ignore")
        _in_session.active = True
        try:
            yield
        finally:
            _in_session.active = False
