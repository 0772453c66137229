"""The student's agent, inside the sandbox: answers the grader's observations with logits.

Usage: ``python agent_server.py`` (started by :mod:`autograder.core.agent_play`, with the channel's
file descriptor in ``A2C_CHANNEL_FD``). Nothing here is trusted or importable from the
grader's packages; the grader's side (``autograder/core/agent_play/framing.py``) writes and reads
the same frames and checks every byte it gets back.

Standard input carries, in binary frames (4-byte tag, little-endian length, payload):

* one ``JOB`` frame: JSON ``{"cells": [source, ...], "bundle": {...}, "threads": n,
  "cpu_seconds": s}`` (``s``: the CPU cap, set on this process as ``RLIMIT_CPU``): the
  notebook's set-up cells and the cells that define ``make_model`` (run here with IPython, as
  in Jupyter), and the saved agent the grader has already checked
  (:func:`course_lib.saved_agent.unpack_agent`);
* then ``ASK`` frames, each a batch of observations ``uint8 (B, 4, 84, 84)`` (``B`` in the
  length), until an empty ``ASK`` or the end of input.

The channel carries one ``ANSWER`` frame per frame received: first JSON ``{"ready": true}`` or
``{"ready": false, "error": ...}`` (the network could not be built or loaded), then per batch
the logits ``float32 (B, A)``. The network never sees a seed, a score or an action; it answers
frames only, and the grader samples the actions from its logits.
"""

import json
import os
import resource
import struct
import sys
import time

JOB, ASK, ANSWER = b"A2CJ", b"A2CQ", b"A2CR"
HEADER = struct.Struct("<4sQ")
OBSERVATION_BYTES = 4 * 84 * 84


def _read_exact(stream, size):
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _read_frame(stream, tag):
    head = _read_exact(stream, HEADER.size)
    if head is None:
        return None
    got, size = HEADER.unpack(head)
    if got != tag:
        raise SystemExit(f"agent_server: expected a {tag!r} frame, got {got!r}")
    return _read_exact(stream, size)


def _send(fd, payload):
    data = memoryview(HEADER.pack(ANSWER, len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def _network(job):
    """The student's ``make_model`` (defined by the job's cells) with the saved weights."""
    import torch
    from IPython.core.interactiveshell import InteractiveShell

    from course_lib.saved_agent import load_weights, unpack_agent

    torch.set_num_threads(int(job.get("threads", 1)))
    shell = InteractiveShell.instance()
    for source in job["cells"]:
        result = shell.run_cell(source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise RuntimeError(
                f"a cell that make_model needs failed: {type(error).__name__}: {error}"
            )
    make_model = shell.user_ns.get("make_model")
    if not callable(make_model):
        raise RuntimeError("the notebook defines no make_model")
    weights = unpack_agent(job["bundle"])
    model = load_weights(make_model(weights.n_actions), weights)
    model.eval()
    return model, torch


def main():
    channel = int(os.environ["A2C_CHANNEL_FD"])
    os.set_inheritable(channel, False)
    requests = sys.stdin.buffer
    sys.stdin = open(os.devnull)  # input() in a cell gets EOF instead of reading requests
    job = json.loads(_read_frame(requests, JOB))
    # The verification's CPU cap, on this process too, before any of the student's code runs: a
    # hard limit it cannot raise (the grader measures the whole run from outside where it has a
    # cgroup, and stops first; this is the cap where it has none).
    cap = int(job.get("cpu_seconds", 20)) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (cap, cap))
    try:
        model, torch = _network(job)
    except BaseException as error:  # noqa: BLE001 - the student's code: any failure is a note
        message = f"{type(error).__name__}: {error}"[:2000]
        _send(channel, json.dumps({"ready": False, "error": message}).encode())
        return 0
    _send(channel, json.dumps({"ready": True}).encode())
    while True:
        batch = _read_frame(requests, ASK)
        if not batch:  # the CPU it used, for the log (benchmarks/agent_grading.py reads it)
            print(f"agent_server: {time.process_time():.2f} s CPU", file=sys.stderr)
            return 0
        observations = torch.frombuffer(bytearray(batch), dtype=torch.uint8)
        observations = observations.reshape(-1, 4, 84, 84)
        with torch.no_grad():
            out = model(observations)
        logits = out[0] if isinstance(out, (tuple, list)) else out
        _send(channel, logits.detach().to(torch.float32).contiguous().numpy().tobytes())


if __name__ == "__main__":
    sys.exit(main())
