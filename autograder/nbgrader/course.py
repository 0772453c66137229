"""nbgrader course directories: the grader's template, its own course, the instructor's course.

nbgrader records grades inside a *course directory*. :func:`build_template` makes one, once per
grader::

    <template>/
        course/                    CourseDirectory.root
            nbgrader_config.py     copied from autograder/nbgrader/config.py
            source/a2c/a2c.ipynb   the solution notebook (solution cells + hidden tests)
            release/a2c/a2c.ipynb  what `nbgrader generate_assignment` made of it
        db/gradebook.db            the gradebook: outside the course tree (CourseDirectory.db_url)

Each submission is recorded once (:func:`autograde`), into the instructor's persistent course
(:func:`open_course`, ``grade-all --course``) or, without one, into the grader's own course,
written once from the template's bytes (:func:`new_workspace`). No student code runs in these
folders: the notebook runs in a sandbox (:mod:`autograder.core.isolation.bubblewrap`), and nbgrader, run here
with execution switched off (``autograder/nbgrader/config.py``), only records the grader's
scores in the gradebook and makes the feedback HTML (:func:`generate_feedback`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import nbformat
from traitlets.config import Config

from autograder.nbgrader.gradebook_schema import use_in_process_version
from autograder.nbgrader.gradebook_session import (
    gradebook_session,
    one_engine_per_gradebook,
)

# The assignment id, the notebook name and the source notebook are the course's own
# (solutions.parts, which the notebook builder reads too): the release and the grading course
# agree.
from solutions.parts import ASSIGNMENT, NOTEBOOK, SOURCE_NOTEBOOK

__all__ = [
    "ASSIGNMENT",
    "NOTEBOOK",
    "SOURCE_NOTEBOOK",
    "CourseTemplate",
    "NbgraderError",
    "autograde",
    "build_template",
    "generate_feedback",
    "gradebook_session",
    "new_workspace",
    "one_engine_per_gradebook",
    "run_nbgrader",
]

CONFIG_FILE = Path(__file__).resolve().with_name("config.py")


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message holds the end of its log."""


@dataclass(frozen=True)
class CourseTemplate:
    """A directory laid out as in the module docstring (a template or a workspace).

    With ``persistent=True``, ``root`` is an instructor's nbgrader course directory instead
    (``grade-all --course``): the course is ``root`` itself and the gradebook
    ``root/gradebook.db``, nbgrader's own layout, so formgrader and ``nbgrader export`` use it.
    """

    root: Path
    persistent: bool = False

    @property
    def course(self) -> Path:
        return self.root if self.persistent else self.root / "course"

    @property
    def gradebook(self) -> Path:
        return self.root / ("gradebook.db" if self.persistent else "db/gradebook.db")

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.gradebook}"

    @property
    def release_notebook(self) -> Path:
        return self.course / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"

    def submitted_notebook(self, student: str) -> Path:
        return self.course / "submitted" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"

    def autograded_notebook(self, student: str) -> Path:
        return self.course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"

    def feedback_html(self, student: str) -> Path:
        return self.course / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK}.html"


def _config(workspace: CourseTemplate, **settings: Any) -> Config:
    """The course configuration (``nbgrader_config.py``) for ``workspace``, plus ``settings``."""
    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(CONFIG_FILE)}
    exec(_compiled_config(CONFIG_FILE.read_text()), namespace)
    config.CourseDirectory.root = str(workspace.course)
    config.CourseDirectory.db_url = workspace.db_url
    for dotted, value in settings.items():
        section, name = dotted.split(".")
        config[section][name] = value
    return config


@lru_cache(maxsize=4)
def _compiled_config(text: str) -> Any:
    """The course configuration's code, compiled once for each text it has had."""
    return compile(text, str(CONFIG_FILE), "exec")


