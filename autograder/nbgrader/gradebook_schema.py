"""The gradebook schema's version, read in this process instead of by an ``alembic`` process.

nbgrader stamps every gradebook it creates with the newest revision of its database schema, which
it learns by starting ``alembic heads`` as a program (``nbgrader.api.get_alembic_version``): a
Python start-up that costs seconds on every new gradebook, and so on every grader and every
course the kit makes. :func:`use_in_process_version` gives nbgrader the same revision read with
alembic's own API from nbgrader's migration scripts (a fraction of a second, once per process);
``tests/test_grading_pipeline.py`` checks that both agree.
"""

from __future__ import annotations

import functools
import os

__all__ = ["schema_head", "use_in_process_version"]


@functools.cache
def schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema (what ``alembic heads`` prints)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    head = ScriptDirectory.from_config(config).get_current_head()
    if not head or not os.path.isdir(ALEMBIC_DIR):
        raise RuntimeError(f"no gradebook schema revision found in {ALEMBIC_DIR}")
    return head


def use_in_process_version() -> None:
    """Make nbgrader stamp new gradebooks with :func:`schema_head` (idempotent)."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = schema_head
