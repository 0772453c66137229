"""Tests of the Python env batches (`course_lib.batches.sequential`, `course_lib.batches.parallel`), on the tiny fake envs of `tests.fake_envs`.

Most tests run for both classes; the process tests (dead workers, zombies, spawn) run for
`ParallelEnvBatch` only. Every test that starts processes has a timeout, so a hang fails.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest

from course_lib.batches.parallel import (
    EnvWorkerError,
    ParallelEnvBatch,
    default_start_method,
    forkserver_preload,
)
from course_lib.batches.sequential import EnvBatch
from tests.fake_envs import (
    REWARD_SCALE,
    CounterEnv,
    DyingEnv,
    LockInfoEnv,
    RaisingEnv,
    SlowEnv,
)

BATCHES = [EnvBatch, ParallelEnvBatch]
pytestmark = pytest.mark.timeout(60)


def counters(n: int = 2, **kwargs) -> list:
    return [functools.partial(CounterEnv, **kwargs)] * n


def pid_gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid any more."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(pid_gone(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(params=BATCHES, ids=lambda cls: cls.__name__)
def batch_cls(request):
    return request.param


# ---------------------------------------------------------------------------- API and shapes
def test_reset_and_step_shapes_dtypes_and_rewards(batch_cls):
    """Do obs, rewards and flags have the vector API's shapes and dtypes, and right values?"""
    with batch_cls(counters(3, episode_length=5), seed=0) as batch:
        assert batch.num_envs == 3 and not hasattr(batch, "nenvs")
        assert batch.metadata["autoreset_mode"].value == "SameStep"
        assert batch.single_observation_space.shape == (2,)
        assert batch.observation_space.shape == (3, 2)
        assert batch.action_space.shape == (3,)
        obs, infos = batch.reset()
        assert obs.shape == (3, 2) and obs.dtype == np.uint8
        assert obs[:, 1].tolist() == [0, 0, 0]
        obs2, rewards, terminated, truncated, infos = batch.step(np.array([0, 1, 3]))
        assert obs2.shape == (3, 2) and obs2.dtype == np.uint8
        assert rewards.dtype == np.float32 and rewards.shape == (3,)
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        assert terminated.shape == truncated.shape == (3,)
        # reward = REWARD_SCALE * action + t, with t = 1 after the first step
        np.testing.assert_array_equal(rewards, REWARD_SCALE * np.array([0, 1, 3]) + 1)
        assert obs2[:, 1].tolist() == [1, 1, 1] and (obs2[:, 0] == obs[:, 0]).all()
        assert infos["t"].tolist() == [1, 1, 1] and infos["_t"].all()


@pytest.mark.parametrize("truncate", [False, True], ids=["terminated", "truncated"])
def test_same_step_autoreset_returns_next_episode_obs_and_final_obs(batch_cls, truncate):
    """When an episode ends, is obs[i] the next episode's first obs, and final_obs the last?"""
    with batch_cls(counters(2, episode_length=2, truncate=truncate), seed=3) as batch:
        obs0, _ = batch.reset()
        obs1, *_ = batch.step([1, 2])
        obs2, _, terminated, truncated, infos = batch.step([1, 2])
        assert (truncated if truncate else terminated).tolist() == [True, True]
        assert not (terminated if truncate else truncated).any()
        assert obs2[:, 1].tolist() == [0, 0]  # already the first obs of the next episode
        assert infos["_final_obs"].tolist() == [True, True]
        for i in range(2):
            np.testing.assert_array_equal(infos["final_obs"][i], [obs0[i, 0], 2])
        # the next episode goes on from the reset obs
        obs3, _, terminated, truncated, _ = batch.step([0, 0])
        assert obs3[:, 1].tolist() == [1, 1] and not (terminated | truncated).any()
        np.testing.assert_array_equal(obs3[:, 0], obs2[:, 0])


