"""``contactopt render`` and ``compare --render`` (issue 13, item 4): videos whose frame count
follows the documented rule (``ceil((N - 1) / stride) + 1`` frames for ``N`` samples) and whose
pictures move when the scene moves; the GIF path works without any OpenGL; contact arrows are
the recorded forces. Renders are tiny (a few frames, ~100 px) to keep the file under 5 s."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis import render as render_module
from contactopt.analysis.render import frame_indices, render
from contactopt.analysis.render_frames import contact_arrows
from contactopt.cli import main
from contactopt.model.step import Contacts, Dynamics
from contactopt.systems.base import System
from contactopt.systems.drawing import Dot, Drawing, Segment
from contactopt.systems.drawings import drawing_of

iio = pytest.importorskip("imageio.v3")
PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _frames(path: Path) -> np.ndarray:
    """(n, h, w, 3) frames of a .gif or .mp4."""
    frames = iio.imread(path, index=None) if path.suffix == ".gif" else iio.imread(path, plugin="FFMPEG", index=None)
    return np.asarray(frames)[..., :3].astype(np.int32)


def _picture_change(frames: np.ndarray) -> float:
    """Mean absolute pixel change between the first and last frame below the heading line
    (which holds the time and so always changes)."""
    return float(np.abs(frames[0, render_module.HEADING:] - frames[-1, render_module.HEADING:]).mean())


def _pendulum_scene(tmp_path: Path, q0: float) -> Path:
    text = (PROBLEMS / "pendulum.toml").read_text().replace("q = [1.0]", f"q = [{q0}]")
    assert f"q = [{q0}]" in text
    path = tmp_path / f"pendulum_{q0}.toml"
    path.write_text(text)
    return path


def test_frame_rule() -> None:
    """Samples 0, s, 2s, ... and the last one: ceil((N - 1) / s) + 1 frames."""
    assert frame_indices(5, 1).tolist() == [0, 1, 2, 3, 4]
    assert frame_indices(201, 33).tolist() == [0, 33, 66, 99, 132, 165, 198, 200]
    for n in (1, 2, 7, 10, 11, 100):
        for stride in (1, 2, 3, 7):
            indices = frame_indices(n, stride)
            assert len(indices) == math.ceil((n - 1) / stride) + 1
            assert indices[0] == 0 and indices[-1] == n - 1
    assert render_module.default_stride(np.arange(0, 1.0, 1e-3), 30.0) == 33  # real time: 1 / (30 h)


@pytest.mark.parametrize(("suffix", "stride", "expected"), [(".gif", 1, 7), (".mp4", 2, 4)])
def test_render_scene_frame_count_and_motion(tmp_path: Path, suffix: str, stride: int, expected: int,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The pendulum released from 1 rad, h = 0.05, 0.3 s: 7 samples -> 7 frames at stride 1,
    4 at stride 2; its picture changes between first and last frame. The control (GIF): the
    same pendulum hanging at rest gives identical pictures, and still one frame per sample."""
    scenes = [(_pendulum_scene(tmp_path, 1.0), True)]
    if suffix == ".gif":
        scenes.append((_pendulum_scene(tmp_path, 0.0), False))
    for scene, moving in scenes:
        out = tmp_path / f"{scene.stem}{suffix}"
        code = main(["render", str(scene), "--dt", "0.05", "--duration", "0.3", "--stride", str(stride),
                     "--size", "96x72", "--out", str(out), "--no-progress"])
        assert code == 0
        assert f"wrote {out} ({expected} frames, matplotlib, " in capsys.readouterr().out
        frames = _frames(out)
        assert frames.shape[0] == expected
        if moving:
            assert _picture_change(frames) > 1.0  # the bob swings by ~0.5 m in a 1.3 m view
        else:
            assert _picture_change(frames) == 0.0


