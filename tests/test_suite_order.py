"""The suite's own order (tests/conftest.py): the longest files named there exist, and the
collection hook hands them out first, in that order, the others after them as collected.

A renamed test file left in ``LONGEST_FIRST`` would silently lose its place at the front, and
the suite would end with one worker waiting on the other.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests import conftest

TESTS = Path(__file__).resolve().parent


def test_every_file_named_longest_first_is_a_test_file_of_the_suite():
    missing = [name for name in conftest.LONGEST_FIRST if not (TESTS / name).is_file()]
    assert not missing, f"tests/conftest.py names test files that do not exist: {missing}"
    assert len(set(conftest.LONGEST_FIRST)) == len(conftest.LONGEST_FIRST)


def test_the_hook_puts_the_longest_files_first_in_their_order_and_keeps_the_rest_in_place():
    def item(name: str, test: str) -> SimpleNamespace:
        return SimpleNamespace(path=TESTS / name, name=test)

    first, second = conftest.LONGEST_FIRST[:2]
    items = [
        item("test_layout.py", "a"),
        item(second, "b"),
        item("test_checks.py", "c"),
        item(first, "d"),
        item(second, "e"),
        item("test_layout.py", "f"),
    ]
    conftest.pytest_collection_modifyitems(None, items)
    assert [entry.name for entry in items] == ["d", "b", "e", "a", "c", "f"]
