"""The grading platforms: Gradescope and PrairieLearn, on the grading core alone.

Each platform grades one submission per container, as root: the core's
:class:`~autograder.core.assessor.Assessor` against the release the bundle carries, in
bubblewrap where the container allows it, else container mode; no gradebook at grading time.

* :mod:`.gradescope`, :mod:`.prairielearn`: each platform's bundle and entry point;
* :mod:`.one_notebook`: what both do per submission (find, grade, report, write the results);
* :mod:`.bundle_contents`: what both bundles carry.
"""
