"""Visible self-checks for the A2C notebook: call them after writing each part.

Every check feeds your code tiny hand-made inputs whose answers were worked out by hand
(gamma = 0.5 so the numbers stay readable), prints ``OK ...`` lines when the answers match,
and otherwise raises :class:`CheckFailed` with what was expected, what came back (values and
shapes) and the idea behind the most likely mistake. They need nothing but ``course_lib`` and
torch. They are not the grading tests (the autograder compares your code with the reference on
inputs of its own), but they ask every property the grading tests give points for: a part
whose check says OK has no mistake the grader already knows of.

>>> from course_lib import checks
>>> checks.check_model(make_model)                       # doctest: +SKIP
OK make_model: Part 1's layers, input scaled to [0, 1], logits (2, 6), values (2,) and (1,) for one frame, uint8 and float inputs agree, gradients reach all 12 tensors (1,687,719 parameters), a linear value head, a first policy near uniform

The checks live in one module per part (or pair of related parts):

=================================== ================================== ======================
check                               candidate                          module
=================================== ================================== ======================
:func:`check_model`                 the function ``make_model``        :mod:`._model`
:func:`check_policy`                the class ``Policy``               :mod:`._policy`
:func:`check_compute_value_targets` the class ``ComputeValueTargets``  :mod:`._targets`
:func:`check_gae` (bonus)           the class ``ComputeGAE``           :mod:`._targets`
:func:`check_merge_time_batch`      the class ``MergeTimeBatch``       :mod:`._merge`
:func:`check_a2c`                   the class ``A2C``                  :mod:`._a2c`
=================================== ================================== ======================

:mod:`._common` holds :class:`CheckFailed`, :func:`require_implemented` and the message
helpers; :mod:`.fixtures` the lookup-table model and value-only policy the checks drive one part
with (neither answers a part). :mod:`.properties` captures what your code returned as plain
data and holds the properties every check asks (output shapes and dtypes, actions, log-probs,
sampling, merged batches, inputs left unchanged), and :mod:`.layers` which layers a forward pass
used: the course's grader asks them with the same code.
"""

from ._a2c import check_a2c
from ._common import CheckFailed, require_implemented
from ._merge import check_merge_time_batch
from ._model import check_model
from ._policy import check_policy
from ._targets import check_compute_value_targets, check_gae

__all__ = [
    "CheckFailed",
    "check_a2c",
    "check_compute_value_targets",
    "check_gae",
    "check_merge_time_batch",
    "check_model",
    "check_policy",
    "require_implemented",
]
