"""Do the figures the notebook quotes come from the data kept beside docs/benchmarks.md?

The notebook's *Runtime* note, part 7's "What 30 minutes show" and part 8's model answer quote one
run of the notebook's own part 7 loop, stopped after 30 minutes of training
(``benchmarks/notebook_loop.py --minutes 30 --save``); every value its dashboard logged is kept
in ``docs/spaceinvaders_30min_cpu.json``. Each figure is computed here again from that file,
written as the text writes it, and looked for in the text: a figure that no longer matches its
data, or data that no longer backs a figure, fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "spaceinvaders_30min_cpu.json"


def _window_means(series: dict, width: int = 10_000) -> list[float]:
    """Means of a logged series over consecutive windows of ``width`` agent steps."""
    steps, values = np.asarray(series["step"]), np.asarray(series["value"])
    return [
        float(values[(steps > start) & (steps <= start + width)].mean())
        for start in range(0, int(steps.max()), width)
    ]


def _first_step_at(scores: np.ndarray, steps: np.ndarray, level: float) -> int:
    """The agent step at which the mean of the last 100 games first reaches ``level``."""
    means = np.array([scores[max(0, i - 99) : i + 1].mean() for i in range(len(scores))])
    return int(steps[np.argmax(means >= level)])


@pytest.fixture(scope="module")
def figures() -> dict[str, str]:
    """Each quoted figure of the 30-minute run, as the text writes it."""
    data = json.loads(RUN.read_text())
    run, scalars = data["run"], data["scalars"]
    scores, steps = np.asarray(data["games"]["score"]), np.asarray(data["games"]["step"])
    entropy, ev = _window_means(scalars["entropy"]), _window_means(scalars["explained_variance"])
    grad, value_loss = _window_means(scalars["grad_norm"]), _window_means(scalars["value_loss"])
    clipped = np.mean(np.asarray(scalars["grad_norm"]["value"]) > 0.5)
    return {
        "steps": f"{run['agent_steps']:,}",
        "agent steps": f"{run['agent_steps']:,} agent steps",
        "speed": f"{run['agent_steps'] / run['training_seconds']:.0f} agent steps per second",
        "games": f"{len(scores)} games",
        "final score": f"{scores[-100:].mean():.1f}",
        "score reaches 250": f"passed 250 at\n{_first_step_at(scores, steps, 250) / 1000:.0f}k",
        "learning rate": f"{scalars['lr']['value'][-1]:.1e}".replace("e-0", "e-"),
        "entropy first": f"{entropy[0]:.2f}",
        "entropy last": f"{entropy[-1]:.2f}",
        "entropy lowest": f"lowest {min(entropy):.2f}",
        "ev first": f"{ev[0]:.2f} in the first 10k",
        "ev range": f"{min(ev[2:]):.2f} and {max(ev[2:]):.2f}",
        "grad norm range": f"{min(grad):.2f} and {max(grad):.2f}",
        "clipped": f"{clipped:.0%} of the updates",
        "value loss": f"{value_loss[0]:.3f} to about {value_loss[-1]:.3f}",
    }


def _markdown(*starts: str) -> str:
    """The markdown cells of the solution notebook that start with one of ``starts``."""
    nb = nbformat.read(ROOT / "solutions" / "a2c.ipynb", as_version=4)
    cells = [
        c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(starts)
    ]
    assert len(cells) == len(starts), "a quoted cell was not found"
    return "\n".join(cells)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_model_answer_quotes_the_kept_30_minute_run(figures):
    """Is every figure of part 8's model answer the one its kept data gives?"""
    answer = _flat(_markdown("*Example of a full-mark answer"))
    assert "docs/spaceinvaders_30min_cpu.json" in answer
    for name in ("agent steps", "games", "final score", "learning rate", "entropy first",
                 "entropy last", "entropy lowest", "ev first", "ev range", "grad norm range",
                 "clipped", "value loss"):  # fmt: skip
        assert _flat(figures[name]) in answer, name


def test_the_runtime_note_and_part_7_quote_the_same_run(figures):
    """Do the *Runtime* note and part 7's "What 30 minutes show" give that run's speed, steps,
    score and curves?"""
    runtime = _flat(_markdown("# Advantage Actor-Critic"))
    assert f"{figures['speed']}: {figures['steps']} steps" in runtime
    assert "GPU) has not been measured" in runtime
    part7 = _flat(_markdown("## Part 7"))
    for name in ("agent steps", "games", "final score", "score reaches 250", "learning rate",
                 "entropy first", "entropy last", "clipped"):  # fmt: skip
        assert _flat(figures[name]) in part7, name
    assert "docs/spaceinvaders_30min_cpu.json" in part7
    readme = _flat((ROOT / "solutions" / "student_readme.md").read_text())
    assert f"{figures['speed']}: {figures['steps']} steps" in readme


def test_the_benchmarks_page_keeps_the_run_with_its_command_and_picture():
    """Does docs/benchmarks.md give the run's command, machine, date and load, with its data and
    picture beside it?"""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    run = json.loads(RUN.read_text())["run"]
    assert "benchmarks/notebook_loop.py --minutes 30 --save" in page
    assert f"{run['agent_steps']:,}" in page and run["date_utc"][:10] in page
    assert "spaceinvaders_30min_cpu.json" in page and "spaceinvaders_30min_cpu.png" in page
    assert (ROOT / "docs" / "spaceinvaders_30min_cpu.png").read_bytes()[:4] == b"\x89PNG"


def test_the_setup_cells_time_and_download_are_those_of_the_colab_like_runs():
    """Does the student README's figure for the setup cell give the range of the Colab-like runs
    kept in docs/colab_like.json, each of which passed on Colab's versions?"""
    runs = json.loads((ROOT / "docs" / "colab_like.json").read_text())
    assert sorted(r["python"][:4] for r in runs) == ["3.11", "3.12", "3.13"]
    assert all(not r["failures"] and r["before_setup_cell"]["torch"] == "2.11.0" for r in runs)
    seconds = [r["setup_cell"]["seconds"] for r in runs]
    megabytes = {round(r["setup_cell"]["downloaded_mb"], -1) for r in runs}
    readme = _flat((ROOT / "solutions" / "student_readme.md").read_text())
    assert f"{min(seconds):.0f} to {max(seconds):.0f} seconds" in readme
    assert max(seconds) < 60 and "under a minute" in readme
    assert len(megabytes) == 1 and f"about {megabytes.pop():.0f} MB" in readme
