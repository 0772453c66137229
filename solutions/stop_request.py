"""A clean stop: the first Ctrl-C or SIGTERM becomes a flag that the training loop reads.

The loop checks :attr:`StopRequest.requested` after each update, writes a checkpoint at that
update and returns; a second Ctrl-C aborts at once (``KeyboardInterrupt``, no checkpoint).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

__all__ = ["StopRequest"]


class StopRequest:
    """While active, the first SIGINT or SIGTERM sets :attr:`signal_name` instead of killing.

    The training loop polls :attr:`requested` after every update, saves a checkpoint and returns;
    a second SIGINT raises ``KeyboardInterrupt`` at once (no checkpoint). Handlers can only be
    installed from the main thread: elsewhere this does nothing and signals act as usual.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop now
        self.signal_name = signal.Signals(signum).name
        print(
            f"\n{self.signal_name}: saving a checkpoint after the current update "
            "(Ctrl-C again to abort without saving)...",
            file=sys.stderr,
            flush=True,
        )

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
