"""The verified agent score: the grader plays a submission's trained weights in its own network.

Everything here is trusted and runs in the grader's process: the saved weights are read as
bounded plain data and as the course's network (:mod:`.verification`, with
:mod:`course_lib.network_layout`); the student's ``make_model`` earns the replay by computing
that network with them in the parts' sandbox (:mod:`.model_check`); the grader then plays the
course's evaluation protocol (:mod:`course_lib.evaluation`) with its own emulators, its own
copy of the network and seeds drawn for the grading, and no student code runs during the games.
:mod:`.settings` holds the course's choices and what a grading keeps; :mod:`.feedback` the
sentence every channel shows.
"""
