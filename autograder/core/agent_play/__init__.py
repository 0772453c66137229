"""The verified agent score: the grader plays the games of a submission's trained agent.

The trusted side (this package, in the grader's process) owns the emulators, the evaluation
protocol (:mod:`course_lib.evaluation`) and its seeds; the student's ``make_model`` with the
saved weights answers batches of observations with logits from the sandbox
(``autograder/sandboxed/bin/agent_server.py``), through binary frames (:mod:`.framing`).
:func:`.verification.verify_agent` is the entry point.
"""
