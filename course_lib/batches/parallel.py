"""The ``"subprocess"`` backend: N copies of an env, each in its own worker process.

:class:`ParallelEnvBatch` steps the N envs at the same time on N CPU cores. It is engineering,
not course material: shared memory for the observations, a forkserver that preloads the
imports, and replies drained after a failure make it fast and safe, not short. Students need
its contract (that of every batch of :func:`course_lib.nature_dqn_env`, and of
:class:`~course_lib.batches.sequential.EnvBatch`), not its code::

    make_one = functools.partial(make_atari_env, "PongNoFrameskip-v4")
    with ParallelEnvBatch([make_one] * 8, seed=0) as batch:       # N = 8
        obs, infos = batch.reset()                                # obs: uint8 (8, 4, 84, 84)
        actions = np.random.randint(batch.single_action_space.n, size=batch.num_envs)
        obs, rewards, terminated, truncated, infos = batch.step(actions)  # rewards: (8,)
"""

from __future__ import annotations

import math
import multiprocessing
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from multiprocessing import resource_tracker, shared_memory
from multiprocessing.connection import wait as wait_for_connections
from typing import Any

import gymnasium as gym
import numpy as np

from ..validation import check_number
from .base import (
    AUTORESET_CONTRACT,
    BatchBase,
    EnvFn,
    EnvStep,
    check_env_fns,
    check_seed,
)
from .worker import (
    EnvWorkerError,
    ObsSlot,
    default_start_method,
    forkserver_preload,
    pickle_env_fn,
    worker_main,
)

__all__ = [
    "EnvWorkerError",
    "ParallelEnvBatch",
    "default_start_method",
    "forkserver_preload",
]

