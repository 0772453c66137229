"""Hostile agents: a saved agent whose ``make_model`` tries to get a verified score it did not earn,
or to break the grader that plays it (issue 33, item 5).

Each attack is a cell added right after the solution notebook's ``make_model`` cell, so that the
sandboxed agent (``autograder/sandboxed/bin/agent_server.py``) builds its network with it; the
weights are the reference network's. ``tests/test_agent_play.py`` plays each one and checks
that the grader's note names the failure and that no score comes back.

==================  ===========================================================================
attack              what the network does when the grader asks it for logits
==================  ===========================================================================
``wrong_shape``     answers one logit too many per observation
``non_finite``      answers NaN logits
``hang``            sleeps past the step's time limit
``crash``           ends its own process in the middle of the games
``forge_channel``   writes a fake "answer" frame of its own into the channel before the real one
==================  ===========================================================================
"""

from __future__ import annotations

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
    "wrong_shape": "        logits, value = honest_forward(x)\n"
    "        return torch.cat([logits, logits[:, :1]], dim=1), value\n",
    "non_finite": "        logits, value = honest_forward(x)\n"
    "        return logits * float('nan'), value\n",
    "hang": "        import time\n        time.sleep(3600)\n",
    "crash": "        import os\n        os._exit(3)\n",
    "forge_channel": "        import os, struct\n"
    "        fd = int(os.environ['A2C_CHANNEL_FD'])\n"
    "        fake = struct.pack('<4sQ', b'A2CR', 8) + b'\\x00' * 8\n"
    "        os.write(fd, fake)\n"
    "        return honest_forward(x)\n",
}

#: What the grader's note says for each attack.
EXPECTED_NOTES = {
    "wrong_shape": "refused",
    "non_finite": "not all finite",
    "hang": "did not answer",
    "crash": "ended before the games did|closed its channel",
    "forge_channel": "refused|did not answer",
}


def attack_cell(name: str) -> str:
    """The cell that replaces ``make_model`` with attack ``name``."""
    return _WRAP.format(body=AGENT_ATTACKS[name])
