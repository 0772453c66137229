"""Does judging hold against records written by someone who read every line of the grader?

The student's process writes the records, so these tests play that process: forged records
built from the plan's cases and the public fixtures, the reference's records replayed on
another grading's plan, records that try to break the decoder or a judge, every class and
function the student (or the sandbox) can import offered as each part, and a probe table
replaced by a cell (``forge_probes`` of the hostile corpus: judged as the gates see it, and with
the runtime's seal, which turns it into ``tampered`` records). Each earns 0 (the fixture-made
policy: no gate and no property), is rejected cleanly, and never shows the reference's numbers.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import course_lib
from autograder.core.judging import judge_part, make_plan, run_part
from autograder.core.judging.channel import load_record
from autograder.core.judging.parts import PART_KEYS, PART_NAMES, subchecks
from autograder.core.judging.record_decoding import RecordError, loads
from autograder.sandboxed import grading_runtime as runtime
from autograder.sandboxed.grading_runtime.harness import run_steps
from autograder.sandboxed.grading_runtime.record import dumps
from solutions import reference

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = {key: getattr(reference, name) for key, name in PART_NAMES.items()}


@pytest.fixture(scope="module")
def reference_records():
    """The reference's records on the plan of seed 1: {part: {step key: record}}."""
    plan = make_plan(1)
    records = {
        part: dict(run_steps(REFERENCE[part], plan["parts"][part], 1.0)) for part in PART_KEYS
    }
    return plan, records