def test_finishing_step_info_kept_at_top_level(batch_cls):
    """Is a finished game's info["episode"] at the top level with its mask, not lost to reset?"""
    fns = [functools.partial(CounterEnv, episode_length=2), functools.partial(CounterEnv, 3)]
    with batch_cls(fns, seed=0) as batch:
        batch.reset()
        batch.step([1, 1])
        _, _, terminated, _, infos = batch.step([2, 2])
        assert terminated.tolist() == [True, False]
        assert infos["_episode"].tolist() == [True, False]
        episode = infos["episode"]
        # env 0: rewards (10*1 + 1) + (10*2 + 2) = 33 over 2 steps
        assert episode["r"][0] == 33.0 and episode["l"][0] == 2
        assert episode["r"].dtype.kind == "f" and episode["l"].dtype.kind == "i"
        assert episode["t"].dtype.kind == "f"
        assert infos["t"].tolist() == [2, 2]  # the step's info, not the reset's
        assert "reset_info" not in infos
        assert infos["_final_info"].tolist() == [True, False]
        assert infos["final_info"]["episode"]["r"][0] == 33.0
        assert "_final_obs" in infos and infos["_final_obs"].tolist() == [True, False]


# ---------------------------------------------------------------------------- seeding
def single_env_starts(seed: int, resets: int) -> list[int]:
    env = CounterEnv()
    starts = [int(env.reset(seed=seed)[0][0])]
    starts += [int(env.reset()[0][0]) for _ in range(resets - 1)]
    return starts


def test_seeding_is_reproducible_and_per_env(batch_cls):
    """Does reset(seed=k) seed env i with k + i, and do later resets continue each RNG?"""
    with batch_cls(counters(3), seed=None) as batch:
        first = batch.reset(seed=10)[0][:, 0]
        second = batch.reset()[0][:, 0]
    for i in range(3):
        assert [first[i], second[i]] == single_env_starts(10 + i, 2)
    assert len(set(first.tolist())) > 1, "envs of a batch must get different seeds"


def test_constructor_seed_used_by_first_reset_only(batch_cls):
    """Do two batches with the same constructor seed give identical episodes?"""
    runs = []
    for _ in range(2):
        with batch_cls(counters(2, episode_length=2), seed=7) as batch:
            trace = [batch.reset()[0]]
            for _ in range(5):  # crosses two autoresets
                trace.append(batch.step([1, 0])[0])
            trace.append(batch.reset()[0])
            runs.append(np.stack(trace))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0][0, :, 0].tolist() == [single_env_starts(7, 1)[0], single_env_starts(8, 1)[0]]
    assert not np.array_equal(runs[0][0], runs[0][-1]), "a later reset() must not reseed"


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("actions", "received"),
    [
        ([0], "shape (1,)"),
        ([[0], [1]], "shape (2, 1)"),
        (np.array([0.0, 1.0]), "dtype float64"),
        ([0, 4], "[0, 4]"),
        (np.array([-1, 0]), "[-1, 0]"),
        ([[0], [1, 2]], "list that numpy cannot read"),
        (np.array([True, False]), "dtype bool"),
    ],
    ids=["length", "2d", "float", "too-big", "negative", "ragged", "bool"],
)
def test_bad_actions_raise_before_any_env_moves(batch_cls, actions, received):
    """Do bad actions give a ValueError naming shape (N,), range [0, n) and what came in?"""
    with batch_cls(counters(2, n_actions=4), seed=0) as batch:
        batch.reset()
        with pytest.raises(ValueError) as err:
            batch.step(actions)
        message = str(err.value)
        assert "(2,)" in message and "[0, 4)" in message and received in message
        obs, *_ = batch.step(np.array([3, 0], dtype=np.int32))  # nothing moved before
        assert obs[:, 1].tolist() == [1, 1]


