"""Unpack an archive of submissions safely: member by member, sizes counted as written.

An archive is the students' as much as their notebooks are: a member can be a symbolic link,
claim one size and unpack to another, or be one of millions. :func:`extract` streams each
notebook member into a new folder with its unpacked size counted as it is read
(:data:`~autograder.core.intake.submission_file.MAX_NOTEBOOK_BYTES` a notebook,
:data:`MAX_ARCHIVE_BYTES` and :data:`MAX_ARCHIVE_NOTEBOOKS` an archive), keeps each member's
date (an LMS's record of the upload), and reports what it did not unpack instead of stopping.
"""

from __future__ import annotations

import os
import stat
import zipfile
from datetime import datetime
from pathlib import Path

from autograder.core.intake.submission_file import MAX_NOTEBOOK_BYTES

__all__ = ["LINK_REASON", "MAX_ARCHIVE_BYTES", "MAX_ARCHIVE_NOTEBOOKS", "extract"]

#: An archive's notebooks beyond these are reported, not unpacked (a class's notebooks with
#: their plots and videos take a few hundred MB).
MAX_ARCHIVE_BYTES = 2 * 1024**3
MAX_ARCHIVE_NOTEBOOKS = 5000
#: Why a symbolic link (a file, a folder, a zip member) is not read.
LINK_REASON = (
    "a symbolic link: refused (a link can point at any file of the grading machine); "
    "put the notebook file itself there"
)


def _is_link_member(member: zipfile.ZipInfo) -> bool:
    return member.create_system == 3 and stat.S_ISLNK(member.external_attr >> 16)


def _member_path(name: str) -> Path | None:
    """The relative path a member is unpacked to (``..``, ``.`` and empty parts dropped, as
    :meth:`zipfile.ZipFile.extract` does), or ``None`` when nothing is left."""
    parts = [part for part in name.split("/") if part not in ("", ".", "..")]
    return Path(*parts) if parts else None


def _unpack(bundle: zipfile.ZipFile, member: zipfile.ZipInfo, out: Path, budget: int) -> int:
    """Write ``member`` to the new file ``out``, streaming; the bytes written.

    Raises:
        ValueError: it unpacks to more than ``min(budget, MAX_NOTEBOOK_BYTES)`` bytes (counted
            while reading, whatever the archive's header says); ``out`` is removed.
    """
    limit = min(budget, MAX_NOTEBOOK_BYTES)
    written = 0
    try:
        with bundle.open(member) as source, open(out, "xb") as target:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > limit:
                    raise ValueError(f"unpacks to more than {limit / 1024**2:.0f} MB: not unpacked")
                target.write(chunk)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return written


def extract(archive: Path, dest: Path) -> tuple[Path, list[tuple[str, str, str]]]:
    """Unpack ``archive``'s notebooks into a new folder of ``dest``, keeping each member's date.

    Members are streamed with their unpacked size counted as they are read (a header can lie):
    one larger than :data:`MAX_NOTEBOOK_BYTES`, those past :data:`MAX_ARCHIVE_BYTES` in all or
    past :data:`MAX_ARCHIVE_NOTEBOOKS`, symbolic links and unreadable members are not unpacked:
    they come back as ``(member, why, "<archive>:<member>")``.
    """
    target = dest / f"zip-{len(list(dest.iterdir()))}-{archive.stem}"
    target.mkdir()
    problems = []
    budget, count = MAX_ARCHIVE_BYTES, 0
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or not member.filename.endswith(".ipynb"):
                continue
            origin = f"{archive}:{member.filename}"
            relative = _member_path(member.filename)
            if _is_link_member(member):
                problems.append((member.filename, LINK_REASON, origin))
                continue
            if relative is None:
                continue
            count += 1
            if count > MAX_ARCHIVE_NOTEBOOKS or budget <= 0:
                why = (
                    f"not unpacked: an archive may hold {MAX_ARCHIVE_NOTEBOOKS} notebooks and "
                    f"{MAX_ARCHIVE_BYTES / 1024**3:.0f} GB in all; split it"
                )
                problems.append((member.filename, why, origin))
                continue
            out = target / relative
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                budget -= _unpack(bundle, member, out, budget)
            except (ValueError, OSError, zipfile.BadZipFile, EOFError) as error:
                reason = str(error)[:200] if isinstance(error, ValueError) else repr(error)[:200]
                problems.append((member.filename, f"member not read: {reason}", origin))
                continue
            stamp = datetime(*member.date_time).timestamp()
            os.utime(out, (stamp, stamp))
    return target, problems
