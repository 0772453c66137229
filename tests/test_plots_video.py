"""Tests of the training dashboard (course_lib.plots) and of videos and tiled views (course_lib.video)."""

from __future__ import annotations

import struct

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest
import torch

from course_lib import plots as plots_module
from course_lib import video as video_module
from course_lib.episode_stats import EpisodeStats
from course_lib.plots import TrainingDashboard, plot_metrics_file
from course_lib.video import record_video, show_batch, tile_observations, video_html

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) read from a PNG header; fails if the file is not a PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def filled_dashboard(**kwargs):
    dashboard = TrainingDashboard(**kwargs)
    for i in range(30):
        dashboard.log(
            40 * i, entropy=1.8 - 0.01 * i, value_loss=torch.tensor(0.5), grad_norm=np.float32(i)
        )
    dashboard.add_games(
        scores=[100, 200, 300, 50], steps=[300, 600, 900, 1200], lengths=[10, 20, 30, 40]
    )
    return dashboard


def test_dashboard_saves_a_png_headless(tmp_path):
    """Does the dashboard write a real PNG of sensible size with one panel per series?"""
    dashboard = filled_dashboard()
    path = dashboard.save(tmp_path / "sub" / "training.png")
    width, height = png_size(path)
    assert 600 <= width <= 2000 and 300 <= height <= 1500
    fig = dashboard.figure()
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 4  # games + entropy + value_loss + grad_norm
    assert visible[0].get_title() == "raw game score"
    assert {ax.get_title().split()[0] for ax in visible[1:]} == {
        "entropy",
        "value_loss",
        "grad_norm",
    }


def test_dashboard_smoothing_numbers():
    """Is the smoothed score the mean of the last game_window games, and the scalars over scalar_window points?"""
    dashboard = filled_dashboard(game_window=2, scalar_window=3)
    steps, mean = dashboard.smoothed_scores()
    np.testing.assert_array_equal(steps, [300, 600, 900, 1200])
    np.testing.assert_allclose(mean, [100, 150, 250, 175])
    steps, mean = dashboard.smoothed("grad_norm")
    assert steps[-1] == 40 * 29
    np.testing.assert_allclose(mean[:4], [0, 0.5, 1, 2])
    np.testing.assert_allclose(mean[-1], (27 + 28 + 29) / 3)


def test_smoothing_window_scales_with_the_points_and_the_lr_is_not_smoothed():
    """With 20 points and window 20 the curve would be the running mean: is the window a fifth
    of the points instead, is the lr drawn as logged, and do the titles and legends say which
    line is which, with the last logged value?"""
    dashboard = TrainingDashboard(scalar_window=20)
    values = [0.1 * (i % 2) + i for i in range(20)]
    for i, v in enumerate(values):
        dashboard.log(10 * i, explained_variance=v, lr=7e-4 * (1 - i / 20))
    assert dashboard.smoothing_window(20) == 4 and dashboard.smoothing_window(1000) == 20
    assert dashboard.smoothing_window(3) == 1
    _, mean = dashboard.smoothed("explained_variance")
    np.testing.assert_allclose(mean[-1], np.mean(values[-4:]))
    np.testing.assert_allclose(dashboard.smoothed("lr")[1], dashboard.series["lr"][1])
    axes = {ax.get_title().split(":")[0].split()[0]: ax for ax in dashboard.figure().axes}
    ev, lr = axes["explained_variance"], axes["lr"]
    assert ev.get_title() == f"explained_variance\nlast {values[-1]:.3g}, smoothed {mean[-1]:.3g}"
    assert [t.get_text() for t in ev.get_legend().get_texts()] == [
        "logged",
        "mean of last 4 logged",
    ]
    assert lr.get_title() == f"lr: {7e-4 / 20:.3g} now" and len(lr.get_lines()) == 1


def test_dashboard_reads_runner_stats_and_throttles(tmp_path):
    """Does a dashboard see games added to the runner's stats later, and redraw at most every min_interval?"""
    stats = EpisodeStats()

    class Runner:
        episode_stats = stats

    dashboard = TrainingDashboard(Runner(), min_interval=3600, save_path=tmp_path / "live.png")
    assert dashboard.update() is True and png_size(tmp_path / "live.png")
    stats.add(score=7, length=5, step=40)
    assert dashboard.update() is False  # throttled
    assert dashboard.update(force=True) is True
    np.testing.assert_array_equal(dashboard.smoothed_scores()[1], [7])
    # Without a notebook and without save_path there is nothing to draw on.
    assert TrainingDashboard(min_interval=0).update() is False


