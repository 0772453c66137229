"""nbgrader configuration of the A2C course (nbgrader 0.9.6), used by ``python -m autograder``.

The grader copies this file into each course directory it makes (and into the persistent course
of ``grade-all --course``). Every setting was checked against nbgrader 0.9.6's source; the
comment says what it changes and why.

Decided per run on the command line by :mod:`autograder.nbgrader.course`: ``CourseDirectory.root``,
``CourseDirectory.db_url`` (the gradebook, outside any folder student code can see) and
``TrustedScores.record`` (the grader's scores).

The file is importable as a module too (``autograder.nbgrader.config.c``), so tests can read
the settings; under nbgrader, ``get_config`` is provided by the config loader.
"""

try:
    c = get_config()  # type: ignore[name-defined]  # noqa: F821 - given by nbgrader's loader
except NameError:  # imported as a module (tests, documentation)
    from traitlets.config import Config

    c = Config()

# --- the course -------------------------------------------------------------------------------
# One assignment, "a2c", with one notebook, "a2c.ipynb". The id is also the folder name under
# source/, release/, submitted/<student>/, autograded/<student>/ and feedback/<student>/.
c.CourseDirectory.course_id = "a2c"

# What a solution region becomes in the student release: valid code that fails loudly.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# --- generate_assignment (the grader's, and formgrader's Generate button) ----------------------
# nbgrader's own steps (0.9.6's defaults), with BonusAsExtraCredit right after SaveCells: SaveCells
# stores every grade cell's points from the source, so the bonus's 2 would make full marks 17 in
# the gradebook (formgrader, nbgrader export) until the next grade-all; the step puts the bonus
# cell back at 0 (its points are extra credit), whichever button or command generated.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearSolutions",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "autograder.nbgrader.preprocessors.save_extra_credit.BonusAsExtraCredit",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# --- the exchange ------------------------------------------------------------------------------
# This course collects notebooks from a folder or an LMS zip (grade-all), never through nbgrader's
# exchange (release, fetch and submit between the accounts of one JupyterHub). But nbgrader's
# JupyterLab panels look for the exchange whenever JupyterLab or formgrader starts in the course
# folder, and at nbgrader's default, /srv/nbgrader/exchange, they warn that "the exchange directory
# ... does not exist and could not be created". It is the empty exchange/ folder beside this file,
# which grade-all --course makes: the panels then list no assignment, and nothing is released or
# collected through it.
import os  # noqa: E402

c.Exchange.root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exchange")

# --- autograde: record the grader's scores, run nothing -----------------------------------------
# The student's notebook was already run, in a sandbox, by python -m autograder, and every part
# judged in the grader's own process. nbgrader must not run it again (its kernel would run as the
# instructor, next to the gradebook), and must not clear the outputs the sandbox produced (the
# plots and answers of part 8 are read by hand). So its sanitising keeps nbgrader's defaults but
# ClearOutput: duplicated cells are de-duplicated, the kernelspec is reset, every locked cell
# (tests included) is put back as released, and cell metadata is checked (nbgrader's check,
# each distinct metadata once per process: autograder.nbgrader.preprocessors.check_cell_metadata.CheckCellMetadata).
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "autograder.nbgrader.preprocessors.check_cell_metadata.CheckCellMetadata",
]
# Then nbgrader's default autograde steps without Execute (and without IgnorePattern, which
# only filtered what Execute produced), with TrustedScores first: it replaces the outputs of
# every graded cell by the grader's record, so SaveAutoGrades saves the grader's scores, never
# what a cell displayed. The bonus part's test cell is worth 0 in the gradebook (the grader sets
# it after generate_assignment), so that formgrader and nbgrader's gradebook count full marks as
# the course does (15, not 17): SaveExtraCredit records its points as nbgrader's extra credit.
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrader.preprocessors.trusted_scores.TrustedScores",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "autograder.nbgrader.preprocessors.save_extra_credit.SaveExtraCredit",
    "nbgrader.preprocessors.AssignLatePenalties",
    "autograder.nbgrader.preprocessors.check_cell_metadata.CheckCellMetadata",
]
# Run by hand (`nbgrader autograde`, with or without --force, or formgrader's Autograde
# button), nbgrader would first remove autograded/<student>, then stop at TrustedScores (no
# grader record) and remove what it had started: the student would show 0 / 0. nbgrader
# creates its exporter before it touches any student folder, so this exporter refuses there,
# without the grader's record, and nothing is removed.
c.Autograde.exporter_class = "autograder.nbgrader.exporters.grader_only.GraderOnlyExporter"
# Formgrader shows the stored notebook's markdown as HTML without sanitizing it: the last step
# removes scripts, event handlers and javascript: links from every cell a student could edit.
c.Autograde.autograde_preprocessors.append("autograder.nbgrader.preprocessors.sanitize_markdown.SanitizeMarkdown")
# With add_missing_cells, a graded cell the student deleted is put back (the grader restores
# deleted cells itself before the sandbox runs; this stays as a second line of defence).
c.OverwriteCells.add_missing_cells = True

