"""The course as the grader knows it: its parts and points, the verified agent's settings, and
how a student's total is counted, each declared once.

* :mod:`.points`: :class:`~.points.CoursePoints`, the points of every graded cell (autograded,
  bonus, graded by hand) and of the verified agent, and the full marks made from them;
* :mod:`.agent`: :class:`~.agent.AgentSettings`, the course's choices for the verified agent
  score (``a2c.agent`` in the source notebook's metadata);
* :mod:`.totals`: :func:`~.totals.count_total`, the one place a total is counted: parts, bonus,
  part 8, the agent's points, the late penalty.

The part list itself is the course's leaf, :mod:`solutions.parts`, which the notebook builder
and the reference read too. Not to be confused with the nbgrader course *folder*
(:mod:`autograder.nbgrader.course`), where an instructor's gradebook lives.
"""
