"""One torch thread for the calling thread, while the grader computes on small tensors.

torch's intra-op thread count is set per thread (``torch.set_num_threads`` in the calling thread,
restored after). The grader's own torch work (the reference's observations on a grading's
cases, the judges' forward passes, a saved agent's games) is made of tensors of a few rows:
a second OpenMP thread has nothing to share and only waits, spinning, at each operation's end.
On a machine whose cores are busy (the sandbox beside it, a class's other gradings) that spin
cost several times the work itself (``docs/benchmarks.md``, "Warm interpreters").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["one_torch_thread"]


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block with one torch thread in the calling thread; the count before after it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
