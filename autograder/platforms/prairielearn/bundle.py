"""Write the PrairieLearn question, grader and image recipe (``python -m autograder
prairielearn``).

PrairieLearn knows a question by the ``uuid`` of its ``info.json``: a question synced with a
new uuid is a new question (the old one's submissions and scores stay with the old one). So a
bundle is rebuilt in place: ``--out`` naming the folder of an earlier build keeps that build's
uuid and replaces the rest; ``question_uuid`` (``--uuid``) gives the one the course already has
(its ``questions/a2c/info.json``); only a first build makes a new one. The image name must be
the instructor's own: the placeholder of the documentation (:data:`PLACEHOLDER_IMAGE`) is
refused, since PrairieLearn would fail every grading job pulling it.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
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

__all__ = ["ENTRYPOINT", "PLACEHOLDER_IMAGE", "Bundle", "write_bundle"]

FOLDER = "a2c_grader"  #: the bundle's folder in the course's serverFilesCourse
ENTRYPOINT = f"/grade/serverFilesCourse/{FOLDER}/run_grader"
TIMEOUT_SECONDS = 600  #: PrairieLearn's limit for one grading job (a notebook takes about 30 s)
#: The image name the guide shows; a bundle naming it is refused.
PLACEHOLDER_IMAGE = "YOUR_DOCKERHUB_USER/a2c-grader:latest"
#: What a bundle's folder holds at its top (an earlier build's are replaced, nothing else).
BUNDLE_ENTRIES = ("run_grader", "kit", "question", "image")

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


@dataclass(frozen=True)
class Bundle:
    """What :func:`write_bundle` wrote: the files, and the question's uuid (``kept``: that of
    the earlier build in the folder, or the one given; else new)."""

    names: list[str]
    uuid: str
    kept: bool


def info_json(image: str, question_uuid: str) -> dict:
    """The question's ``info.json``."""
    return {
        "uuid": question_uuid,
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


def check_image(image: str) -> str:
    """``image``, unless it is the documentation's placeholder (:data:`PLACEHOLDER_IMAGE`)."""
    if not image or "YOUR_DOCKERHUB_USER" in image:
        raise ValueError(
            f"--image {image or '(none)'}: give the name of the grading image you build and push "
            "to Docker Hub (--image <your Docker Hub user>/a2c-grader:latest); PrairieLearn pulls "
            f"it for every grading job, and the placeholder {PLACEHOLDER_IMAGE} does not exist."
        )
    return image


def _earlier_uuid(out: Path) -> str | None:
    """The question uuid of the bundle an earlier build wrote into ``out``; ``None`` for a new
    or empty folder.

    Raises:
        ValueError: ``out`` holds something else (it is never emptied then).
    """
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return None
    info = out / "question" / "info.json"
    try:
        question = json.loads(info.read_text(encoding="utf-8"))
        found = str(uuid.UUID(str(question["uuid"])))
        ours = question["externalGradingOptions"]["entrypoint"] == ENTRYPOINT
        only_bundle = {entry.name for entry in out.iterdir()} <= set(BUNDLE_ENTRIES)
    except (OSError, ValueError, KeyError, TypeError):
        ours = only_bundle = False
    if not (ours and only_bundle):
        raise ValueError(
            f"--out must be a new or empty folder, or the folder of an earlier build of this "
            f"bundle (rebuilt in place, keeping its question uuid), and {out} is neither"
        ) from None
    return found


def write_bundle(
    out: Path,
    image: str,
    root: Path = KIT_ROOT,
    question_uuid: str | None = None,
    limits: Limits | None = None,
) -> Bundle:
    """Write the bundle into ``out``: a new or empty folder, or an earlier build's, which is
    replaced with its question uuid kept (module docstring). ``question_uuid``: the uuid the
    course's question already has; ``limits``: the course's (default: the declared ones).

    Raises:
        ValueError: the placeholder image, a malformed ``question_uuid`` or one that differs
            from the earlier build's, or an ``out`` that holds something else.
    """
    out = Path(out)
    check_image(image)
    earlier = _earlier_uuid(out)
    given = None
    if question_uuid is not None:
        try:
            given = str(uuid.UUID(question_uuid))
        except ValueError:
            raise ValueError(f"--uuid {question_uuid!r} is not a uuid") from None
    if given and earlier and given != earlier:
        raise ValueError(
            f"--uuid {given} differs from the uuid of the question built in {out} ({earlier}): "
            "PrairieLearn would take the rebuilt question for another one; give a new --out, "
            "or leave --uuid out to keep the folder's"
        )
    chosen = given or earlier or str(uuid.uuid4())
    for name in BUNDLE_ENTRIES:  # an earlier build: replaced whole (a file it had may be gone)
        entry = out / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()
    files: dict[str, bytes] = {
        "run_grader": RUN_GRADER.encode(),
        "question/info.json": (json.dumps(info_json(image, chosen), indent=2) + "\n").encode(),
        "question/question.html": QUESTION_HTML.encode(),
        "image/Dockerfile": DOCKERFILE.encode(),
        "image/requirements.txt": grading_requirements(root).encode(),
    }
    for name, path in kit_files(root).items():
        files[f"kit/{name}"] = path.read_bytes()
    files[f"kit/{RELEASE_NAME}"] = release = release_bytes(root)
    files[f"kit/{COURSE_NAME}"] = course_bytes(release, limits)
    for name, data in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if name == "run_grader" else 0o644)
    return Bundle(sorted(files), chosen, kept=chosen in (given, earlier))
