"""Judging: from what a sandboxed run sent back to each part's score and feedback.

* :mod:`.plan`: this grading's probe steps, drawn from a secret seed, and the reference's side;
* :mod:`.channel` and :mod:`.record_decoding`: the strict decoding of the untrusted lines and
  records the sandbox sent (trusted code, bounded);
* :mod:`.parts`: per part key, the cases drawn for a grading and the judges that compare what
  came back with the reference;
* :mod:`.part_scoring`: a part's records to its score and feedback (:func:`judge_part`);
* :mod:`.run_outcome`: a whole run to a grade: every part scored, the cell notes, the status;
* :mod:`.in_process`: :func:`grade_part`, probe and judge at once in this process, for the
  hidden-test cells of an instructor's or self-learner's own notebook.
"""

from autograder.core.judging.in_process import grade_part, run_part
from autograder.core.judging.part_scoring import PartResult, SubResult, judge_part
from autograder.core.judging.plan import make_plan, new_seed, prepare_references, time_scale

__all__ = [
    "PartResult",
    "SubResult",
    "grade_part",
    "judge_part",
    "make_plan",
    "new_seed",
    "prepare_references",
    "run_part",
    "time_scale",
]
