"""Probe of the ``compute_value_targets`` part: ``ComputeValueTargets(policy, gamma)(trajectory)``."""

from __future__ import annotations

from typing import Any

from ..record import Observation
from .returns import returns_probe

__all__ = ["value_targets"]


def value_targets(ComputeValueTargets: type, case: dict[str, Any]) -> Observation:
    """``ComputeValueTargets(policy, gamma)(trajectory)`` on a coded trajectory."""

    def call(policy: Any, trajectory: dict[str, Any]) -> Any:
        return ComputeValueTargets(policy, case["gamma"])(trajectory)

    return returns_probe(call, case, ("value_targets",))
