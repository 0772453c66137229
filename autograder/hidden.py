"""The former name of :mod:`autograder.judging` (the hidden-test cells of the solution notebook
import ``grade_part`` from here): a plain re-export."""

from .judging import PartResult, grade_part, judge_part, make_plan, run_part

__all__ = ["PartResult", "grade_part", "judge_part", "make_plan", "run_part"]
