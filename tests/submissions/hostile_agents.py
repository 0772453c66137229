"""Hostile agents: a notebook whose ``make_model`` tries to get a verified score its weights did
not earn, or to break the grader that plays them (issues 33 and 44).

The grader plays the saved weights in its own copy of the course's network; the student's
``make_model`` only earns that replay, in the parts' sandbox, by computing the course's network
with those weights (autograder/core/agent_play/model_check.py). Each attack is a cell added
right after the solution notebook's ``make_model`` cell; the weights are the reference
network's. ``tests/test_agent_play.py`` grades each one.

=====================  ==========================================================================
attack                 what ``make_model`` does
=====================  ==========================================================================
``scripted_elsewhere`` the course's network everywhere but where it can tell it is being replayed
                       (``A2C_CHANNEL_FD`` in its environment, ``sys.argv[0]`` ending in
                       ``agent_server.py``): there, a scripted "sweep right and fire, sweep left
                       and fire" policy. It scored 380 and took the agent's points when the
                       replay ran the student's ``make_model`` (issue 44); now the replay runs no
                       student code, so its score is the saved weights' own
``scripted``           the scripted policy always: it computes another network than the course's
                       with the weights, so it earns no replay
``eval_switch``        the course's network in training mode, "always fire" in eval mode (an
                       evaluation): it earns no replay
``wrong_shape``        one logit too many per observation, in eval mode
``non_finite``         NaN logits, in eval mode
``hang``               never returns in eval mode (the check puts the loaded network in it)
``crash``              ends its own process in eval mode
=====================  ==========================================================================

Every one of them gets a note and no verified score, but ``scripted_elsewhere``, whose verified
score is what the saved weights play in the grader's network.
"""

from __future__ import annotations

import numpy as np

#: The issue's scripted policy, on a batch of observations ``x`` (N, 4, 84, 84): sweep right
#: and fire for 40 steps, then left and fire for 40 (Space Invaders: 4 RIGHTFIRE, 5 LEFTFIRE).
SCRIPT = '''
_sweep = {"step": 0}


def _scripted_logits(x):
    _sweep["step"] += 1
    action = 4 if (_sweep["step"] // 40) % 2 == 0 else 5
    logits = torch.full((x.shape[0], 6), -30.0)
    logits[:, action] = 30.0
    return logits, torch.zeros(x.shape[0])
'''

_WRAP = '''
_honest_make_model = make_model


def make_model(n_actions):
    net = _honest_make_model(n_actions)
    honest_forward = net.forward

    def forward(x):
{body}
    net.forward = forward
    return net
'''

AGENT_ATTACKS = {
    "scripted_elsewhere": "        import os, sys\n"
    "        replayed = 'A2C_CHANNEL_FD' in os.environ or sys.argv[0].endswith('agent_server.py')\n"
    "        return _scripted_logits(x) if replayed else honest_forward(x)\n",
    "scripted": "        return _scripted_logits(x)\n",
    # The rest behave as the course's network until the module is put in eval mode, as the
    # grader's check (and any evaluation) does: the model part's probes see the honest network.
    "eval_switch": "        if net.training:\n"
    "            return honest_forward(x)\n"
    "        logits = torch.full((x.shape[0], 6), -20.0)\n"
    "        logits[:, 1] = 20.0  # FIRE\n"
    "        return logits, torch.zeros(x.shape[0])\n",
    "wrong_shape": "        logits, value = honest_forward(x)\n"
    "        if net.training:\n"
    "            return logits, value\n"
    "        return torch.cat([logits, logits[:, :1]], dim=1), value\n",
    "non_finite": "        logits, value = honest_forward(x)\n"
    "        return (logits, value) if net.training else (logits * float('nan'), value)\n",
    "hang": "        while not net.training:\n"
    "            pass\n"
    "        return honest_forward(x)\n",
    "crash": "        if not net.training:\n"
    "            import os\n"
    "            os._exit(3)\n"
    "        return honest_forward(x)\n",
}

#: What the grader's note says for each attack that earns no replay.
EXPECTED_NOTES = {
    "scripted": "gives other logits",
    "eval_switch": "gives other logits",
    "wrong_shape": "logits should have shape",
    "non_finite": "hold inf or nan",
    "hang": "could not be loaded with the saved weights: did not finish",
    "crash": "could not be loaded with the saved weights: did not finish",
}


def attack_cell(name: str) -> str:
    """The cell that replaces ``make_model`` with attack ``name``."""
    return SCRIPT + _WRAP.format(body=AGENT_ATTACKS[name])


def scripted_agent(observations: np.ndarray, state: dict[str, int]) -> np.ndarray:
    """The scripted policy of :data:`SCRIPT` as an agent of the evaluation's driver (its own
    step count in ``state``): what the attack would have scored had the grader played it."""
    state["step"] = state.get("step", 0) + 1
    logits = np.full((len(observations), 6), -30.0, dtype=np.float32)
    logits[:, 4 if (state["step"] // 40) % 2 == 0 else 5] = 30.0
    return logits
