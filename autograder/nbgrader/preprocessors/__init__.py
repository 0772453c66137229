"""The course's nbconvert preprocessors: scores come from the grader's record, never from cells.

One class a module, named as the course configuration (``autograder/nbgrader/config.py``)
names it:

* ``autograde``: :mod:`.trusted_scores` (the grader's scores in the graded cells),
  :mod:`.save_extra_credit` (the bonus as nbgrader's extra credit), :mod:`.check_cell_metadata`
  (nbgrader's metadata check, once per distinct metadata), :mod:`.sanitize_markdown` (active
  HTML out of the cells a student could edit);
* ``generate_feedback``: :mod:`.course_totals` (the course's totals for the page),
  :mod:`.sanitize_markdown`, :mod:`.hide_graded_tracebacks` (a graded cell's traceback cut to
  its last line).
"""
