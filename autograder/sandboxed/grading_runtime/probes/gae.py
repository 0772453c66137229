"""Probe of the bonus ``gae`` part: ``ComputeGAE(policy, gamma, lambda_)(trajectory)``."""

from __future__ import annotations

from typing import Any

from ..record import Observation
from .returns import returns_probe

__all__ = ["gae"]


def gae(ComputeGAE: type, case: dict[str, Any]) -> Observation:
    """``ComputeGAE(policy, gamma, lambda_)(trajectory)`` on a coded trajectory."""

    def call(policy: Any, trajectory: dict[str, Any]) -> Any:
        return ComputeGAE(policy, case["gamma"], case["lambda_"])(trajectory)

    return returns_probe(call, case, ("advantages", "value_targets"))
