"""A live training dashboard that works in Jupyter, in Colab and headless (PNG files).

What to watch while A2C trains (and what it tells you):

* **raw game score** vs agent steps: one point per finished full game, and the mean of the last
  100 games (the number the course's target is stated in). Clipped rewards hide this number.
* **entropy** of the policy: starts near ``log(n_actions)`` (uniform) and falls slowly; a crash
  to ~0 early means the policy collapsed (raise ``entropy_coef`` or lower the learning rate).
* **policy loss / value loss**: noisy by nature; a value loss that grows without bound means the
  value targets are wrong (check the ``(1 - reset_t)`` factor) or the learning rate is too high.
* **explained variance** ``1 - Var[v_target - v] / Var[v_target]`` (logged by the training loop
  from the merged batch): 0 means the critic predicts no better than a constant, 1 is perfect; an
  untrained critic starts near or below 0.
* **grad norm**: before clipping, with the clip threshold (``grad_clip``) as a dashed line and,
  in the title, the share of logged values above it: where every update is logged (the
  notebook), the share of updates that clipping scaled down.

Usage::

    dashboard = TrainingDashboard(runner.episode_stats)   # reads finished games from the runner
    for _ in range(n_updates):
        trajectory = runner.get_next()
        stats = a2c.step(trajectory)                       # dict of floats
        dashboard.log(runner.step_var, **stats)
        dashboard.update()                                  # redraws at most every few seconds
    dashboard.save("training.png")

The figure is a plain :class:`matplotlib.figure.Figure` drawn with the Agg canvas, so no display
is needed; in a notebook it is shown as a PNG through one IPython display handle that is
replaced in place at every redraw (no growing stack of plots).
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .episode_stats import EpisodeStats, rolling_mean
from .validation import check_int

if TYPE_CHECKING:  # matplotlib is imported on first drawing: `import course_lib` stays fast
    from matplotlib.figure import Figure

__all__ = ["TrainingDashboard", "UNSMOOTHED", "plot_metrics_file", "rolling_mean"]

#: Series drawn as logged, without a smoothed curve: schedules, which are not noisy.
UNSMOOTHED = frozenset({"lr"})
#: Lower edge of a panel's y axis when the series goes below it: explained variance is at most
#: 1 and starts far below 0 (an untrained critic), which would squash the rest of the curve.
FLOOR = {"explained_variance": -1.0}
#: :meth:`TrainingDashboard.update` waits at least this many times the last drawing's duration.
DRAW_SHARE_WAIT = 9


def _in_notebook() -> bool:
    """True inside a Jupyter or Colab kernel (where rich display works)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _strided(n: int, max_points: int) -> slice:
    """A slice that keeps at most about ``max_points`` of ``n`` points, always the last one."""
    stride = max(1, math.ceil(n / max_points))
    return slice((n - 1) % stride, None, stride)


