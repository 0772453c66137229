"""Is the course one value: its limits declared once (a default and a description each), read
once from the release, a settings file and the command line, refused with an error that names
the setting when wrong, and the same after a trip as plain data (to a Dask worker, into a
platform's bundle)?"""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from pathlib import Path

import nbformat
import pytest

from autograder.cli import build_parser, main
from autograder.commands.options import limits_of
from autograder.core.course.limits import GROUPS, Limits, option_name, settings
from autograder.core.course.settings import Course

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "notebooks" / "a2c.ipynb"


def test_every_limit_is_declared_once_with_a_default_and_a_description():
    """Each limit has a description and a default in its group's dataclass, an option named
    after it whose help says both, and the whole set is what an empty settings file gives."""
    parser = build_parser()
    grade = parser._subparsers._group_actions[0].choices["grade"]  # noqa: SLF001 - argparse's own
    options = {opt: action for action in grade._actions for opt in action.option_strings}
    names = [item.key for item in settings()]
    assert len(names) == len(set(names)) and "cell.timeout" in names
    assert "agent.cpu_seconds" in names and "sandbox.memory_bytes" in names
    for item in settings():
        assert len(item.description) > 20, item.key
        action = options[option_name(item)]
        assert action.default is None, item.key  # not given: the file's, else the declaration's
        assert item.description.split()[0] in action.help and item.key in action.help
    assert option_name(next(s for s in settings() if s.key == "cell.timeout")) == "--timeout"
    assert Limits.from_plain({}) == Limits() and Limits().to_plain()["agent"]["cpu_seconds"] == 20
    for group, kind in GROUPS.items():
        assert {f.name for f in fields(kind)} == set(Limits().to_plain()[group])


def test_the_agents_cpu_cap_has_one_default_in_the_grader():
    """No module of the grader writes the agent's CPU cap again (it had two defaults)."""
    found = subprocess.run(
        ["git", "grep", "-nE", r"cpu_seconds[^\n]*(=|, ) *20(\.0)?\b", "--", "autograder"],
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    assert [line for line in found if "course/limits.py" not in line] == [], found


def test_limits_are_read_from_the_settings_file_then_the_command_line(tmp_path):
    """The settings file overrides the declarations, the command line overrides the file."""
    path = tmp_path / "course.json"
    path.write_text(json.dumps({"cell": {"timeout": 30}, "agent": {"cpu_seconds": 5}}))
    args = build_parser().parse_args(["grade", "x.ipynb", "--settings", str(path)])
    limits = limits_of(args)
    assert (limits.cell.timeout, limits.agent.cpu_seconds) == (30.0, 5.0)
    assert limits.notebook == Limits().notebook and limits.sandbox == Limits().sandbox
    args = build_parser().parse_args(
        ["grade", "x.ipynb", "--settings", str(path), "--timeout", "45", "--sandbox-processes", "64"]
    )
    limits = limits_of(args)
    assert (limits.cell.timeout, limits.agent.cpu_seconds) == (45.0, 5.0)
    assert limits.sandbox.processes == 64 and isinstance(limits.sandbox.processes, int)


@pytest.mark.parametrize(
    ("settings_text", "says"),
    [
        ('{"cell": {"timeout": 0}}', "cell.timeout must be a number >= 1, got 0"),
        ('{"agent": {"cpu_seconds": -1}}', "agent.cpu_seconds must be a number more than 0"),
        ('{"agent": {"cpu_seconds": "fast"}}', "agent.cpu_seconds must be a number"),
        ('{"sandbox": {"processes": 2.5}}', "sandbox.processes must be a whole number"),
        ('{"cell": {"timeoutt": 60}}', "there is no setting 'cell.timeoutt'"),
        ('{"celll": {"timeout": 60}}', "there is no group 'celll'"),
        ('{"cell": 60}', "cell must map each of its limits"),
        ("timeout = 60", "is not JSON"),
    ],
)
def test_a_bad_settings_file_is_refused_naming_the_setting(tmp_path, capsys, settings_text, says):
    path = tmp_path / "course.json"
    path.write_text(settings_text)
    with pytest.raises(ValueError, match="the course settings file") as refused:
        Limits.from_file(path)
    assert says in str(refused.value) and str(path) in str(refused.value)
    nb = tmp_path / "a.ipynb"
    nb.write_text("{}")
    assert main(["grade", str(nb), "--settings", str(path)]) == 2  # before any grading
    assert says in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--timeout", "0"], "cell.timeout must be a number >= 1, got 0.0 (--timeout:"),
        (["--agent-cpu-seconds", "0"], "agent.cpu_seconds must be a number more than 0"),
        (["--notebook-wall-seconds", "nan"], "notebook.wall_seconds must be a number"),
    ],
)
def test_a_bad_option_is_refused_naming_the_setting(tmp_path, capsys, argv, says):
    nb = tmp_path / "a.ipynb"
    nb.write_text("{}")
    assert main(["grade", str(nb), *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "leave it out for the default" in err


def test_the_course_is_plain_data_that_comes_back_the_same():
    """What a Dask worker and a bundle get (JSON) is the course the instructor's side read."""
    release = nbformat.read(RELEASE, as_version=4)
    release.metadata["a2c"] = {"agent": {"target_score": 400, "points": 2}}
    limits = Limits().with_changes({"cell.timeout": 15, "agent.cpu_seconds": 3})
    course = Course.of_release(release, limits)
    assert course.points.full_marks == 17 and course.agent.points == 2
    again = Course.from_plain(json.loads(json.dumps(course.to_plain())))
    assert again == course and again.limits.cell.timeout == 15.0
    plain = course.to_plain()
    plain["limits"]["agent"]["cpu_seconds"] = 0
    with pytest.raises(ValueError, match="agent.cpu_seconds must be"):
        Course.from_plain(plain)
    plain = course.to_plain()
    plain["agent"]["points"] = -1
    with pytest.raises(ValueError, match="points must be at least 0"):
        Course.from_plain(plain)


def test_the_course_is_read_once_from_the_release(monkeypatch):
    """Reading the course reads the release's points and agent settings once each; the
    assessor takes the course as it is and reads neither again."""
    import autograder.core.course.settings as course_settings
    from autograder.core.assessor import Assessor

    calls = []
    for name in ("course_points", "agent_settings"):
        real = getattr(course_settings, name)
        monkeypatch.setattr(
            course_settings, name, lambda nb, real=real, name=name: calls.append(name) or real(nb)
        )
    release = nbformat.read(RELEASE, as_version=4)
    course = Course.of_release(release, Limits().with_changes({"cell.timeout": 9}))
    assert sorted(calls) == ["agent_settings", "course_points"]
    import autograder.core.assessor as assessor_module

    for name in ("course_points", "agent_settings", "part_points"):
        if hasattr(assessor_module, name):
            monkeypatch.setattr(assessor_module, name, lambda *a: pytest.fail("read again"))
    import tempfile

    assessor = Assessor(release, Path(tempfile.mkdtemp()) / "w", course=course)
    assert assessor.course is course and assessor.budget(1.0) == 9 + 60