def run_nbgrader(
    workspace: CourseTemplate, command: str, args: dict[str, Any], **settings: Any
) -> None:
    """Run nbgrader's ``command`` (an ``NbGraderAPI`` method) on ``workspace``, in this process.

    In-process, not as ``python -m nbgrader``: nbgrader's start-up takes seconds, and nothing it
    does here runs student code. Calls are serialised (nbgrader keeps global state).

    Raises:
        NbgraderError: nbgrader reported a failure (the end of its log is in the message).
    """
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    use_in_process_version()  # a new gradebook costs no `alembic` process
    with gradebook_session():
        config = _config(workspace, **settings)
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        outcome = getattr(api, command)(**args)
    if not outcome.get("success"):
        log = (str(outcome.get("log", "")) + str(outcome.get("error", ""))).strip().splitlines()
        tail = "\n".join(log[-25:])
        raise NbgraderError(f"`nbgrader {command.replace('_', ' ')}` failed:\n{tail}")


def build_template(
    dest: Path,
    source_notebook: Path = SOURCE_NOTEBOOK,
) -> CourseTemplate:
    """Make the template course in the empty or missing folder ``dest``.

    Copies the config and the source notebook, then runs
    ``nbgrader generate_assignment`` (which records the graded cells and the hidden tests in
    the gradebook and writes the release).

    Raises:
        FileNotFoundError: ``source_notebook`` does not exist.
        ValueError: ``source_notebook`` has no nbgrader graded cell, or ``dest`` is not empty.
        NbgraderError: ``generate_assignment`` failed (its log is in the message).
    """
    source_notebook = Path(source_notebook)
    if not source_notebook.is_file():
        raise FileNotFoundError(
            f"source_notebook={str(source_notebook)!r} does not exist: pass the solution notebook "
            "(solutions/a2c.ipynb, with the hidden tests)."
        )
    nb = nbformat.read(source_notebook, as_version=4)
    if not any(cell.metadata.get("nbgrader", {}).get("grade") for cell in nb.cells):
        raise ValueError(
            f"source_notebook={str(source_notebook)!r} has no graded cell (nbgrader metadata "
            "`grade: true`): pass the solution notebook, not the student release."
        )
    if Path(dest).exists() and any(Path(dest).iterdir()):
        raise ValueError(f"dest={str(dest)!r} is not empty: give a new or empty folder.")
    template = CourseTemplate(Path(dest).resolve())
    (template.course / "source" / ASSIGNMENT).mkdir(parents=True, exist_ok=True)
    template.gradebook.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIG_FILE, template.course / "nbgrader_config.py")
    shutil.copyfile(source_notebook, template.course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    run_nbgrader(template, "generate_assignment", {"assignment_id": ASSIGNMENT, "force": True})
    _bonus_as_extra_credit(template.db_url)
    if not template.release_notebook.is_file():
        raise NbgraderError(f"generate_assignment wrote no {template.release_notebook}")
    return template


def _bonus_as_extra_credit(db_url: str) -> None:
    """The bonus parts recorded as extra credit in the gradebook at ``db_url``
    (:mod:`autograder.nbgrader.preprocessors.save_extra_credit`, imported here: it imports
    nbconvert, which a grading command needs only once it records, so that its imports wait
    for the sandbox's run rather than delay its start)."""
    from autograder.nbgrader.preprocessors.save_extra_credit import bonus_as_extra_credit

    bonus_as_extra_credit(db_url, ASSIGNMENT, NOTEBOOK)


#: The empty folder inside a course that nbgrader's exchange is pointed at (``config.py``).
EXCHANGE = "exchange"


def open_course(folder: Path, source_notebook: Path = SOURCE_NOTEBOOK) -> CourseTemplate:
    """The instructor's persistent nbgrader course in ``folder``, set up on first use.

    A missing or empty folder gets the course configuration, the source notebook and
    ``generate_assignment``; an existing course is used as it is, but for its
    ``nbgrader_config.py``, which is brought up to date (the old one is kept beside it as
    ``nbgrader_config.py.previous``). Either way the course has an empty :data:`EXCHANGE`
    folder, where its configuration puts nbgrader's exchange.
    """
    course = CourseTemplate(Path(folder).resolve(), persistent=True)
    source = course.course / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    config = course.course / "nbgrader_config.py"
    if source.is_file() and config.is_file() and config.read_bytes() != CONFIG_FILE.read_bytes():
        # The course's nbgrader commands (formgrader, autograde, feedback, export) read this
        # file: keep it the kit's, so that they keep the kit's safeguards; the old one stays.
        shutil.copyfile(config, config.with_name("nbgrader_config.py.previous"))
        shutil.copyfile(CONFIG_FILE, config)
    if not source.is_file():
        source.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CONFIG_FILE, course.course / "nbgrader_config.py")
        shutil.copyfile(source_notebook, source)
        run_nbgrader(course, "generate_assignment", {"assignment_id": ASSIGNMENT, "force": True})
    _bonus_as_extra_credit(course.db_url)  # an older course too
    # nbgrader's exchange, which this course does not use: the configuration points it here, so
    # that JupyterLab's nbgrader panels in the course folder find it (an older course too).
    (course.course / EXCHANGE).mkdir(exist_ok=True)
    return course


