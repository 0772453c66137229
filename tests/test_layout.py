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
    """autograder/core (assess, judge, isolate, report, cluster) imports neither nbgrader nor a
    front end: Gradescope, PrairieLearn and the nbgrader commands all stand on it."""
    front_ends = (
        "nbgrader",
        "autograder.nbgrader",
        "autograder.platforms",
        "autograder.cli",
        "autograder.commands",
    )
    for package, path in _modules_under("autograder/core"):
        for name in imported(path, package):
            assert not any(name == f or name.startswith(f + ".") for f in front_ends), (
                f"{path.relative_to(ROOT)} imports {name}"
            )


#: The core's rooms and what each may import of the core besides itself (docs/design.md,
#: section 2): the course (parts, points, limits) knows only isolation's limits, and
#: isolation nothing of the rest;
#: judging and intake know nothing of isolation; reports know only the grade and the course;
#: the assessor and the cluster put them together.
CORE_ROOMS = {
    "course": {"isolation"},
    "isolation": set(),
    "reports": {"course"},
    "intake": {"reports"},
    "judging": {"reports"},
    "agent_play": {"intake", "judging", "reports", "course"},
    "cluster": {
        "isolation", "intake", "reports", "assessor", "package_digest", "agent_play", "fan_out",
        "course",
    },
}


def test_each_room_of_the_core_imports_only_the_rooms_below_it():
    for room, allowed in CORE_ROOMS.items():
        for package, path in _modules_under(f"autograder/core/{room}"):
            for name in imported(path, package):
                if not name.startswith("autograder.core."):
                    continue
                other = name.split(".")[2]
                assert other == room or other in allowed, (
                    f"{path.relative_to(ROOT)} ({room}) imports {name}"
                )


def test_the_platform_front_ends_stand_on_the_core_alone():
    """Gradescope and PrairieLearn grade with the core's Assessor: no nbgrader front end, no
    gradebook at grading time (the release is made when the bundle is built)."""
    for package, path in _modules_under("autograder/platforms"):
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
#: that refuse numbers (autograder/core/judging/record_decoding.py).
DECODER_NAMES = {"loads", "RecordError"}
DECODER_HOOKS = {"parse_int", "parse_float", "parse_constant"}


def test_the_sandbox_only_writes_records():
    """Records are decoded by trusted code on the grader's side (autograder/core/judging/
    record_decoding.py, used by judging/channel.py): what the sandbox is shown defines no decoder of
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

    from autograder.core.judging import channel, record_decoding
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


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_name_is_used_across_modules():
    """A name with a leading underscore is its module's own: no other module of the kit imports
    it or reads it as ``module._name`` (what two modules share is public, and says so)."""
    paths = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    found = []
    for name, path in sorted(paths.items()):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        modules: dict[str, str] = {}  # local name -> project module
        for base, members in import_statements(path, package):
            for member in members:
                full = f"{base}.{member}"
                if full in paths:
                    modules[member] = full
                elif base in paths and _is_private(member):
                    found.append(f"{name} imports {full}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update({a.asname: a.name for a in node.names if a.asname and a.name in paths})
            elif isinstance(node, ast.ImportFrom):
                modules.update({a.asname: modules.get(a.name, "") for a in node.names if a.asname})
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and modules.get(node.value.id)
                and _is_private(node.attr)
            ):
                found.append(f"{name} uses {modules[node.value.id]}.{node.attr}")
    assert not found, "\n".join(found)


#: A module this long says at its top why it is one module (a paragraph that starts so).
LONG_MODULE = 400
REASON = "Why one module:"


def test_a_long_module_says_why_it_is_one():
    long = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            lines = path.read_text().count("\n")
            docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
            if lines > LONG_MODULE and REASON not in docstring:
                long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not long, f"over {LONG_MODULE} lines without {REASON!r} in the docstring: {long}"


def test_the_maps_show_every_room_of_the_grader():
    """docs/design.md (section 2) and the README's map name every package of autograder/."""
    design = (ROOT / "docs" / "design.md").read_text()
    section = design[design.index("## 2.") : design.index("## 3.")]
    readme = (ROOT / "README.md").read_text()
    for init in sorted((ROOT / "autograder").rglob("__init__.py")):
        folder = init.parent.relative_to(ROOT / "autograder").as_posix()
        if folder == ".":
            continue
        room = folder.rsplit("/", 1)[-1] + "/"
        assert room in section, f"docs/design.md, section 2, does not show {folder}/"
        assert room in readme, f"the README's map does not show {folder}/"
