"""Does CI install exactly as the README's first command says, with the torch that requirements.txt pins?

``.ci/run`` claims to build the environment "exactly as the README says": its ``pip install``
lines must be the ``pip install`` steps of the README's first command, in order, and the torch
version the README installs first must be the one ``requirements.txt`` pins (else the second
step would replace the CPU build with PyPI's CUDA build).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_first_command() -> str:
    """The first line of the README's first ``bash`` block."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no ```bash block"
    return block.group(1).splitlines()[0]


def pip_steps(command: str) -> list[str]:
    return [part.strip() for part in command.split("&&") if part.strip().startswith("pip install")]


def test_ci_installs_as_the_readme_says():
    readme = pip_steps(readme_first_command())
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip().startswith("pip install")
    ]
    assert readme and ci == readme, f"README: {readme}\n.ci/run: {ci}"


def test_readme_installs_the_torch_that_requirements_pin():
    pinned = re.search(r"^torch==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned, "requirements.txt pins no torch==VERSION"
    first = pip_steps(readme_first_command())[0]
    assert f"torch=={pinned.group(1)} " in first + " " and "whl/cpu" in first, first