def _made_up(value, rng, case, key=""):
    """``value`` with every claim kept and every number made up (counts drawn from the case's
    softmax, as a forger who read the probes would)."""
    if key == "counts" and isinstance(value, np.ndarray):
        logits = np.asarray(case["logits"], dtype=np.float64)
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        per_row = value.sum(axis=1)
        return np.stack([rng.multinomial(int(n), p) for n, p in zip(per_row, probs, strict=True)])
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return rng.normal(size=value.shape).astype(value.dtype)
        return rng.permutation(value.reshape(-1)).reshape(value.shape)
    if isinstance(value, dict):
        if value.get("kind") == "number" and isinstance(value.get("value"), float):
            return {**value, "value": float(rng.normal())}
        return {k: _made_up(v, rng, case, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_made_up(v, rng, case, key) for v in value]
    if isinstance(value, float) and not isinstance(value, bool):
        return float(rng.normal())
    return value


def _plan_cases(plan, part):
    return {step["key"]: step["case"] for step in plan["parts"][part]}


def test_forged_records_earn_nothing(reference_records):
    """Do records that keep every claim a probe makes (shapes, graph, inputs unchanged,
    registered layers...) but make up the numbers earn 0 on every part?"""
    plan, records = reference_records
    rng = np.random.default_rng(0)
    for part in PART_KEYS:
        cases = _plan_cases(plan, part)
        forged = {key: _made_up(record, rng, cases[key]) for key, record in records[part].items()}
        forged = {key: loads(dumps(record)) for key, record in forged.items()}
        result = judge_part(part, forged, 10, plan)
        assert result.score == 0.0, result.feedback()


def test_replayed_records_earn_nothing_on_another_grading(reference_records):
    """Does the reference's own output for one grading's cases earn 0 on another grading's?"""
    _, records = reference_records
    other = make_plan(2)
    for part in PART_KEYS:
        assert judge_part(part, records[part], 10, other).score == 0.0, part


def test_the_same_records_earn_full_marks_on_their_own_plan(reference_records):
    plan, records = reference_records
    for part in PART_KEYS:
        assert judge_part(part, records[part], 10, plan).score == 10.0, part


def test_two_seeds_draw_different_cases():
    """Are a grading's cases its own: other for another seed, the same for the same seed?"""
    first, again, second = make_plan(11), make_plan(11), make_plan(12)
    assert dumps(first) == dumps(again)
    for part in PART_KEYS:
        ours = {step["key"]: dumps(step["case"]) for step in first["parts"][part]}
        theirs = {step["key"]: dumps(step["case"]) for step in second["parts"][part]}
        assert ours.keys() == theirs.keys()
        assert all(ours[key] != theirs[key] for key in ours), part


def _numbers(value):
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return [float(x) for x in value.reshape(-1)]
    if isinstance(value, dict):
        return [x for item in value.values() for x in _numbers(item)]
    if isinstance(value, list):
        return [x for item in value for x in _numbers(item)]
    if isinstance(value, float):
        return [value]
    return []


def _leaks(feedback, hidden, own):
    """Reference numbers (not also the student's own or the case's) written in ``feedback``."""
    allowed = {round(x, 4) for x in own}
    leaked = []
    for x in hidden:
        if abs(x) < 1e-3 or round(x, 2) == x or round(x, 4) in allowed:
            continue
        for text in {f"{x:.6g}", f"{x:.5g}", f"{round(x, 4):g}", f"{x:.4f}"}:
            digits = text.lstrip("-")
            if len(digits.replace("0.", "")) >= 4 and re.search(
                rf"(?<![\d.\-]){re.escape(text)}(?![\d])", feedback
            ):
                leaked.append(text)
    return leaked


@pytest.mark.parametrize(
    ("part", "scenario"),
    [
        ("a2c", "policy_loss_sign"),
        ("a2c", "half_value_loss"),
        ("compute_value_targets", "ignores_resets"),
        ("gae", "lambda_forgotten"),
        ("policy", "scales_input"),
    ],
)
def test_feedback_never_shows_the_references_numbers(part, scenario, reference_records):
    """Does the feedback of a failing answer name what is wrong without the hidden values?"""
    from tests.buggy_parts import CORPUS

    plan, records = reference_records
    entry = next(e for e in CORPUS if e.part == part and e.scenario == scenario)
    student = dict(run_steps(entry.candidate, plan["parts"][part], 1.0))
    result = judge_part(part, student, 10, plan)
    assert result.score < 10
    hidden = _numbers(records[part])
    if part == "policy":
        from autograder.core.judging.parts.policy import _expected

        case = plan["parts"][part][0]["case"]
        hidden += [
            float(x)
            for x in np.concatenate(
                [
                    a.reshape(-1)
                    for a in _expected(
                        case["n_actions"], case["n"], case["init_seed"], case["obs_seed"]
                    )
                ]
            )
        ]
    own = _numbers(student) + _numbers([step["case"] for step in plan["parts"][part]])
    assert not _leaks(result.feedback(), hidden, own), result.feedback()


# ------------------------------------------------------------------------------ decoding
HOSTILE_TEXTS = {
    "huge integer": '{"ok": true, "observation": {"trainable": ' + "1" + "0" * 400 + "}}",
    "NaN": '{"ok": true, "observation": {"trainable": NaN}}',
    "Infinity": '{"ok": true, "observation": {"x": -Infinity}}',
    "float overflow": '{"ok": true, "observation": {"x": 1e999}}',
    "deep nesting": '{"ok": true, "observation": {"x": ' + "[" * 5000 + "]" * 5000 + "}}",
    "many lists": "[" + ",".join(["[]"] * 2_000_000) + "]",
    "many items": "[" + ",".join(["0"] * 2_000_000) + "]",
    "huge array": json.dumps({"__ndarray__": "float64", "shape": [10**6, 10**6], "b64": ""}),
    "object dtype": json.dumps({"__ndarray__": "object", "shape": [1], "b64": "AAAAAAAAAAA="}),
    "short data": json.dumps({"__ndarray__": "float64", "shape": [4], "b64": "AAAAAAAAAAA="}),
    "not utf-8": b"\xff\xfe{}",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_records_are_refused_by_the_decoder(name):
    """Is each record outside the schema a RecordError, decided quickly and in little memory?"""
    with pytest.raises(RecordError):
        load_record(HOSTILE_TEXTS[name])


def test_the_envelope_is_checked():
    for record in ({"ok": 1}, {"ok": True}, {"ok": False}, {"ok": True, "observation": {}, "x": 1}):
        with pytest.raises(RecordError):
            load_record(dumps(record))
    assert load_record(dumps({"ok": True, "observation": {"a": np.zeros(3)}}))["ok"]


def test_dumps_writes_only_what_loads_reads():
    value = {"a": float("nan"), "b": 10**400, "c": [np.float32("inf")], "d": np.arange(3)}
    back = loads(dumps(value))
    assert back["a"] is None and back["c"] == [None] and back["b"] is None
    assert back["d"].tolist() == [0, 1, 2]


@pytest.mark.parametrize("part", PART_KEYS)
def test_judging_never_raises_on_any_record(part):
    """Does a record that no decoder checked (huge ints, NaN, wrong types) become that part's
    failure instead of an exception?"""
    plan = make_plan(5)
    weird = [10**400, float("nan"), [[]] * 3, {"kind": "tensor"}, "x", None, {"items": 5}]
    for index, value in enumerate(weird):
        records = {
            step["key"]: {"ok": True, "observation": {key: value for key in _keys_of(part)}}
            for step in plan["parts"][part]
        }
        records[f"extra.{index}"] = value
        result = judge_part(part, records, 2, plan)
        assert result.score == 0.0
    assert judge_part(part, "not a mapping", 2, plan).score == 0.0
    assert judge_part(part, {}, float("nan"), plan).score == 0.0


def _keys_of(part):
    return (
        "output layers trainable keys returned counts value_targets advantages changed stats "
        "params runs unchanged state is_module max_value"
    ).split()


# ------------------------------------------------------------------------------ no answer
def _callables(package):
    """Every class and function defined in ``package``'s modules (private ones too)."""
    found = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) or inspect.isfunction(value)) and getattr(
                value, "__module__", ""
            ) == info.name:
                found[f"{info.name}.{name}"] = value
    return found


