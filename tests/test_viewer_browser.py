"""The viewer page in a real headless browser: Debian's Chromium loads the page written for a
short comparison, and what it draws is checked against what the runs contain.

Chromium is driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so no Python package and
no browser download is needed. WebGL runs on SwiftShader, Chromium's CPU renderer. The test
skips, saying why, when no Chromium is installed (``apt-get install chromium``; .ci/run does).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import io
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("meshcat", reason="the viewer needs meshcat (pip install 'contactopt[viewer]')")
CHROMIUM = next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (apt-get install chromium)")

WIDTH, HEIGHT = 800, 600
STEPS = 20


class Browser:
    """A headless Chromium and one page, spoken to over the DevTools pipe."""

    def __init__(self, deadline: float = 40.0) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # fds >= 10 so that placing them at 3 and 4 in the child cannot overwrite one another
        child_in, child_out = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10), fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)

        def place() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        assert CHROMIUM is not None
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-dev-shm-usage",
             "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-first-run", "--mute-audio",
             f"--window-size={WIDTH},{HEIGHT}", "--allow-file-access-from-files", "about:blank"],
            preexec_fn=place, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_browser, from_browser, child_in, child_out):
            os.close(fd)
        self.deadline = time.monotonic() + deadline
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=WIDTH, height=HEIGHT,
                  deviceScaleFactor=1, mobile=False)

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            self.events.append(answer)

    def open(self, path: Path) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=path.resolve().as_uri())
        while not any(event.get("method") == "Page.loadEventFired" for event in self.events):
            self.events.append(self._message())

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> np.ndarray:
        from matplotlib.image import imread

        data = base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"])
        return np.asarray(imread(io.BytesIO(data), format="png"))[..., :3]

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):  # closing anyway
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._write)
        os.close(self._read)


# At a time, per run: the bodies under run k, the force slots shown, the first body's position
# (in the run's frame, = the trajectory's, as the run's offset is on its parent) and where on
# the screen the body and the shown arrow tips fall (pixels from the top left).
PROBE = """
(() => {
  const v = window.contactopt.viewer, T = %r;
  v.animator.pause();
  v.animator.seek(T);
  v.animator.display_progress(T);
  v.scene.updateMatrixWorld(true);
  v.render();
  const screen = (obj, local) => {
    const p = obj.position.clone().set(...local).applyMatrix4(obj.matrixWorld).project(v.camera);
    return [(p.x + 1) / 2 * %d, (1 - p.y) / 2 * %d];
  };
  return window.contactopt.runs.map((run, k) => {
    const node = v.scene_tree.find(["contactopt", "run" + k]);
    const bodies = Object.values(node.find(["bodies"]).children);
    const slots = Object.values(node.find(["forces"]).children).filter(s => s.object.visible);
    return {bodies: bodies.length, arrows: slots.length, position: bodies[0].object.position.toArray(),
            body_px: screen(bodies[0].object, [0, 0, 0]),
            tips_px: slots.map(s => screen(s.find(["arrow"]).object, [0, 0.8, 0]))};
  });
})()
"""


def _near(image: np.ndarray, xy: list[float], colour: tuple[float, float, float], radius: int, tol: float) -> int:
    """Pixels within ``tol`` of ``colour`` (RGB in [0, 1]) in the square of ``radius`` around ``xy``."""
    x, y = round(xy[0]), round(xy[1])
    patch = image[max(0, y - radius):y + radius + 1, max(0, x - radius):x + radius + 1]
    return int(np.sum(np.max(np.abs(patch - np.asarray(colour)), axis=-1) < tol))


def test_page_in_chromium_shows_the_bodies_and_forces_of_each_run(tmp_path: Path) -> None:
    from contactopt.analysis.viewer import ARROW_COLOUR, view

    scene = co.load_scene("box_slide")
    duration = STEPS * scene.dt
    # anitescu lifts the box off the ground after its first step (hydroplaning, its known
    # artefact); the LCP keeps its four bottom corners loaded: 4 arrows in every frame
    runs = [co.simulate(scene, formulation=name, duration=duration) for name in ("lcp", "anitescu")]
    page = view(runs, scene, tmp_path / "view.html")
    browser = Browser()
    try:
        started = time.monotonic()
        browser.open(page.path)  # type: ignore[arg-type]
        assert browser.evaluate("window.contactopt.runs.length") == 2
        step = 10
        seen = browser.evaluate(PROBE % (float(runs[0].t[step] - runs[0].t[0]), WIDTH, HEIGHT))
        image = browser.screenshot()
        elapsed = time.monotonic() - started
    finally:
        browser.close()
    for run, probe in zip(runs, seen, strict=True):
        assert probe["bodies"] == 1  # one box
        loaded = int(np.sum(np.linalg.norm(run.steps[step].impulses, axis=1) > 0))
        assert probe["arrows"] == loaded
        # the animated pose is the trajectory's state at that step (float32 in the page)
        np.testing.assert_allclose(probe["position"], run.q[step, :3], atol=1e-6)
    assert seen[0]["arrows"] > 0  # the LCP's box rests on loaded corners: the arrows below must show
    # the picture: each box's colour around its projected centre, red at each arrow's tip
    for k, probe in enumerate(seen):
        colour = page.meta["runs"][k]["colour"]
        rgb = tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
        assert _near(image, probe["body_px"], rgb, 12, 0.35) > 20, f"run {k}: no body colour at its centre"
    red = tuple(((ARROW_COLOUR >> s) & 255) / 255 for s in (16, 8, 0))
    for tip in seen[0]["tips_px"]:
        assert _near(image, tip, red, 4, 0.12) > 0, f"no arrow colour at the arrow tip {tip}"
    assert elapsed < 20.0
