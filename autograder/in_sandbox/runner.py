"""The grading job's supervisor, inside the sandbox: runs cells and probes in an executor process.

Usage (the grader starts it; nothing here is importable from the grader's packages)::

    python runner.py EXECUTOR.py < job.json      records stream out on $A2C_CHANNEL_FD

The job (JSON on standard input) lists the cells to run, in order, and where to probe which
part (an entry with a ``part`` and no ``source``), with the plan's probe steps per part. The runner starts the *executor* (a
child process that holds the student's definitions) and sends it one request at a time:
``run`` a cell, then ``probe`` the part that cell defines. It forwards each probe record, as
one JSON line ``{"part", "key", "record"}``, and one ``{"event": "cell", ...}`` line per cell to
the channel (the file descriptor named by ``A2C_CHANNEL_FD``), which the grader reads as it arrives.

Time is enforced here, from outside the student's process: a cell that runs past its limit is
interrupted (``SIGINT``) and, if it does not stop, killed; a probe step whose record does not
arrive in time is killed. After a kill, a new executor replays the cells that had finished, so
one hanging part costs that part and at most one limit, never the parts after it.

Everything written here is untrusted for the grader: the student's code runs as the same user
and could write to the channel itself. The grader validates every line it reads.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

MAX_LINE = 64 * 1024**2  # a reply longer than this is dropped (the grader has its own cap)
INTERRUPT_GRACE = 3.0  # seconds a cell gets to stop after SIGINT before it is killed
MAX_RESTARTS = 3  # executors killed and replaced; after that the remaining cells are not run


class GiveUp(Exception):
    """The student's process had to be replaced too often: stop running cells."""


class Executor:
    """The child process that runs the student's cells; requests on its stdin, replies on a pipe."""

    def __init__(self, script):
        read_end, write_end = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, script, str(write_end)],
            stdin=subprocess.PIPE,
            stdout=sys.stderr.fileno(),
            stderr=sys.stderr.fileno(),
            pass_fds=(write_end,),
        )
        os.close(write_end)
        self.replies = read_end
        self.buffer = b""
        self.seq = 0

    def send(self, request):
        self.seq += 1
        try:
            self.process.stdin.write((json.dumps({**request, "seq": self.seq}) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def reply(self, seconds):
        """The next reply to the last request (a dict), ``"timeout"``, or ``"dead"``.

        Lines that do not answer the last request (another sequence number, not JSON) are
        skipped: the student's code shares the executor's process and may write there too.
        """
        deadline = time.monotonic() + seconds
        while True:
            line = self._line(deadline)
            if not isinstance(line, bytes):
                return line
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            if isinstance(reply, dict) and reply.get("seq") == self.seq:
                return reply

    def _line(self, deadline):
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([self.replies], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                return "dead"
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE and b"\n" not in self.buffer:
                self.buffer = b""  # an oversized reply: dropped, the step then has no record
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def interrupt(self):
        try:
            self.process.send_signal(signal.SIGINT)
        except OSError:
            pass

    def kill(self):
        try:
            self.process.kill()
        except OSError:
            pass
        self.process.wait()
        os.close(self.replies)


def emit(channel, message):
    channel.write((json.dumps(message) + "\n").encode())
    channel.flush()


def failed(error, timed_out=False):
    """A record (in the record format: JSON text) for a step the runner had to stop."""
    return json.dumps({"ok": False, "timed_out": timed_out, "error": error})


class Supervisor:
    def __init__(self, job, script, channel):
        self.job, self.script, self.channel = job, script, channel
        self.done_cells = []  # sources of the cells that finished: replayed after a kill
        self.executor = Executor(script)
        self.restarts = 0

    def restart(self):
        """A new executor with the finished cells replayed; raises :class:`GiveUp` when that
        happened too often or a replay fails."""
        self.executor.kill()
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            raise GiveUp(f"the notebook's process had to be stopped {MAX_RESTARTS} times")
        self.executor = Executor(self.script)
        for source in self.done_cells:
            self.executor.send({"op": "run", "source": source})
            if not isinstance(self.executor.reply(self.job["cell_seconds"]), dict):
                raise GiveUp("a cell that had run before did not run again")

    def run_cell(self, cell):
        start = time.monotonic()
        self.executor.send({"op": "run", "source": cell["source"]})
        reply = self.executor.reply(self.job["cell_seconds"])
        if reply == "timeout":
            self.executor.interrupt()
            reply = self.executor.reply(INTERRUPT_GRACE)
            if not isinstance(reply, dict):
                reply = {"error": f"ran past the {self.job['cell_seconds']:g} s limit"}
                self.restart()
            else:
                reply = {
                    "error": f"ran past the {self.job['cell_seconds']:g} s limit (interrupted)"
                }
        elif reply == "dead":
            reply = {"error": "the cell ended the Python process"}
            self.restart()
        ok = not reply.get("error")
        if ok:
            self.done_cells.append(cell["source"])
        emit(
            self.channel,
            {
                "event": "cell",
                "index": cell["index"],
                "ok": ok,
                "error": str(reply.get("error") or "")[:2000],
                "seconds": round(time.monotonic() - start, 3),
            },
        )

    def probe(self, part, name):
        start = time.monotonic()
        self._probe(part, name)
        emit(
            self.channel,
            {"event": "probe", "part": part, "seconds": round(time.monotonic() - start, 3)},
        )

    def _probe(self, part, name):
        steps = self.job["steps"].get(part, [])
        scale = float(self.job.get("time_scale", 1.0))
        self.executor.send(
            {"op": "probe", "part": part, "name": name, "steps": steps, "scale": scale}
        )
        for index, step in enumerate(steps):
            seconds = float(step.get("seconds") or 10.0) * scale
            reply = self.executor.reply(seconds * self.job["wall_factor"] + 5.0)
            if not isinstance(reply, dict):
                why = "the grader stopped it" if reply == "timeout" else "the process ended"
                record = failed(f"did not finish: {why}", timed_out=reply == "timeout")
                for rest in steps[index:]:
                    emit(self.channel, {"part": part, "key": rest["key"], "record": record})
                self.restart()
                return
            emit(
                self.channel,
                {"part": part, "key": reply.get("key"), "record": reply.get("record")},
            )
        self.executor.reply(5.0)  # the executor's "done"

    def run(self):
        cells = list(self.job["cells"])
        try:
            while cells:
                cell = cells.pop(0)
                if cell.get("source") is not None:
                    self.run_cell(cell)
                if cell.get("part"):
                    self.probe(cell["part"], cell["name"])
        except GiveUp as why:
            record = failed(f"not run: {why}")
            for cell in cells:
                for step in self.job["steps"].get(cell.get("part") or "", []):
                    emit(self.channel, {"part": cell["part"], "key": step["key"], "record": record})
        self.executor.kill()


def main():
    job = json.loads(sys.stdin.buffer.read())
    channel_fd = int(os.environ.pop("A2C_CHANNEL_FD"))
    os.set_inheritable(channel_fd, False)
    channel = os.fdopen(channel_fd, "wb")
    Supervisor(job, sys.argv[1], channel).run()
    emit(channel, {"event": "end"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