#: Offering these would start env workers or videos for nothing: they take other arguments.
SLOW = (
    "course_lib.batches.sequential.",
    "course_lib.batches.parallel.",
    "course_lib.batches.native.",
    "course_lib.nature_dqn.",
)


@pytest.mark.slow
def test_nothing_students_or_the_sandbox_can_import_answers_a_part():
    """Does every class and function of course_lib and of the grading runtime score 0 as each
    part (probes and judges in-process, a short time limit)?"""
    offered = {**_callables(course_lib), **_callables(runtime)}
    assert "course_lib.checks.fixtures.ValuePolicy" in offered
    assert "autograder.sandboxed.grading_runtime.fixtures.TwoHeadModel" in offered
    scores = {}
    for name, value in sorted(offered.items()):
        if name.startswith(SLOW):
            continue
        for part in PART_KEYS:
            result = run_part(part, value, 1, scale=0.05, seed=3)
            if result.score:
                scores[f"{name} as {part}"] = result.score
    assert scores == {}


def test_the_student_package_holds_no_grading_runtime():
    names = {info.name for info in pkgutil.walk_packages(course_lib.__path__, "course_lib.")}
    assert (
        not {"course_lib.checks.harness", "course_lib.checks.probes", "course_lib.checks.record"}
        & names
    )


