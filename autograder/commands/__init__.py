"""The commands of ``python -m autograder``, a module each (:mod:`autograder.cli` puts them
together into one parser and runs the one named).

Each module adds its command's options to the parser (``add_parser``) and runs it (``run``,
the exit status), handing over to a front end in a few lines:

* :mod:`.grade`: ``grade``, one notebook (:mod:`autograder.nbgrader`);
* :mod:`.grade_all`: ``grade-all``, a class, on this machine or a Dask cluster;
* :mod:`.regrade`: ``regrade``, the class's kept files again after a fix;
* :mod:`.export`: ``export``, part 8 from the gradebook, the final feedback and the LMS files;
* :mod:`.similarity`: ``similarity``, the report of unusually alike submissions;
* :mod:`.platforms`: ``gradescope`` and ``prairielearn``, the platforms' bundles;
* :mod:`.cluster`: ``cluster-certificates``, and the cluster client ``grade-all`` and
  ``regrade`` share;
* :mod:`.options`: the grading options every grading command takes.
"""
