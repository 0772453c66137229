"""Gradescope front end: the autograder zip, and the grading Gradescope runs per submission.

``python -m autograder gradescope --out autograder.zip`` (:func:`bundle.build_zip`) writes the
zip an instructor uploads as a Gradescope "autograder": the kit (the reference, the judges,
``course_lib``), ``requirements.txt`` for grading, ``setup.sh`` (run once by Gradescope when it
builds the image: bubblewrap from apt where it can, then the requirements with the ``python3``
and ``pip`` on ``PATH``) and ``run_autograder`` (run per submission:
:func:`run_autograder.main`).

Gradescope unpacks the zip into ``/autograder/source``, puts the submission into
``/autograder/submission`` and reads ``/autograder/results/results.json``. ``run_autograder``
takes that root from ``AUTOGRADER_ROOT`` (default ``/autograder``), so the same grading runs on
any folder laid out alike. It grades as ``grade`` does: the notebook runs in the bubblewrap
sandbox, or where Gradescope's container refuses namespaces as a fresh unprivileged user
(:mod:`autograder.core.isolation.container`), and is judged in the grader's own process.
"""
