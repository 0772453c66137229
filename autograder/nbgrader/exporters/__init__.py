"""The course's nbconvert exporters: who may record a grade, and the feedback page.

* :mod:`.grader_only`: ``nbgrader autograde``'s exporter, which refuses unless the grader runs it;
* :mod:`.feedback`: the feedback HTML with the course's totals;
* :mod:`.preprocessed_once`: what both share: one copy of the notebook preprocessed, checked
  once.
"""
