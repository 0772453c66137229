"""Reports: the grade of one submission, and what people are shown of it.

* :mod:`.grade_result`: :class:`~.grade_result.GradeResult`, one submission's part scores,
  status and notes, as plain data;
* :mod:`.table`: the per-part table ``python -m autograder grade`` prints;
* :mod:`.safe_text`: text from a submission made safe for a terminal or a spreadsheet, and
  points as students read them.

A front end (nbgrader's class reports, Gradescope, PrairieLearn) shows these, never its own
sums: every total is counted by :mod:`autograder.core.course.totals`, the same in every channel.
"""
