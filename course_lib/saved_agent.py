"""The trained agent, handed in with the notebook: its weights, and the score the notebook claims.

The notebook's training part ends with :func:`save_agent`, in a locked cell, so no one forgets
it. It packs the network's ``state_dict`` (every tensor as ``float16``, zlib-compressed, in
base64: about 4.5 MB for the Nature-DQN's 1.7M weights) with the game, the number of actions
and the score the notebook claims (the mean raw score of its last 100 training games), and puts
that one bundle in two places:

* the file ``a2c_agent.json`` beside the notebook (nbgrader's exchange copies the folder), and
* the cell's output, as the MIME type :data:`AGENT_MIME`, so the ``.ipynb`` alone carries the
  agent (a Colab student who downloads only the notebook hands it in too). Jupyter and Colab
  show the ``text/plain`` line beside it; the bundle itself stays in the saved file.

The grader reads the bundle from the notebook (or from the file beside it), checks it with
:func:`unpack_agent` (bounded sizes, known shapes, finite weights), reads the weights as the
course's network by their shapes (:mod:`course_lib.network_layout`; :func:`save_agent` checks
the same before it writes anything, and says what the network lacks), and plays them in its own
copy of that network (:mod:`course_lib.evaluation`'s protocol), once the student's own
``make_model``, loaded with them in the grading sandbox, has computed what that network does. Why ``float16``: half the size of ``float32``; a trained
network's weights are far inside its range (up to 65,504), and the rounding (a relative 0.05%)
moves its action probabilities by far less than the sampling does.

>>> saved = save_agent(model, runner, ENV_ID)   # doctest: +SKIP
>>> saved                                       # doctest: +SKIP
Trained agent: 1,686,887 weights of SpaceInvaders saved to a2c_agent.json and in this output ...

Why one module: packing and unpacking are the two halves of one file format; the checks of
:func:`unpack_agent` (the grader's guard) must mirror :func:`pack_agent` line for line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import numbers
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .evaluation import EvaluationProtocol

__all__ = [
    "AGENT_FILE",
    "AGENT_FORMAT",
    "AGENT_MIME",
    "AgentBundleError",
    "AgentWeights",
    "SavedAgent",
    "load_agent",
    "load_tensors",
    "load_weights",
    "pack_agent",
    "save_agent",
    "unpack_agent",
]

#: The MIME type of the bundle in the notebook's output.
AGENT_MIME = "application/vnd.a2c-course.agent+json"
#: The file the bundle is written to, beside the notebook.
AGENT_FILE = "a2c_agent.json"
#: The bundle's ``"format"``; another value is refused.
AGENT_FORMAT = "a2c-course agent 1"

#: Bounds :func:`unpack_agent` holds any bundle to (the Nature-DQN needs 12 tensors, 1.7M
#: elements): a bundle past them is refused before it is decompressed.
MAX_TENSORS = 64
MAX_ELEMENTS = 16_000_000
MAX_NAME = 200
MAX_DIMS = 8
_DTYPES = {"float16": np.dtype("<f2"), "int64": np.dtype("<i8")}
_KEYS = {"format", "env_id", "n_actions", "claimed", "evaluation", "tensors", "encoding", "data"}
_ENCODING = "zlib+base64"
_CLAIM = "mean raw score of the last 100 games played while training"


class AgentBundleError(ValueError):
    """A bundle that is not a saved agent of this course, or breaks one of its bounds."""


@dataclass(frozen=True)
class AgentWeights:
    """What :func:`unpack_agent` read: the weights as numpy arrays and what came with them.

    Attributes:
        env_id: the game the agent was trained on.
        n_actions: the number of actions of its policy head.
        tensors: ``{name: array}`` in the order of the ``state_dict`` (``float16`` or ``int64``).
        claimed: ``{"score", "games", "steps"}``: the score the notebook claims (``score`` is
            ``None`` when no game had ended), how many games it averages, agent steps trained.
        evaluation: the notebook's own evaluation (``score``, ``std``, ``games``, ``steps``,
            ``capped`` as :meth:`EvaluationResult.summary` gives them, and its ``protocol`` as
            an :class:`EvaluationProtocol`), or None.
        digest: SHA-256 of the weights' bytes: the same weights give the same digest.
    """

    env_id: str
    n_actions: int
    tensors: dict[str, np.ndarray]
    claimed: dict[str, Any]
    evaluation: dict[str, Any] | None
    digest: str

    @property
    def parameters(self) -> int:
        """How many numbers the tensors hold."""
        return sum(int(array.size) for array in self.tensors.values())


def _arrays_of(state_dict: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``{name: little-endian float16 or int64 array}`` of a ``state_dict``; checks each value."""
    arrays: dict[str, np.ndarray] = {}
    for name, value in state_dict.items():
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        if array.dtype.kind == "f":
            with np.errstate(over="ignore"):
                half = array.astype("<f2")
            if not np.isfinite(half).all():
                raise ValueError(
                    f"the weights {name!r} hold NaN or infinity, or numbers beyond float16's "
                    "range (65,504): training diverged (a learning rate far above 7e-4, or "
                    "log(softmax) instead of log_softmax). Train again before saving."
                )
            arrays[name] = half
        elif array.dtype.kind in "iub":
            arrays[name] = array.astype("<i8")
        else:
            raise ValueError(
                f"the tensor {name!r} has dtype {array.dtype}: only numbers are saved."
            )
    return arrays