def test_slow_drawing_waits_longer_so_drawing_stays_a_tenth_of_the_time(tmp_path, monkeypatch):
    """Does a drawing that takes 2 s (a busy CPU) push the next one 9 x 2 s after its end, and a
    fast one only min_interval after its end?"""
    clock = [100.0]
    monkeypatch.setattr(plots_module.time, "monotonic", lambda: clock[0])
    dashboard = TrainingDashboard(min_interval=5, save_path=tmp_path / "live.png")
    cost = [2.0]
    real_to_png = dashboard.to_png

    def timed_to_png(*args, **kwargs):
        clock[0] += cost[0]
        return real_to_png(*args, **kwargs)

    monkeypatch.setattr(dashboard, "to_png", timed_to_png)
    assert dashboard.update() is True  # draws from 100 to 102: next at 102 + 18
    clock[0] = 119.9
    assert dashboard.update() is False
    cost[0] = 0.1
    clock[0] = 120.0
    assert dashboard.update() is True  # draws from 120 to 120.1: next at 120.1 + 5
    clock[0] = 125.0
    assert dashboard.update() is False
    clock[0] = 125.1
    assert dashboard.update() is True


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_metrics_file_round_trip_and_plot(tmp_path, suffix):
    """Does a saved metrics file load back the same numbers and plot to a PNG?"""
    dashboard = filled_dashboard()
    path = dashboard.save_metrics(tmp_path / f"metrics{suffix}")
    loaded = TrainingDashboard.load_metrics(path)
    assert set(loaded.series) == set(dashboard.series)
    np.testing.assert_allclose(loaded.smoothed("entropy")[1], dashboard.smoothed("entropy")[1])
    np.testing.assert_array_equal(loaded.games.scores, dashboard.games.scores)
    np.testing.assert_array_equal(loaded.games.lengths, [10, 20, 30, 40])
    plot_metrics_file(path, out=tmp_path / "metrics.png")
    assert png_size(tmp_path / "metrics.png")[0] > 100


def test_grad_norm_panel_shows_the_clip_threshold_and_the_clipped_share():
    """Does the grad-norm panel draw the clip threshold and give the share of values above it?"""
    dashboard = filled_dashboard(grad_clip=20)  # grad_norm logged as 0, 1, ..., 29: 9 of 30 above
    panel = next(ax for ax in dashboard.figure().axes if ax.get_title().startswith("grad_norm"))
    assert "above the clip: 30% of logged" in panel.get_title()
    flat = [line for line in panel.get_lines() if set(line.get_ydata()) == {20.0}]
    assert flat and "clip threshold 20" in flat[0].get_label()
    bare = filled_dashboard(grad_clip=None)
    panel = next(ax for ax in bare.figure().axes if ax.get_title().startswith("grad_norm"))
    assert "clip" not in panel.get_title()
    assert not any("clip" in line.get_label() for line in panel.get_lines())
    with pytest.raises(ValueError, match="grad_clip"):
        TrainingDashboard(grad_clip=0)


def test_dashboard_rejects_bad_input(tmp_path):
    """Are non-scalar values, bad steps and unknown file types rejected with their names?"""
    dashboard = TrainingDashboard()
    with pytest.raises(TypeError, match="loss"):
        dashboard.log(10, loss=torch.zeros(3))
    with pytest.raises(ValueError, match="`step` must be an int >= 0, got 1.5"):
        dashboard.log(1.5, loss=1.0)
    with pytest.raises(ValueError, match="same length"):
        dashboard.add_games(scores=[1, 2], steps=[1])
    with pytest.raises(ValueError, match="json or .csv"):
        dashboard.save_metrics(tmp_path / "metrics.txt")
    with pytest.raises(ValueError, match="game_window"):
        TrainingDashboard(game_window=0)