# A flood of stdout is cut to this many lines per cell, so feedback files stay small.
# A code cell's first line (`%%ruby`) would pick a pygments lexer in formgrader and the
# feedback: only the course's language is highlighted (autograder/core/intake/code_highlighting.py).
c.HighlightMagicsPreprocessor.enabled = False

c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100

# --- feedback ------------------------------------------------------------------------------------
# The autograded notebook holds the hidden tests (OverwriteCells put the source's graded cells
# back). The feedback HTML must not: ClearHiddenTests removes the "### BEGIN/END HIDDEN TESTS"
# regions, and HideGradedTracebacks cuts a graded cell's traceback to its last line.
# CourseTotals and the a2c_feedback template give the page the course's one set of totals:
# full marks = autograded points without the bonus + part 8 (15), the bonus above full marks,
# part 8 "not graded yet" until formgrader has its score (nbgrader's own page says 0.0 / 3.0
# and counts the bonus in the maximum, 17). nbgrader's feedback template renders markdown
# unsanitized: SanitizeMarkdown cleans every cell a student could edit first. Part 8's comment
# holds lines written for graders (an earlier submission's score, the late penalty and which
# totals are before it): StudentComments keeps them in formgrader and off the student's page.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.nbgrader.student_comments.StudentComments",
    "autograder.nbgrader.preprocessors.course_totals.CourseTotals",
    "autograder.nbgrader.preprocessors.sanitize_markdown.SanitizeMarkdown",
    "nbgrader.preprocessors.ClearHiddenTests",
    "autograder.nbgrader.preprocessors.hide_graded_tracebacks.HideGradedTracebacks",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
c.GenerateFeedback.exporter_class = "autograder.nbgrader.exporters.feedback.FeedbackExporter"
# nbgrader skips a student whose feedback/ folder exists and is newer than autograded/ ("Skipping
# existing assignment"), but a part 8 score typed in formgrader changes only the gradebook: the
# page would keep saying "part 8: not graded yet". Every `nbgrader generate_feedback` therefore
# makes every page again from the gradebook (a page never reaches a student stale).
c.GenerateFeedback.force = True
c.FeedbackExporter.template_name = "a2c_feedback"
from autograder.nbgrader.exporters.feedback import FEEDBACK_TEMPLATES, nbgrader_templates  # noqa: E402

c.FeedbackExporter.extra_template_basedirs = [str(FEEDBACK_TEMPLATES), str(nbgrader_templates())]
# a2c_feedback extends nbgrader's `feedback/index.html.j2` (found from nbgrader's template
# folder) and inlines its Bootstrap styles (the folder nbgrader's GenerateFeedback names).
c.FeedbackExporter.extra_template_paths = [
    str(nbgrader_templates()),
    str(nbgrader_templates().parent / "static/node_modules/bootstrap/dist/css"),
]

# --- export --------------------------------------------------------------------------------------
# `nbgrader export` writes the course's totals: max_score is full marks (15 = 12 autograded + 3
# for part 8), the bonus counts in the score above it, and part 8 says "not graded yet" (nbgrader's
# own CSV puts the bonus in max_score, 17, and an ungraded part 8 at 0).
c.ExportApp.plugin_class = "autograder.nbgrader.export_plugin.CourseExport"