def _number_or_none(value: Any) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def pack_agent(
    state_dict: Mapping[str, Any],
    env_id: str,
    n_actions: int,
    claimed: Mapping[str, Any],
    evaluation: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The bundle (plain JSON data) of a network's ``state_dict`` and what the notebook claims.

    ``claimed`` is ``{"score": float | None, "games": int, "steps": int}``; ``evaluation`` the
    notebook's own :meth:`~course_lib.evaluation.EvaluationResult.summary`, if it ran one.
    """
    arrays = _arrays_of(state_dict)
    raw = b"".join(array.tobytes() for array in arrays.values())
    return {
        "format": AGENT_FORMAT,
        "env_id": str(env_id),
        "n_actions": int(n_actions),
        "claimed": {
            "score": _number_or_none(claimed.get("score")),
            "games": int(claimed.get("games", 0)),
            "steps": int(claimed.get("steps", 0)),
            "what": _CLAIM,
        },
        "evaluation": None if evaluation is None else dict(evaluation),
        "tensors": [
            {"name": name, "shape": list(array.shape), "dtype": str(array.dtype.name)}
            for name, array in arrays.items()
        ],
        "encoding": _ENCODING,
        "data": base64.b64encode(zlib.compress(raw, 6)).decode("ascii"),
    }


def _refuse(why: str) -> AgentBundleError:
    return AgentBundleError(f"the saved agent cannot be read: {why}.")


def _int_field(data: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise _refuse(f"{key!r} must be an integer in [{low}, {high}], got {value!r}"[:300])
    return value


def _finite(value: Any, what: str, allow_none: bool = False) -> float | None:
    """``value`` as a float if it is a finite number of at most 1e9 in size (or None if allowed)."""
    if value is None and allow_none:
        return None
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not (math.isfinite(value) and abs(value) <= 1e9)
    ):
        raise _refuse(f"{what} must be a finite number, got {value!r}"[:300])
    return float(value)


def _claimed(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise _refuse("'claimed' must be an object")
    return {
        "score": _finite(data.get("score"), "the claimed score", allow_none=True),
        "games": _int_field(data, "games", 0, 10**9),
        "steps": _int_field(data, "steps", 0, 10**12),
    }


def _evaluation(data: Any) -> dict[str, Any] | None:
    """The notebook's own evaluation, reduced to its numbers and protocol (the rest is not read)."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise _refuse("'evaluation' must be an object or null")
    numbers_of: dict[str, Any] = {
        key: _finite(data.get(key), f"the evaluation's {key!r}") for key in ("score", "std")
    }
    for key, high in (("games", 10**6), ("steps", 10**12), ("capped", 10**6)):
        numbers_of[key] = _int_field(data, key, 0, high)
    protocol = data.get("protocol")
    try:
        if not isinstance(protocol, Mapping) or len(str(protocol.get("env_id"))) > 100:
            raise ValueError("not a protocol")
        numbers_of["protocol"] = EvaluationProtocol.from_dict(protocol)
    except (TypeError, ValueError):
        raise _refuse("the evaluation's 'protocol' is not an evaluation protocol") from None
    return numbers_of


def _tensor_specs(specs: Any, max_elements: int) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_TENSORS:
        raise _refuse(f"'tensors' must be a list of 1 to {MAX_TENSORS} tensors")
    out, names, total = [], set(), 0
    for spec in specs:
        if not isinstance(spec, Mapping) or set(spec) != {"name", "shape", "dtype"}:
            raise _refuse("each tensor must be {'name', 'shape', 'dtype'}")
        name, shape, dtype = spec["name"], spec["shape"], spec["dtype"]
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME or name in names:
            raise _refuse(f"tensor names must be distinct strings of 1 to {MAX_NAME} characters")
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_DIMS
            or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= max_elements
                for n in shape
            )
        ):
            raise _refuse(f"the shape of {name!r} must be at most {MAX_DIMS} sizes")
        if dtype not in _DTYPES:
            raise _refuse(f"the dtype of {name!r} must be one of {sorted(_DTYPES)}")
        total += math.prod(shape)
        if total > max_elements:
            raise _refuse(f"the tensors hold more than {max_elements:,} numbers")
        names.add(name)
        out.append((name, tuple(shape), _DTYPES[dtype]))
    return out