class FakeAtari(gym.Env):
    """One env with lives: obs (4, 84, 84) holds the step count; a life is lost every 5 steps.

    ``render()`` returns a (210, 160, 3) frame (odd-free sizes of the real screen); reward 2 per
    step, so a full game of 3 lives x 5 steps scores 30. The summary ``info["episode"]`` is
    given only when ``game_stats`` is True.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, render_mode="rgb_array", game_stats=True, lives=3):
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self.game_stats, self.max_lives = game_stats, lives
        self.lives, self.count, self.total = lives, 0, 0

    def _obs(self):
        return np.full((4, 84, 84), self.count % 256, dtype=np.uint8)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        if self.lives == 0 or self.count == 0:  # EpisodicLife: only a real game over restarts
            self.lives, self.count, self.total = self.max_lives, 0, 0
        return self._obs(), {"lives": self.lives}

    def step(self, action):
        self.count += 1
        self.total += 2
        terminated = self.count % 5 == 0
        if terminated:
            self.lives -= 1
        info = {"lives": self.lives}
        if terminated and self.lives == 0 and self.game_stats:
            info["episode"] = {
                "r": np.array([self.total], dtype=np.float64),
                "l": np.array([self.count]),
            }
        return self._obs(), 2.0, terminated, False, info

    def render(self):
        return np.full((210, 160, 3), (self.count * 10) % 256, dtype=np.uint8)


class ConstantPolicy:
    def __init__(self):
        self.shapes = []

    def act(self, obs):
        self.shapes.append(obs.shape)
        return {"actions": torch.zeros(len(obs), dtype=torch.int64)}


def test_record_video_writes_playable_mp4(tmp_path):
    """Does record_video play one full game across lives and write an MP4 that reads back frame by frame?"""
    policy = ConstantPolicy()
    result = record_video(FakeAtari(), policy, tmp_path / "game.mp4", fps=15)
    path, score = result  # unpacks as (path, score)
    assert path.suffix == ".mp4" and score == 30.0 and result.finished
    assert result.steps == 15 and result.frames == 16  # first frame + one per step
    assert set(policy.shapes) == {(1, 4, 84, 84)}
    frames, meta = read_mp4(path)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p") and meta["fps"] == 15
    assert frames.shape == (16, 210, 160, 3)
    # Frame brightness follows the step count (H.264 is lossy: compare roughly).
    assert abs(int(frames[10].mean()) - 100) < 8
    html = video_html(path)
    assert html.startswith("<video") and "data:video/mp4;base64," in html
    assert "<video" in result._repr_html_()


def test_video_result_carries_a_png_of_still_frames(tmp_path):
    """Does the displayed result hold a PNG (8 frames, 4 a row) beside the video, and a text
    line that names the file and the score?"""
    from IPython.core.formatters import DisplayFormatter

    result = record_video(FakeAtari(), ConstantPolicy(), tmp_path / "game.mp4", fps=15)
    shown, _ = DisplayFormatter().format(result)
    assert {"text/html", "image/png", "text/plain"} <= set(shown)
    assert shown["text/plain"] == "VideoResult: game.mp4, score 30 in 15 agent steps"
    sheet = iio.imread(shown["image/png"])
    assert sheet.shape == (2 * (210 + 4) + 4, 4 * (160 + 4) + 4, 3)
    # The first still is the first frame (brightness 0), the last one the last frame's.
    assert sheet[4:214, 4:164].mean() < sheet[218:428, 496:656].mean()


def read_mp4(path):
    """All frames (T, H, W, 3) and the stream metadata, decoded by ffmpeg."""
    import imageio.v2 as imageio

    with imageio.get_reader(path, format="FFMPEG") as reader:
        # iter_data, not list(reader): the reader's length is inf for streams.
        return np.stack(list(reader.iter_data())), reader.get_meta_data()


def test_record_video_gif_fallback_cap_and_obs_frames(tmp_path, monkeypatch):
    """Without ffmpeg, is a GIF written; does max_frames cut the game; can frames come from obs?"""
    monkeypatch.setattr(video_module, "_ffmpeg_available", lambda: False)
    env = FakeAtari(render_mode=None, game_stats=False)
    result = record_video(
        env, lambda obs: np.zeros(len(obs), dtype=np.int64), tmp_path / "g.mp4", max_frames=8
    )
    assert result.path.suffix == ".gif" and not result.finished and result.frames == 8
    assert result.score == 2.0 * 7  # partial: summed rewards of the steps played
    frames = iio.imread(result.path, index=None)
    assert frames.shape[:3] == (8, 84, 84)
    assert video_html(result.path).startswith("<img")


def test_record_video_without_game_stats_ends_at_last_life(tmp_path):
    """Does a game end when the last life is lost even without info["episode"]?"""
    result = record_video(
        FakeAtari(game_stats=False), ConstantPolicy(), tmp_path / "v", format="gif"
    )
    assert result.finished and result.steps == 15 and result.score == 30.0


def test_record_video_rejects_bad_arguments(tmp_path):
    """Are a batch, a missing render mode and a tiny cap rejected with a fix?"""

    class Batch:
        num_envs = 2

    with pytest.raises(ValueError, match="single env"):
        record_video(Batch(), ConstantPolicy(), tmp_path / "v.mp4")
    with pytest.raises(ValueError, match="rgb_array"):
        record_video(
            FakeAtari(render_mode=None), ConstantPolicy(), tmp_path / "v.mp4", frames="render"
        )
    with pytest.raises(ValueError, match="max_frames"):
        record_video(FakeAtari(), ConstantPolicy(), tmp_path / "v.mp4", max_frames=1)


def test_tile_observations_shapes_and_placement():
    """Is each env's newest frame (or every frame) placed in its own tile of the grid?"""
    obs = np.zeros((8, 4, 84, 84), dtype=np.uint8)
    for i in range(8):
        for c in range(4):
            obs[i, c] = 10 * i + c
    image = tile_observations(obs, pad=2)  # 3 x 3 grid, last cell empty
    assert image.dtype == np.uint8 and image.shape == (3 * 86 - 2, 3 * 86 - 2)
    assert image[0, 0] == 3 and image[86, 86] == 43  # env 0 and env 4, frame 3
    assert image[84, 0] == 255  # padding
    grid = tile_observations(torch.as_tensor(obs), frames="all", pad=0)
    assert grid.shape == (8 * 84, 4 * 84)
    assert grid[84 * 5, 84 * 2] == 52  # env 5, frame 2
    assert tile_observations(obs[0], ncols=1, pad=0).shape == (84, 84)
    assert tile_observations(obs, ncols=8).shape == (84, 8 * 86 - 2)
    with pytest.raises(ValueError, match="shape"):
        tile_observations(np.zeros((84, 84)))


