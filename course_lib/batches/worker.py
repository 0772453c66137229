"""The loop that runs inside each worker process of :class:`~course_lib.batches.parallel.ParallelEnvBatch`.

Protocol (one pipe per worker, strictly one reply per command, in order):

==========================  =========================================================
parent sends                worker replies ``(payload, ok)``
==========================  =========================================================
``("spaces", None)``        ``((observation_space, action_space), True)``
``("attach", ObsSlot)``     ``(None, True)``: from now on observations go to shared memory
``("reset", (seed, opts))`` ``((obs, info), True)``
``("step", action)``        ``(EnvStep, True)`` (the env is already reset if it ended)
``("close", None)``         nothing: the worker closes its env and exits
==========================  =========================================================

Observations are the bulk of the traffic (28 KB per env and step for ``uint8 (4, 84, 84)``).
Once attached, a worker writes each new observation into its own row of a shared-memory array
(:class:`ObsSlot`) and sends ``None`` in its place, so the pipes carry only rewards, flags and
infos, and nothing is pickled twice. ``final_obs`` (rare) still travels through the pipe.

If the env raises, the worker replies ``((exception text, traceback text), False)`` and keeps
waiting: the parent decides what to do (it re-raises an :class:`EnvWorkerError`).

Two rules keep workers from outliving the parent:

* ``SIGINT`` is ignored here, so a Ctrl-C in a terminal stops the parent only (the parent
  then closes the workers in order, instead of every process dying half-way through a step);
* when the parent's end of the pipe is closed (the parent exited or crashed), ``recv()``
  raises ``EOFError`` and the worker exits.

How workers start is chosen here too: :func:`default_start_method` (and why not ``fork``)
and :func:`forkserver_preload` (what the forkserver imports once for all workers).
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing import shared_memory
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle
import numpy as np

from .base import step_with_autoreset

__all__ = [
    "EnvWorkerError",
    "ObsSlot",
    "default_start_method",
    "forkserver_preload",
    "pickle_env_fn",
    "worker_main",
]


class EnvWorkerError(RuntimeError):
    """An env in a worker process raised, or the worker process died.

    The message names the worker (= env index) and carries the worker's traceback, so the
    real cause shows in a notebook and not only in the terminal that runs Jupyter.
    """

    def __init__(self, index: int, message: str, worker_traceback: str = "") -> None:
        self.index = index
        self.worker_traceback = worker_traceback
        text = f"Env worker {index}: {message}"
        if worker_traceback:
            text += f"\n\n--- traceback in worker {index} ---\n{worker_traceback.rstrip()}"
        super().__init__(text)


@dataclass(frozen=True)
class ObsSlot:
    """Where a worker writes its observations: row ``index`` of a shared ``(N, *shape)`` array."""

    name: str  #: name of the ``multiprocessing.shared_memory.SharedMemory`` block
    nenvs: int
    shape: tuple[int, ...]
    dtype: str
    index: int

    def view(self, shm: shared_memory.SharedMemory) -> np.ndarray:
        """The whole ``(N, *shape)`` array backed by ``shm``."""
        return np.ndarray((self.nenvs, *self.shape), dtype=self.dtype, buffer=shm.buf)


def _attach(slot: ObsSlot) -> tuple[shared_memory.SharedMemory, np.ndarray]:
    """Open the parent's shared block and return it with this worker's row.

    The parent starts its resource tracker before its workers, so every worker shares it
    (whatever the start method) and the block is tracked once and unlinked by the parent
    alone, in ``close()``.
    """
    shm = shared_memory.SharedMemory(name=slot.name)
    return shm, slot.view(shm)[slot.index]


def worker_main(index: int, remote: Connection, pickled_env_fn: bytes) -> None:
    """Make env number ``index`` and serve the parent's commands until told to close.

    ``pickled_env_fn`` is the env factory pickled with ``cloudpickle`` in the parent, so
    factories defined in a notebook (lambdas, local functions) work with ``spawn`` too.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _one_thread_per_worker()
    env = None
    shm, obs_row = None, None  # set by "attach"
    try:
        while True:
            try:
                command, data = remote.recv()
            except (EOFError, OSError):
                return  # the parent is gone: never outlive it
            if command == "close":
                return
            try:
                if env is None:  # made lazily so that a failing factory is reported too
                    env = cloudpickle.loads(pickled_env_fn)()
                if command == "attach":
                    shm, obs_row = _attach(data)
                    reply = (None, True)
                else:
                    reply = (_run(env, command, data, obs_row), True)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent
                reply = (_describe(exc), False)
            _send(remote, reply)
    except OSError:
        return  # the parent closed the pipe while we were replying
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing is best effort on the way out
                pass
        if shm is not None:
            del obs_row  # the view must go before the block can be closed
            shm.close()
        remote.close()


