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
arrive in time is killed. After a kill, a new executor replays the cells that had finished
(within twice the time they took plus :data:`REPLAY_SLACK`, 10 s, times the time scale), so
one hanging part costs that part and one limit, never the parts after it. The whole job has one budget, ``budget_seconds`` (one cell
limit and a reserve for the rest): every wait is cut to what is left of it, and once it is
spent, or after :data:`MAX_RESTARTS` kills, or once :data:`MAX_OVERRUNS` cells have run past
their limit (the last one is not followed by a replay), the remaining parts are not run and
the channel says why (``{"event": "stopped", "reason"}``).

The executor runs in user, PID and mount namespaces of its own where ``unshare`` can make them
(``/proc`` shows only its own processes): the student's code cannot signal, stop or read this
process. Everything written here is still untrusted for the grader: the grader validates every
line it reads.
"""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

CHANNEL_VARIABLE = "A2C_CHANNEL_FD"  #: names the descriptor the records go to
MAX_LINE = 64 * 1024**2  # a reply longer than this is dropped (the grader has its own cap)
INTERRUPT_GRACE = 3.0  # seconds a cell gets to stop after SIGINT before it is killed (x scale)
MAX_RESTARTS = 3  # executors killed and replaced; after that the remaining cells are not run
#: Cells that ran past their limit (interrupted or killed); at the last, the remaining cells
#: are not run, and no kill is followed by a replay: an honest notebook has one such cell at most
MAX_OVERRUNS = 2
REPLAY_SLACK = 10.0  # seconds a replay gets on top of twice what the cells took the first time
#: The executor alone in namespaces of its own, the first process of its PID namespace, in a
#: session of its own: it cannot see, signal or stop the runner, nor ``unshare`` above it.
NESTED = ["unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount",
          "--mount-proc", "--", "setsid"]  # fmt: skip


def _nested_works():
    if shutil.which("unshare") is None or shutil.which("setsid") is None:
        return False
    try:
        done = subprocess.run([*NESTED, "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class GiveUp(Exception):
    """The student's process had to be replaced too often: stop running cells."""


class Executor:
    """The child process that runs the student's cells; requests on its stdin, replies on a pipe.

    This one is a fresh Python (``python executor.py``, under ``unshare`` where it works);
    :class:`ForkedExecutor` is one forked from the template's image."""

    def __init__(self, script, nested):
        read_end, write_end = os.pipe()
        self.process = subprocess.Popen(
            [*(NESTED if nested else []), sys.executable, script, str(write_end)],
            stdin=subprocess.PIPE,
            stdout=sys.stderr.fileno(),
            stderr=sys.stderr.fileno(),
            pass_fds=(write_end,),
            start_new_session=True,  # kill(0, ...) in the student's code reaches only its own
        )
        os.close(write_end)
        self.nested = nested
        self.requests = self.process.stdin
        self.replies = read_end
        self.buffer = b""
        self.seq = 0

    def _python(self):
        """The pid of the executor's Python (under ``unshare``, that process's child)."""
        if not self.nested:
            return self.process.pid
        pid = self.process.pid
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                return int(children.read().split()[0])
        except (OSError, IndexError, ValueError):
            return None

    def _targets(self):
        """What :meth:`kill` kills: the Python, then what started it."""
        return (self._python(), self.process.pid)

    def _reap(self):
        self.process.wait()

    def send(self, request):
        self.seq += 1
        try:
            self.requests.write((json.dumps({**request, "seq": self.seq}) + "\n").encode())
            self.requests.flush()
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
            except (ValueError, RecursionError):  # 4 KB of "[" is a RecursionError, not JSON
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
        pid = self._python()
        try:
            if pid is not None:
                os.kill(pid, signal.SIGINT)
        except OSError:
            pass

    def kill(self):
        if self.replies is None:
            return  # killed already
        for target in self._targets():
            try:
                if target is not None:
                    os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        self._reap()
        try:
            self.requests.close()
        except OSError:
            pass
        os.close(self.replies)
        self.replies = None


class ForkedExecutor(Executor):
    """An executor forked from the template's image by the student's spare process
    (``student_tree.py``): the first process of a PID namespace of its own, under a helper of
    the spare's; killing it ends every process it started. ``spare.executor()`` gives its pid
    (as this process sees it), the write end of its requests and the read end of its replies."""

    def __init__(self, spare):  # not super().__init__, which starts a fresh Python
        self.pid, request_fd, self.replies = spare.executor()
        self.requests = os.fdopen(request_fd, "wb")
        self.buffer = b""
        self.seq = 0

    def _python(self):
        return self.pid

    def _targets(self):
        return (self.pid,)

    def _reap(self):
        pass  # the spare waits for its helper, which waits for the executor


def emit(channel, message):
    channel.write((json.dumps(message) + "\n").encode())
    channel.flush()


def failed(error, timed_out=False):
    """A record (in the record format: JSON text) for a step the runner had to stop."""
    return json.dumps({"ok": False, "timed_out": timed_out, "error": error})