def test_gif_without_opengl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """No OpenGL at all (MuJoCo's own switch MUJOCO_GL=disable; CONTACTOPT_NO_GL makes every
    context fail as on a machine without the libraries): an MJCF model is drawn by matplotlib,
    with one note saying why; the GIF has one frame per sample and the falling arm moves. Asking
    for MuJoCo's renderer then is one clear error."""
    monkeypatch.setenv("MUJOCO_GL", "disable")
    out = tmp_path / "arm.gif"
    code = main(["render", "two_link_arm_mjcf", "--dt", "0.01", "--duration", "0.1", "--stride", "1",
                 "--size", "96x72", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.count("no OpenGL context for MuJoCo's renderer") == 1
    assert "(11 frames, matplotlib, " in captured.out
    frames = _frames(out)
    assert frames.shape[0] == 11
    assert _picture_change(frames) > 0.5
    monkeypatch.setenv("CONTACTOPT_NO_GL", "1")
    assert main(["render", "two_link_arm_mjcf", "--duration", "0.01", "--renderer", "mujoco",
                 "--out", str(tmp_path / "x.gif"), "--no-progress"]) == 1
    assert "needs an OpenGL context" in capsys.readouterr().err


def test_mujoco_renderer(tmp_path: Path) -> None:
    """MuJoCo's own pictures (skipped where no OpenGL context can be made): frame count by the
    rule and a moving picture for the arm swinging down."""
    from contactopt.analysis.render_gl import NoOpenGL

    scene = co.load_scene("two_link_arm_mjcf")
    traj = co.simulate(scene, dt=0.01, duration=0.1)
    try:
        result = render(traj, scene.system, tmp_path / "arm.mp4", size=(96, 72), stride=2, renderer="mujoco")
    except co.ContactoptError as exc:
        if isinstance(exc.__cause__, NoOpenGL):
            pytest.skip(f"no OpenGL context here: {exc}")
        raise
    assert result.renderer == "mujoco" and result.frames == 6  # ceil(10 / 2) + 1
    frames = _frames(result.path)
    assert frames.shape[0] == 6
    assert _picture_change(frames) > 0.5


def test_render_saved_run_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run folder written by 'contactopt run' renders with its scene's system (cart_wall,
    h = 0.1, 2 s: 21 samples; the default stride at 30 fps is 1); bad input is one line."""
    run = tmp_path / "run"
    assert main(["run", "cart_wall", "--out", str(run), "--no-plot", "--no-progress"]) == 0
    assert main(["render", str(run), "--size", "96x64", "--out", str(run / "v.gif"), "--no-progress"]) == 0
    assert _frames(run / "v.gif").shape[0] == 21
    capsys.readouterr()
    for argv, message in (
            (["render", str(run), "-f", "lcp"], "--formulation: only for a scene"),
            (["render", str(run), "--out", str(tmp_path / "v.avi")], "unsupported video format '.avi'"),
            (["render", str(run), "--scene", "pendulum"], "a pendulum system with nq = 1; the run"),
            (["render", str(tmp_path)], "a folder without trajectory.npz"),
            (["render", "cart_wall", "--scene", "pendulum"], "--scene: only for a saved run"),
            (["render", str(run), "--renderer", "mujoco"], "renderer 'mujoco' draws MJCF models")):
        assert main([*argv, "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    traj = co.Trajectory.load(run / "trajectory.npz")
    traj.info["system_description"] = "something else"
    traj.save(tmp_path / "other.npz")
    assert main(["render", str(tmp_path / "other.npz"), "--no-progress"]) == 1
    assert "pass --scene FILE" in capsys.readouterr().err


def test_contact_arrows_are_the_recorded_forces() -> None:
    """The box of box_slide at rest on the ground (lcp/lemke): the arrows' forces,
    frames^T lambda / h summed over the corners, are the weight m g = 9.81 N straight up."""
    scene = co.load_scene("box_slide")
    scene = dataclasses.replace(scene, v0=np.zeros(6))
    traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.005)
    for i in (2, 4):
        drawing = drawing_of(scene.system, traj.q[i])
        assert drawing is not None and drawing.contacts is not None
        forces = drawing.contacts.forces(traj.steps[i].impulses, traj.dt)
        assert forces is not None
        np.testing.assert_allclose(forces.sum(axis=0), [0.0, 0.0, 9.81], atol=1e-6)
        arrows = contact_arrows(drawing, traj, i)
        assert 1 <= len(arrows) <= 4  # only the loaded bottom corners


class _Bead(System):
    """A plugin-like system: a bead on a horizontal wire, q = [x], no contacts."""

    type_name = "bead_for_render_test"
    description = "bead"
    nq = nv = 1
    contact_dim = 1
    q_names = ("x",)
    v_names = ("vx",)

    def dynamics(self, q: object, v: object, u: object = None) -> Dynamics:
        return Dynamics(M=np.eye(1), tau=np.zeros(1))

    def contacts(self, q: object) -> Contacts:
        return Contacts.empty(1, 1)


class _DrawnBead(_Bead):
    def drawing(self, q: object) -> Drawing:
        x = float(np.asarray(q)[0])
        return Drawing(2, (Segment(np.array([-1.0, 0.0]), np.array([1.0, 0.0])), Dot(np.array([x, 0.0]))))


def test_drawing_hook_and_generic_fallback(tmp_path: Path) -> None:
    """A system's own drawing(q) is used; one without a drawing is shown as a plot of its
    coordinates; both videos have one frame per sample and move."""
    traj = co.Trajectory(t=np.linspace(0.0, 0.4, 5), q=np.linspace(-0.8, 0.8, 5)[:, None], v=np.ones((5, 1)),
                         info={"dt": 0.1, "q_names": ["x"]})
    plain, drawn = _Bead({}, {}), _DrawnBead({}, {})
    assert drawing_of(plain, [0.0]) is None
    assert isinstance(drawing_of(drawn, [0.5]), Drawing)
    for system, name in ((plain, "plot.gif"), (drawn, "drawn.gif")):
        result = render(traj, system, tmp_path / name, size=(96, 72), stride=1)
        frames = _frames(result.path)
        assert result.frames == frames.shape[0] == 5
        assert _picture_change(frames) > 0.1


def test_compare_render_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """compare --render: one panel per compared run side by side (2 runs -> 1 x 2 panels of
    320 x 240 under the heading line), one frame per sample (cart_wall, h = 0.1, 0.3 s: 4)."""
    video = tmp_path / "cmp.gif"
    code = main(["compare", "cart_wall", "--formulations", "gauss,lcp", "--solvers", "lemke",
                 "--duration", "0.3", "--executor", "serial", "--out", str(tmp_path / "c"), "--no-plot",
                 "--no-progress", "--render", str(video)])
    assert code == 0
    assert f"wrote {video} (4 frames, matplotlib, 4 s at x0.1 speed)" in capsys.readouterr().out
    frames = _frames(video)
    assert frames.shape == (4, 240 + render_module.HEADING, 2 * 320, 3)
    left, right = frames[:, render_module.HEADING:, :320], frames[:, render_module.HEADING:, 320:]
    assert _picture_change(left) > 0.1 and _picture_change(right) > 0.1  # both carts move