def test_show_batch_from_obs_and_runner():
    """Does show_batch draw from observations or from a runner's latest observation?"""
    import matplotlib.pyplot as plt

    obs = np.random.default_rng(0).integers(0, 255, size=(4, 4, 84, 84), dtype=np.uint8)
    fig = show_batch(obs, frames="all")
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), tile_observations(obs, "all"))
    plt.close(fig)

    class Runner:
        latest_observation = None

        def get_next(self):
            raise AssertionError

    with pytest.raises(ValueError, match="get_next"):
        show_batch(Runner())


@pytest.mark.rom
def test_record_video_real_atari_from_env_id(tmp_path):
    """Does an env id give a colour MP4 of the real screen, cut by max_frames?"""

    def random_policy(obs):
        assert obs.shape == (1, 4, 84, 84) and obs.dtype == np.uint8
        return np.random.default_rng(0).integers(6, size=1)

    result = record_video("PongNoFrameskip-v4", random_policy, tmp_path / "pong.mp4", max_frames=60)
    assert result.frames == 60 and not result.finished
    frames, _ = read_mp4(result.path)
    assert frames.shape == (60, 210, 160, 3)
    assert frames[:, :, :, 0].std() > 1  # a real, non-blank screen


def test_step_axis_labels_are_short():
    """Do step counts on the x axes read 250k and 1.5M instead of colliding digits?"""
    from course_lib.plots import _short_count

    labels = [_short_count(x) for x in (0, 500, 20_000, 250_000, 1_500_000, 10_000_000)]
    assert labels == ["0", "500", "20k", "250k", "1.5M", "10M"]
