"""``python -m autograder``: grade one notebook, or a class's worth, in a sandbox.

Commands::

    python -m autograder grade PATH.ipynb [--json] [--timeout S] [--student ID] [--source NB]
    python -m autograder grade-all DIR_OR_ZIP ... [--out DIR] [--jobs N] [--timeout S]
                                   [--no-feedback] [--no-histogram] [--source NB]
                                   [--course DIR [--allow-git]] [--scheduler tls://HOST:PORT
                                   --certificates DIR] [--insecure-cluster]
                                   [--deadline ISO-TIME] [--late-penalty RULE] [--roster CSV]
    python -m autograder regrade OUT [--course DIR] [--dry-run] [--jobs N] [--scheduler ADDRESS
                                 --certificates DIR] [--no-feedback] [--source NB]
    python -m autograder export --course DIR [--out DIR] [--no-feedback] [--lms-column NAME]
                                [--missing-as-zero]
    python -m autograder similarity OUT [--release NB] [--pages N]
    python -m autograder cluster-certificates DIR
    python -m autograder gradescope [--out autograder.zip]
    python -m autograder prairielearn --out DIR --image NAME [--uuid UUID]

``grade`` names the student as ``grade-all`` names the one file it is given (a file named only
``a2c.ipynb`` after its folder, or ``submission``; ``--student`` overrides), and prints a table
per part with the totals of ``grades.csv`` (full marks 15, part 8 *not graded yet*), or with
``--json`` exactly one JSON object on stdout (``max_total``: full marks)::

    {"total": float, "max_total": float, "status": str, "notes": str, "sandboxed": bool,
     "isolation": "bubblewrap" | "container" | "none" | "not run",
     "parts": {"<part key>": {"score": float, "max": float, "feedback": str}}}

``status`` is ``graded`` or why not (``error: ...``, ``timeout: ...``, ``tampered: ...``,
``unreadable: ...``); ``sandboxed`` is false with ``--no-sandbox`` (read the note);
``isolation`` says how the notebook was isolated (docs/grading.md, "Isolation modes"), or
``not run`` for a file of which nothing ran (not a notebook; ``sandboxed`` is false then too,
and the table says ``not run`` instead of a sandbox warning).

``grade-all`` writes ``grades.csv`` (merged by student with what ``--out`` holds already),
``feedback/<student>.html``, ``summary.txt``, ``scores.png`` and ``received/`` (every file as
submitted) into ``--out`` (default ``grading-output``), prints what changed in ``grades.csv``
and the class's summary (:mod:`autograder.nbgrader.class_reports`). With ``--scheduler`` (or
``A2C_DASK_SCHEDULER``) the submissions are graded on that Dask cluster and recorded here
(:mod:`autograder.core.cluster`; ``pip install -e '.[cluster]'``), which speaks TLS with the
certificate ``cluster-certificates`` makes (``--certificates``, or ``A2C_DASK_CERTIFICATES``); a
plain ``tcp://`` scheduler is refused unless it is on this machine's loopback or
``--insecure-cluster`` is given (:mod:`autograder.core.cluster.security`).

``gradescope`` writes the autograder zip to upload to Gradescope (:mod:`autograder.platforms.gradescope`);
``prairielearn`` writes an externally graded question, its grader and its image recipe
(:mod:`autograder.platforms.prairielearn`). Both grade there as ``grade`` does, in container mode where
the platform's container refuses bubblewrap (:mod:`autograder.core.isolation.container`).

``export`` reads part 8 (graded by hand in formgrader) from the course's gradebook into
``grades.csv``, makes every student's final feedback (``feedback/<student>.html``) and writes
the grades for Canvas, Moodle and other LMSs into ``lms/``
(:mod:`autograder.nbgrader.class_reports.lms_files`).

``regrade`` grades every student's kept file of ``OUT/received/`` again after a change to
the hidden tests, the reference or the points, records only the students whose grade moved
(keeping part 8 and the late data), and prints who changed and by how much, then the change
log of ``grades.csv``; ``--dry-run`` prints the same and writes nothing
(:mod:`autograder.nbgrader.regrading`).

``similarity`` reads the files ``grade-all`` kept in ``OUT/received/`` and writes a report of
the pairs of students whose graded parts are unusually alike for this class, part by part, to
``OUT/similarity/index.html``, with a page per pair (:mod:`autograder.similarity`); student
code is read as text, never run.

Exit status: 0 when every submission was graded, 1 when some could not be (listed on stderr),
2 for a usage error; 1 also when the scheduler cannot be reached or a worker cannot grade.
Text that came from a submission is printed without control characters.

Why one module: the command line of every front end is one parser, and each command's handler
is a few lines that hand over to its front end (:mod:`autograder.nbgrader`,
:mod:`autograder.platforms`, :mod:`autograder.core.cluster`); split, the help would be too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from autograder.core.assessor import CELL_TIMEOUT
from autograder.core.isolation import SandboxUnavailable
from autograder.core.reports.safe_text import printable
from autograder.nbgrader.course import SOURCE_NOTEBOOK, NbgraderError
from solutions.build_notebooks import RELEASE_NOTEBOOK

__all__ = ["build_parser", "grade_student", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m autograder``."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade A2C course notebooks in a sandbox with the hidden tests: one, a class (nbgrader records it), or on Gradescope, PrairieLearn or a Dask cluster.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--timeout",
            type=float,
            default=None,
            metavar="S",
            help=f"per-cell time limit in seconds (default: {CELL_TIMEOUT:g}, "
            "autograder.core.assessor.CELL_TIMEOUT); a notebook's whole run gets one such limit plus "
            "a reserve (autograder.core.assessor.RESERVE_SECONDS)",
        )
        sub.add_argument(
            "--source",
            type=Path,
            default=SOURCE_NOTEBOOK,
            metavar="NB",
            help="the nbgrader source notebook with the hidden tests (default: %(default)s)",
        )
        sub.add_argument(
            "--no-sandbox",
            action="store_true",
            help="run notebooks as plain processes, without isolation (debugging only: results "
            "say `unsandboxed` and are not grades; only as root, which runs them as a user of "
            "their own)",
        )

    one = commands.add_parser("grade", help="grade one notebook")
    one.add_argument("path", type=Path, help="the submitted .ipynb")
    one.add_argument("--json", action="store_true", help="print one JSON object only")
    one.add_argument(
        "--student",
        default=None,
        help="student id (default: as grade-all names a file it is given; a file named only "
        "a2c.ipynb after its folder)",
    )
    common(one)

    many = commands.add_parser("grade-all", help="grade folders or zips of notebooks")
    many.add_argument("inputs", type=Path, nargs="+", help=".ipynb files, folders or .zip files")
    many.add_argument("--out", type=Path, default=Path("grading-output"), help="output folder")
    many.add_argument("--jobs", type=int, default=None, help="parallel gradings (default: cores)")
    many.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    many.add_argument("--no-histogram", action="store_true", help="skip scores.png")
    many.add_argument(
        "--course",
        type=Path,
        default=None,
        metavar="DIR",
        help="also record every graded notebook and score in this nbgrader course directory "
        "(made on first use), for formgrader (part 8), generate_feedback and export; never "
        "inside a git work tree of the student distribution",
    )
    many.add_argument(
        "--allow-git",
        action="store_true",
        help="let --course be inside a (private) git work tree; refused without it",
    )
    many.add_argument(
        "--deadline",
        default=None,
        metavar="WHEN",
        help="the assignment's deadline, ISO 8601 with its time zone (2026-03-01T23:59+01:00): "
        "grades.csv and the summary show minutes late; with --course it is stored there and "
        "used by later runs",
    )
    many.add_argument(
        "--late-penalty",
        default=None,
        metavar="RULE",
        help="take points off late work (needs --course, where it is kept for later runs): "
        "PERCENT%%/UNIT of full marks per started hour, day or week after the deadline, "
        "optionally capped, e.g. 10%%/day or 2%%/hour,max=30%%; 'none' removes it. "
        "Default: the course's rule, else no penalty",
    )
    many.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="CSV",
        help="the class roster (columns id, first_name, last_name, email; canvas_id, section, "
        "sis_user_id, sis_login_id): names go into the course's gradebook, a Canvas or Moodle "
        "download is matched to it (Canvas by canvas_id, Moodle by full name); a submission of "
        "a student not on it is graded and flagged",
    )
    many.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="grade on this Dask distributed cluster, secured with TLS (tls://10.0.0.5:8786, "
        "with --certificates; plain tcp:// only on 127.0.0.1; default: $A2C_DASK_SCHEDULER, "
        "else this machine); needs pip install -e '.[cluster]'",
    )
    many.add_argument(
        "--certificates",
        type=Path,
        default=None,
        metavar="DIR",
        help="the cluster's TLS certificates, made by `python -m autograder "
        "cluster-certificates DIR` (default: $A2C_DASK_CERTIFICATES)",
    )
    many.add_argument(
        "--insecure-cluster",
        action="store_true",
        help="allow a plain tcp:// scheduler on another machine: anyone who reaches it can read "
        "the hidden tests and change the grades (a network only you can reach)",
    )
    common(many)

    again = commands.add_parser(
        "regrade", help="grade the kept files again after a fix; only the grades that moved change"
    )
    again.add_argument("out", type=Path, help="the --out folder of grade-all")
    again.add_argument(
        "--course", type=Path, default=None, metavar="DIR", help="the course graded into"
    )
    again.add_argument("--allow-git", action="store_true", help=argparse.SUPPRESS)
    again.add_argument(
        "--dry-run", action="store_true", help="print who would change; write nothing"
    )
    again.add_argument("--jobs", type=int, default=None, help="parallel gradings (default: cores)")
    again.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    again.add_argument("--scheduler", default=None, metavar="ADDRESS", help="as for grade-all")
    again.add_argument(
        "--certificates", type=Path, default=None, metavar="DIR", help="as for grade-all"
    )
    again.add_argument("--insecure-cluster", action="store_true", help="as for grade-all")
    common(again)
    final = commands.add_parser(
        "export",
        help="part 8 from the course's gradebook into grades.csv, and the final feedback",
    )
    final.add_argument("--course", type=Path, required=True, metavar="DIR", help="the course")
    final.add_argument("--out", type=Path, default=Path("grading-output"), help="output folder")
    final.add_argument("--no-feedback", action="store_true", help="skip the feedback HTML")
    final.add_argument(
        "--lms-column",
        default="a2c",
        metavar="NAME",
        help="the assignment column of the LMS files in OUT/lms (default: %(default)s); for an "
        "existing Canvas assignment, its header in Canvas's gradebook export, e.g. 'A2C (123456)'",
    )
    final.add_argument(
        "--missing-as-zero",
        action="store_true",
        help="give a roster student without a submission 0 in the LMS files (default: an empty "
        "cell, no grade)",
    )

    similar = commands.add_parser(
        "similarity",
        help="pairs of students whose graded parts are unusually alike (a report to read)",
    )
    similar.add_argument("out", type=Path, help="the --out folder of grade-all")
    similar.add_argument(
        "--release",
        type=Path,
        default=RELEASE_NOTEBOOK,
        metavar="NB",
        help="the notebook students were given; its code is left out (default: %(default)s)",
    )
    similar.add_argument(
        "--pages",
        type=int,
        default=200,
        metavar="N",
        help="pair pages written at most (default: 200)",
    )
    certificates = commands.add_parser(
        "cluster-certificates",
        help="make the TLS certificate that secures a grading cluster (docs/cluster.md)",
    )
    certificates.add_argument(
        "folder", type=Path, help="a new folder for cert.pem and key.pem (closed to others)"
    )
    gradescope = commands.add_parser("gradescope", help="the autograder zip for Gradescope")
    gradescope.add_argument(
        "--out", type=Path, default=Path("autograder.zip"), help="the zip (default: %(default)s)"
    )
    prairielearn = commands.add_parser(
        "prairielearn", help="an externally graded PrairieLearn question and its grader"
    )
    prairielearn.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="a new folder, or an earlier build's (rebuilt in place, its question uuid kept): the "
        "external grader (for the course's serverFilesCourse/a2c_grader), the question and the "
        "grading image's recipe",
    )
    prairielearn.add_argument(
        "--image",
        default="",
        metavar="NAME",
        help="the grading image you build and push to Docker Hub, for info.json "
        "(<your Docker Hub user>/a2c-grader:latest)",
    )
    prairielearn.add_argument(
        "--uuid",
        default=None,
        help="the question's uuid (PrairieLearn knows the question by it): the one in your "
        "course's questions/a2c/info.json; default: the earlier build's in --out, else a new one",
    )
    return parser


def _platform(args: argparse.Namespace) -> int:
    if args.command == "gradescope":
        from autograder.platforms.gradescope.bundle import build_zip

        names = build_zip(args.out)
        print(f"{args.out}: {len(names)} files; upload it as the assignment's autograder")
        return 0
    from autograder.platforms.prairielearn.bundle import write_bundle

    bundle = write_bundle(args.out, args.image, question_uuid=args.uuid)
    kept = (
        "kept: PrairieLearn updates the same question"
        if bundle.kept
        else "new: rebuild into this folder (or pass --uuid) to keep it"
    )
    print(
        f"{args.out}: {len(bundle.names)} files; copy it to the course's "
        f"serverFilesCourse/a2c_grader, {args.out / 'question'} to questions/a2c, and build "
        f"{args.out / 'image'} as {args.image}\nquestion uuid {bundle.uuid} ({kept})"
    )
    return 0


def _cluster_certificates(args: argparse.Namespace) -> int:
    from autograder.core.cluster.security import make_certificates

    cert, key = make_certificates(args.folder)
    flags = f"--tls-ca-file {cert} --tls-cert {cert} --tls-key {key}"
    print(
        f"{cert} and {key} written (only your user can read them). Copy the folder to the "
        "scheduler's and the workers' machines (scp -rp), nowhere else, and start them with "
        f"TLS:\n  dask scheduler --protocol tls --port 8786 --dashboard-address 127.0.0.1:8787 "
        f"{flags}\n  dask worker tls://SCHEDULER_HOST:8786 --no-dashboard --preload "
        f"autograder.core.cluster.worker {flags}\nthen grade with: python -m autograder grade-all ... "
        f"--scheduler tls://SCHEDULER_HOST:8786 --certificates {args.folder}"
    )
    return 0


def _student_of(path: Path) -> str:
    """The student ``grade-all PATH`` would name for the one file ``path`` (``""``: none)."""
    import tempfile

    from autograder.core.intake.collect import collect

    with tempfile.TemporaryDirectory(prefix="a2c-collect-") as scratch:
        submissions, _ = collect([path], Path(scratch))
    return submissions[0].student if submissions else ""


#: The name ``grade`` gives a file nothing else names (a2c.ipynb at the top of a file system).
NEUTRAL_STUDENT = "submission"


def grade_student(path: Path) -> str:
    """Who ``grade PATH`` grades: as ``grade-all`` names the one file (``carol.ipynb``: carol),
    else, for the name every student submits (``a2c.ipynb``), the folder it sits in, else
    :data:`NEUTRAL_STUDENT`. One file graded on its own is recorded nowhere, so any name will
    do; ``grade-all`` refuses a file it cannot name, since it records grades by student."""
    from autograder.core.intake.collect import student_id

    path = path.resolve()
    by_folder = student_id(path, root=path.parent.parent)  # as grade-all names a folder
    return _student_of(path) or by_folder or NEUTRAL_STUDENT


def _grade(args: argparse.Namespace) -> int:
    from autograder.core.agent_play.feedback import agent_line
    from autograder.core.reports.table import format_table
    from autograder.nbgrader.grader import Grader

    if not args.path.is_file():
        print(
            f"error: {args.path} does not exist (give the path of a .ipynb file)", file=sys.stderr
        )
        return 2
    student = args.student or grade_student(args.path)
    with Grader(args.source, timeout=args.timeout, isolate=not args.no_sandbox) as grader:
        result = grader.grade(args.path, student=student)
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(format_table(result))
        if agent_line(result.agent):
            print(printable(agent_line(result.agent)))
    if result.status != "graded":
        print(printable(f"{args.path}: {result.status}"), file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _cluster_session(args: argparse.Namespace) -> Iterator[Any]:
    """A client of ``--scheduler`` (or of the scheduler the environment names) for the command's
    time, closed after it; None when no scheduler is named (grading stays on this machine)."""
    from autograder.core.cluster.connection import scheduler_address

    address = scheduler_address(args.scheduler)
    client = _cluster_client(address, args) if address else None
    try:
        yield client
    finally:
        if client is not None:
            client.close()


def _cluster_client(address: str, args: argparse.Namespace) -> Any:
    """A client of the scheduler at ``address``, by the rule of
    :func:`~autograder.core.cluster.security.check_scheduler_address`."""
    import os

    from autograder.core.cluster.connection import connect
    from autograder.core.cluster.security import (
        CERTIFICATES_VARIABLE,
        check_listening,
        check_scheduler_address,
        cluster_security,
        scheduler_sockets,
    )

    named = args.certificates or os.environ.get(CERTIFICATES_VARIABLE, "").strip() or None
    certificates = Path(named).expanduser() if named else None
    address, warning = check_scheduler_address(address, certificates, args.insecure_cluster)
    if warning:
        print(warning, file=sys.stderr)
    tls = address.startswith("tls://")
    client = connect(address, security=cluster_security(certificates) if tls else None)
    if not tls and not args.insecure_cluster:  # where it really listens, not what was typed
        try:
            check_listening(address, client.run_on_scheduler(scheduler_sockets))
        except BaseException:
            client.close()
            raise
    return client


def _grade_all(args: argparse.Namespace) -> int:
    import tempfile

    from autograder.core.cluster.connection import ClusterError
    from autograder.core.cluster.scheduling import ClusterGrading
    from autograder.core.intake.collect import collect
    from autograder.nbgrader.class_reports.grades_csv import read_rows
    from autograder.nbgrader.folders import check_course_dir
    from autograder.nbgrader.grader import ClassSettings, Grader, grade_many
    from autograder.nbgrader.late_penalty import parse_late_penalty
    from autograder.nbgrader.roster import read_roster
    from autograder.nbgrader.submission_times import parse_deadline

    deadline = parse_deadline(args.deadline) if args.deadline else None
    if args.late_penalty is not None:
        parse_late_penalty(args.late_penalty)  # a bad rule stops here, before any grading
        if args.course is None:
            raise ValueError(
                "--late-penalty needs --course: the penalty is the course's rule, and the "
                "gradebook, formgrader, both exports and the feedback take it from there."
            )
    roster = None
    if args.roster is not None:
        roster = read_roster(args.roster)  # a bad roster stops here, before any grading
    if args.course is not None:
        check_course_dir(args.course, allow_git=args.allow_git)
        kept = args.course / "roster.csv"  # the course's, from an earlier --roster
        if roster is None and kept.is_file():
            roster = read_roster(kept)
    read_rows(args.out / "grades.csv")  # refuse a foreign grades.csv before grading
    with tempfile.TemporaryDirectory(prefix="a2c-collect-") as scratch:
        # An LMS's download is matched to the roster by the LMS's own ids and names.
        submissions, problems = collect(args.inputs, Path(scratch), roster)
        for problem in problems:
            where = problem.origin or problem.path
            print(printable(f"warning: {where}: {problem.reason}"), file=sys.stderr)
        if not submissions:
            print("error: no notebook to grade in the inputs", file=sys.stderr)
            return 1
        try:
            # The client is made before the grader: a wrong address fails fast.
            with _cluster_session(args) as client:
                if client is not None and args.jobs is not None:
                    print("warning: --jobs is ignored with a scheduler", file=sys.stderr)
                # On a cluster this machine only records: the workers need bubblewrap, not it.
                isolate = not args.no_sandbox
                sandbox_here = isolate and client is None
                with Grader(
                    args.source, timeout=args.timeout, isolate=sandbox_here, course=args.course
                ) as grader:
                    results = grade_many(
                        grader,
                        submissions,
                        args.out,
                        problems=problems,
                        jobs=args.jobs,
                        histogram=not args.no_histogram,
                        feedback=not args.no_feedback,
                        cluster=ClusterGrading(client, isolate) if client is not None else None,
                        settings=ClassSettings(deadline, args.roster, args.late_penalty),
                    )
        except ClusterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    changes = (args.out / "changes.txt").read_text(encoding="utf-8")
    print(printable(f"grades.csv, what changed:\n{changes}"))
    print(printable((args.out / "summary.txt").read_text(encoding="utf-8")))
    print(f"grades: {args.out / 'grades.csv'}")
    failed = [result for result in results if result.status != "graded"]
    for result in failed:
        line = f"not graded: {result.student or '?'} ({result.source}): {result.status}"
        print(printable(line), file=sys.stderr)
    return 1 if failed else 0


def _regrade(args: argparse.Namespace) -> int:
    from autograder.core.cluster.connection import ClusterError
    from autograder.core.cluster.scheduling import ClusterGrading
    from autograder.nbgrader.course import CourseTemplate
    from autograder.nbgrader.feedback_renderer import render_feedback
    from autograder.nbgrader.folders import check_course_dir
    from autograder.nbgrader.grader import Grader, check_jobs
    from autograder.nbgrader.regrading import regrade

    if args.course is not None:
        check_course_dir(args.course, allow_git=args.allow_git)
    try:
        with _cluster_session(args) as client:
            isolate = not args.no_sandbox
            course = None if args.dry_run else args.course
            with Grader(
                args.source, timeout=args.timeout, isolate=isolate and client is None, course=course
            ) as grader:
                if args.dry_run and args.course is not None:  # read only: what the course holds
                    grader.course = CourseTemplate(args.course, persistent=True)
                done = regrade(
                    grader,
                    args.out,
                    dry_run=args.dry_run,
                    jobs=check_jobs(args.jobs),
                    cluster=ClusterGrading(client, isolate) if client is not None else None,
                    make_feedback=None if args.no_feedback else render_feedback,
                )
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(printable("\n".join(done.lines)))
    return 0


def _similarity(args: argparse.Namespace) -> int:
    from autograder.similarity.report import similarity_report

    print(printable(similarity_report(args.out, args.release, args.pages)))
    return 0


def _export(args: argparse.Namespace) -> int:
    from autograder.nbgrader.final_export import export

    done = export(
        args.course,
        args.out,
        feedback=not args.no_feedback,
        lms_column=args.lms_column,
        missing_as_zero=args.missing_as_zero,
    )
    print(printable(done))
    return 0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an option the command does not have stops with that command's
    usage (argparse would print the top-level one), and the nearest option it has."""
    import difflib

    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        commands = next(
            action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
        )
        command = commands.choices[args.command]
        options = [name for action in command._actions for name in action.option_strings]
        guesses = [
            f"{word} (did you mean {close[0]}?)" if close else word
            for word in unknown
            for close in [difflib.get_close_matches(word.split("=")[0], options, n=1)]
        ]
        command.error(f"unrecognized arguments: {' '.join(guesses)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parse(argv)
    for name in (
        "path",
        "out",
        "source",
        "course",
        "roster",
        "certificates",
        "folder",
        "release",
    ):  # nbgrader changes the working directory
        if getattr(args, name, None) is not None:
            setattr(args, name, getattr(args, name).resolve())
    try:
        if args.command == "grade":
            return _grade(args)
        if args.command == "export":
            return _export(args)
        if args.command in ("gradescope", "prairielearn"):
            return _platform(args)
        if args.command == "cluster-certificates":
            return _cluster_certificates(args)
        if args.command == "similarity":
            return _similarity(args)
        if args.command == "regrade":
            return _regrade(args)
        return _grade_all(args)
    except ValueError as error:  # bad --timeout, --jobs, source notebook...
        print(f"error: {error}", file=sys.stderr)
        return 2
    except SandboxUnavailable as error:  # no bubblewrap and no --no-sandbox
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (NbgraderError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
