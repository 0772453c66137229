"""Decoding what the sandbox sends back: the grader's side of the channel, trusted code.

The sandbox only writes (``grading_runtime``: :func:`autograder.sandboxed.grading_runtime.record.dumps`,
and the runner's event lines); this module, in the grader's process, reads. Every line is
untrusted:

* :func:`read_channel` validates the lines of one run against the plan, each bounded before it
  is parsed (at most :data:`MAX_LINE` bytes, and no more lists, dicts and items than the one
  record it may carry may hold: :func:`~autograder.core.judging.record_decoding.check_json_size`), in
  the grading's own thread, before the judging lock is taken: a line that is not one
  of the runner's messages, a record the plan does not ask for, a second record for one step, or
  a record outside the schema is *malformed*: it earns nothing and is listed;
* :func:`load_record` decodes one record strictly (:func:`autograder.core.judging.record_decoding.loads`:
  JSON only, bounded sizes, no pickle) and checks its envelope (:func:`validate_record`), what
  the grader accepts as a probe's report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autograder.core.judging.record_decoding import (
    MAX_CONTAINERS,
    MAX_ITEMS,
    RecordError,
    check_json_size,
    loads,
)

__all__ = ["MAX_LINE", "Channel", "RecordError", "load_record", "read_channel", "validate_record"]

MAX_LINE = 64 * 1024**2  #: a channel line longer than this is malformed
MAX_FIELDS = 16  #: fields of one message (the runner's have at most four)
_ENVELOPE = {"ok", "observation", "seconds", "error", "timed_out", "missing", "tampered"}


def validate_record(record: Any) -> dict[str, Any]:
    """``record`` if it has a probe record's envelope, else :class:`RecordError`.

    ``{"ok": true, "observation": dict, "seconds"?: number}`` or ``{"ok": false, "error": str,
    "timed_out"?: bool, "missing"?: bool, "tampered"?: bool}`` (``tampered``: the runtime's
    seal found a change, :mod:`autograder.sandboxed.grading_runtime.seal`); the observation's content is the
    judges' to read.
    """
    if not isinstance(record, dict) or not isinstance(record.get("ok"), bool):
        raise RecordError("not a record: expected a dict with a boolean 'ok'")
    unknown = set(record) - _ENVELOPE
    if unknown:
        raise RecordError(f"record with unexpected fields {sorted(unknown)[:5]}")
    if record["ok"]:
        if not isinstance(record.get("observation"), dict):
            raise RecordError("a record without an observation")
        if "error" in record:
            raise RecordError("a passing record with an error")
    elif not isinstance(record.get("error"), str):
        raise RecordError("a failed record without an error message")
    for key in ("timed_out", "missing", "tampered"):
        if key in record and not isinstance(record[key], bool):
            raise RecordError(f"record field {key!r} is not a boolean")
    seconds = record.get("seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise RecordError("record field 'seconds' is not a number")
    return record


def load_record(text: str | bytes) -> dict[str, Any]:
    """``loads`` then :func:`validate_record`: how the grader reads one record."""
    return validate_record(loads(text))


@dataclass
class Channel:
    """What the sandbox streamed back, validated: records per part, cell events, problems."""

    records: dict[str, dict[str, Any]]
    cells: dict[int, dict[str, Any]] = field(default_factory=dict)
    probe_seconds: dict[str, float] = field(default_factory=dict)
    malformed: list[str] = field(default_factory=list)
    ended: bool = False
    stopped: str = ""  #: why the runner stopped running the notebook's parts, if it did


def read_channel(lines: Sequence[bytes], plan: dict[str, Any]) -> Channel:
    """Validate the sandbox's lines (untrusted) against the ``plan``; never raises.

    A line that is not one of the runner's messages, a record the plan does not ask for, a
    second record for one step, or a record outside the record schema is *malformed*: it earns
    nothing and is listed.
    """
    steps = {
        part: {step["key"] for step in part_steps} for part, part_steps in plan["parts"].items()
    }
    channel = Channel(records={part: {} for part in steps})
    for number, line in enumerate(lines, 1):
        try:
            if len(line) > MAX_LINE:
                raise ValueError("line too long")
            # a message holds one record (as text), whose own bounds apply to the whole line
            check_json_size(line, MAX_CONTAINERS + 1, MAX_ITEMS + MAX_FIELDS)
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not an object")
            event = message.get("event")
            if event == "end":
                channel.ended = True
            elif event == "stopped":
                if not isinstance(message["reason"], str) or channel.stopped:
                    raise ValueError("bad stopped event")
                channel.stopped = message["reason"][:300]
            elif event == "cell":
                index, ok, error = message["index"], message["ok"], message["error"]
                if type(index) is not int or type(ok) is not bool or not isinstance(error, str):
                    raise ValueError("bad cell event")
                channel.cells[index] = {"ok": ok, "error": error[:2000]}
            elif event == "probe":
                part, seconds = message["part"], message["seconds"]
                if part in steps and type(seconds) in (int, float) and 0 <= seconds < 1e6:
                    channel.probe_seconds[part] = float(seconds)
            else:
                part, key, text = message["part"], message["key"], message["record"]
                if part not in steps or key not in steps[part] or not isinstance(text, str):
                    raise ValueError("a record the plan does not ask for")
                if key in channel.records[part]:
                    raise ValueError(f"a second record for {part}.{key}")
                channel.records[part][key] = load_record(text)  # schema-checked
        except Exception as error:  # noqa: BLE001 - untrusted data: any failure is malformed
            channel.malformed.append(f"line {number}: {type(error).__name__}: {str(error)[:200]}")
    return channel
