"""How the suite is spread over processes (``pytest -n auto --dist loadgroup``).

Tests that share an expensive fixture of the suite's own (a graded class, a built platform
image: any fixture of ``tests/`` made once per module) run in one process, in file order, so
that the fixture is made once; every other test goes to whichever process is free. Spreading
by whole files instead left one core idle while the other finished the longest file.
"""

from __future__ import annotations

import pytest


def _shares_a_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            own = getattr(definition.func, "__module__", "").startswith("tests.")
            if own and definition.scope != "function":
                return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(name=item.nodeid.split("::")[0]))
