"""The student's Python process, inside the sandbox: runs cells and probes the parts they define.

Usage: ``python executor.py REPLY_FD`` (started by ``runner.py``). Requests come one JSON line
at a time on standard input:

* ``{"op": "run", "source": ...}``: run one notebook cell with IPython (magics and ``!``
  commands work as in Jupyter); reply ``{"error": null}`` or ``{"error": "<what it raised>"}``;
* ``{"op": "probe", "part", "name", "steps", "scale"}``: run the plan's probe steps on the
  student's ``name`` as defined now (:func:`grading_runtime.harness.run_steps`: each step
  seeded and time-limited); reply one ``{"key", "record"}`` line per step, then ``{"done": true}``.

Replies go to the file descriptor ``REPLY_FD``; what the student's code prints goes to
standard output and error (the grader keeps the end of it as the log). Nothing here judges:
the records are plain data (:mod:`grading_runtime.record`) that the grader validates.
"""

import json
import os
import sys


def _runtime():
    from grading_runtime import harness, record

    return harness, record


def main(reply_fd):
    replies = os.fdopen(int(reply_fd), "wb")
    os.set_inheritable(int(reply_fd), False)

    seq = None

    def reply(message):
        replies.write((json.dumps({**message, "seq": seq}) + "\n").encode())
        replies.flush()

    requests = sys.stdin
    sys.stdin = open(os.devnull)  # input() in a cell gets EOF instead of reading requests
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    harness, record = _runtime()
    for line in requests:
        try:
            request = record.loads(line)  # the plan's cases hold arrays: the record format
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
                    reply({"key": step["key"], "record": record.dumps(missing)})
            else:
                for key, outcome in harness.run_steps(candidate, steps, request["scale"]):
                    reply({"key": key, "record": record.dumps(outcome)})
            reply({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