def unpack_agent(bundle: Any, max_elements: int = MAX_ELEMENTS) -> AgentWeights:
    """Check a bundle and read its weights; :class:`AgentBundleError` says what is wrong.

    Every bound is checked before the work it limits: the tensor list, names, shapes and total
    size first, then the base64 text's length against what the declared tensors can compress
    to, then a decompression that stops one byte past the declared size, whose length must
    match exactly. Floating weights must be finite. Unknown keys are refused.
    """
    if not isinstance(bundle, Mapping):
        raise _refuse(f"expected a JSON object, got {type(bundle).__name__}")
    if bundle.get("format") != AGENT_FORMAT:
        raise _refuse(f"its format is not {AGENT_FORMAT!r}")
    unknown = set(bundle) - _KEYS
    if unknown:
        raise _refuse(f"unknown keys {sorted(unknown)[:5]}")
    env_id = bundle.get("env_id")
    if not isinstance(env_id, str) or not 0 < len(env_id) <= 100:
        raise _refuse("'env_id' must be a game id")
    n_actions = _int_field(bundle, "n_actions", 1, 1000)
    claimed = _claimed(bundle.get("claimed"))
    evaluation = _evaluation(bundle.get("evaluation"))
    specs = _tensor_specs(bundle.get("tensors"), max_elements)
    if bundle.get("encoding") != _ENCODING:
        raise _refuse(f"'encoding' must be {_ENCODING!r}")
    expected = sum(math.prod(shape) * dtype.itemsize for _, shape, dtype in specs)
    data = bundle.get("data")
    # zlib never grows data by more than 0.1% + 12 bytes a call; base64 makes 4 bytes of 3.
    limit = 4 * ((expected + expected // 1000 + 1024) // 3 + 1)
    if not isinstance(data, str) or len(data) > limit:
        raise _refuse(f"'data' must be base64 text of at most {limit:,} characters")
    try:
        compressed = base64.b64decode(data.encode("ascii"), validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(compressed, expected + 1)
    except (binascii.Error, UnicodeEncodeError, zlib.error) as error:
        raise _refuse(f"'data' is not zlib-compressed base64 ({error})") from None
    if len(raw) != expected or not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
        raise _refuse(f"'data' does not hold exactly the {expected:,} bytes its tensors declare")
    tensors, offset = {}, 0
    for name, shape, dtype in specs:
        size = math.prod(shape) * dtype.itemsize
        array = np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=offset)
        if dtype.kind == "f" and not np.isfinite(array).all():
            raise _refuse(f"the weights {name!r} are not all finite")
        tensors[name] = array.reshape(shape)
        offset += size
    return AgentWeights(
        env_id=env_id,
        n_actions=n_actions,
        tensors=tensors,
        claimed=claimed,
        evaluation=evaluation,
        digest=hashlib.sha256(raw).hexdigest(),
    )


def load_weights(model: Any, weights: AgentWeights) -> Any:
    """Load ``weights`` into ``model`` (the network of ``make_model(weights.n_actions)``).

    Floating tensors become ``float32``, the dtype of a network's weights. Raises
    ``ValueError`` naming the weights that are missing, left over or of another shape.
    """
    return load_tensors(model, weights.tensors)


def load_tensors(model: Any, tensors: Mapping[str, np.ndarray]) -> Any:
    """Load ``tensors`` (``{name: array}``, a saved agent's) into ``model``, as
    :func:`load_weights` does."""
    import torch

    state = {
        name: torch.from_numpy(
            np.asarray(array).astype(np.float32 if np.asarray(array).dtype.kind == "f" else np.int64)
        )
        for name, array in tensors.items()
    }
    own = model.state_dict()
    missing = [name for name in own if name not in state]
    extra = [name for name in state if name not in own]
    wrong = [
        f"{name} {tuple(state[name].shape)} (the network has {tuple(own[name].shape)})"
        for name in own
        if name in state and tuple(state[name].shape) != tuple(own[name].shape)
    ]
    if missing or extra or wrong:
        problems = [
            f"{label}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}"
            for label, names in (
                ("missing", missing),
                ("not in the network", extra),
                ("other shapes", wrong),
            )
            if names
        ]
        raise ValueError(
            "the saved weights do not fit this network (" + "; ".join(problems) + "): "
            "make_model must build the network the weights were trained in."
        )
    model.load_state_dict(state)
    return model


def load_agent(path: str | Path = AGENT_FILE) -> AgentWeights:
    """Read a bundle that :func:`save_agent` wrote (checked as the grader checks it).

    ``path`` is a file's path: a number is refused (``open`` would take it for a file
    descriptor, read whatever it is and close it)."""
    with Path(path).open(encoding="utf-8") as file:
        return unpack_agent(json.load(file))


@dataclass(frozen=True)
class SavedAgent:
    """What :func:`save_agent` returns: the file written and the bundle. Displayed in a notebook,
    it puts the bundle in the cell's output (:data:`AGENT_MIME`) beside a line of text."""

    path: Path
    bundle: dict[str, Any]

    def __repr__(self) -> str:
        bundle = self.bundle
        weights = sum(math.prod(spec["shape"]) for spec in bundle["tensors"])
        size = len(bundle["data"]) / 1e6
        claimed = bundle["claimed"]
        if claimed["score"] is None:
            claim = "no game ended while training, so no score is claimed"
        else:
            claim = (
                f"claimed score {claimed['score']:.1f} (mean raw score of the last "
                f"{claimed['games']} training games, {claimed['steps']:,} agent steps)"
            )
        game = bundle["env_id"].replace("NoFrameskip-v4", "")
        return (
            f"Trained agent: {weights:,} weights for {game} (float16, {size:.1f} MB) saved to "
            f"{self.path.name} and kept in this output; {claim}. Keep this output when you "
            "submit: the grader plays new games with these weights."
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": repr(self), AGENT_MIME: self.bundle}


def _check_course_network(state_dict: Mapping[str, Any], n_actions: int) -> None:
    """``ValueError`` saying what the grader needs, before anything is written, when the
    network's tensors are not the course's network's (:mod:`course_lib.network_layout`: the
    grader plays the weights in its own copy of that network)."""
    from .network_layout import LayoutError, network_layouts

    try:
        network_layouts(_arrays_of(state_dict), n_actions)
    except LayoutError as error:
        raise ValueError(f"The agent cannot be saved for grading: {error}.") from None


def save_agent(
    model: Any,
    runner: Any,
    env_id: str,
    path: str | Path = AGENT_FILE,
    evaluation: Any = None,
) -> SavedAgent:
    """Save the trained network for grading: the file ``path`` and, once displayed, the output.

    Args:
        model: the trained network (``make_model``'s module).
        runner: the ``EnvRunner`` it trained with: the claimed score is the mean raw score of
            its last 100 finished games (``runner.episode_stats``), after ``runner.step_var``
            agent steps; the number of actions comes from its env.
        env_id: the game it was trained on.
        path: where to write the bundle (default ``a2c_agent.json`` beside the notebook).
        evaluation: the notebook's own :class:`~course_lib.evaluation.EvaluationResult`, if any.
    """
    stats = runner.episode_stats
    claimed = {
        "score": stats.mean_recent(100) if len(stats) else None,
        "games": min(len(stats), 100),
        "steps": int(runner.step_var),
    }
    n_actions = int(runner.env.single_action_space.n)
    summary = evaluation.summary() if evaluation is not None else None
    state = model.state_dict()
    _check_course_network(state, n_actions)
    bundle = pack_agent(state, env_id, n_actions, claimed, summary)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(bundle), encoding="utf-8")
    os.replace(tmp, path)
    return SavedAgent(path, bundle)
