"""What runs a grading job inside the sandbox, shown to it read-only at ``/grader/bin``.

Inside, each file is a top-level module (the folder is the first entry of the import path of the
script that runs): ``runner.py`` supervises a job's cells and probes, ``executor.py`` is the
student's Python, ``template.py`` is the template a grader keeps per process, from which each
student's processes are forked (``student_tree.py``), fenced with ``confinement.py``,
``landlock.py`` and ``seccomp.py``. They import only the standard library and, for the executor
and the template, the grading runtime. The grader's side imports :mod:`.landlock` from here too
(container mode fences its job with it): one copy of the code, on this side of the boundary.
"""
