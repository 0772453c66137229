"""What the value-target probes share: a coded trajectory, the call, what changed in it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from course_lib.checks.properties import capture, changed_keys, has_graph, snapshot

from .. import fixtures
from ..record import Observation

__all__ = ["returns_probe"]


def returns_probe(call: Callable[..., Any], case: dict[str, Any], keys: tuple[str, ...]):
    """``call(policy, trajectory)`` on the case's coded trajectory: what it returned, which keys
    of the trajectory it changed, and each of ``keys`` with whether it carries a graph."""
    policy, trajectory = fixtures.returns_trajectory(case)
    before = snapshot(trajectory)
    returned = call(policy, trajectory)
    observed: Observation = {
        "returned": capture(returned, data=False),
        "changed": changed_keys(before, trajectory),
    }
    for key in keys:
        if key in trajectory:
            observed[key] = capture(trajectory[key])
            observed[f"{key}_has_graph"] = has_graph(trajectory[key])
    return observed
