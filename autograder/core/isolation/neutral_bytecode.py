"""Copies of a shown folder's compiled files that name the paths the sandbox shows, not the host's.

Compiled files (``.pyc``) hold the path of their source as it was when they were compiled: pip
compiles at the install path. :func:`neutral_bytecode` writes, once per state of a folder shown
(:class:`~.python_layout.Folder`), a copy of each of its compiled files with that path set to the
one the sandbox shows (a ``marshal`` round trip, no compiling; a file it cannot read becomes
empty, which Python ignores); the root launcher (:mod:`.root_launcher`) lays that copy over the
folder with overlayfs, so the originals are not visible. The installation's other files (its
build configuration, ``libpython`` and its extension modules, scripts in its ``bin``) name the
folder it was built for: the copy holds those rewritten too (:func:`_neutral_file`), text files
with the sandbox's path, binaries with a path of the same length that names the same folder
inside (``/opt/python`` padded with slashes), so the sandbox sees no host path in them either.
Copies are kept on disk by folder state, shared by the grader processes of a machine (a lock
per copy), and pruned when unused for a week.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import marshal
import os
import shutil
import stat
import sys
import sysconfig
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.core.isolation.python_layout import KIT_RECORDS, Folder

__all__ = ["neutral_bytecode"]

_build_lock = threading.Lock()
_made: dict[tuple[Folder, Path, int], Path] = {}  #: this process's copies, by folder state
_held: dict[Path, int] = {}  #: the copies this process uses, and its lock on each


def _neutral_code(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(
        _neutral_code(const, filename) if isinstance(const, types.CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


@dataclass(frozen=True)
class _Scan:
    """What decides a folder's copy: its compiled files and (the installation's) other regular
    files, each with its metadata; and every folder walked, with its stamp (a name added,
    removed or renamed in a folder changes the folder's modification and change times)."""

    compiled: list[tuple[str, os.stat_result]]  #: every compiled file, sorted
    installation: list[tuple[str, os.stat_result]]  #: the installation's other regular files
    folders: dict[str, tuple[int, int, int]]  #: every folder walked: (mtime, ctime, inode)


def _stamp(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _scan(folder: Folder) -> _Scan:
    """Walk ``folder``: in a package folder, its compiled files; in the installation, its
    compiled files and its other regular files (what may name the folder it was built for),
    none in its package folders (shown on their own, or not at all). Links to folders are not
    followed. Each folder's stamp is taken before its names are read, so that a change made
    during the walk is seen by the next :func:`_rescan`."""
    compiled, installation, folders = [], [], {}
    pending = [""]
    while pending:
        relative = pending.pop()
        path = os.path.join(folder.outside, relative)
        try:
            info = os.stat(path)
            with os.scandir(path) as listing:
                entries = list(listing)
        except OSError:
            continue  # gone, or not readable: as os.walk, left out
        folders[relative] = _stamp(info)
        for entry in entries:
            name = os.path.join(relative, entry.name)
            if entry.is_dir():
                if not entry.is_symlink() and (
                    folder.packages or entry.name not in ("site-packages", "dist-packages")
                ):
                    pending.append(name)
            elif entry.name.endswith(".pyc"):
                compiled.append((name, entry.stat(follow_symlinks=False)))
            elif not folder.packages:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    installation.append((name, info))
    return _Scan(sorted(compiled), sorted(installation), folders)


def _scan_record(cache: Path, name: str) -> Path:
    """Where the last walk of the folder whose copies are ``cache/<name>-*`` is remembered
    (beside the copies, never in one: a copy is shown to the sandbox)."""
    return cache / f".{name}.scan.json"


def _remember(record: Path, scan: _Scan) -> None:
    text = json.dumps(
        {
            "folders": scan.folders,
            "compiled": [relative for relative, _ in scan.compiled],
            "installation": [relative for relative, _ in scan.installation],
        }
    )
    temporary = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
    with os.fdopen(os.open(temporary, flags, 0o600), "w") as out:
        out.write(text)
    os.replace(temporary, record)


def _rescan(folder: Folder, record: Path) -> _Scan | None:
    """:func:`_scan`'s answer without the walk, or None when it may differ: when every folder of
    the last walk has its stamp still, no name was added, removed or renamed anywhere in it,
    so the files are the same; their metadata is read again, as the walk reads it."""
    try:
        remembered = json.loads(record.read_text())
        for relative, stamp in remembered["folders"].items():
            if _stamp(os.stat(os.path.join(folder.outside, relative))) != tuple(stamp):
                return None
        compiled, installation = (
            [(relative, os.lstat(os.path.join(folder.outside, relative))) for relative in names]
            for names in (remembered["compiled"], remembered["installation"])
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing, unreadable, or a file of it gone: walk again
    if any(not stat.S_ISREG(info.st_mode) for _, info in installation):
        return None
    return _Scan(compiled, installation, remembered["folders"])


def _built_for(folder: Path) -> list[bytes]:
    """The host folders the installation ``folder``'s own files may name: where it is and
    where it was built for (the same, unless it was moved), longest first."""
    names = {str(folder)}
    for variable in ("prefix", "exec_prefix"):
        value = sysconfig.get_config_var(variable)
        if (
            isinstance(value, str)
            and value.startswith("/")
            and value.rstrip("/") not in ("", "/usr")
        ):
            names.add(value.rstrip("/"))
    return sorted((name.encode() for name in names), key=len, reverse=True)


def _neutral_file(data: bytes, names: list[bytes], inside: str) -> bytes:
    """``data`` with each host folder of ``names`` replaced by ``inside``: as it is in text, and
    in a binary (a NUL byte) padded with slashes to the host name's length (offsets and string
    sizes in a compiled library must not move; ``/opt//////python`` is ``/opt/python``)."""
    binary = b"\0" in data
    for host in names:
        new = inside.encode()
        if binary:
            if len(new) > len(host):
                continue  # no shorter spelling: left as it is (the feedback filter remains)
            head, _, tail = new.rpartition(b"/")
            new = head + b"/" * (len(host) - len(new)) + b"/" + tail
        data = data.replace(host, new)
    return data


def _rewrite(source: Path, inside: str, hidden: bool) -> bytes:
    """The compiled file ``source`` with its source path set to ``inside``'s; empty when it is
    not one this interpreter reads, or hidden."""
    data = source.read_bytes()
    if hidden or data[:4] != importlib.util.MAGIC_NUMBER:
        return b""
    try:
        code = marshal.loads(data[16:])
    except (ValueError, EOFError, TypeError):
        return b""
    if not isinstance(code, types.CodeType):
        return b""
    return data[:16] + marshal.dumps(_neutral_code(code, inside))


def _lock_file(path: Path | str) -> int:
    """A descriptor of the lock file ``path`` (made if missing, never through a link)."""
    return os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock`` for the ``with`` block (waits for the holder)."""
    fd = _lock_file(lock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _hold(copy: Path) -> bool:
    """Mark ``copy`` as used by this process for as long as it lives (a shared ``flock`` on
    ``<copy>.lock``, dropped by the kernel when the process ends, even killed): no other
    grader removes it meanwhile. False when the copy is gone (removed before the lock)."""
    if copy in _held:
        return copy.is_dir()
    fd = _lock_file(f"{copy}.lock")
    fcntl.flock(fd, fcntl.LOCK_SH)
    if not copy.is_dir():
        os.close(fd)
        return False
    _held[copy] = fd
    return True


def _remove_unused(copy: Path) -> None:
    """Remove ``copy`` unless a grader process holds it (:func:`_hold`): two graders of
    different environments on one machine share the installation's copies."""
    try:
        fd = _lock_file(f"{copy}.lock")
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return  # in use
    try:
        shutil.rmtree(copy, ignore_errors=True)
    finally:
        os.close(fd)  # the lock file stays (removing it would race with a grader opening it)


def _prune(cache: Path, days: float = 7.0) -> None:
    """Remove the copies no grader used for ``days`` (those of environments since removed),
    unless a grader process holds one now."""
    limit = time.time() - days * 86400
    for entry in cache.iterdir():
        try:
            if entry.is_dir() and entry.stat().st_mtime < limit and entry not in _held:
                _remove_unused(entry)
            elif entry.name.endswith(".tmp") and entry.stat().st_mtime < limit:
                entry.unlink()  # a record's writer that did not finish
        except OSError:
            continue
    for record in cache.glob(".*.scan.json"):
        if not any(cache.glob(f"{record.name[1:].split('.')[0]}-*")):
            record.unlink(missing_ok=True)  # its folder's copies are all gone


def neutral_bytecode(folder: Folder, cache: Path) -> Path:
    """A folder under ``cache`` holding, at their relative paths, neutral copies of every
    compiled file of ``folder`` (see the module docstring). Made once per state of the folder's
    compiled files (their paths, sizes, times and inodes), then reused; older copies of the
    same folder are removed, and copies no grader used for a week. ``cache`` must be the
    caller's own (nobody else can write it).
    Walking an environment with torch costs half a second of CPU: a process walks the folder
    only when the walk remembered beside the copies may be out of date (:func:`_rescan`: a
    folder's stamp changed); it then checks the files that walk found. Within one process the
    copy is taken again only when the folder itself changed (a package added or removed)."""
    stamp = (folder, cache, folder.outside.stat().st_mtime_ns)
    made = _made.get(stamp)
    if made is not None and made.is_dir():
        return made
    state = hashlib.sha256(f"{folder.outside}\0{folder.inside}\0{sys.version}".encode())
    name = state.hexdigest()[:16]
    record = _scan_record(cache, name)
    scan = _rescan(folder, record)
    walked = scan is None
    if scan is None:
        scan = _scan(folder)
    files = scan.compiled
    names = [] if folder.packages else _built_for(folder.outside)
    installation = scan.installation if names else []
    state.update(b"\0".join(names) + b"\n")
    for path, info in files + installation:
        state.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}\n".encode())
    target = cache / f"{name}-{state.hexdigest()[:16]}"
    # One maker per folder on the machine: a second grader (another process, another worker of
    # the same machine) waits for the copy instead of making it again.
    with _build_lock, _exclusive(cache / f".{name}.making"):
        if target.is_dir() and _hold(target):
            os.utime(target)  # in use: kept by _prune
            if walked:
                _remember(record, scan)
            _made[stamp] = target
            return target
        hidden = {
            str(path.relative_to(folder.outside))
            for pattern in KIT_RECORDS
            for path in folder.outside.glob(pattern)
        }
        build = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
        for relative, _ in files:
            try:
                source = importlib.util.source_from_cache(relative)
            except ValueError:  # a compiled file beside its source
                source = relative[:-1]
            copy = build / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(
                _rewrite(folder.outside / relative, f"{folder.inside}/{source}", relative in hidden)
            )
        for root, dirs, entries in os.walk(build):
            for entry in dirs:
                os.chmod(os.path.join(root, entry), 0o755)
            for entry in entries:
                os.chmod(os.path.join(root, entry), 0o644)
        for relative, info in installation:  # after the modes: an executable stays one
            try:
                data = (folder.outside / relative).read_bytes()
            except OSError:
                continue
            if not any(host in data for host in names):
                continue  # names no host folder: shown as it is
            copy = build / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(_neutral_file(data, names, folder.inside))
            os.chmod(copy, 0o755 if info.st_mode & 0o111 else 0o644)
            for parent in copy.relative_to(build).parents:
                os.chmod(build / parent, 0o755)
        build.chmod(0o755)
        try:
            build.rename(target)
        except OSError:  # another grader made it first
            shutil.rmtree(build, ignore_errors=True)
        if not _hold(target):
            raise RuntimeError(f"the compiled files' copy {target} was removed while it was made")
        for old in cache.glob(f"{name}-*"):
            if old != target and old.is_dir():
                if old in _held:  # this process's runs take the new state from now on
                    os.close(_held.pop(old))
                _remove_unused(old)  # an older state of the same folder, if no grader uses it
        _remember(record, scan)
        _prune(cache)
    _made[stamp] = target
    return target