def _one_thread_per_worker() -> None:
    """Keep OpenCV on this worker's own thread.

    A batch already runs one process per env: OpenCV's default thread pool (one thread per
    core) in every worker only adds thread wake-ups and context switches to each tiny resize.
    """
    import cv2

    cv2.setNumThreads(1)


def _describe(exc: BaseException) -> tuple[str, str]:
    """``("ExcType: message", traceback text)`` of the exception being handled."""
    return f"{type(exc).__name__}: {exc}", traceback.format_exc()


def _send(remote: Connection, reply: tuple[Any, bool]) -> None:
    """Send ``reply``; if it cannot be pickled, send that error instead (no silent death).

    ``Connection.send`` pickles the whole object before writing anything, so a failed
    pickle leaves the pipe clean. An ``OSError`` (the parent is gone) propagates.
    """
    try:
        remote.send(reply)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. an info value that cannot be pickled
        message, trace = _describe(exc)
        remote.send((("cannot send the reply to the parent: " + message, trace), False))


def _run(env: Any, command: str, data: Any, obs_row: np.ndarray | None) -> Any:
    """Carry out one command on ``env`` and return the reply payload.

    With a shared ``obs_row``, the observation is written there and replaced by ``None``.
    """
    if command == "step":
        result = step_with_autoreset(env, data)
        if obs_row is not None:
            obs_row[...] = result.obs
            result = result._replace(obs=None)
        return result
    if command == "reset":
        seed, options = data
        obs, info = env.reset(seed=seed, options=options)
        if obs_row is not None:
            obs_row[...] = obs
            obs = None
        return obs, dict(info)
    if command == "spaces":
        return env.observation_space, env.action_space
    raise ValueError(f"Unknown command {command!r} sent to an env worker.")


def pickle_env_fn(fn: Any, index: int) -> bytes:
    """Pickle one env factory with cloudpickle, with a clear error when that is impossible."""
    try:
        return cloudpickle.dumps(fn)
    except Exception as exc:
        raise TypeError(
            f"`env_fns[{index}]` ({fn!r}) cannot be pickled to send it to a worker process: "
            f"{exc}. Make the env inside the function (e.g. `lambda: make_env(...)`), do not "
            f"capture an env, a lock or an open file in it."
        ) from exc


def forkserver_preload() -> list[str]:
    """Modules the forkserver imports once, so that each worker forked from it starts fast.

    * this worker module, which pulls in numpy, gymnasium, ale-py and OpenCV;
    * ``torch``, when the parent has imported it AND runs as a script (``python train.py``
      or ``python -m package.train``): with ``spawn`` and ``forkserver`` every worker re-runs
      the main script's top-level code, and a top-level ``import torch`` in each of 8
      workers took 19 s instead of 3 s here. Importing torch does not start its thread
      pool, so forking from the server stays safe. Notebooks do not re-run anything.
    """
    modules = [__name__]
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:  # python -m NAME; multiprocessing skips packages' __main__
        rerun = name != "__main__" and not name.endswith(".__main__")
    else:  # python path/to/script.py (notebooks and the REPL have no __file__)
        rerun = getattr(main, "__file__", None) is not None
    if rerun and "torch" in sys.modules:
        modules.append("torch")
    return modules


def default_start_method() -> str:
    """The start method of :class:`~course_lib.batches.parallel.ParallelEnvBatch` when ``context=None``.

    ``"forkserver"`` on Linux and macOS, ``"spawn"`` on Windows (the only one it has).

    ``"fork"`` is never the default: forking a process whose torch (OpenMP) or CUDA threads
    are running can deadlock or crash the child, and a notebook has started those long
    before it makes envs. ``"forkserver"`` forks each worker from a small server process
    that never ran torch, so it is as safe as ``"spawn"``; and since the server imports the
    env libraries once (:func:`forkserver_preload`), workers start almost as fast as with
    ``"fork"`` (docs/benchmarks.md).
    """
    methods = multiprocessing.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"
