"""The student's Python process, inside the sandbox: runs cells and probes the parts they define.

Usage: ``python executor.py REPLY_FD`` (started by ``runner.py``), or forked from the template
(``template.py`` imports it and calls :func:`prepare` once, then each student's process calls
:func:`serve`). Requests come one JSON line at a time on standard input:

* ``{"op": "run", "source": ...}``: run one notebook cell with IPython (magics and ``!``
  commands work as in Jupyter); reply ``{"error": null}`` or ``{"error": "<what it raised>"}``;
* ``{"op": "probe", "part", "name", "steps", "scale"}``: run the plan's probe steps on the
  student's ``name`` as defined now (:func:`grading_runtime.harness.run_steps`: each step
  seeded and time-limited); reply one ``{"key", "record"}`` line per step, then ``{"done": true}``.

Replies go to the file descriptor ``REPLY_FD``; what the student's code prints goes to
standard output and error (the grader keeps the end of it as the log). Nothing here judges:
the records are plain data, written with :func:`grading_runtime.record.dumps`, that the grader
decodes and validates; requests are read with :func:`grading_runtime.record.read_request`,
which only turns the plan's encoded arrays back into arrays.

Before the first cell runs, the executor puts :mod:`grading_runtime.eager_torch`'s stand-in for
``torch._dynamo`` in place (building the student's first optimizer would otherwise import
``torch.compile``'s machinery, 2 to 3 s), keeps its own references to the runtime's entry points
and seals the runtime's modules (:class:`grading_runtime.seal.Seal`). A probe step whose
seal is broken (a cell rebound the probe table, a probe, or a function's code) is not run or
not reported: its record says ``tampered``, which makes the result ``tampered``.
"""

import json
import os
import signal
import sys


def _runtime():
    """The runtime's modules, and what the seal will cover (taken in the student's process,
    before any cell of the student's runs)."""
    from grading_runtime import eager_torch, harness, record, seal

    eager_torch.install()  # the student's first optimizer costs no torch.compile import

    # Every module of the runtime (the probes, one module a part, included) and what the probes
    # read of course_lib's checks.
    sealed = [module for name, module in sorted(sys.modules.items()) if _sealed_name(name)]
    return harness, record, seal.Seal, sealed


def _sealed_name(name):
    return name.split(".")[0] == "grading_runtime" or name in (
        "course_lib.checks",
        "course_lib.checks.fixtures",
        "course_lib.checks.layers",
        "course_lib.checks.properties",
        "course_lib.saved_agent",
    )


def _tampered(changed):
    return {
        "ok": False,
        "timed_out": False,
        "tampered": True,
        "error": "changed: " + ", ".join(changed[:8]),
    }


def _probe(run_steps, dumps, broken, request):
    """``(key, record text)`` of each step. The seal is checked before the first step and after
    each (a step runs the student's code); once it is broken, every step not yet reported gets
    a ``tampered`` record and is not run."""
    steps, sent = request["steps"], set()
    changed = broken()
    if not changed:
        outcomes = run_steps(request["candidate"], steps, request["scale"])
        for key, outcome in outcomes:
            changed = broken()
            if changed:
                outcomes.close()
                break
            sent.add(key)
            yield key, dumps(outcome)
    if changed:
        for step in steps:
            if step["key"] not in sent:
                yield step["key"], dumps(_tampered(changed))


def _answer_interrupts():
    """SIGINT raises ``KeyboardInterrupt`` here, whatever the grader was started with.

    A signal ignored or blocked by a parent stays so across ``exec``, and Python installs its
    handler only where SIGINT was left at the default: a grader started with ``nohup``, as a
    script's background job or by a CI runner would otherwise make every cell past its limit
    ignore the interrupt, be killed, and have the finished cells replayed.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def prepare():
    """Everything the executor imports before a student's first cell: IPython, the grading
    runtime (torch, numpy, ``course_lib``'s checks) and the stand-in for ``torch._dynamo``. The
    template (``template.py``) calls it once and forks every student's executor after it."""
    import IPython.core.interactiveshell  # noqa: F401 - imported now, the shell made per student

    return _runtime()


def serve(reply_fd, runtime, requests):
    """Answer the runner's ``requests`` (a file of JSON lines) until it ends; replies go to
    ``reply_fd``. ``runtime``: what :func:`prepare` returned. The seal is taken here, in the
    student's own process, before the first cell runs."""
    _answer_interrupts()
    replies = os.fdopen(int(reply_fd), "wb")
    os.set_inheritable(int(reply_fd), False)

    seq = None

    def reply(message):
        replies.write((json.dumps({**message, "seq": seq}) + "\n").encode())
        replies.flush()

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    harness, record, seal = runtime[0], runtime[1], runtime[2].capture(runtime[3])
    # Kept from before the first cell: a cell that rebinds these names changes nothing here.
    run_steps, dumps, broken = harness.run_steps, record.dumps, seal.broken
    read_request = record.read_request
    for line in requests:
        try:
            request = read_request(line)  # the grader's own request; the plan's cases hold arrays
            seq, op = request["seq"], request["op"]
        except Exception:  # noqa: BLE001 - not a request of the runner's: ignored
            continue
        if op == "run":
            result = shell.run_cell(request["source"], store_history=False)
            error = result.error_before_exec or result.error_in_exec
            reply({"error": None if error is None else f"{type(error).__name__}: {error}"[:2000]})
        elif op == "probe":
            candidate = shell.user_ns.get(request["name"])
            steps = request["steps"]
            if candidate is None:
                missing = {"ok": False, "timed_out": False, "missing": True, "error": "not defined"}
                for step in steps:
                    reply({"key": step["key"], "record": dumps(missing)})
            else:
                request["candidate"] = candidate
                for key, text in _probe(run_steps, dumps, broken, request):
                    reply({"key": key, "record": text})
            reply({"done": True})
    return 0


def main(reply_fd):
    """A fresh executor (no template): requests on standard input."""
    requests = sys.stdin
    sys.stdin = open(os.devnull)  # input() in a cell gets EOF instead of reading requests
    return serve(reply_fd, prepare(), requests)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