# ------------------------------------------------------------------------------ the runtime
def test_the_runtime_imports_only_itself_and_what_the_sandbox_has():
    """Relative imports among its modules, the standard library, numpy, torch and course_lib's
    public modules: nothing of autograder, solutions, a private course_lib module or a private
    torch module."""
    for path in sorted((ROOT / "autograder" / "sandboxed" / "grading_runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or top in ("numpy", "torch", "course_lib"), (
                    f"{path.name} imports {name}"
                )
                assert not any(part.startswith("_") for part in name.split(".")[1:]), name


@pytest.mark.slow
def test_the_runtime_works_as_the_top_level_package_grading_runtime(tmp_path):
    """Mounted as ``grading_runtime`` beside nothing else of the grader, does it run a plan's
    steps and write records the grader reads?"""
    (tmp_path / "grading_runtime").symlink_to(ROOT / "autograder" / "sandboxed" / "grading_runtime")
    plan = make_plan(4)
    (tmp_path / "steps.json").write_text(dumps(plan["parts"]["merge_time_batch"]))
    code = (
        "import sys, pathlib\n"
        "from grading_runtime.harness import run_steps\n"
        "from grading_runtime.record import dumps, read_request\n"
        "steps = read_request(pathlib.Path('steps.json').read_text())\n"
        "class Merge:\n"
        "    def __call__(self, trajectory):\n"
        "        import numpy as np, torch\n"
        "        for key, value in list(trajectory.items()):\n"
        "            if key == 'state':\n"
        "                continue\n"
        "            if isinstance(value, list):\n"
        "                value = (torch.stack if isinstance(value[0], torch.Tensor) else np.stack)(value)\n"
        "            trajectory[key] = value.reshape(-1, *value.shape[2:])\n"
        "records = {key: record for key, record in run_steps(Merge, steps, 1.0)}\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('autograder', 'solutions')]\n"
        "assert not bad, bad\n"
        "pathlib.Path('records.json').write_text(dumps(records))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}{':' + str(ROOT) if False else ''}"}
    site = [p for p in sys.path if p.endswith("site-packages")]
    env["PYTHONPATH"] = ":".join([str(tmp_path), *site])
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path[:0] = {[str(tmp_path), *site]!r}\n" + code,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = loads((tmp_path / "records.json").read_text())
    assert judge_part("merge_time_batch", records, 2, plan).score == 2.0


# ------------------------------------------------------------------------------ forged probes
def _stub(*args, **kwargs):
    raise NotImplementedError()


def _forge(monkeypatch):
    """Run the ``forge_probes`` attack's cell in this process (``grading_runtime`` is this
    runtime); returns the probe table as it was before."""
    from autograder.sandboxed.grading_runtime import fixtures, harness, probes, record
    from tests.submissions.hostile import ATTACKS

    monkeypatch.setitem(sys.modules, "grading_runtime", runtime)
    for module in (fixtures, harness, probes, record):
        name = f"grading_runtime.{module.__name__.rsplit('.', 1)[-1]}"
        monkeypatch.setitem(sys.modules, name, module)
    original = dict(probes.PROBES)
    exec(ATTACKS["forge_probes"], {})
    assert probes.PROBES["model_net"] is not original["model_net"]
    return original


@pytest.fixture
def forged_probes(monkeypatch):
    """The attack on a copy of the probe table: what the student's process reports when a cell
    replaced the table's entries (no seal checked)."""
    from autograder.sandboxed.grading_runtime import probes

    monkeypatch.setattr(probes, "PROBES", dict(probes.PROBES))
    return _forge(monkeypatch)


def _records(part, plan, candidate=_stub):
    return {key: loads(dumps(r)) for key, r in run_steps(candidate, plan["parts"][part], 1.0)}


def test_a_zero_weight_nature_dqn_reported_by_a_forged_probe_earns_nothing(forged_probes):
    """The probe loads this grading's drawn weights into the student's layers and the grader
    computes the network with them: reported weights (all 0) explain nothing."""
    for seed in (1, 2, 3):
        plan = make_plan(seed)
        result = judge_part("model", _records("model", plan), 1, plan)
        assert result.score == 0.0 and not result.malformed, result.feedback()
        assert "test weights loaded into your layers" in result.feedback()


def test_the_fixture_network_alone_opens_no_policy_gate(forged_probes):
    """Outputs recomputed with the fixture network the sandbox holds, and no sampling done:
    the gate (outputs, log-probabilities of drawn actions, sampling) stays closed and no
    property earns."""
    from autograder.sandboxed.grading_runtime import probes

    probes.PROBES["policy_samples"] = forged_probes["policy_samples"]  # the real probe: stub
    plan = make_plan(4)
    result = judge_part("policy", _records("policy", plan), 2, plan)
    verdicts = {sub.key: sub.passed for sub in result.subresults}
    assert verdicts["outputs"] and not verdicts["sampling"], result.feedback()
    gated = {check.key for check in subchecks("policy") if check.gated}
    assert gated and not any(verdicts[key] for key in gated), result.feedback()


def _executor():
    spec = importlib.util.spec_from_file_location(
        "a2c_executor", ROOT / "autograder" / "sandboxed" / "bin" / "executor.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sealed_records(part, plan, seal, candidate=_stub):
    executor = _executor()
    request = {"steps": plan["parts"][part], "scale": 1.0, "candidate": candidate}
    return {
        key: load_record(text)
        for key, text in executor._probe(run_steps, dumps, seal.broken, request)
    }


def _seal():
    """The seal the executor takes: every module of the runtime."""
    from autograder.sandboxed.grading_runtime import seal

    modules = [m for n, m in sorted(sys.modules.items()) if n.startswith(runtime.__name__)]
    return seal.Seal.capture(modules)


def test_the_seal_turns_a_patched_probe_table_into_tampered_records(monkeypatch):
    """Sealed before the cells ran, then the attack's cell: every record of every part says
    ``tampered``, earns 0 and marks the part malformed (the grader's ``tampered`` status)."""
    from autograder.sandboxed.grading_runtime import probes

    monkeypatch.setattr(probes, "PROBES", dict(probes.PROBES))
    seal = _seal()
    plan = make_plan(6)
    honest = judge_part(
        "policy", _sealed_records("policy", plan, seal, REFERENCE["policy"]), 2, plan
    )
    assert honest.score == 2.0 and not honest.malformed
    _forge(monkeypatch)  # the attack's cell, after the seal
    for part in ("model", "policy", "gae"):
        records = _sealed_records(part, plan, seal)
        assert records and all(r.get("tampered") for r in records.values()), part
        result = judge_part(part, records, 2, plan)
        assert result.score == 0.0 and result.malformed and result.tampered, result.feedback()
        assert "PROBES" in result.feedback()


class _PatchesWhileProbed:
    """A Policy whose constructor rewrites a probe function's code while its step runs."""

    def __init__(self, model):
        from autograder.sandboxed.grading_runtime.probes import policy

        policy._reaches.__code__ = (lambda output, parameters: True).__code__

    def act(self, observations):
        raise NotImplementedError()


def test_the_seal_sees_code_swapped_during_a_step(monkeypatch):
    """A change made by the student's code inside a step: that step's record and the rest say
    ``tampered`` (the later steps are not run)."""
    from autograder.sandboxed.grading_runtime.probes import policy

    monkeypatch.setattr(policy._reaches, "__code__", policy._reaches.__code__)
    seal = _seal()
    plan = make_plan(7)
    records = _sealed_records("policy", plan, seal, _PatchesWhileProbed)
    assert set(records) == {step["key"] for step in plan["parts"]["policy"]}
    assert all(record.get("tampered") for record in records.values()), records
    assert "probes.policy._reaches" in next(iter(records.values()))["error"]
