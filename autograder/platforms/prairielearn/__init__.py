"""PrairieLearn front end: an externally graded notebook question, and its grading entry point.

``python -m autograder prairielearn --out DIR --image NAME`` (:func:`bundle.write_bundle`; a
rebuild into the same DIR keeps the question's uuid) writes what a
PrairieLearn course repository needs, DIR being the course's ``serverFilesCourse/a2c_grader/``:

* ``run_grader``: the external grader's entry point (:func:`run_grader.main`), and ``kit/``,
  the reference, the judges and ``course_lib`` that it grades with. PrairieLearn copies them
  into ``/grade/serverFilesCourse/a2c_grader/`` for each grading job only; students never see
  ``serverFilesCourse``;
* ``question/``: the question's ``info.json`` (``gradingMethod: External`` and
  ``externalGradingOptions``: image, entry point, timeout, no network) and ``question.html``
  (one ``a2c.ipynb`` upload), to copy into ``questions/a2c/``;
* ``image/``: a ``Dockerfile`` and ``requirements.txt`` for the grading image (Python, torch's
  CPU build, the requirements, bubblewrap). The image holds no course file, so it may be public
  on Docker Hub, where PrairieLearn pulls images from.

``run_grader`` reads ``/grade`` (or ``PL_GRADE_ROOT``): the notebook from ``student/``,
``data/data.json`` for an optional ``params.notebook`` file name; it writes
``results/results.json`` by PrairieLearn's schema. It grades as ``grade`` does: bubblewrap where
the container allows it, else a fresh unprivileged user (:mod:`autograder.core.isolation.container`);
judging stays in the grader's process.
"""
