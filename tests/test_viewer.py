"""The 3-D viewer's page without a browser: the scene it carries (decoded from the page) against
the run, the pose algebra, the arrow scale, the CLI and the errors.
(tests/test_viewer_browser.py loads the page in Chromium.)"""

from __future__ import annotations

import base64
import json
import math
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.cli import main
from contactopt.core.errors import ContactoptError

pytest.importorskip("meshcat", reason="the viewer needs meshcat (pip install 'contactopt[viewer]')")

from contactopt.analysis.viewer import view
from contactopt.analysis.viewer_shapes import model_shapes, rotation_onto
from contactopt.systems.drawing import Drawing, Line, Polygon

STEPS = 20


@pytest.fixture(scope="module")
def scene() -> co.Scene:
    return co.load_scene("box_slide")


@pytest.fixture(scope="module")
def lcp_run(scene: co.Scene) -> co.Trajectory:
    return co.simulate(scene, formulation="lcp", duration=STEPS * scene.dt)


def _commands(page_html: str) -> list[dict[str, Any]]:
    """The meshcat commands a page replays, decoded."""
    import umsgpack

    text = re.search(r'<script type="application/json" id="contactopt-scene">(.*?)</script>', page_html, re.S)
    assert text is not None
    return [umsgpack.unpackb(base64.b64decode(item)) for item in json.loads(text.group(1))]


def _tracks(commands: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    animation = next(c for c in commands if c["type"] == "set_animation")
    return {(item["path"], track["name"].lstrip(".")): track["keys"]
            for item in animation["animations"] for track in item["clip"]["tracks"]}


def test_page_carries_the_run_bodies_forces_and_times(scene: co.Scene, lcp_run: co.Trajectory) -> None:
    page = view(lcp_run, scene, title="box_slide")
    meta = page.meta
    assert meta["runs"][0]["bodies"] == 1 and meta["runs"][0]["title"] == "lcp / lemke"
    np.testing.assert_allclose(meta["runs"][0]["times"], lcp_run.t - lcp_run.t[0])  # 21 samples < 600 frames
    # one arrow per contact with a nonzero impulse; the last sample shows the last step's forces
    loaded = [int(np.sum(np.linalg.norm(r.impulses, axis=1) > 0)) for r in lcp_run.steps]
    assert meta["runs"][0]["forces"] == [*loaded, loaded[-1]]
    commands = _commands(page.html)
    objects = [c["path"] for c in commands if c["type"] == "set_object"]
    assert sum("/bodies/" in p for p in objects) == 1  # the box (the ground is scenery)
    assert len({p.split("/slot")[1].split("/")[0] for p in objects if "/slot" in p}) == max(loaded)
    tracks = _tracks(commands)
    body = "/contactopt/run0/bodies/shape1"  # shape 0 is the ground plane
    positions = np.array([key["value"] for key in tracks[(body, "position")]])
    np.testing.assert_array_equal(positions, lcp_run.q[:, :3])  # the box's centre at each sample
    quaternions = np.array([key["value"] for key in tracks[(body, "quaternion")]])  # three.js: x y z w
    np.testing.assert_allclose(np.abs(np.sum(quaternions[:, [3, 0, 1, 2]] * lcp_run.q[:, 3:7], axis=1)), 1.0,
                               atol=1e-12)  # the same rotation as the run's (w x y z) quaternion, up to sign
    shown = [sum(bool(tracks[(f"/contactopt/run0/forces/slot{s}", "visible")][f]["value"]) for s in range(max(loaded)))
             for f in range(len(lcp_run.t))]
    assert shown == meta["runs"][0]["forces"]


def test_arrow_scale_is_the_videos_rule_and_states_newtons(scene: co.Scene, lcp_run: co.Trajectory) -> None:
    page = view(lcp_run, scene)
    # rigid3d ground frames are orthonormal, so |F| = |lambda| / h; the median of the frames'
    # largest forces spans half the longest arrow (render.py: 30 % and 60 % of the diagonal)
    peaks = [np.linalg.norm(r.impulses, axis=1).max() / lcp_run.dt for r in lcp_run.steps]
    peaks.append(peaks[-1])
    assert page.meta["arrow_scale"] * np.median(peaks) == pytest.approx(0.5 * page.meta["longest_arrow"], rel=1e-12)
    assert f"1 N = {1e3 * page.meta['arrow_scale']:.3g} mm" in page.html
    # a 0.02 s run plays in MIN_PLAYBACK = 4 s: at 0.005 of real time
    assert page.meta["speed"] == pytest.approx(STEPS * scene.dt / 4.0)


def test_side_by_side_runs_are_offset_and_labelled(scene: co.Scene, lcp_run: co.Trajectory) -> None:
    other = co.simulate(scene, formulation="anitescu", duration=STEPS * scene.dt)
    page = view([lcp_run, other], scene)
    commands = _commands(page.html)
    offsets = {c["path"]: np.array(c["matrix"]).reshape(4, 4).T[:3, 3] for c in commands
               if c["type"] == "set_transform" and re.fullmatch(r"/contactopt/run\d", c["path"])}
    step = offsets["/contactopt/run1"] - offsets["/contactopt/run0"]
    assert step[0] == 0 and step[2] == 0 and step[1] > 0.2  # across the slide (along y), wider than the box
    assert [run["title"] for run in page.meta["runs"]] == ["lcp / lemke", "anitescu / clarabel"]
    assert all(f"/contactopt/run{k}/label/text" in [c.get("path") for c in commands] for k in (0, 1))
    assert len({run["colour"] for run in page.meta["runs"]}) == 2


def test_rotation_onto_and_polygon_poses_are_exact() -> None:
    rng = np.random.default_rng(3)
    for direction in [*rng.normal(size=(5, 3)), np.array([0.0, -2.0, 0.0]), np.array([0.0, 1.0, 0.0])]:
        rotation = rotation_onto(direction)
        np.testing.assert_allclose(rotation @ [0, 1, 0], direction / np.linalg.norm(direction), atol=1e-14)
        np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-14)
        assert np.linalg.det(rotation) == pytest.approx(1.0)
    import meshcat.geometry

    square = np.array([[0.0, 0.0], [0.2, 0.0], [0.2, 0.1], [0.0, 0.1]])
    angle, shift = 0.7, np.array([0.3, -0.05])
    turn = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
    moved = square @ turn.T + shift
    floor = Line(np.zeros(2), np.array([0.0, 1.0]))
    models = model_shapes([Drawing(2, (floor, Polygon(square))), Drawing(2, (floor, Polygon(moved)))],
                          meshcat.geometry, 1.0, 0x1F77B4)
    assert [m.scenery for m in models] == [True, False]
    pose = models[1].poses[1]
    local = square - square.mean(axis=0)  # the prism is centred on the first frame's centroid
    world = pose.position + (np.c_[local[:, 0], np.zeros(4), local[:, 1]] @ pose.rotation.T)
    np.testing.assert_allclose(world[:, [0, 2]], moved, atol=1e-14)  # (h, v) drawn as (x, z)
    np.testing.assert_allclose(world[:, 1], 0.0, atol=1e-15)


