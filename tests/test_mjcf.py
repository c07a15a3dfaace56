"""MJCF scenes, MuJoCo side by side (issue "Real scenes from MJCF").

The reproduction compares forces of the SAME convex problem solved two ways: MuJoCo's Newton
method on its primal (run to convergence), and contactopt's dual. These problems are
degenerate (on the sphere pile ~90 % of the 1000 pyramid-edge rows sit at f = 0), where an
interior point method is only O(sqrt(tolerance)) accurate (Clarabel: ~1e-5), so the dual is
solved by methods that are exact at such points: polished OSQP (pyramidal: it solves the
identified active set's KKT system) and projected Gauss-Seidel (both cones) to 1e-13.
Measured agreement: 1e-11 to 1e-15 relative (1e-6 required).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")
from contactopt.analysis.reproduce import reproduce  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MJCF = ROOT / "problems" / "mjcf"
EXACT = {"osqp": {"eps_abs": 1e-11, "eps_rel": 1e-11, "max_iter": 100_000}, "pgs": {"tol": 1e-13, "max_iter": 20_000}}


def _mujoco_state(xml: str, cone: int, steps: int, keyframe: bool, kick: bool) -> tuple[object, object]:
    model = mujoco.MjModel.from_xml_path(str(MJCF / xml))
    model.opt.cone = cone
    model.opt.tolerance = 1e-15  # MuJoCo's Newton solver to convergence
    model.opt.iterations = 1000
    model.opt.ls_tolerance = 1e-12
    data = mujoco.MjData(model)
    if keyframe:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    if kick:
        data.qvel[0] = 1.0  # sliding: friction saturates on the edges that oppose the slip
    for _ in range(steps):
        mujoco.mj_step(model, data)
    mujoco.mj_forward(model, data)
    return model, data


# PGS to tol 1e-13 (up to 2e4 sweeps) on the sphere pile is slow: the box covers pgs with both cones and
# osqp covers the pile, so the pile with pgs runs with -m slow.
_SCENES = [("box", ("box_plane.xml", 20, False, True)), ("sphere_pile", ("sphere_pile.xml", 5, True, False))]
_SOLVERS = [("pyramidal-osqp", (0, "osqp")), ("pyramidal-pgs", (0, "pgs")), ("elliptic-pgs", (1, "pgs"))]


@pytest.mark.parametrize(("xml", "steps", "keyframe", "kick", "cone", "solver"), [
    pytest.param(*scene, *solver, id=f"{scene_id}-{solver_id}",
                 marks=[pytest.mark.slow] if scene_id == "sphere_pile" and solver[1] == "pgs" else [])
    for solver_id, solver in _SOLVERS for scene_id, scene in _SCENES])
def test_regularized_reproduces_mujocos_constraint_forces(xml: str, steps: int, keyframe: bool, kick: bool,
                                                          cone: int, solver: str) -> None:
    model, data = _mujoco_state(xml, cone, steps, keyframe, kick)
    assert data.nefc > 0
    result = reproduce(model, data, solver, **EXACT[solver])
    assert result.solution.status == co.Status.OPTIMAL
    assert result.relative_error < 1e-6, result.relative_error
    assert np.linalg.norm(result.mujoco_force) > 0


def test_mjcf_box_slide_stops_where_coulomb_says() -> None:
    scene = co.load_scene(ROOT / "problems" / "box_slide_mjcf.toml")
    mu, g, v0 = 0.5, 9.81, 1.0
    for formulation, solver in (("lcp", "lemke"), ("ccp", "clarabel"), ("regularized", "clarabel")):
        traj = co.simulate(scene, formulation=formulation, solver=solver)
        assert traj.completed
        distance = float(np.linalg.norm(traj.q[-1, :2] - traj.q[0, :2]))
        assert distance == pytest.approx(v0**2 / (2 * mu * g), rel=0.01), formulation


@pytest.mark.parametrize(("formulation", "solver", "bound"), [
    ("gauss", "clarabel", 1e-6), ("lcp", "lemke", 1e-6), ("anitescu", "clarabel", 1e-6), ("ccp", "clarabel", 1e-6),
    # Soft contact: MuJoCo-style impedance lets the forearm sink; within solimp's 1 mm width
    # plus one step of approach (v h ~ 2.5 mm at ~2.5 m/s, the step before contact activates).
    ("regularized", "clarabel", 4e-3)])
def test_every_formulation_runs_the_articulated_robot(formulation: str, solver: str, bound: float) -> None:
    """With candidates detected 1 cm early the rigid formulations stop the forearm at the
    floor; at the model's own margin (0) it is found only once it penetrates (one step's v h)."""
    scene = co.load_scene(ROOT / "problems" / "two_link_arm_mjcf.toml", system_options={"detection_margin": 0.01})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation=formulation, solver=solver, duration=0.6)
    assert traj.completed and set(traj.status_counts()) <= {"optimal", "inaccurate"}
    penetration = -min(record.phi.min() for record in traj.steps if record.phi.size)
    assert penetration < bound
    assert any(record.impulses[:, 0].max() > 1e-3 for record in traj.steps if record.impulses.size)  # it landed


def test_mjcf_scene_errors_name_the_key(tmp_path: Path) -> None:
    scene = tmp_path / "bad.toml"
    scene.write_text('[scene]\ndt = 1e-3\nduration = 0.1\n[system]\ntype = "mjcf"\nfile = "missing.xml"\n')
    with pytest.raises(co.SceneError, match=r"system\.file"):
        co.load_scene(scene)
    scene.write_text(f'[scene]\ndt = 1e-3\nduration = 0.1\n[system]\ntype = "mjcf"\nfile = "{MJCF / "box_plane.xml"}"\n'
                     '[contact]\nmu = 0.3\n')
    with pytest.raises(co.SceneError, match="friction from its geoms"):
        co.load_scene(scene)
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body><geom type='sphere'/></body></worldbody>")
    with pytest.raises(co.SceneError, match="cannot load"):
        co.load_scene(broken)


def test_run_takes_an_mjcf_file_directly(tmp_path: Path) -> None:
    from contactopt.cli import main

    assert main(["run", str(MJCF / "box_plane.xml"), "--duration", "0.05", "--out", str(tmp_path),
                 "--no-progress", "--no-plot"]) == 0
    traj = co.Trajectory.load(tmp_path / "trajectory.npz")
    assert traj.q.shape == (51, 7) and traj.info["formulation"] == "regularized"


def test_initial_state_in_toml_overrides_the_model() -> None:
    scene = co.load_scene(ROOT / "problems" / "box_slide_mjcf.toml")
    np.testing.assert_allclose(scene.v0, [1, 0, 0, 0, 0, 0])
    direct = co.load_scene(MJCF / "box_plane.xml")
    np.testing.assert_allclose(direct.v0, 0.0)


@pytest.mark.parametrize("executor", ["serial", "process"])
def test_compare_includes_mujoco_as_a_row_with_the_same_metrics(executor: str) -> None:
    import dataclasses

    from contactopt.analysis.compare import compare

    scene = dataclasses.replace(co.load_scene(ROOT / "problems" / "box_slide_mjcf.toml"), duration=0.05)
    table = compare(scene, ["ccp", "mujoco"], ["clarabel"], executor=executor, workers=2)
    assert list(zip(table["formulation"], table["solver"], strict=True)) == [("ccp", "clarabel"), ("mujoco", "-")]
    assert set(table["status"]) == {"completed"}
    mujoco_row = table.set_index("formulation").loc["mujoco"]
    for metric in ("max_penetration", "max_cone_violation", "max_ncp_desaxce", "time_per_step"):
        assert np.isfinite(mujoco_row[metric]), metric
    # contactopt's residuals of MuJoCo's own answer (its Newton solver at default tolerance)
    assert mujoco_row["max_ncp_desaxce"] < 1.0 and mujoco_row["steps"] == 50
