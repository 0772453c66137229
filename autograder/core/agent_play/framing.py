"""The frames the grader and the sandboxed agent exchange (the grader's side; trusted code).

Binary frames, each a 4-byte tag and a little-endian 8-byte length, then the payload: the
observation batches are 28 KB a game and a step, so they travel as raw bytes, not JSON. The
sandbox's side (``autograder/sandboxed/bin/agent_server.py``) writes and reads the same tags; it
cannot import this module, so the two are kept in step by the tests that play through both.
"""

from __future__ import annotations

import os
import select
import struct
import time

__all__ = ["ANSWER", "ASK", "HEADER", "JOB", "FrameError", "FrameTimeout", "read_frame", "send"]

JOB, ASK, ANSWER = b"A2CJ", b"A2CQ", b"A2CR"
HEADER = struct.Struct("<4sQ")


class FrameError(ValueError):
    """The sandbox's side broke the framing: another tag, too long, or the channel closed."""


class FrameTimeout(TimeoutError):
    """No whole frame arrived before the deadline."""


def send(fd: int, tag: bytes, payload: bytes | memoryview, deadline: float) -> None:
    """Write one frame to ``fd`` by ``deadline`` (``time.monotonic()``), or
    :class:`FrameTimeout` (the sandbox stopped reading); ``BrokenPipeError`` if it is gone."""
    os.set_blocking(fd, False)
    data = memoryview(HEADER.pack(tag, len(payload)) + bytes(payload))
    while data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise FrameTimeout("the agent's process stopped reading")
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            continue


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FrameTimeout("no answer in time")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            raise FrameTimeout("no answer in time")
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise FrameError("the agent's process closed its channel (it crashed or exited)")
        data += chunk
    return bytes(data)


def read_frame(fd: int, max_bytes: int, deadline: float) -> bytes:
    """The payload of the next ``ANSWER`` frame on ``fd``: at most ``max_bytes`` (checked before
    it is read), whole by ``deadline`` (``time.monotonic()``), or :class:`FrameError` /
    :class:`FrameTimeout`."""
    tag, size = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if tag != ANSWER:
        raise FrameError(f"expected an answer frame, got tag {tag[:4]!r}")
    if size > max_bytes:
        raise FrameError(f"an answer of {size:,} bytes, more than the {max_bytes:,} expected")
    return _read_exact(fd, size, deadline)
