"""Encoding frames (RGB ``uint8`` arrays) to video files with imageio.

``.mp4``: imageio's ffmpeg plugin (the ``imageio-ffmpeg`` binary), H.264 in ``yuv420p`` so that
browsers and players open it; ``.gif``: imageio's Pillow plugin, looping, each frame shown
``1000 / fps`` ms (Pillow merges identical consecutive frames, adding their durations).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import OptionError
from contactopt.core.outputs import PARTIAL_PREFIX

__all__ = ["FORMATS", "VideoWriter", "check_video_path"]

FORMATS = (".mp4", ".gif")


def check_video_path(path: str | Path) -> Path:
    """``path`` as a Path if its suffix is a supported format whose encoder is installed."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise OptionError(f"{path}: unsupported video format {path.suffix or '(none)'!r}; use "
                          f"{' or '.join(FORMATS)}")
    if importlib.util.find_spec("imageio") is None:
        raise OptionError("writing videos needs imageio: pip install 'contactopt[render]'")
    if suffix == ".mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise OptionError(f"{path}: .mp4 needs imageio-ffmpeg (pip install 'contactopt[render]'); "
                          ".gif works without it")
    if path.exists() and path.is_dir():
        raise OptionError(f"{path}: is a folder, expected a video file name")
    return path


class VideoWriter:
    """Context manager appending frames to ``path`` (see the module docstring). The frames go
    to a temporary name beside ``path`` (:data:`contactopt.core.outputs.PARTIAL_PREFIX`), renamed
    to ``path`` once the video is closed complete; a failed or killed render leaves none."""

    def __init__(self, path: Path, fps: float) -> None:
        self.path = path
        self._partial = path.with_name(f"{PARTIAL_PREFIX}{os.urandom(4).hex()}-{path.name}")
        self.fps = float(fps)
        self.count = 0
        self._writer: Any = None

    def __enter__(self) -> VideoWriter:
        import imageio.v2 as iio2
        import imageio.v3 as iio3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.suffix.lower() == ".mp4":
            self._writer = iio2.get_writer(self._partial, format="FFMPEG", mode="I", fps=self.fps, codec="libx264",
                                           pixelformat="yuv420p", macro_block_size=2, quality=7)
        else:
            self._writer = iio3.imopen(self._partial, "w", plugin="pillow", extension=".gif")
        return self

    def append(self, frame: NDArray[np.uint8]) -> None:
        """Add one (height, width, 3) frame."""
        image = np.ascontiguousarray(frame, dtype=np.uint8)
        if self.path.suffix.lower() == ".mp4":
            self._writer.append_data(image)
        else:
            self._writer.write(image, duration=1000.0 / self.fps, loop=0, is_batch=False)
        self.count += 1

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        try:
            self._writer.close()
            if kind is None:
                os.replace(self._partial, self.path)
        finally:
            if self._partial.exists():
                self._partial.unlink()
