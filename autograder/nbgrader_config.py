"""nbgrader configuration of the A2C course (nbgrader 0.9.6), used by ``python -m autograder``.

The grading pipeline copies this file into each temporary course directory as
``nbgrader_config.py``; instructors who run nbgrader by hand (``nbgrader formgrader``,
``nbgrader autograde``) copy it to their course root the same way. Every setting below was
checked against nbgrader 0.9.6's source; the comment says what it changes and why.

Things decided on the command line instead (by :mod:`autograder.course`), because they are
per run: ``CourseDirectory.root`` (a fresh temporary directory per submission),
``CourseDirectory.db_url`` (the gradebook, kept *outside* the course tree the student's code
runs in) and ``Execute.timeout`` (``--timeout``).

The file is importable as a module too (``autograder.nbgrader_config.c``), so tests can read
the settings; under nbgrader, ``get_config`` is provided by the config loader.
"""

try:
    c = get_config()  # type: ignore[name-defined]  # noqa: F821 - given by nbgrader's loader
except NameError:  # imported as a module (tests, documentation)
    from traitlets.config import Config

    c = Config()

#: Regular expression of the stderr outputs dropped before grading (see IgnorePattern below).
STDERR_IGNORED = r"[\s\S]"

# --- the course -------------------------------------------------------------------------------
# One assignment, "a2c", with one notebook, "a2c.ipynb". The id is also the folder name under
# source/, release/, submitted/<student>/, autograded/<student>/ and feedback/<student>/.
c.CourseDirectory.course_id = "a2c"

# What a solution region becomes in the student release: valid code that fails loudly.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# --- execution (autograde) --------------------------------------------------------------------
# Per-cell time limit in seconds (nbgrader's default is 30). An endless loop in a student's
# cell is interrupted after this long; the cell gets an error output ("CellTimeoutError") and
# the notebook goes on with the next cell, so only the parts that need that code lose points.
# The hidden tests have their own, shorter limits (autograder.hidden: 10 s a sub-check, 25 s a
# part), so a graded cell normally finishes well inside this limit. `--timeout S` overrides it.
c.Execute.timeout = 120
# On timeout, interrupt the kernel (KeyboardInterrupt) instead of killing it, so that the
# notebook's state, and the grading of the later parts, survives (nbgrader's default, kept).
c.Execute.interrupt_on_timeout = True
# Starting a kernel that imports torch can take a while on a loaded machine (default 60 s).
c.Execute.startup_timeout = 180
# After a cell's reply, how long to wait for its last outputs (default 4 s). Under load, with a
# flood of output, 4 s is not enough, and with raise_on_iopub_timeout=True nbclient would then
# abort the WHOLE notebook; waiting longer and never aborting keeps one cell's noise local.
c.Execute.iopub_timeout = 30
c.Execute.raise_on_iopub_timeout = False

# nbgrader gives 0 points to a graded code cell with ANY stderr output
# (nbgrader.utils.determine_grade). torch, gymnasium and ale-py write warnings there, and a
# student's thread may print to stderr while a graded cell runs, so a correct part could lose
# all its points. Our graded cells report their score as a float result (partial credit) and a
# failure as an exception, so stderr carries no grading information: IgnorePattern drops every
# stderr stream output after execution and before the scores are saved (it runs between Execute
# and SaveAutoGrades). In nbgrader 0.9.6 IgnorePattern is *disabled* by default: enable it.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = STDERR_IGNORED

# The student's code runs as the same user as nbgrader and could overwrite or delete the
# gradebook while its notebook executes. SaveGradebook/RestoreGradebook (autograder.guard) keep
# the gradebook's bytes before Execute and put them back after it, before SaveAutoGrades writes
# the scores. The rest of the list is nbgrader 0.9.6's default, in its order.
c.Autograde.autograde_preprocessors = [
    "autograder.guard.SaveGradebook",
    "nbgrader.preprocessors.Execute",
    "autograder.guard.RestoreGradebook",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# A flood of stdout is cut to this many lines per cell (nbgrader's LimitOutput), so feedback
# files stay small; tracebacks are cut to 100 lines.
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100

# --- sanitising the submission ------------------------------------------------------------------
# OverwriteCells (always on in autograde) restores the source of every locked cell, the
# hidden tests included, from the gradebook, and its points and type; an edited locked cell is
# thus graded as the original. With add_missing_cells, a graded cell the student deleted is put
# back. (nbgrader 0.9.6 places it after the previous *graded or solution* cell only and fails
# when the previous source cell is a locked, ungraded one, so autograder.course restores deleted
# cells itself before nbgrader runs; this setting remains as a second line of defence.)
c.OverwriteCells.add_missing_cells = True
# DeduplicateIds (always on) keeps the LAST copy of a cell whose grade_id appears twice and
# strips the nbgrader metadata of the others, so a duplicated test cell is graded once.
# CheckCellMetadata (always on) rejects malformed nbgrader metadata.

# --- feedback ------------------------------------------------------------------------------------
# The autograded notebook holds the hidden tests (OverwriteCells put them back). The feedback
# HTML must not: ClearHiddenTests removes the "### BEGIN/END HIDDEN TESTS" regions, and
# HideGradedTracebacks (autograder.feedback) replaces the traceback of an error in a graded cell
# (which quotes the cell's source, hidden lines included) by its one-line message.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "autograder.feedback.HideGradedTracebacks",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
