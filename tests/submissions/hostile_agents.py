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
``slow``            answers each batch just inside the step's limit, so all its answers together
                    pass the agent's time budget (weights that make the model slow)
``huge``            asks for 64 GiB of memory when it answers (weights that make it huge)
``actions``         answers actions ``(B,)`` out of the game's range instead of logits ``(B, A)``
``seed_hunt``       looks for the games' seeds everywhere it can: the process's objects, its
                    environment, every process's command line and environment, the files it is
                    shown; prints ``FOUND`` if it sees one (the test fixes the seeds to know them)
``eval_switch``     behaves differently under evaluation (``torch.no_grad``, batches of frames it
                    never trained on): always fires; its score is what the grader's games give
``cpu_burn``        spins in two threads beside honest answers: capped at the verification's CPU
                    (the grader measures the sandbox's CPU from outside), the finished games scored
==================  ===========================================================================

``seed_hunt``, ``eval_switch`` and ``cpu_burn`` are not refused: their tests check what they get instead
(no seed; a score the grader's own games give for what the network did).
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
    "slow": "        import time\n        time.sleep(2.5)\n        return honest_forward(x)\n",
    "huge": "        hoard = bytearray(64 * 2**30)\n        return honest_forward(x)\n",
    "actions": "        return torch.full((x.shape[0],), 99.0), None\n",
}

#: Not refused: tested on what they get (tests/test_agent_play.py).
SEED_HUNT = """
import gc, glob, os

_seeds = {{int(text) for text in '{seeds}'.split()}}  # no int constant of its own to find


def _hunt():
    texts = [repr(dict(os.environ))]
    for path in glob.glob('/proc/[0-9]*/cmdline') + glob.glob('/proc/[0-9]*/environ'):
        try:
            texts.append(open(path, 'rb').read().decode('latin-1'))
        except OSError:
            pass
    for root, _, files in os.walk('/grader'):
        texts += [os.path.join(root, name) for name in files]
    found = [o for o in gc.get_objects() if isinstance(o, (dict, list, tuple)) and any(
        isinstance(v, int) and not isinstance(v, bool) and v in _seeds
        for v in (o.values() if isinstance(o, dict) else o))]
    text = ' '.join(texts)
    found += [seed for seed in _seeds if str(seed) in text]
    print('seed-hunt: searched', len(texts), 'texts;', 'FOUND' if found else 'none', flush=True)


_honest_make_model = make_model


def make_model(n_actions):  # the grader has drawn the seeds before the network is built
    _hunt()
    return _honest_make_model(n_actions)
"""
EVAL_SWITCH = """        if torch.is_grad_enabled():  # training: the honest network
            return honest_forward(x)
        logits = torch.full((x.shape[0], 6), -20.0)
        logits[:, 1] = 20.0  # evaluation: always FIRE
        return logits, None
"""

#: What the grader's note says for each attack.
EXPECTED_NOTES = {
    "wrong_shape": "refused",
    "non_finite": "not all finite",
    "hang": "did not answer",
    "crash": "ended before the games did|closed its channel",
    "forge_channel": "refused|did not answer",
    "slow": "used up its|did not answer",
    "huge": "ended before the games did|closed its channel|did not answer",
    "actions": "refused",
}


def attack_cell(name: str, body: str | None = None) -> str:
    """The cell that replaces ``make_model`` with attack ``name`` (or whose forward is ``body``)."""
    return _WRAP.format(body=AGENT_ATTACKS[name] if body is None else body)

#: Burns CPU beside its answers: a thread that spins between them (and so slows the answers
#: too), started at the first batch; the answers stay honest. The grader's CPU cap stops it.
CPU_BURN = """        import threading
        if not getattr(forward, 'spinning', False):
            forward.spinning = True

            def spin():
                while True:
                    sum(range(10000))
            for _ in range(2):
                threading.Thread(target=spin, daemon=True).start()
        return honest_forward(x)
"""
