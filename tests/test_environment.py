"""The environment's fingerprint (:mod:`autograder.core.isolation.environment_fingerprint`): what an unsandboxed notebook
could change in the Python environment is noticed, however it is dated."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.core.isolation.environment_fingerprint import (
    changes,
    environment_folders,
    fingerprint,
)


def test_a_planted_rewritten_or_removed_file_is_noticed(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("x = 1\n")
    (site / "old.pth").write_text("/somewhere\n")
    before = fingerprint([tmp_path])
    assert changes(before, [tmp_path]) == []
    (site / "zz_planted.pth").write_text("import os\n")
    assert str(site / "zz_planted.pth") in changes(before, [tmp_path])

    before = fingerprint([tmp_path])
    module = site / "pkg" / "__init__.py"
    stamp = module.stat()
    module.write_text("x = 2\n")  # same size, and dated back: the change time still moves
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert changes(before, [tmp_path]) == [str(module)]

    before = fingerprint([tmp_path])
    (site / "old.pth").unlink()
    assert str(site / "old.pth") in changes(before, [tmp_path])


def test_the_folders_cover_the_environment_and_the_installation() -> None:
    folders = environment_folders()
    for path in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        assert any(path == folder or folder in path.parents for folder in folders), path
