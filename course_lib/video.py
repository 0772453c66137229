"""See what the agent sees and does: videos of one game, and tiled views of a batch of observations.

* :func:`record_video` plays one full game with a policy and writes it to an MP4 file (H.264,
  ``yuv420p``: the format every browser plays), or to a GIF when no ffmpeg is available. No
  display is needed: frames come from ``env.render()`` of an env made with
  ``render_mode="rgb_array"`` (the full-colour 210x160 screen) or, failing that, from the last
  frame of each preprocessed observation (the 84x84 grey image the network sees).
  The result shows itself inline in Jupyter and Colab (a base64 ``<video>``, and beside it a PNG
  of still frames: a saved notebook keeps that image where a video is not shown, e.g. once a
  grader has filtered the outputs), and unpacks as ``path, score = record_video(...)``.
* :func:`tile_observations` / :func:`show_batch`: one image with a tile per env of a batch (or
  every stacked frame of every env), to check the preprocessing: 84x84, grey, channels first,
  the 4 frames of a stack in time order, envs out of sync after random no-op starts.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .validation import check_int

__all__ = [
    "VideoResult",
    "record_video",
    "show_batch",
    "show_video",
    "still_frames",
    "tile_observations",
    "video_html",
    "write_video",
]


def _ffmpeg_available() -> bool:
    """True if imageio-ffmpeg can find an ffmpeg binary (it ships one in its wheel)."""
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return False
    return True


def _to_rgb(frame: np.ndarray) -> np.ndarray:
    """``uint8 (H, W, 3)`` from a grey ``(H, W)`` or an RGB(A) ``(H, W, 3|4)`` frame."""
    frame = np.asarray(frame)
    if frame.ndim == 2:
        frame = np.repeat(frame[:, :, None], 3, axis=2)
    if frame.ndim != 3 or frame.shape[2] not in (3, 4):
        raise ValueError(f"A video frame must be (H, W) or (H, W, 3), got shape {frame.shape}.")
    return np.ascontiguousarray(frame[:, :, :3], dtype=np.uint8)


def write_video(
    frames: list[np.ndarray], path: str | Path, fps: int = 30, format: str = "auto"
) -> Path:
    """Write RGB or grey frames to ``path`` and return the path actually written.

    ``format``: ``"mp4"`` (H.264 in yuv420p, which needs even sizes: frames are padded by one
    pixel where needed), ``"gif"``, or ``"auto"`` (MP4 when ffmpeg is available, else GIF).
    The suffix of ``path`` is set to match the format.
    """
    if format not in ("auto", "mp4", "gif"):
        raise ValueError(f"`format` must be 'auto', 'mp4' or 'gif', got {format!r}.")
    if not frames:
        raise ValueError("`frames` is empty: nothing to write.")
    if format == "auto":
        format = "mp4" if _ffmpeg_available() else "gif"
    path = Path(path).with_suffix("." + format)
    path.parent.mkdir(parents=True, exist_ok=True)
    import imageio.v2 as imageio

    if format == "gif":
        import imageio.v3 as iio

        iio.imwrite(path, np.stack([_to_rgb(f) for f in frames]), extension=".gif",
                    duration=1000 / fps, loop=0)  # fmt: skip
        return path
    writer = imageio.get_writer(
        path, format="FFMPEG", mode="I", fps=fps, codec="libx264", pixelformat="yuv420p",
        macro_block_size=2, ffmpeg_log_level="error",
    )  # fmt: skip
    try:
        for frame in frames:
            rgb = _to_rgb(frame)
            h, w = rgb.shape[:2]
            if h % 2 or w % 2:
                rgb = np.pad(rgb, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
            writer.append_data(rgb)
    finally:
        writer.close()
    return path


def video_html(path: str | Path, width: int | None = 320) -> str:
    """An HTML snippet that embeds the MP4 (``<video>``) or GIF (``<img>``) at ``path`` as base64."""
    path = Path(path)
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    size = f' width="{width}"' if width else ""
    if path.suffix == ".gif":
        return f'<img{size} src="data:image/gif;base64,{data}"/>'
    return (
        f"<video{size} controls autoplay loop muted playsinline>"
        f'<source src="data:video/mp4;base64,{data}" type="video/mp4"/></video>'
    )


def show_video(path: str | Path, width: int | None = 320) -> Any:
    """An ``IPython.display.HTML`` object that plays the video at ``path`` in a notebook."""
    from IPython.display import HTML

    return HTML(video_html(path, width))


@dataclass(frozen=True)
class VideoResult:
    """What :func:`record_video` returns; unpacks as ``path, score`` and plays inline in notebooks.

    Attributes:
        path: the file written (``.mp4``, or ``.gif`` without ffmpeg).
        score: raw game score (the env's ``info["episode"]["r"]`` when it reports one, else the
            sum of its rewards: make the env with ``clip_reward=False`` for the raw score).
        steps: agent steps played.
        frames: frames written.
        finished: False if ``max_frames`` cut the game short (the score is then partial).
        stills: a PNG of frames taken evenly through the game (empty when none were given).
    """

    path: Path
    score: float
    steps: int
    frames: int
    finished: bool
    stills: bytes = field(default=b"", repr=False)

    def __iter__(self):
        return iter((self.path, self.score))

    def _caption(self) -> str:
        status = "" if self.finished else " (cut at max_frames)"
        return f"score {self.score:g} in {self.steps} agent steps{status}"

    def __repr__(self) -> str:
        return f"VideoResult: {Path(self.path).name}, {self._caption()}"

    def _repr_html_(self) -> str:
        return video_html(self.path) + f"<p>{self._caption()}</p>"

    def _repr_png_(self) -> bytes | None:
        return self.stills or None


def still_frames(frames: list[np.ndarray], count: int = 8, columns: int = 4) -> bytes:
    """A PNG of ``count`` frames taken evenly from ``frames`` (first and last included), in rows
    of ``columns``, each at most 160 pixels wide."""
    from PIL import Image

    check_int("count", count, 1)
    check_int("columns", columns, 1)
    if not frames:
        raise ValueError("`frames` is empty: there is nothing to show.")
    picks = np.unique(np.linspace(0, len(frames) - 1, min(count, len(frames))).round().astype(int))
    images = [Image.fromarray(_to_rgb(frames[i])) for i in picks]
    scale = min(1.0, 160 / max(image.width for image in images))
    size = (max(1, round(images[0].width * scale)), max(1, round(images[0].height * scale)))
    columns = min(columns, len(images))
    rows = math.ceil(len(images) / columns)
    sheet = Image.new("RGB", (columns * (size[0] + 4) + 4, rows * (size[1] + 4) + 4), "white")
    for index, image in enumerate(images):
        row, column = divmod(index, columns)
        sheet.paste(image.resize(size), (4 + column * (size[0] + 4), 4 + row * (size[1] + 4)))
    out = io.BytesIO()
    sheet.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _act(policy: Any, obs: np.ndarray) -> int:
    """One action for one obs from a batch policy (``act`` method or plain callable)."""
    import torch

    batch = np.asarray(obs)[None]
    with torch.no_grad():
        out = policy.act(batch) if hasattr(policy, "act") else policy(batch)
    if isinstance(out, dict):
        out = out["actions"]
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    return int(np.asarray(out).reshape(-1)[0])


def record_video(
    env: Any,
    policy: Any,
    path: str | Path = "video.mp4",
    *,
    max_frames: int = 5000,
    fps: int = 30,
    frames: str = "auto",
    seed: int | None = None,
    format: str = "auto",
) -> VideoResult:
    """Play one full game with ``policy`` and write it to a video file.

    Args:
        env: one (non-batched) env whose observations the policy takes, ideally made with
            ``make_atari_env(env_id, clip_reward=False, render_mode="rgb_array")``; or an env id
            string, for which exactly that env is made (and closed afterwards).
        policy: ``policy.act(obs_batch)`` returning a dict with ``"actions"`` (the course's
            Policy), or a callable ``policy(obs_batch) -> actions``. It gets a batch of one:
            ``obs[None]``, shape ``(1, 4, 84, 84)``, and runs under ``torch.no_grad()``.
        path: where to write; the suffix becomes ``.mp4`` or ``.gif``.
        max_frames: cap on frames (and agent steps): the game is cut there.
        fps: frames per second of the video (the agent acts at 15 steps per game second).
        frames: ``"render"`` (``env.render()``), ``"obs"`` (last frame of each observation),
            or ``"auto"`` (render if ``env.render_mode == "rgb_array"``, else obs).
        seed: seed of the reset.
        format: ``"mp4"``, ``"gif"`` or ``"auto"`` (MP4 when ffmpeg is available).

    A life loss ends an episode for learning (``terminated``) but not the game: the env is
    reset (which only continues the game under the EpisodicLife wrapper) until the game is over.
    """
    check_int("max_frames", max_frames, 2)
    if frames not in ("auto", "render", "obs"):
        raise ValueError(f"`frames` must be 'auto', 'render' or 'obs', got {frames!r}.")
    owns_env = isinstance(env, str)
    if owns_env:
        from .atari_env import make_atari_env

        env = make_atari_env(env, clip_reward=False, render_mode="rgb_array")
    if getattr(env, "num_envs", None) is not None:
        raise ValueError(
            "`env` must be a single env, not a batch: make one with "
            "make_atari_env(env_id, clip_reward=False, render_mode='rgb_array')."
        )
    if frames == "auto":
        frames = "render" if getattr(env, "render_mode", None) == "rgb_array" else "obs"
    if frames == "render" and getattr(env, "render_mode", None) != "rgb_array":
        raise ValueError(
            f"frames='render' needs an env made with render_mode='rgb_array', got "
            f"render_mode={getattr(env, 'render_mode', None)!r}; or use frames='obs'."
        )

    def frame(obs: np.ndarray) -> np.ndarray:
        return env.render() if frames == "render" else np.asarray(obs)[-1]

    try:
        obs, info = env.reset(seed=seed)
        images = [frame(obs)]
        score, steps, finished = 0.0, 0, False
        while len(images) < max_frames:
            obs, reward, terminated, truncated, info = env.step(_act(policy, obs))
            steps += 1
            score += float(reward)
            images.append(frame(obs))
            if "episode" in info:  # RecordGameStatistics reports the full game's raw score
                score, finished = float(np.asarray(info["episode"]["r"]).reshape(-1)[0]), True
                break
            if truncated or (terminated and info.get("lives", 0) == 0):
                finished = True
                break
            if terminated:  # a life lost: continue the same game
                obs, info = env.reset()
    finally:
        if owns_env:
            env.close()
    written = write_video(images, path, fps=fps, format=format)
    return VideoResult(written, score, steps, len(images), finished, still_frames(images))


def tile_observations(
    obs: Any, frames: str = "last", ncols: int | None = None, pad: int = 2, pad_value: int = 255
) -> np.ndarray:
    """One ``uint8 (H_total, W_total)`` image with a tile per env (and per stacked frame).

    Args:
        obs: a batch ``(N, C, H, W)`` (e.g. ``(8, 4, 84, 84)``), or one obs ``(C, H, W)``;
            a numpy array or a torch tensor.
        frames: ``"last"``: one tile per env, its newest frame ``obs[i, -1]``, in a grid of
            ``ncols`` columns (default: about square); ``"all"``: one row per env with its C
            frames left to right, oldest first.
        pad: pixels of ``pad_value`` between tiles.
    """
    if hasattr(obs, "detach"):
        obs = obs.detach().cpu().numpy()
    obs = np.asarray(obs)
    if obs.ndim == 3:
        obs = obs[None]
    if obs.ndim != 4:
        raise ValueError(
            f"`obs` must be a batch (N, C, H, W) or one obs (C, H, W), got shape {obs.shape}."
        )
    if frames not in ("last", "all"):
        raise ValueError(f"`frames` must be 'last' or 'all', got {frames!r}.")
    n, c, h, w = obs.shape
    if frames == "all":
        tiles, rows, cols = obs.reshape(n * c, h, w), n, c
    else:
        cols = ncols if ncols is not None else math.ceil(math.sqrt(n))
        cols = check_int("ncols", cols, 1)
        tiles, rows = obs[:, -1], math.ceil(n / cols)
    if obs.dtype != np.uint8:  # floats in [0, 1] or [0, 255]
        scale = 255.0 if obs.max(initial=0) <= 1.0 else 1.0
        tiles = np.clip(tiles * scale, 0, 255).astype(np.uint8)
    image = np.full((rows * (h + pad) - pad, cols * (w + pad) - pad), pad_value, dtype=np.uint8)
    for k, tile in enumerate(tiles):
        r, col = divmod(k, cols)
        image[r * (h + pad) : r * (h + pad) + h, col * (w + pad) : col * (w + pad) + w] = tile
    return image


def show_batch(
    env_or_obs: Any, frames: str = "last", ncols: int | None = None, title: str | None = None
) -> Any:
    """Show :func:`tile_observations` of a batch with matplotlib and return the figure.

    ``env_or_obs``: observations (array or tensor), a runner (its ``latest_observation``), or an
    env batch, which is **reset** to get its first observations (do not pass the batch a runner
    is using: pass the runner).
    """
    import matplotlib.pyplot as plt

    source = env_or_obs
    if hasattr(source, "latest_observation") and hasattr(source, "get_next"):
        obs = source.latest_observation
        if obs is None:
            raise ValueError("The runner has no observation yet: call runner.get_next() first.")
    elif hasattr(source, "reset") and hasattr(source, "step"):
        obs, _ = source.reset()
    else:
        obs = source
    image = tile_observations(obs, frames=frames, ncols=ncols)
    fig, ax = plt.subplots(
        figsize=(min(12, image.shape[1] / 40), min(12, image.shape[0] / 40) + 0.3)
    )
    ax.imshow(image, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
    ax.set_axis_off()
    n = np.shape(obs)[0] if np.ndim(obs) == 4 else 1
    default = f"{n} envs, " + (
        "newest frame of each" if frames == "last" else "rows: envs, columns: frames t-3 .. t"
    )
    ax.set_title(title or default)
    return fig