def test_float_actions_say_to_sample_indices_without_giving_the_line(batch_cls):
    """Does the float-actions error name the idea (indices drawn from the softmax of each env's
    logits) without handing out a line of the answer?"""
    with batch_cls(counters(2, n_actions=4), seed=0) as batch:
        batch.reset()
        with pytest.raises(ValueError) as err:
            batch.step(np.array([0.2, 0.8]))
        message = str(err.value)
        assert "integer action indices" in message and "softmax" in message
        assert "Categorical(" not in message and ".sample()" not in message


def test_int_action_types_accepted(batch_cls):
    """Are lists of Python ints and numpy int/uint arrays all valid actions?"""
    with batch_cls(counters(2, episode_length=10), seed=0) as batch:
        batch.reset()
        choices = ([1, 2], np.array([2, 3], dtype=np.uint8), np.array([3, 0], dtype=np.int32))
        for t, actions in enumerate(choices, start=1):
            _, rewards, *_ = batch.step(actions)
            expected = REWARD_SCALE * np.asarray(actions, dtype=np.float32) + t
            np.testing.assert_array_equal(rewards, expected)


def test_bad_env_fns_and_mismatched_spaces(batch_cls):
    """Are empty, non-callable and mismatched env_fns refused with a clear message?"""
    with pytest.raises(ValueError, match="empty"):
        batch_cls([])
    with pytest.raises(TypeError, match="not `make_env\\(\\)`"):
        batch_cls([CounterEnv()])
    with pytest.raises(TypeError, match="list of zero-argument functions"):
        batch_cls(CounterEnv)
    with pytest.raises(ValueError, match=r"`seed` must be None or an int >= 0"):
        batch_cls(counters(1), seed=-1)
    mixed = [functools.partial(CounterEnv, n_actions=4), functools.partial(CounterEnv, n_actions=3)]
    with pytest.raises(ValueError, match="same action space.*env 1 has Discrete\\(3\\)"):
        batch_cls(mixed)


# ---------------------------------------------------------------------------- lifetime
def test_close_is_idempotent_and_context_manager_closes(batch_cls):
    """Does `with` close the batch, can close() run twice, and is a closed batch refused?"""
    with batch_cls(counters(2)) as batch:
        batch.reset()
    assert batch.closed
    batch.close()
    with pytest.raises(RuntimeError, match="closed"):
        batch.step([0, 0])


def test_step_before_reset_is_refused(batch_cls):
    """Does step() before the first reset() say that reset() is needed?"""
    with batch_cls(counters(1)) as batch:
        with pytest.raises(RuntimeError, match="reset\\(\\) has not been called"):
            batch.step([0])


def interrupt_main_after(seconds: float) -> threading.Timer:
    """Send SIGINT to this process (like Ctrl-C) after `seconds`, from a timer thread."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_keyboard_interrupt_in_step_needs_reset_then_recovers(batch_cls):
    """After Ctrl-C in step(), is step() refused with a clear message until reset() works?"""
    # Ctrl-C raises KeyboardInterrupt here even when the suite was started with SIGINT ignored
    # (nohup, a script's background job), as it does in the terminal or notebook a user has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    fns = [functools.partial(SlowEnv, delay=0.4, episode_length=10)] * 2
    try:
        _interrupt_step_then_recover(batch_cls, fns)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_step_then_recover(batch_cls, fns):
    with batch_cls(fns, seed=0) as batch:
        batch.reset()
        timer = interrupt_main_after(0.1)
        with pytest.raises(KeyboardInterrupt):
            batch.step([1, 1])
        timer.join()
        with pytest.raises(RuntimeError, match="KeyboardInterrupt.*Call reset\\(\\)"):
            batch.step([1, 1])
        obs, _ = batch.reset(seed=0)
        assert obs[:, 1].tolist() == [0, 0]
        obs, rewards, *_ = batch.step([1, 2])
        assert obs[:, 1].tolist() == [1, 1] and rewards.tolist() == [11.0, 21.0]


def test_env_batch_exception_propagates_with_env_index():
    """Does EnvBatch let the env's own exception through, noting which env raised?"""
    fns = [functools.partial(CounterEnv), functools.partial(RaisingEnv, fail_at=1)]
    with EnvBatch(fns) as batch:
        batch.reset()
        with pytest.raises(RuntimeError, match="fake env failure") as err:
            batch.step([0, 0])
        if sys.version_info >= (3, 11):  # exception notes exist from Python 3.11
            assert err.value.__notes__ == ["(raised by env 1 of the batch)"]
        with pytest.raises(RuntimeError, match="stopped half-way.*Call reset"):
            batch.step([0, 0])  # env 0 moved, env 1 did not: the batch wants a reset


