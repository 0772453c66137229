"""Is the layout of docs/design.md, section 2, kept: imports one way, no import cycle, the
grading core free of nbgrader, and what the sandbox is shown free of the grader and of any
decoder of records (the sandbox only writes them)?

The import graph is read from the source (``ast``), lazy imports inside functions included, so
a cycle hidden behind a function-level import is found too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("course_lib", "solutions", "autograder")
#: Which packages each package may import (docs/design.md, section 2).
MAY_IMPORT = {
    "course_lib": set(),
    "solutions": {"course_lib"},
    "autograder": {"course_lib", "solutions"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_statements(path: Path, package: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` per import in ``path``, lazy ones inside functions too: ``from m
    import a, b`` gives ``(m, [a, b])`` (relative ``m`` resolved against ``package``), ``import
    m`` gives ``(m, [])``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.append((base, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
    return found


def imported(path: Path, package: str) -> set[str]:
    """Every dotted name ``path`` imports, third-party ones included."""
    names = set()
    for base, members in import_statements(path, package):
        names.add(base)
        names.update(f"{base}.{member}" for member in members)
    return names


def _modules_under(folder: str) -> list[tuple[str, Path]]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        name = module_name(path)
        found.append((name if path.name == "__init__.py" else name.rpartition(".")[0], path))
    return found


def test_the_grading_core_knows_nothing_of_nbgrader_or_the_front_ends():
    """autograder/core (assess, judge, sandbox, cluster) imports neither nbgrader nor a front end:
    Gradescope, PrairieLearn and the nbgrader commands all stand on it."""
    front_ends = ("nbgrader", "autograder.nbgrader", "autograder.gradescope")
    front_ends += ("autograder.prairielearn", "autograder.cli", "autograder.platform_run")
    for package, path in _modules_under("autograder/core"):
        for name in imported(path, package):
            assert not any(name == f or name.startswith(f + ".") for f in front_ends), (
                f"{path.relative_to(ROOT)} imports {name}"
            )


def test_the_platform_front_ends_stand_on_the_core_alone():
    """Gradescope and PrairieLearn grade with the core's Assessor: no nbgrader front end, no
    gradebook at grading time (the release is made when the bundle is built)."""
    found = [*_modules_under("autograder/gradescope"), *_modules_under("autograder/prairielearn")]
    found.append(("autograder", ROOT / "autograder" / "platform_run.py"))
    for package, path in found:
        for name in imported(path, package):
            assert not name.startswith("autograder.nbgrader") and name.split(".")[0] != "nbgrader", (
                f"{path.relative_to(ROOT)} imports {name}"
            )


def test_what_the_sandbox_is_shown_imports_nothing_of_the_grader():
    """autograder/sandboxed (mounted read-only into the sandbox) imports nothing of autograder
    or solutions: the reference and the judges never reach student code."""
    for package, path in _modules_under("autograder/sandboxed"):
        for name in imported(path, package):
            top = name.split(".")[0]
            inside = name.startswith("autograder.sandboxed")
            assert inside or top not in ("autograder", "solutions"), (
                f"{path.relative_to(ROOT)} imports {name}"
            )


#: What makes a strict decoder of records: its entry point, its error, and json.loads's hooks
#: that refuse numbers (autograder/core/record_decoding.py).
DECODER_NAMES = {"loads", "RecordError"}
DECODER_HOOKS = {"parse_int", "parse_float", "parse_constant"}


def test_the_sandbox_only_writes_records():
    """Records are decoded by trusted code on the grader's side (autograder/core/
    record_decoding.py, used by core/channel.py): what the sandbox is shown defines no decoder of
    records (no ``loads``, no ``RecordError``, no number-refusing ``json.loads`` hooks); it
    writes records and reads the grader's requests (``record.read_request``) only."""
    for _, path in _modules_under("autograder/sandboxed"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = {node.name}
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            else:
                continue
            assert not names & DECODER_NAMES, f"{path.relative_to(ROOT)} defines {names}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                hooks = {k.arg for k in node.keywords} & DECODER_HOOKS
                assert not hooks, f"{path.relative_to(ROOT)}:{node.lineno} decodes with {hooks}"

    from autograder.core import channel, record_decoding
    from autograder.sandboxed.grading_runtime import record

    assert channel.loads is record_decoding.loads
    assert channel.RecordError is record_decoding.RecordError
    assert not hasattr(record, "loads") and not hasattr(record, "RecordError")


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package's ``__init__`` counts as the package)."""
    paths = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for base, members in import_statements(path, package):
            fulls = [f"{base}.{member}" for member in members]
            targets.update(full if full in paths else base for full in fulls)
            if not members:
                targets.add(base)
        graph[name] = {t for t in targets if t in paths and t != name}
    return graph


def test_packages_import_one_way():
    for name, targets in import_graph().items():
        package = name.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            assert other == package or other in MAY_IMPORT[package], f"{name} imports {target}"


def test_no_import_cycle():
    """A module importing its own package's ``__init__`` (to reach a re-exported name) is not
    counted: the package imports its modules, so that edge would close every loop."""
    graph = {
        name: {t for t in targets if not name.startswith(t + ".")}
        for name, targets in import_graph().items()
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycle = path[path.index(target) :] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
