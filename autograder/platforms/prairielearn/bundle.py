"""Write the PrairieLearn question, grader and image recipe (``python -m autograder
prairielearn``)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from autograder.platforms.bundle_contents import (
    KIT_ROOT,
    RELEASE_NAME,
    grading_requirements,
    kit_files,
    release_bytes,
)

__all__ = ["ENTRYPOINT", "write_bundle"]

FOLDER = "a2c_grader"  #: the bundle's folder in the course's serverFilesCourse
ENTRYPOINT = f"/grade/serverFilesCourse/{FOLDER}/run_grader"
TIMEOUT_SECONDS = 600  #: PrairieLearn's limit for one grading job (a notebook takes about 30 s)

RUN_GRADER = r"""#!/bin/sh
# PrairieLearn's external grader runs this, as root, in the grading container: it grades the
# notebook in ${PL_GRADE_ROOT:-/grade}/student and writes results/results.json there.
here="$(cd "$(dirname "$0")" && pwd)"
exec python3 -I -c 'import sys; sys.path.insert(0, sys.argv[1]); from autograder.platforms.prairielearn.run_grader import main; sys.exit(main())' "$here/kit"
"""

QUESTION_HTML = """<pl-question-panel>
  <p>
    Upload your completed course notebook, <code>a2c.ipynb</code>, with its outputs (part 8 is
    graded by hand from what your own run showed). The autograder runs the parts you wrote on
    hidden cases and reports each part's checks.
  </p>
</pl-question-panel>

<pl-file-upload file-names="a2c.ipynb"></pl-file-upload>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""

DOCKERFILE = """# The grading image of the A2C notebook question. It holds no course file (the reference and
# the hidden checks come from serverFilesCourse for each job), so it may be public.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \\
    && rm -rf /var/lib/apt/lists/*
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir --no-deps "$(grep '^torch==' /tmp/requirements.txt)" \\
        --index-url https://download.pytorch.org/whl/cpu \\
    && pip install --no-cache-dir -r /tmp/requirements.txt \\
    && chmod -R o-w /usr/local
"""


def info_json(image: str) -> dict:
    """The question's ``info.json``."""
    return {
        "uuid": str(uuid.uuid4()),
        "title": "A2C on Atari: the course notebook",
        "topic": "Reinforcement learning",
        "tags": ["a2c", "notebook", "external"],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "serverFilesCourse": [f"{FOLDER}/"],
            "entrypoint": ENTRYPOINT,
            "timeout": TIMEOUT_SECONDS,
            "enableNetworking": False,
        },
    }


def write_bundle(out: Path, image: str, root: Path = KIT_ROOT) -> list[str]:
    """Write the bundle into the new or empty folder ``out``; returns the files written."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out must be a new or empty folder, and {out} is not")
    files: dict[str, bytes] = {
        "run_grader": RUN_GRADER.encode(),
        "question/info.json": (json.dumps(info_json(image), indent=2) + "\n").encode(),
        "question/question.html": QUESTION_HTML.encode(),
        "image/Dockerfile": DOCKERFILE.encode(),
        "image/requirements.txt": grading_requirements(root).encode(),
    }
    for name, path in kit_files(root).items():
        files[f"kit/{name}"] = path.read_bytes()
    files[f"kit/{RELEASE_NAME}"] = release_bytes(root)
    for name, data in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if name == "run_grader" else 0o644)
    return sorted(files)