class ParallelEnvBatch(BatchBase):
    """N envs, each in its own worker process, stepped at the same time.

    ``step`` sends every action first and then collects every reply, so the N envs run in
    parallel; it returns ``obs (N, *obs_shape)`` with the single observation dtype,
    ``rewards float32 (N,)``, ``terminated``/``truncated`` ``bool (N,)`` and merged ``infos``.

    Args:
        env_fns: one zero-argument function per env. They are pickled with ``cloudpickle``,
            so lambdas and functions defined in a notebook work with every start method.
        seed: seed of the first ``reset()`` (env ``i`` gets ``seed + i``).
        context: multiprocessing start method, ``"forkserver"``, ``"spawn"`` or ``"fork"``;
            ``None`` picks :func:`default_start_method`.
        timeout: seconds to wait for a worker's reply before giving up; ``None`` waits as
            long as the worker is alive.

    Failures never hang and always name the worker (= env index):

    * an env that raises: the batch closes and raises :class:`EnvWorkerError` whose message
      contains the worker's traceback;
    * a worker that dies (segfault, out of memory, killed) is noticed within a fraction of a
      second: the batch closes and raises :class:`EnvWorkerError` with the exit code;
    * Ctrl-C (``KeyboardInterrupt``) stops the parent only: workers ignore ``SIGINT``. The
      interrupted call leaves replies in the pipes, so ``step`` then refuses to run until
      ``reset()`` (which first collects those replies) or ``close()``.

    Workers are daemons and exit when the parent's end of their pipe closes, so they never
    outlive the parent. ``close()`` (idempotent; also called by ``with`` and on garbage
    collection) asks each worker to exit, waits briefly, then terminates stragglers.

    .. warning::
        With ``"spawn"`` and ``"forkserver"`` a *script* that makes a batch at import time
        must guard its entry point with ``if __name__ == "__main__":``, because the workers
        import the main module; every worker also pays for that module's top-level imports
        (import torch inside ``main()`` for fast start-up). Notebooks need nothing.
    """

    __doc__ = (__doc__ or "") + AUTORESET_CONTRACT

    #: seconds between two liveness checks while waiting for a reply
    POLL_INTERVAL = 0.1
    #: seconds ``close()`` waits for workers to exit before terminating them
    CLOSE_TIMEOUT = 2.0

    def __init__(
        self,
        env_fns: Sequence[EnvFn],
        seed: int | None = None,
        *,
        context: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self._processes: list[Any] = []
        self._remotes: list[Any] = []
        self._pending: list[bool] = []
        self._shm: shared_memory.SharedMemory | None = None
        self._shared_obs: np.ndarray | None = None  # (N, *obs_shape), written by the workers
        self._started = False  # True once every worker has made its env
        env_fns = check_env_fns(env_fns)
        seed = check_seed(seed)
        check_number("timeout", timeout, allow_none=True, fix="seconds a worker may take")
        methods = multiprocessing.get_all_start_methods()
        method = default_start_method() if context is None else context
        if method not in methods:
            raise ValueError(
                f"`context` must be None or one of {methods} (multiprocessing start methods "
                f"on {sys.platform}), got {context!r}."
            )
        self.start_method = method
        self.timeout = timeout
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            # Takes effect only if the (process-wide) forkserver has not started yet.
            ctx.set_forkserver_preload(forkserver_preload())
        # Workers must share this process's resource tracker, which owns the shared block
        # of observations (see _share_observations): start it before any worker.
        resource_tracker.ensure_running()
        try:
            for i, fn in enumerate(env_fns):
                pickled = pickle_env_fn(fn, i)
                parent_remote, child_remote = ctx.Pipe()
                process = ctx.Process(
                    target=worker_main,
                    args=(i, child_remote, pickled),
                    name=f"EnvWorker-{i}",
                    daemon=True,
                )
                process.start()
                child_remote.close()  # only the worker holds its end: its death gives EOF here
                self._processes.append(process)
                self._remotes.append(parent_remote)
                self._pending.append(False)
            spaces = self._request([("spaces", None)] * len(env_fns))
            self._started = True
            self._setup(len(env_fns), [s[0] for s in spaces], [s[1] for s in spaces], seed)
            self._share_observations()
        except BaseException:
            self.close()
            raise

    @property
    def worker_pids(self) -> list[int | None]:
        """Process ids of the workers (env ``i`` runs in ``worker_pids[i]``)."""
        return [process.pid for process in self._processes]

    def _share_observations(self) -> None:
        """Give the workers a shared ``(N, *obs_shape)`` array to write observations into.

        Only for a ``Box`` observation space (fixed shape and dtype, like Atari frames);
        other spaces keep sending observations through the pipes.
        """
        space = self.single_observation_space
        if not isinstance(space, gym.spaces.Box):
            return
        nbytes = self.num_envs * int(np.prod(space.shape)) * np.dtype(space.dtype).itemsize
        self._shm = shared_memory.SharedMemory(create=True, size=max(nbytes, 1))
        self._shared_obs = np.ndarray(
            (self.num_envs, *space.shape), dtype=space.dtype, buffer=self._shm.buf
        )
        shape, dtype = tuple(space.shape), np.dtype(space.dtype).str
        self._request(
            [
                ("attach", ObsSlot(self._shm.name, self.num_envs, shape, dtype, i))
                for i in range(self.num_envs)
            ]
        )

    # ------------------------------------------------------------------ hooks
    def _reset_envs(
        self, seeds: list[int | None], options: dict[str, Any] | None
    ) -> list[tuple[Any, dict[str, Any]]]:
        self._drain()  # replies left over by an interrupted call
        results = self._request([("reset", (seed, options)) for seed in seeds])
        if self._shared_obs is not None:  # the workers wrote the observations there
            results = [(self._shared_obs[i], info) for i, (_, info) in enumerate(results)]
        return results

    def _step_envs(self, actions: list[Any]) -> list[EnvStep]:
        assert not any(self._pending), "step() with replies pending: _needs_reset_reason unset"
        results = self._request([("step", action) for action in actions])
        if self._shared_obs is not None:  # views; BatchBase._stack copies them out
            results = [res._replace(obs=self._shared_obs[i]) for i, res in enumerate(results)]
        return results

    def close_extras(self, **kwargs: Any) -> None:
        """Ask every worker to exit, wait up to ``CLOSE_TIMEOUT`` s, then terminate or kill."""
        for remote, process in zip(self._remotes, self._processes, strict=True):
            if process.is_alive():
                try:
                    remote.send(("close", None))
                except OSError:
                    pass  # already gone
        deadline = time.monotonic() + self.CLOSE_TIMEOUT
        for process in self._processes:
            process.join(max(0.0, deadline - time.monotonic()))
        for stop in ("terminate", "kill"):
            for process in self._processes:
                if process.is_alive():
                    getattr(process, stop)()
                    process.join(1.0)
        for remote in self._remotes:
            remote.close()
        if self._shm is not None:
            self._shared_obs = None  # drop our view before closing the block
            try:
                self._shm.close()
            except BufferError:  # a view is still referenced somewhere: unlink anyway
                pass
            try:
                self._shm.unlink()
            except FileNotFoundError:  # already gone
                pass
            self._shm = None

    # ------------------------------------------------------------------ pipes
    def _request(self, messages: list[tuple[str, Any]]) -> list[Any]:
        """Send message i to worker i, then collect every reply (so workers run in parallel)."""
        for i, message in enumerate(messages):
            try:
                self._remotes[i].send(message)
            except OSError:  # BrokenPipeError: the worker is dead
                self._fail(i, self._death_message(i))
            self._pending[i] = True
        replies = self._collect(range(len(messages)))
        return [replies[i] for i in range(len(messages))]

    def _collect(self, indices: Iterable[int]) -> dict[int, Any]:
        """Wait for the reply of every worker in ``indices``; return ``{index: payload}``.

        Replies are read as they arrive, with one ``wait`` over all pipes; a dead worker's
        pipe reports end-of-file at once, and a silent one is checked every
        ``POLL_INTERVAL`` s.
        """
        replies: dict[int, Any] = {}
        waiting = {self._remotes[i]: i for i in indices}
        deadline = math.inf if self.timeout is None else time.monotonic() + self.timeout
        while waiting:
            ready = wait_for_connections(list(waiting), timeout=self.POLL_INTERVAL)
            for remote in ready:
                i = waiting.pop(remote)
                replies[i] = self._read_reply(i)
            if not ready:
                for i in waiting.values():
                    if not self._processes[i].is_alive():
                        self._fail(i, self._death_message(i))
                if time.monotonic() > deadline:
                    self._fail(min(waiting.values()), f"no reply within timeout={self.timeout} s.")
        return replies

    def _read_reply(self, i: int) -> Any:
        """Read worker ``i``'s waiting reply; re-raise its failure as an ``EnvWorkerError``."""
        try:
            payload, ok = self._remotes[i].recv()
        except (EOFError, OSError):
            self._fail(i, self._death_message(i))
        self._pending[i] = False
        if not ok:
            message, worker_traceback = payload
            where = "the env" if self._started else f"the env factory `env_fns[{i}]()`"
            self._fail(i, f"{where} raised {message}", worker_traceback)
        return payload

    def _drain(self) -> None:
        """Read and drop the replies an interrupted call left in the pipes."""
        self._collect(i for i, pending in enumerate(self._pending) if pending)

    def _fail(self, i: int, message: str, worker_traceback: str = "") -> None:
        """Close the whole batch, then raise ``EnvWorkerError`` for worker ``i``."""
        self.close()
        raise EnvWorkerError(
            i, f"{message}\nThe batch has been closed; make a new one.", worker_traceback
        )

    def _death_message(self, i: int) -> str:
        process = self._processes[i]
        process.join(1.0)  # let the exit code arrive
        code = process.exitcode
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}" if code is not None else "stopped"
        if not self._started:
            return (
                f"the worker process {how} before it could make its env. Its own error "
                f"output (the terminal, or the Jupyter server log) says why; in a script, "
                f"a missing `if __name__ == '__main__':` guard is the usual cause."
            )
        return (
            f"the worker process {how} without replying (a crash in C code such as a "
            f"segfault, out of memory, os._exit, or an outside kill)."
        )