def new_workspace(files: dict[str, bytes], dest: Path) -> CourseTemplate:
    """A course in the missing folder ``dest``, written from ``files``: the grader's own course,
    or a template written from the machine's kept copy (:mod:`autograder.nbgrader.template_cache`).

    ``files`` is :func:`read_tree` of the template, read into memory when the template was
    built, so that nothing written into the template's folder since then is used.
    """
    dest = Path(dest).resolve()
    for name, data in files.items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return CourseTemplate(dest)


def autograde(workspace: CourseTemplate, student: str, notebook: str, record: Path) -> Path:
    """Record ``notebook`` (already run) and the grader's ``record`` in the gradebook.

    ``notebook`` is the notebook's text as ``nbformat.writes`` wrote it (an assessment's): it
    goes to ``submitted/`` as it is, and nbgrader reads and checks it there.

    Runs ``nbgrader autograde`` without execution; returns the autograded notebook. In the
    instructor's course, a part 8 graded for an earlier submission then waits for a grader
    (:func:`autograder.nbgrader.part8_regrading.hold_for_grader`).

    Raises:
        NbgraderError: nbgrader could not record the notebook (its log is in the message).
    """
    target = workspace.submitted_notebook(student)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(notebook if notebook.endswith("\n") else notebook + "\n", "utf-8")
    run_nbgrader(
        workspace,
        "autograde",
        {"assignment_id": ASSIGNMENT, "student_id": student, "force": True},
        **{"TrustedScores.record": str(record)},
    )
    result = workspace.autograded_notebook(student)
    if not result.is_file():
        raise NbgraderError(f"nbgrader autograde wrote no {result}")
    # A part 8 graded before waits for a grader (autograder.nbgrader.part8_regrading).
    if workspace.persistent:
        from nbgrader.api import Gradebook

        from autograder.nbgrader.part8_regrading import hold_for_grader

        with gradebook_session(), Gradebook(workspace.db_url) as gradebook:
            hold_for_grader(gradebook, student, NOTEBOOK, ASSIGNMENT)
    return result


def generate_feedback(workspace: CourseTemplate, student: str) -> Path:
    """Run ``nbgrader generate_feedback`` for ``student``; returns the HTML (hidden tests removed).

    Raises:
        NbgraderError: nbgrader failed or wrote no HTML.
    """
    run_nbgrader(
        workspace,
        "generate_feedback",
        {"assignment_id": ASSIGNMENT, "student_id": student, "force": True},
    )
    html = workspace.feedback_html(student)
    if not html.is_file():
        raise NbgraderError(f"nbgrader generate_feedback wrote no {html}")
    return html