def test_api_names_notebook_display_and_server(scene: co.Scene, lcp_run: co.Trajectory, tmp_path: Path) -> None:
    assert co.analysis.view is view
    page = co.view(lcp_run, scene, tmp_path / "page.html")
    assert page.path == tmp_path / "page.html" and page.path.read_text(encoding="utf-8") == page.html
    assert page._repr_html_().startswith("<iframe srcdoc=")
    server = page.serve(0)
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host!s}:{port}/", timeout=10) as answer:
            assert answer.read().decode("utf-8") == page.html
    finally:
        server.shutdown()
        server.server_close()


def test_missing_meshcat_names_the_install(monkeypatch: pytest.MonkeyPatch, scene: co.Scene,
                                           lcp_run: co.Trajectory) -> None:
    monkeypatch.setitem(sys.modules, "meshcat", None)  # import meshcat now fails
    with pytest.raises(ContactoptError, match=r"pip install 'contactopt\[viewer\]'"):
        view(lcp_run, scene)


def test_cli_view_of_a_scene_and_of_a_saved_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "cmp.html"
    assert main(["view", "box_slide", "--formulations", "lcp,anitescu", "--duration", "0.005", "--out", str(out),
                 "--no-progress"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "lcp / lemke" in text and "anitescu / clarabel" in text and f"wrote {out}" in capsys.readouterr().out
    run = tmp_path / "run"
    assert main(["run", "box_slide", "--formulation", "lcp", "--duration", "0.005", "--out", str(run),
                 "--no-progress"]) == 0
    assert main(["view", str(run)]) == 0
    assert (run / "view.html").exists()
    capsys.readouterr()
    assert main(["view", str(run), "--formulations", "lcp"]) == 1  # a scene's flag on a saved run
    assert "--formulations: only for a scene" in capsys.readouterr().err
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["view", str(run), "--mujoco"]) == 1  # not MJCF, and no display
    assert "MuJoCo's viewer shows MJCF models" in capsys.readouterr().err
