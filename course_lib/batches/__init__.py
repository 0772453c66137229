"""The env batches behind :func:`course_lib.nature_dqn_env`, one backend a module.

Every batch has gymnasium 1.x's vector API and the course's semantics (same-step autoreset, a
life loss ends an episode for learning, full-game scores in ``infos``): read the contract in
:mod:`course_lib.nature_dqn`, not this code.

    base.py        what the two Python batches share: autoreset, argument checks, infos
    sequential.py  backend "sequential": EnvBatch, every env in this process (for debugging)
    parallel.py    backend "subprocess": ParallelEnvBatch, one worker process per env
    worker.py      the loop inside each ParallelEnvBatch worker process
    native.py      backend "native": ale-py's C++ vector env, with the course's semantics

``native`` is imported on demand (it loads ale-py's vector env), the two Python batches here.
"""

from .parallel import EnvWorkerError, ParallelEnvBatch
from .sequential import EnvBatch

__all__ = ["EnvBatch", "EnvWorkerError", "ParallelEnvBatch"]
