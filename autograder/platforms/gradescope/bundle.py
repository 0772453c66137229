"""Build the zip an instructor uploads to Gradescope (``python -m autograder gradescope``)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.core.course.limits import Limits
from autograder.platforms.bundle_contents import (
    COURSE_NAME,
    KIT_ROOT,
    RELEASE_NAME,
    course_bytes,
    grading_requirements,
    kit_files,
    release_bytes,
)

__all__ = ["RUN_AUTOGRADER", "SETUP_SH", "build_zip"]

#: Run once by Gradescope, as root, in /autograder/source, when it builds the grading image.
SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, from the unpacked zip, when it builds the grading image.
# It installs with the python3 and pip found on PATH (a venv's, when one is first on PATH).
set -euo pipefail
cd "$(dirname "$0")"
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: the pinned requirements need Python 3.11 or newer, python3 is $(python3 -V 2>&1):" \
        "choose a newer base image" >&2
    exit 1
fi
# bubblewrap isolates the notebook where the container allows it; otherwise the grader uses its
# container mode. A2C_SETUP_APT=0 skips apt-get (no root, or no network for it).
if [ "${A2C_SETUP_APT:-1}" != 0 ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap \
        || echo "setup.sh: bubblewrap not installed: grading will run in container mode"
    python3 -m pip --version >/dev/null 2>&1 \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip
fi
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# torch's CPU build from PyTorch's index (PyPI's Linux build is the CUDA one, several GB);
# A2C_TORCH_INDEX= (empty) takes torch from pip's own index instead.
TORCH_INDEX="${A2C_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
if [ -n "$TORCH_INDEX" ]; then
    python3 -m pip install -q --no-deps "$(grep '^torch==' requirements.txt)" --index-url "$TORCH_INDEX"
fi
python3 -m pip install -q -r requirements.txt
# The grader's own Python files: readable by root alone from now on.
chmod -R go-w . && chmod o-rwx .
python3 -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import autograder.platforms.one_notebook, autograder.core.assessor' "$PWD"
echo "setup.sh: ready"
"""

#: Run by Gradescope, as root, for every submission.
RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this, as root, for every submission: it grades the notebook in
# $AUTOGRADER_ROOT/submission (default /autograder) and writes results/results.json there.
root="${AUTOGRADER_ROOT:-/autograder}"
exec python3 -I -c 'import sys; sys.path.insert(0, sys.argv[1]); from autograder.platforms.gradescope.run_autograder import main; sys.exit(main())' "$root/source"
"""


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_zip(out: Path, root: Path = KIT_ROOT, limits: Limits | None = None) -> list[str]:
    """Write the autograder zip to ``out`` (the course with ``limits``, default the declared
    ones); returns the names in it, ``setup.sh`` and ``run_autograder`` at the top as
    Gradescope wants them."""
    out = Path(out)
    if out.suffix != ".zip":
        raise ValueError(f"--out must name a .zip file (Gradescope's autograder), got {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    names = []
    with zipfile.ZipFile(out, "w") as archive:
        for name, data, mode in (
            ("setup.sh", SETUP_SH.encode(), 0o755),
            ("run_autograder", RUN_AUTOGRADER.encode(), 0o755),
            ("requirements.txt", grading_requirements(root).encode(), 0o644),
        ):
            _add(archive, name, data, mode)
            names.append(name)
        for name, path in kit_files(root).items():
            _add(archive, name, path.read_bytes(), 0o644)
            names.append(name)
        release = release_bytes(root)
        _add(archive, RELEASE_NAME, release, 0o644)
        _add(archive, COURSE_NAME, course_bytes(release, limits), 0o644)
        names += [RELEASE_NAME, COURSE_NAME]
    return names
