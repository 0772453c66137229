"""Grading a class on a Dask distributed cluster, secured with Dask's own TLS.

* :mod:`.scheduling`: the instructor's side: each submission's assessment is one task, its
  plain-data result recorded here, one at a time (:class:`~.scheduling.ClusterGrading`, an
  engine of :func:`autograder.core.fan_out.grade_class`);
* :mod:`.worker`: what a worker runs (:func:`~.worker.assess_task`), and when it refuses;
* :mod:`.connection`: reaching the scheduler, and the cluster's errors;
* :mod:`.security`: the certificates the kit makes and the TLS every process speaks.
"""