class TrainingDashboard:
    """Collects training scalars and finished games, and draws them as a grid of panels.

    Panel 1 shows the raw game scores; every series logged with :meth:`log` gets its own panel
    with the logged values (thin grey, "logged") and their rolling mean (thick green,
    "mean of last k logged"); its title gives the last logged value and the smoothed one.
    A schedule (:data:`UNSMOOTHED`, the learning rate) is drawn as logged, with its current value.

    Args:
        episode_stats: where finished games come from: an
            :class:`~course_lib.episode_stats.EpisodeStats` (e.g. ``runner.episode_stats``), an
            object with an ``episode_stats`` attribute (a runner), or ``None`` to feed games by
            hand with :meth:`add_games`.
        game_window: games in the smoothed score curve (the course reports the last 100).
        scalar_window: the most logged points in a scalar's smoothed curve; fewer while fewer
            than ``5 * scalar_window`` points are logged (see :meth:`smoothing_window`).
        min_interval: seconds from the end of one redraw by :meth:`update` to the next, and at
            least :data:`DRAW_SHARE_WAIT` times as long as the last drawing took, so that drawing
            (0.2 s on an idle core, seconds on a busy one) takes at most a tenth of the time.
        ncols: panels per row.
        save_path: if given, :meth:`update` also writes the figure to this PNG (for headless runs).
        max_points: raw points drawn per panel; longer series are thinned (the smoothed curve is
            computed on all points first).
        grad_clip: the clip threshold of the gradient norm (``max_grad_norm``; the course's is
            0.5), drawn on the ``grad_norm`` panel with the share of logged values above it;
            ``None`` draws no threshold.
    """

    def __init__(
        self,
        episode_stats: EpisodeStats | Any | None = None,
        *,
        game_window: int = 100,
        scalar_window: int = 20,
        min_interval: float = 5.0,
        ncols: int = 3,
        save_path: str | Path | None = None,
        max_points: int = 3000,
        title: str = "A2C training",
        grad_clip: float | None = 0.5,
    ) -> None:
        if episode_stats is not None and not isinstance(episode_stats, EpisodeStats):
            episode_stats = getattr(episode_stats, "episode_stats", episode_stats)
        if episode_stats is not None and not isinstance(episode_stats, EpisodeStats):
            raise TypeError(
                "`episode_stats` must be an EpisodeStats, a runner with `.episode_stats`, or None; "
                f"got {type(episode_stats).__name__}."
            )
        for name, value in (("game_window", game_window), ("scalar_window", scalar_window),
                            ("ncols", ncols), ("max_points", max_points)):  # fmt: skip
            check_int(name, value, 1)
        if not min_interval >= 0:
            raise ValueError(f"`min_interval` must be >= 0 seconds, got {min_interval!r}.")
        if grad_clip is not None and not (isinstance(grad_clip, (int, float)) and grad_clip > 0):
            raise ValueError(
                f"`grad_clip` must be a positive number (max_grad_norm) or None, got {grad_clip!r}."
            )
        self.games = episode_stats if episode_stats is not None else EpisodeStats()
        self.game_window = game_window
        self.scalar_window = scalar_window
        self.min_interval = float(min_interval)
        self.ncols = ncols
        self.save_path = Path(save_path) if save_path is not None else None
        self.max_points = max_points
        self.title = title
        self.grad_clip = None if grad_clip is None else float(grad_clip)
        self.series: dict[str, tuple[list[int], list[float]]] = {}
        self._next_draw = -math.inf  # time.monotonic() from which update() may draw again
        self._handle: Any = None

    # -- feeding ---------------------------------------------------------------------------
    def log(self, step: int, **scalars: Any) -> None:
        """Record scalar values (floats, numpy or 0-d torch scalars) at agent step ``step``.

        Example: ``dashboard.log(runner.step_var, **a2c.step(trajectory))``.
        """
        check_int("step", step, 0, fix="log at runner.step_var, the agent steps so far")
        for name, value in scalars.items():
            try:
                value = float(value)
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"`{name}` must be a single number, got {type(value).__name__} "
                    f"{getattr(value, 'shape', '')}; log a scalar such as loss.item() or x.mean().item()."
                ) from error
            steps, values = self.series.setdefault(name, ([], []))
            steps.append(int(step))
            values.append(value)

    def add_games(self, scores: Any, steps: Any, lengths: Any = None) -> None:
        """Record finished games by hand: raw ``scores``, the agent ``steps`` at which they ended,
        and optionally their ``lengths`` (sequences of equal length, or single numbers)."""
        scores = np.atleast_1d(np.asarray(scores, dtype=np.float64))
        steps = np.atleast_1d(np.asarray(steps, dtype=np.int64))
        lengths = np.zeros_like(steps) if lengths is None else np.atleast_1d(np.asarray(lengths))
        if not scores.shape == steps.shape == lengths.shape:
            raise ValueError(
                f"`scores`, `steps` and `lengths` must have the same length, got "
                f"{scores.shape}, {steps.shape} and {lengths.shape}."
            )
        for score, step, length in zip(scores, steps, lengths, strict=True):
            self.games.add(score, int(length), int(step))

    # -- numbers behind the curves ---------------------------------------------------------
    def smoothing_window(self, n_points: int) -> int:
        """Points averaged by a scalar's smoothed curve: a fifth of the ``n_points`` logged,
        at least 1 and at most ``scalar_window``, so that a short run's curve is not simply
        the running mean of everything logged so far."""
        return max(1, min(self.scalar_window, n_points // 5))

    def smoothed(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, rolling mean)`` of the logged series ``name``, over
        :meth:`smoothing_window` points (the logged values themselves for :data:`UNSMOOTHED`)."""
        if name not in self.series:
            raise KeyError(f"No series {name!r} logged; logged: {sorted(self.series)}.")
        steps, values = self.series[name]
        window = 1 if name in UNSMOOTHED else self.smoothing_window(len(values))
        return np.asarray(steps), rolling_mean(values, window)

    def smoothed_scores(self) -> tuple[np.ndarray, np.ndarray]:
        """``(end steps, mean of the last game_window games)`` for every finished game."""
        return self.games.steps, rolling_mean(self.games.scores, self.game_window)

    # -- drawing ---------------------------------------------------------------------------
    def figure(self) -> Figure:
        """Draw every panel on a new Agg :class:`~matplotlib.figure.Figure` and return it."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        names = list(self.series)
        npanels = 1 + len(names)
        ncols = min(self.ncols, npanels)
        nrows = math.ceil(npanels / ncols)
        fig = Figure(figsize=(4.2 * ncols, 3.0 * nrows), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        self._draw_games(axes[0])
        for ax, name in zip(axes[1:], names, strict=False):
            self._draw_series(ax, name)
        for ax in axes[npanels:]:
            ax.set_visible(False)
        from matplotlib.ticker import FuncFormatter

        for ax in axes[:npanels]:  # 1.5M, not 1500000: labels that do not collide
            ax.xaxis.set_major_formatter(FuncFormatter(_short_count))
        last_step = max(
            [self.series[n][0][-1] for n in names] + list(self.games.steps[-1:]), default=0
        )
        fig.suptitle(f"{self.title}: {last_step:,} agent steps, {len(self.games)} games")
        return fig

    def _draw_games(self, ax: Any) -> None:
        steps, mean = self.smoothed_scores()
        scores = self.games.scores
        ax.set_title("raw game score")
        ax.set_xlabel("agent steps")
        if scores.size == 0:
            ax.text(
                0.5, 0.5, "no finished game yet", ha="center", va="center", transform=ax.transAxes
            )
            return
        keep = _strided(scores.size, self.max_points)
        ax.scatter(steps[keep], scores[keep], s=5, alpha=0.35, color="tab:blue", label="one game")
        shown = min(self.game_window, scores.size)
        ax.plot(steps, mean, color="tab:red", lw=2,
                label=f"mean of last {shown} games: {mean[-1]:.1f}")  # fmt: skip
        ax.legend(loc="upper left", fontsize="small")
        ax.grid(alpha=0.3)

    def _draw_series(self, ax: Any, name: str) -> None:
        steps, mean = self.smoothed(name)
        values = np.asarray(self.series[name][1])
        keep = _strided(values.size, self.max_points)
        ax.set_xlabel("agent steps")
        ax.grid(alpha=0.3)
        if name in UNSMOOTHED:  # a schedule, not a noisy measurement: one line, its last value
            ax.plot(steps[keep], values[keep], lw=1.5, color="tab:purple", label="scheduled")
            ax.set_title(f"{name}: {values[-1]:.3g} now")
            ax.legend(loc="best", fontsize="small")
            return
        window = self.smoothing_window(values.size)
        ax.plot(steps[keep], values[keep], lw=0.7, alpha=0.5, color="tab:gray", label="logged")
        ax.plot(steps, mean, lw=1.8, color="tab:green", label=f"mean of last {window} logged")
        title = f"{name}\nlast {values[-1]:.3g}, smoothed {mean[-1]:.3g}"
        if name == "grad_norm" and self.grad_clip is not None:
            share = float(np.mean(values > self.grad_clip))
            ax.axhline(self.grad_clip, ls="--", lw=1.2, color="tab:red",
                       label=f"clip threshold {self.grad_clip:g}")  # fmt: skip
            title += f", above the clip: {share:.0%} of logged"
        ax.set_title(title, fontsize="medium")
        low = FLOOR.get(name)
        if low is not None and values.min() < low:  # one early outlier would flatten the curve
            ax.set_ylim(bottom=low, top=max(values.max(), low + 1e-3) + 0.05)
            ax.plot([], [], " ", label=f"values below {low:g} off the chart")
        ax.legend(loc="best", fontsize="small")

    def to_png(self, dpi: int = 80) -> bytes:
        """The figure as PNG bytes."""
        fig = self.figure()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=dpi)
        return buffer.getvalue()

    def update(self, force: bool = False) -> bool:
        """Redraw if the wait after the last redraw is over (see ``min_interval``), or ``force``.

        In a notebook the plot is replaced in place; with ``save_path`` the PNG is rewritten.
        Outside a notebook and without ``save_path`` nothing is drawn. Returns True if it drew.
        """
        start = time.monotonic()
        if not force and start < self._next_draw:
            return False
        notebook = _in_notebook()
        if not notebook and self.save_path is None:
            return False
        png = self.to_png()
        if self.save_path is not None:
            self.save_path.parent.mkdir(parents=True, exist_ok=True)
            self.save_path.write_bytes(png)
        if notebook:
            from IPython.display import Image, display

            if self._handle is None:
                self._handle = display(Image(data=png), display_id=True)
            else:
                self._handle.update(Image(data=png))
        end = time.monotonic()
        self._next_draw = end + max(self.min_interval, DRAW_SHARE_WAIT * (end - start))
        return True

    def show(self) -> None:
        """Draw now, ignoring ``min_interval``: in a notebook in place of the previous drawing
        (or below the cell the first time), and to ``save_path`` if set. Use :meth:`save` or
        :meth:`figure` to get the plot elsewhere."""
        self.update(force=True)

    def save(self, path: str | Path, dpi: int = 100) -> Path:
        """Write the figure to ``path`` (PNG, or any format matplotlib knows by its suffix)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.figure().savefig(path, dpi=dpi)
        return path

    # -- metrics files ---------------------------------------------------------------------
    def save_metrics(self, path: str | Path) -> Path:
        """Write every logged series and game to ``path``: ``.json`` or ``.csv`` (``series,step,value``
        rows; games appear as ``game/score`` and ``game/length``). Read back with :meth:`load_metrics`."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            data = {
                "scalars": {k: {"step": s, "value": v} for k, (s, v) in self.series.items()},
                "games": self.games.to_dict(),
            }
            path.write_text(json.dumps(data))
        elif path.suffix == ".csv":
            with path.open("w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["series", "step", "value"])
                for name, (steps, values) in self.series.items():
                    writer.writerows((name, s, v) for s, v in zip(steps, values, strict=True))
                games = self.games.to_dict()
                writer.writerows(
                    ("game/score", s, v) for s, v in zip(games["step"], games["score"], strict=True)
                )
                writer.writerows(
                    ("game/length", s, v)
                    for s, v in zip(games["step"], games["length"], strict=True)
                )
        else:
            raise ValueError(f"`path` must end in .json or .csv, got {str(path)!r}.")
        return path

    @classmethod
    def load_metrics(cls, path: str | Path, **kwargs: Any) -> TrainingDashboard:
        """A dashboard filled from a file written by :meth:`save_metrics`."""
        path = Path(path)
        dashboard = cls(**kwargs)
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            for name, series in data.get("scalars", {}).items():
                dashboard.series[name] = (list(series["step"]), list(map(float, series["value"])))
            if "games" in data:
                dashboard.games = EpisodeStats.from_dict(data["games"])
        elif path.suffix == ".csv":
            games: dict[str, list] = {"score": [], "length": [], "step": []}
            with path.open(newline="") as f:
                for row in csv.DictReader(f):
                    name, step, value = row["series"], int(row["step"]), float(row["value"])
                    if name == "game/score":
                        games["score"].append(value)
                        games["step"].append(step)
                    elif name == "game/length":
                        games["length"].append(int(value))
                    else:
                        steps, values = dashboard.series.setdefault(name, ([], []))
                        steps.append(step)
                        values.append(value)
            dashboard.games = EpisodeStats.from_dict(games)
        else:
            raise ValueError(f"`path` must end in .json or .csv, got {str(path)!r}.")
        return dashboard


def plot_metrics_file(path: str | Path, out: str | Path | None = None, **kwargs: Any) -> Figure:
    """Plot a metrics file written by :meth:`TrainingDashboard.save_metrics` (``.json`` or ``.csv``).

    Returns the figure; with ``out``, also saves it there (e.g. ``"training.png"``). Extra keyword
    arguments go to :class:`TrainingDashboard` (e.g. ``game_window=100``).
    """
    fig = TrainingDashboard.load_metrics(path, **kwargs).figure()
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=100)
    return fig


def _short_count(value: float, _position: Any = None) -> str:
    """Axis label for a step count: 0, 500, 20k, 1.5M."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"