class Supervisor:
    """Runs a job's cells and probes in executors started by ``start_executor()`` (``first``:
    one started already, while the job was on its way)."""

    def __init__(self, job, start_executor, channel, first=None):
        self.job, self.start_executor, self.channel = job, start_executor, channel
        self.budget = float(job.get("budget_seconds") or job["timeout"])
        self.deadline = time.monotonic() + self.budget
        self.scale = float(job.get("time_scale", 1.0))
        self.done_cells = []  # (source, seconds) of the cells that finished: replayed after a kill
        self.probed = set()  # parts whose records went out
        self.executor = first if first is not None else start_executor()
        self.restarts = 0
        self.overruns = 0  # cells that ran past their limit

    def left(self, seconds):
        """``seconds``, cut to what is left of the job's budget."""
        return max(0.0, min(seconds, self.deadline - time.monotonic()))

    def spent(self):
        return GiveUp(
            f"the notebook used up its grading time ({self.budget:g} s: one cell limit of "
            f"{self.job['timeout']:g} s and a reserve for the rest)"
        )

    def restart(self):
        """A new executor with the finished cells replayed; raises :class:`GiveUp` when that
        happened too often, the budget is spent, or the replay fails or is slow."""
        self.executor.kill()
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            raise GiveUp(f"the notebook's process had to be stopped {MAX_RESTARTS + 1} times")
        allowed = 2 * sum(seconds for _, seconds in self.done_cells) + REPLAY_SLACK * self.scale
        allowed = self.left(allowed)
        if allowed <= 0:
            raise self.spent()
        self.executor = self.start_executor()
        end = time.monotonic() + allowed
        for source, _ in self.done_cells:
            self.executor.send({"op": "run", "source": source})
            reply = self.executor.reply(max(0.0, end - time.monotonic()))
            if not isinstance(reply, dict):
                raise GiveUp(
                    f"the cells that had run before did not run again within {allowed:.0f} s"
                )

    def run_cell(self, cell):
        start = time.monotonic()
        limit = self.left(self.job["timeout"])
        if limit <= 0:
            raise self.spent()
        what = (
            f"ran past the {self.job['timeout']:g} s limit"
            if limit >= self.job["timeout"]
            else "was stopped: the notebook used up its grading time"
        )
        self.executor.send({"op": "run", "source": cell["source"]})
        reply = self.executor.reply(limit)
        restart = False
        overran = reply == "timeout" and limit >= self.job["timeout"]
        if reply == "timeout":
            self.executor.interrupt()
            reply = self.executor.reply(INTERRUPT_GRACE * self.scale)
            if not isinstance(reply, dict):
                reply, restart = {"error": f"{what} (and ignored the interrupt)"}, True
            else:
                reply = {"error": f"{what} (interrupted)"}
        elif reply == "dead":
            reply, restart = {"error": "the cell ended the Python process"}, True
        ok = not reply.get("error")
        seconds = time.monotonic() - start
        if ok:
            self.done_cells.append((cell["source"], seconds))
        emit(
            self.channel,
            {
                "event": "cell",
                "index": cell["index"],
                "ok": ok,
                "error": str(reply.get("error") or "")[:2000],
                "seconds": round(seconds, 3),
            },
        )
        if overran:
            self.overruns += 1
            if self.overruns >= MAX_OVERRUNS:  # no replay: nothing more of the notebook runs
                raise GiveUp(
                    f"{self.overruns} cells ran past the {self.job['timeout']:g} s limit"
                )
        if restart:
            self.restart()

    def probe(self, part, name):
        start = time.monotonic()
        try:
            self._probe(part, name)
        finally:
            emit(
                self.channel,
                {"event": "probe", "part": part, "seconds": round(time.monotonic() - start, 3)},
            )

    def _probe(self, part, name):
        steps = self.job["steps"].get(part, [])
        if self.left(1.0) <= 0:
            raise self.spent()
        self.executor.send(
            {"op": "probe", "part": part, "name": name, "steps": steps, "scale": self.scale}
        )
        self.probed.add(part)
        for index, step in enumerate(steps):
            seconds = float(step.get("seconds") or 10.0) * self.scale
            wait = seconds * self.job["wall_factor"] + 5.0
            reply = self.executor.reply(self.left(wait))
            if not isinstance(reply, dict):
                if reply == "dead":
                    why = "the process ended"
                elif self.left(wait) <= 0:
                    why = "the notebook used up its grading time"
                else:
                    why = "the grader stopped it"
                record = failed(f"did not finish: {why}", timed_out=reply == "timeout")
                for rest in steps[index:]:
                    emit(self.channel, {"part": part, "key": rest["key"], "record": record})
                self.restart()
                return
            emit(
                self.channel,
                {"part": part, "key": reply.get("key"), "record": reply.get("record")},
            )
        self.executor.reply(self.left(5.0))  # the executor's "done"

    def run(self):
        cells = list(self.job["cells"])
        position = 0
        try:
            while position < len(cells):
                cell = cells[position]
                if cell.get("source") is not None:
                    self.run_cell(cell)
                if cell.get("part"):
                    self.probe(cell["part"], cell["name"])
                position += 1
        except GiveUp as why:
            emit(self.channel, {"event": "stopped", "reason": str(why)})
            record = failed(f"not run: {why}")
            for cell in cells[position:]:
                part = cell.get("part")
                if part and part not in self.probed:
                    self.probed.add(part)
                    for step in self.job["steps"].get(part, []):
                        emit(self.channel, {"part": part, "key": step["key"], "record": record})
        self.executor.kill()


def supervise_job(start_executor):
    """Run the job that comes on standard input, records out on ``$A2C_CHANNEL_FD``. The first
    executor starts before the job is read: its imports go on while the grader draws the plan."""
    channel_fd = int(os.environ.pop(CHANNEL_VARIABLE))
    os.set_inheritable(channel_fd, False)
    channel = os.fdopen(channel_fd, "wb")
    first = start_executor()
    job = json.loads(sys.stdin.buffer.read())
    Supervisor(job, start_executor, channel, first).run()
    emit(channel, {"event": "end"})
    return 0


def main():
    nested = _nested_works()
    return supervise_job(lambda: Executor(sys.argv[1], nested))


if __name__ == "__main__":
    sys.exit(main())
