"""Controllers (issue 13, item 1): ``simulate(..., controller=f)`` and the scene's ``[control]``.

* A PD law ``u = kp (target - q) - kd v`` holds the double pendulum (``tau = tau_g + B u``,
  ``B = I``) and the MJCF two-link arm (``data.ctrl`` through MuJoCo motors, gear 1) under every
  time-stepping formulation, and the MuJoCo row for the arm. At rest the law balances gravity:
  ``kp (target - q*) + tau_g(q*) = 0``, so the steady error ``q* - target = tau_g(q*) / kp`` is the
  gravity load over the gain; ``tau_g`` is typed in here from the kinematics (point masses for the
  pendulum, Tedrake 2022 "Simple Double Pendulum"; two uniform capsules for the arm, checked
  against MuJoCo's ``qfrc_bias`` below), and ``q*`` is solved from it with ``fsolve``.
  The discrete step has the same equilibrium (``v = 0`` makes every step's ``v' = v``), so the
  only error left after ``T`` is the closed loop's transient, which the loop linearized at ``q*``
  and stepped the same way predicts (:func:`_transient`).
* The same constant ``ctrl`` on ``problems/mjcf/pushed_box.xml`` gives the same trajectory
  under ``regularized`` (elliptic cone, the model's solref/solimp/impratio) and under MuJoCo's
  ``mj_step`` (see :func:`test_constant_ctrl_regularized_matches_mujoco` for the tolerance).
* Bad controller output is one error naming the step, and the finished steps are kept;
  controls are recorded per step and survive save/load.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import fsolve

import contactopt as co
from contactopt.scenes.control import ControlError

ROOT = Path(__file__).resolve().parents[1]
TIME_STEPPING = [("gauss", "clarabel"), ("lcp", "lemke"), ("anitescu", "clarabel"), ("ccp", "clarabel"),
                 ("regularized", "clarabel"), ("sap", "newton")]
G = 9.81


def _pendulum_load(q: np.ndarray) -> np.ndarray:
    """Double pendulum, m = l = 1 (problems/double_pendulum.toml): -dU/dq of
    U = -(m1 + m2) g l1 cos q1 - m2 g l2 cos(q1 + q2)."""
    return -G * np.array([2.0 * math.sin(q[0]) + math.sin(q[0] + q[1]), math.sin(q[0] + q[1])])


def _pendulum_mass(q: np.ndarray) -> np.ndarray:
    c2 = math.cos(q[1])
    return np.array([[3.0 + 2.0 * c2, 1.0 + c2], [1.0 + c2, 1.0]])


# two_link_arm.xml: hinges about y; upper arm mass 1, length 0.35, forearm mass 0.6, both
# capsules from the joint along x (centre of mass at half length). A positive angle turns x
# towards -z, so gravity's torque about y is m g x_com.
M1, M2, L1, C1, C2 = 1.0, 0.6, 0.35, 0.175, 0.175


def _arm_load(q: np.ndarray) -> np.ndarray:
    a, b = q
    return G * np.array([M1 * C1 * math.cos(a) + M2 * (L1 * math.cos(a) + C2 * math.cos(a + b)),
                         M2 * C2 * math.cos(a + b)])


def _arm_mass(q: np.ndarray) -> np.ndarray:
    """Capsules as thin rods (their radius changes the inertia by < 1 %; only the decay-rate
    bound below uses it)."""
    i1, i2 = M1 * L1**2 / 3.0, M2 * L1**2 / 3.0
    c = math.cos(q[1])
    m22 = i2
    m12 = i2 + M2 * L1 * C2 * c
    return np.array([[i1 + i2 + M2 * L1**2 + 2.0 * M2 * L1 * C2 * c, m12], [m12, m22]])


def _transient(load: Any, mass: Any, q_star: np.ndarray, kp: np.ndarray, kd: np.ndarray,
               q0: np.ndarray, h: float, steps: int) -> float:
    """``|q_N - q*|_inf`` of the closed loop linearized at ``q*`` and stepped by semi-implicit
    Euler like the simulation: ``v' = v - h M^-1 ((K + G) e + D v)``, ``e' = e + h v'`` with
    ``G = -dtau_g/dq`` (central differences), from ``e_0 = q0 - q*``, ``v_0 = 0``."""
    eps = 1e-6
    G_ = -np.column_stack([(load(q_star + eps * e) - load(q_star - eps * e)) / (2 * eps) for e in np.eye(2)])
    Minv = np.linalg.inv(mass(q_star))
    e, v = q0 - q_star, np.zeros(2)
    for _ in range(steps):
        v = v - h * Minv @ ((np.diag(kp) + G_) @ e + np.diag(kd) @ v)
        e = e + h * v
    return float(np.abs(e).max())


def test_arm_gravity_closed_form_is_mujocos() -> None:
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_path(str(ROOT / "problems/mjcf/two_link_arm.xml"))
    data = mujoco.MjData(model)
    for q in ([0.3, 0.2], [-0.5, 1.0]):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        assert np.allclose(-data.qfrc_bias, _arm_load(np.array(q)), atol=1e-12)


@pytest.mark.parametrize(("formulation", "solver"), [*TIME_STEPPING, ("mujoco", "-")])
@pytest.mark.parametrize("system", ["double_pendulum", "two_link_arm"])
def test_pd_holds_target_with_gravity_load_over_gain(system: str, formulation: str, solver: str) -> None:
    if system == "double_pendulum":
        if formulation == "mujoco":
            pytest.skip("the mujoco row takes MJCF systems only")
        scene = co.load_scene(ROOT / "problems/double_pendulum.toml")
        target, kp, kd, load, mass = np.array([0.6, 0.4]), np.array([400.0, 150.0]), np.array([100.0, 14.0]), \
            _pendulum_load, _pendulum_mass
        duration = 1.5
    else:
        pytest.importorskip("mujoco")
        scene = co.load_scene(ROOT / "problems/two_link_arm_mjcf.toml")  # gear 1, no ctrlrange
        target, kp, kd, load, mass = np.array([-0.4, 0.8]), np.array([60.0, 20.0]), np.array([5.0, 1.0]), \
            _arm_load, _arm_mass
        duration = 1.0
    scene = dataclasses.replace(scene, q0=target, v0=np.zeros(2))
    q_star = fsolve(lambda q: kp * (target - q) + load(q), target, xtol=1e-12)
    controller = {"type": "pd", "kp": kp.tolist(), "kd": kd.tolist(), "target": target.tolist()}
    traj = co.simulate(scene, formulation=formulation, solver=None if solver == "-" else solver, dt=5e-3,
                       duration=duration, controller=controller)
    assert traj.completed
    error = traj.q[-1] - target
    assert np.abs(error).min() > 0.04  # gravity sags it visibly: a controller that does nothing fails
    # what is left of the transient, from the linearized loop (the arm's 0.05 N m s joint
    # damping added to kd), with a factor 3 for the linearization (|e| <= 0.1 rad) and the arm's
    # thin-rod inertia (measured: the pendulum's left-over is the prediction to 1 %, the arm's
    # 1.45 times it); a floor of 1e-9 rad for the solvers' tolerances
    damping = kd + (0.05 if system == "two_link_arm" else 0.0)
    left = _transient(load, mass, q_star, kp, damping, scene.q0, 5e-3, round(duration / 5e-3))
    assert np.abs(traj.q[-1] - q_star).max() < max(3.0 * left, 1e-9), (error, q_star - target, left)
    # the recorded inputs are the law's: u_k = kp (target - q_k) - kd v_k
    expected = kp * (target - traj.q[:-1]) - kd * traj.v[:-1]
    assert np.allclose(traj.controls(), expected, rtol=0, atol=1e-12)


def test_constant_ctrl_regularized_matches_mujoco() -> None:
    """``pushed_box.xml`` translates only, so every contact row's Delassus diagonal is 1/m,
    which is also MuJoCo's ``diagApprox`` (body_invweight0): ``regularized`` with the model's
    solref/solimp/impratio and the elliptic cone poses MuJoCo's own problem each step, and the
    rows differ only in where their solvers stop.

    Tolerance: the dual program's Hessian ``A + R`` is at least ``R_min = (1 - dmax)/dmax / m``
    (``dmax = solimp[1] = 0.95``, m = 1 kg), so an answer whose KKT residuals are at most ``r``
    (inf-norm, over its ``n <= 12`` rows: 4 box-plane contacts x 3) is within
    ``sqrt(n) r / R_min`` of the optimum in 2-norm (strong convexity), and the velocity
    ``v' = v_free + M^-1 J^T lambda`` within ``|J|_2 sqrt(n) r / (m R_min)``, ``|J|_2 = sqrt(4)``
    (each contact's frame is orthonormal): ``132 r`` per step. Summed over the 250 steps with
    both rows' residuals as recorded each step, assuming the step map does not amplify
    differences (a damped, short run): ``|dv| <= sum_k 132 (r_a + r_b)_k``, ``|dq| <= T |dv|``.
    The push goes through ``ctrlrange``: asking for 10 N or 8 N (the cap) is the same
    trajectory, and 7 N is not."""
    pytest.importorskip("mujoco")
    scene = co.load_scene(ROOT / "problems/pushed_box_mjcf.toml")  # [control] u = [10]
    model = scene.system.model  # type: ignore[attr-defined]
    options = {"cone": "elliptic", "solref": model.geom_solref[1].tolist(), "solimp": model.geom_solimp[1].tolist(),
               "impratio": float(model.opt.impratio)}
    ours = co.simulate(scene, formulation="regularized", solver="clarabel", options=options)
    ref = co.simulate(scene, formulation="mujoco", options={"cone": "elliptic", "tolerance": 1e-12})
    assert ours.completed and ref.completed and ours.q.shape == ref.q.shape
    r_min = (1.0 - options["solimp"][1]) / options["solimp"][1]  # times 1/m, m = 1
    per_step = math.sqrt(4) * math.sqrt(12) / r_min
    dv = sum(per_step * (a.residuals.worst + b.residuals.worst) for a, b in zip(ours.steps, ref.steps, strict=True))
    assert 0 < dv < 1e-4  # far below the push's effect (x = 0.39 m, v = 1.4 m/s)
    assert np.abs(ours.v - ref.v).max() <= dv
    assert np.abs(ours.q - ref.q).max() <= scene.duration * dv
    assert ref.q[-1, 0] > 0.3  # it was pushed (from rest; 8 N against 4.9 N of friction)
    capped = co.simulate(scene, formulation="mujoco", options={"cone": "elliptic", "tolerance": 1e-12},
                         controller=lambda t, q, v: [8.0])
    weaker = co.simulate(scene, formulation="mujoco", options={"cone": "elliptic", "tolerance": 1e-12},
                         controller=lambda t, q, v: [7.0])
    assert np.abs(capped.q - ref.q).max() < 1e-12 < np.abs(weaker.q - ref.q).max()
    assert np.all(ref.controls() == 10.0)


@pytest.mark.parametrize(("output", "message"), [
    ([1.0], "expected 2 values (u0, u1), got shape (1,)"),
    ([1.0, float("nan")], "non-finite value(s) u1=nan"),
    ("abc", "not an array of numbers"),
])
def test_bad_controller_output_names_the_step_and_keeps_the_steps(output: Any, message: str) -> None:
    scene = co.load_scene(ROOT / "problems/double_pendulum.toml")

    def controller(t: float, q: np.ndarray, v: np.ndarray) -> Any:
        return [0.0, 0.0] if t < 0.0095 else output  # fine for steps 0..9, then bad

    with pytest.raises(ControlError, match=r"controller output at step 10 \(t=0\.01\)") as info:
        co.simulate(scene, formulation="gauss", dt=1e-3, duration=0.05, controller=controller)
    assert message in str(info.value)
    partial = info.value.trajectory
    assert len(partial.steps) == 10 and partial.t[-1] == pytest.approx(0.01)


def test_a_raising_controller_names_the_step() -> None:
    scene = co.load_scene(ROOT / "problems/double_pendulum.toml")

    def controller(t: float, q: np.ndarray, v: np.ndarray) -> Any:
        raise ZeroDivisionError("boom")

    with pytest.raises(ControlError, match=r"controller raised ZeroDivisionError at step 0 \(t=0\): boom"):
        co.simulate(scene, formulation="gauss", dt=1e-3, duration=0.01, controller=controller)


def test_controls_survive_save_and_load(tmp_path: Path) -> None:
    scene = co.load_scene(ROOT / "problems/double_pendulum.toml")
    traj = co.simulate(scene, formulation="gauss", dt=1e-3, duration=0.02,
                       controller={"type": "sinusoid", "amplitude": [1.0, 0.5], "frequency": 5.0, "phase": [0, 1]})
    u = traj.controls()
    t = traj.t[:-1, None]
    assert np.allclose(u, [1.0, 0.5] * np.sin(2 * np.pi * 5.0 * t + [0.0, 1.0]), atol=1e-15)
    loaded = co.Trajectory.load(traj.save(tmp_path / "run.npz"))
    assert np.array_equal(loaded.controls(), u)
    assert traj.info["control"].startswith("sinusoid(")


def test_scene_control_table_and_module_function(tmp_path: Path) -> None:
    (tmp_path / "my_law.py").write_text("def law(t, q, v):\n    return [-3.0 * q[0], 0.25]\n")
    text = (ROOT / "problems/double_pendulum.toml").read_text()
    scene_file = tmp_path / "pd.toml"
    scene_file.write_text(text + '\n[control]\ntype = "python"\nfunction = "my_law:law"\n')
    scene = co.load_scene(scene_file)
    traj = co.simulate(scene, formulation="gauss", dt=1e-3, duration=0.003)
    assert np.allclose(traj.controls(), np.column_stack([-3.0 * traj.q[:-1, 0], np.full(3, 0.25)]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = co.simulate(scene, formulation="gauss", dt=1e-3, duration=0.003, controller=lambda t, q, v: [0, 0])
    assert np.all(plain.controls() == 0.0)


@pytest.mark.parametrize(("table", "message"), [
    ('type = "pid"', "control.type: expected one of"),
    ('type = "pd"\nkp = 1.0', "control.target: missing"),
    ('type = "pd"\nkp = 1.0\ntarget = [0, 0, 0]', "control.target: expected a number or 2 numbers"),
    ('type = "constant"\nu = [1, 2]\nkp = 3', "control.kp: unknown key for type 'constant'"),
    ('type = "python"\nfunction = "nocolon"', "control.function: expected 'module:function'"),
])
def test_bad_control_tables_name_the_key(tmp_path: Path, table: str, message: str) -> None:
    scene_file = tmp_path / "bad.toml"
    scene_file.write_text((ROOT / "problems/double_pendulum.toml").read_text() + f"\n[control]\n{table}\n")
    with pytest.raises(co.ContactoptError, match=rf"bad\.toml: {message}"):
        co.load_scene(scene_file)


def test_a_system_without_inputs_refuses_a_controller() -> None:
    scene = co.load_scene(ROOT / "problems/box_slide.toml")
    with pytest.raises(co.ContactoptError, match="takes no control input"):
        co.simulate(scene, duration=0.01, controller=lambda t, q, v: [])


def test_formulate_and_program_take_the_control(tmp_path: Path) -> None:
    """Gauss without contacts: ``c = -M v_free`` and ``v_free = v + h M^-1 (tau_g - C v + B u)``,
    so ``u`` moves ``c`` by exactly ``-h B u`` (``B = I``); ``contactopt program --step k`` builds
    step k with the scene's controller evaluated at that step's state."""
    scene = co.load_scene(ROOT / "problems/double_pendulum.toml")
    base = co.formulate(scene.system, scene.q0, scene.v0, 0.01, "gauss")
    driven = co.formulate(scene.system, scene.q0, scene.v0, 0.01, "gauss", control=[1.0, -2.0])
    assert np.allclose(driven.c - base.c, [-0.01, 0.02], rtol=0, atol=1e-15)
    assert scene.system.control is None  # nothing left held
    with pytest.raises(co.ContactoptError, match=r"formulate: control: expected 2 values"):
        co.formulate(scene.system, scene.q0, scene.v0, 0.01, "gauss", control=[1.0])
    scene_file = tmp_path / "pd.toml"
    scene_file.write_text((ROOT / "problems/double_pendulum.toml").read_text()
                          + '\n[control]\ntype = "pd"\nkp = 50.0\nkd = 2.0\ntarget = [0.3, 0.1]\n')
    from contactopt.cli import main
    from contactopt.programs import load_program

    assert main(["program", str(scene_file), "--formulation", "gauss", "--step", "3", "--out",
                 str(tmp_path / "step3.npz")]) == 0
    traj = co.simulate(co.load_scene(scene_file), formulation="gauss", duration=4 * scene.dt)
    expected = co.formulate(scene.system, traj.q[3], traj.v[3], scene.dt, "gauss", control=traj.controls()[3])
    assert np.array_equal(load_program(tmp_path / "step3.npz").c, expected.c)


def test_cli_run_and_compare_use_the_scenes_control(tmp_path: Path) -> None:
    """``pushed_box_mjcf``'s ``[control]`` (10 N asked, 8 N by ctrlrange) reaches the CLI run and
    every row of ``compare``: the box slides under both regularized and the mujoco row."""
    pytest.importorskip("mujoco")
    from contactopt.cli import main

    assert main(["run", "pushed_box_mjcf", "-f", "mujoco", "--duration", "0.01", "--out", str(tmp_path / "run")]) == 0
    saved = co.Trajectory.load(tmp_path / "run" / "trajectory.npz")
    assert np.all(saved.controls() == 10.0) and saved.info["control"] == "constant(u=[10.0])"
    scene = co.load_scene(ROOT / "problems/pushed_box_mjcf.toml")
    table, traces = co.compare(scene, ["regularized", "mujoco"], ["clarabel"], dts=[2e-3], duration=0.05,
                               return_traces=True)
    assert set(table["formulation"]) == {"regularized", "mujoco"} and set(table["status"]) == {"completed"}
    for _, rows in traces.groupby("formulation"):  # pushed from rest: x grows (no push: it stays at 0)
        assert rows["q[0]"].iloc[-1] > 1e-3


@pytest.mark.parametrize("method", ["gauss", "ode", "variational", "compliant", "hybrid"])
def test_every_method_applies_the_held_input(method: str) -> None:
    """``u = -tau_g(q0)`` (constant) makes the released double pendulum an equilibrium
    (``M vdot = tau_g(q0) + u = 0`` at rest), for continuous-time methods too; without it the
    pendulum falls (1/2 g t^2-scale motion, ~1e-2 rad in 0.05 s)."""
    scene = co.load_scene(ROOT / "problems/double_pendulum.toml")
    hold = -_pendulum_load(scene.q0)
    held = co.simulate(scene, formulation=method, dt=5e-3, duration=0.05, controller=lambda t, q, v: hold)
    free = co.simulate(scene, formulation=method, dt=5e-3, duration=0.05)
    assert np.abs(held.q[-1] - scene.q0).max() < 1e-9 < 1e-3 < np.abs(free.q[-1] - scene.q0).max()