# ---------------------------------------------------------------------------- worker processes
def test_worker_exception_reraised_with_index_and_traceback():
    """Does an env error come back as EnvWorkerError with the index and worker traceback?"""
    fns = [functools.partial(CounterEnv), functools.partial(RaisingEnv, fail_at=2)]
    batch = ParallelEnvBatch(fns)
    pids = batch.worker_pids
    batch.reset()
    batch.step([0, 0])
    with pytest.raises(EnvWorkerError) as err:
        batch.step([0, 0])
    message = str(err.value)
    assert err.value.index == 1 and "worker 1" in message
    assert "RuntimeError: fake env failure at step 2" in message
    assert "Traceback" in message and "fake_envs.py" in message
    assert batch.closed and wait_gone(pids)


def test_unpicklable_reply_reported_not_fatal_silence():
    """Does an info the worker cannot send back give EnvWorkerError, not a silent death?"""
    with ParallelEnvBatch([functools.partial(LockInfoEnv)]) as batch:
        batch.reset()
        with pytest.raises(EnvWorkerError, match=r"(?s)worker 0.*cannot send the reply.*lock"):
            batch.step([0])


def test_failing_factory_reported_at_construction():
    """Does an env factory that raises in the worker give EnvWorkerError right away?"""

    def broken_factory():
        raise OSError("no ROM here")

    with pytest.raises(EnvWorkerError, match=r"(?s)worker 0.*env_fns\[0\].*no ROM here"):
        ParallelEnvBatch([broken_factory])


@pytest.mark.parametrize("how", ["os._exit", "SIGKILL"])
def test_dead_worker_detected_quickly(how):
    """Is a worker that dies (os._exit, or killed from outside) detected in seconds, no hang?"""
    if how == "os._exit":
        fns = [functools.partial(CounterEnv), functools.partial(DyingEnv, die_at=1)]
    else:
        fns = [functools.partial(CounterEnv), functools.partial(SlowEnv, delay=30.0)]
    batch = ParallelEnvBatch(fns)
    pids = batch.worker_pids
    batch.reset()
    if how == "SIGKILL":
        threading.Timer(0.2, os.kill, (pids[1], signal.SIGKILL)).start()
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match="worker 1") as err:
        batch.step([0, 0])
    assert time.monotonic() - start < 5.0
    expected = "exited with code 3" if how == "os._exit" else "killed by signal SIGKILL"
    assert expected in str(err.value)
    assert batch.closed and wait_gone(pids)


def test_no_worker_left_after_close_or_garbage_collection():
    """Are all workers gone (not even zombies) after close(), and after `del` + gc?"""
    batch = ParallelEnvBatch(counters(2))
    pids = batch.worker_pids
    assert not any(pid_gone(pid) for pid in pids)
    batch.close()
    assert wait_gone(pids, within=0.5)

    batch = ParallelEnvBatch(counters(2))
    pids = batch.worker_pids
    batch.reset()
    del batch
    gc.collect()
    assert wait_gone(pids)
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("EnvWorker")]


