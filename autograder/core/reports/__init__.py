"""Reports: the grade of one submission, and what people are shown of it.

* :mod:`.grade_result`: :class:`~.grade_result.GradeResult`, one submission's part scores,
  status and notes, as plain data;
* :mod:`.course_points`: the points of a course's graded cells and full marks made from them;
* :mod:`.table`: the per-part table ``python -m autograder grade`` prints;
* :mod:`.safe_text`: text from a submission made safe for a terminal or a spreadsheet, and
  points as students read them.

A front end (nbgrader's class reports, Gradescope, PrairieLearn) shows these, never its own
sums: the same totals in every channel.
"""
