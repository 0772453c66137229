"""The grading runtime: what runs next to the student's code, and reports without judging.

This folder is a self-contained package: its modules import one another relatively and import
nothing but the standard library, numpy, torch and ``course_lib``'s public API. The grader
imports it as ``autograder.sandboxed.grading_runtime``; at grading time the sandbox is shown this folder,
read-only, as the top-level package ``grading_runtime`` (so the student's package holds no part
of it, and it holds no answer: see :mod:`.fixtures`).

* :mod:`.harness`: :func:`~.harness.run_steps` runs a part's plan steps, seeded, quiet and
  time-limited, and yields one record per step;
* :mod:`.probes`: what each step does with the student's code, reported as plain data;
* :mod:`.fixtures`: the coded frames, tiny models and trajectories the probes drive a part with;
* :mod:`.eager_torch`: a stand-in for ``torch._dynamo`` so that building an optimizer does not
  import torch.compile's machinery (2 to 3 s a process; installed by the sandbox's executor only);
* :mod:`.record`: records as JSON text, written by :func:`~.record.dumps`; the sandbox only
  writes them (the grader decodes them strictly in :mod:`autograder.core.judging.record_decoding` and
  checks their envelope in :mod:`autograder.core.judging.channel`), and reads the grader's requests with
  :func:`~.record.read_request`.
"""