def test_workers_ignore_sigint():
    """Does a Ctrl-C that reaches the workers (terminal process group) leave them running?"""
    with ParallelEnvBatch(counters(2), seed=0) as batch:
        batch.reset()
        for pid in batch.worker_pids:
            os.kill(pid, signal.SIGINT)
        time.sleep(0.2)
        obs, *_ = batch.step([0, 0])
        assert obs[:, 1].tolist() == [1, 1]


def test_spawn_start_method_with_lambda_factory():
    """Do notebook-style lambdas survive the spawn start method (cloudpickle)?"""
    length = 2
    with ParallelEnvBatch([lambda: CounterEnv(episode_length=length)] * 2, context="spawn") as b:
        assert b.start_method == "spawn"
        b.reset(seed=0)
        b.step([0, 0])
        _, _, terminated, _, infos = b.step([0, 0])
        assert terminated.tolist() == [True, True] and infos["_episode"].all()


def test_timeout_and_bad_options():
    """Does `timeout` stop a stuck worker, and are bad options refused?"""
    with pytest.raises(ValueError, match="`context`.*'threads'"):
        ParallelEnvBatch(counters(1), context="threads")
    with pytest.raises(ValueError, match="`timeout`.*-1"):
        ParallelEnvBatch(counters(1), timeout=-1)
    with pytest.raises(TypeError, match=r"env_fns\[0\].*cannot be pickled"):
        lock = threading.Lock()
        ParallelEnvBatch([lambda: (lock, CounterEnv())[1]])
    batch = ParallelEnvBatch([functools.partial(SlowEnv, delay=30.0)], timeout=0.3)
    batch.CLOSE_TIMEOUT = 0.2  # the worker sleeps in step: do not wait for it to finish
    batch.reset()
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match="timeout=0.3"):
        batch.step([0])
    assert time.monotonic() - start < 3.0 and batch.closed


def dead_or_zombie(pid: int) -> bool:
    """True when the process is gone or a zombie (an orphan's zombie waits for PID 1)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:  # no /proc (macOS): fall back to a signal 0 probe
        return pid_gone(pid)


def test_workers_exit_when_parent_is_killed(tmp_path):
    """Do workers exit (pipe EOF) when the parent dies without any chance to clean up?"""
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            """
            import functools, os, signal, sys
            sys.path.insert(0, sys.argv[1])
            from course_lib.batches.parallel import ParallelEnvBatch
            from tests.fake_envs import CounterEnv

            if __name__ == "__main__":
                batch = ParallelEnvBatch([functools.partial(CounterEnv)] * 2)
                batch.reset()
                print(*batch.worker_pids, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # Output to a file, not a pipe: the workers inherit it, and waiting for a pipe to close
    # would wait for the workers themselves.
    out = tmp_path / "pids.txt"
    with open(out, "w") as stdout:
        parent = subprocess.Popen([sys.executable, str(script), root], stdout=stdout)
        assert parent.wait(timeout=60) == -signal.SIGKILL
    pids = [int(pid) for pid in out.read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5.0
    while not all(dead_or_zombie(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(dead_or_zombie(pid) for pid in pids), "workers outlived their parent"


@pytest.mark.parametrize(
    ("spec_name", "file", "torch_preloaded"),
    [
        ("solutions.train", None, True),  # python -m solutions.train
        (None, "/somewhere/train.py", True),  # python train.py
        ("pytest.__main__", None, False),  # python -m pytest: not re-run in workers
        (None, None, False),  # a notebook or the REPL
    ],
)
def test_forkserver_preload_adds_torch_only_for_scripts(
    monkeypatch, spec_name, file, torch_preloaded
):
    """Is torch preloaded exactly when each worker would re-run a main script importing it?"""
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name=spec_name) if spec_name else None
    if file:
        main.__file__ = file
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    modules = forkserver_preload()
    assert modules[0] == "course_lib.batches.worker"
    assert ("torch" in modules) == torch_preloaded
    monkeypatch.delitem(sys.modules, "torch")
    assert "torch" not in forkserver_preload()
    assert default_start_method() in ("forkserver", "spawn")
