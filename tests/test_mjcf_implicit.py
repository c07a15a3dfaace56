"""The step matrix ``M - h D`` of MuJoCo's integrators (:mod:`contactopt.systems.mjcf.derivatives`):
actuator ``kv``, velocity actuators, tendon-actuator and tendon damping implicit as MuJoCo's
``Euler``/``implicitfast``/``implicit`` take them; one step of ``regularized -o params=model``
equals ``mj_step``; every formulation receives the same step matrix; a stiff position servo
stays bounded under ``ccp``, ``anitescu`` and ``lcp``."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.formulations import get
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.model.step import to_dense

mujoco = pytest.importorskip("mujoco")

from contactopt.systems.mjcf.derivatives import NonsymmetricStepWarning, StepMatrixError  # noqa: E402
from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402

INTEGRATORS = ("Euler", "implicitfast", "implicit")

#: Two arms side by side: a damped hinge "a" carrying a position servo on hinge "b", a hinge
#: "c" driven by a velocity actuator, and a damped tendon "t" coupling a and c (different
#: branches: outside MuJoCo's dof-dof pattern) driven by a general actuator with velocity bias.
ARMS = """
<mujoco>
  <option timestep="0.01" integrator="{integrator}"/>
  <worldbody>
    {floor}
    <body pos="0 0 {height}">
      <joint name="a" type="hinge" axis="0 1 0" damping="0.3"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
      <body pos=".3 0 0">
        <joint name="b" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
      </body>
    </body>
    <body pos="0 1 {height}">
      <joint name="c" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t" damping="2"><joint joint="a" coef="1"/><joint joint="c" coef="-1"/></fixed>
  </tendon>
  <actuator>
    <position name="servo" joint="b" kp="100" kv="5"/>
    <velocity name="spin" joint="c" kv="3"/>
    <general name="pull" tendon="t" gainprm="1" biasprm="0 0 -4" biastype="affine"/>
  </actuator>
</mujoco>
"""

#: A free-floating spinning box on a ball joint: the RNE velocity derivative is nonsymmetric.
GYRO = """
<mujoco>
  <option timestep="0.01" integrator="implicit" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="ball" type="ball" damping="0.1"/><geom type="box" size=".3 .1 .05" mass="1"/></body>
  </worldbody>
</mujoco>
"""

#: A stiff position servo on a two-link arm (kp h^2 / m >> 1): explicit kv explodes.
SERVO = """
<mujoco>
  <option timestep="0.01" integrator="implicitfast"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".2"/>
      <body pos=".3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".04" fromto="0 0 0 .3 0 0" mass=".1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="shoulder" kp="3000" kv="300"/>
    <position joint="elbow" kp="2000" kv="200"/>
  </actuator>
  <keyframe><key name="hold" qpos="0.4 -0.6" ctrl="0.5 -0.5"/></keyframe>
</mujoco>
"""

STATE = (np.array([0.3, -0.2, 0.5]), np.array([1.0, -2.0, 0.5]), np.array([0.2, 0.1, 0.3]))


def write(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def arms(tmp_path: Path, integrator: str, floor: bool) -> str:
    """The arms model; with ``floor`` they hang into a plane (contacts at the first step)."""
    text = ARMS.format(integrator=integrator, floor='<geom type="plane" size="2 2 .1"/>' if floor else "",
                       height=0.04 if floor else 0.5)
    return write(tmp_path, text, f"arms_{integrator}_{floor}.xml")


def model_step(system: MjcfSystem, q: np.ndarray, v: np.ndarray, dt: float) -> tuple[np.ndarray, Any]:
    """One step of ``regularized -o params=model``: ``(v', the step problem)``."""
    formulation = get("regularized")
    options = formulation.resolve_options({"params": "model"})
    problem = build_step_problem(system, q, v, dt, native=formulation.native_request(options))
    program = formulation.build(problem, options)
    solution = co.solve(program, "clarabel")
    assert solution.status.usable, solution.message
    return formulation.recover(problem, program, solution).v_next, problem


def mujoco_step(path: str, q: np.ndarray, v: np.ndarray, ctrl: np.ndarray) -> np.ndarray:
    model = mujoco.MjModel.from_xml_path(path)
    model.opt.tolerance, model.opt.iterations = 1e-15, 1000  # converged as far as it goes
    model.opt.ls_tolerance, model.opt.ls_iterations = 1e-15, 1000
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = q, v, ctrl
    mujoco.mj_step(model, data)
    return np.array(data.qvel)


@pytest.mark.parametrize("floor", [False, True])
@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_one_model_step_equals_mj_step(tmp_path: Path, integrator: str, floor: bool) -> None:
    path = arms(tmp_path, integrator, floor)
    system = MjcfSystem(path)
    q, v, ctrl = STATE
    system.set_control(ctrl)
    ours, problem = model_step(system, q, v, 0.01)
    if floor:
        assert problem.native.info["rows"] > 0  # the arms touch the floor
    np.testing.assert_allclose(ours, mujoco_step(path, q, v, ctrl), rtol=0, atol=1e-10)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_every_formulation_receives_the_same_step_matrix(tmp_path: Path, integrator: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = arms(tmp_path, integrator, floor=False)
    scene = dataclasses.replace(co.load_scene(path), q0=STATE[0], v0=STATE[1])
    scene.system.set_control(STATE[2])
    _, problem = model_step(scene.system, *STATE[:2], scene.dt)
    expected = problem.native.step_matrix  # MuJoCo's, exactly
    M = to_dense(scene.system.dynamics(*STATE[:2]).M)
    if integrator == "Euler":
        np.testing.assert_allclose(expected - M, 0.01 * np.diag([0.3, 0.0, 0.0]), atol=1e-15)
    else:  # kv, tendon and actuator damping on the diagonal; the a-c tendon coupling dropped as MuJoCo does
        assert expected[0, 2] == expected[2, 0] == M[0, 2] == 0.0
        assert expected[1, 1] - M[1, 1] == pytest.approx(0.05)
    seen: dict[str, np.ndarray] = {}
    for name in ("regularized", "ccp", "anitescu", "lcp", "sap"):
        formulation = get(name)
        original = type(formulation).build

        def spy(self: Any, step_problem: Any, *args: Any, _name: str = name, _build: Any = original) -> Any:
            seen[_name] = to_dense(step_problem.dynamics.M)
            return _build(self, step_problem, *args)

        monkeypatch.setattr(type(formulation), "build", spy)
        solver = "lemke" if name == "lcp" else "clarabel"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonsymmetricStepWarning)
            co.simulate(scene, formulation=name, solver=solver, dt=scene.dt, duration=scene.dt,
                        controller=lambda t, q, v: STATE[2])
        monkeypatch.undo()
    symmetric = 0.5 * (expected + expected.T)  # implicit: the convex formulations take the symmetric part
    for name, step_matrix in seen.items():
        np.testing.assert_allclose(step_matrix, symmetric, rtol=0, atol=1e-12, err_msg=name)


def test_implicit_nonsymmetric_step_warns_and_params_model_stays_exact(tmp_path: Path) -> None:
    path = write(tmp_path, GYRO, "gyro.xml")
    system = MjcfSystem(path)
    q, v = np.array([1.0, 0.0, 0.0, 0.0]), np.array([3.0, 0.5, 4.0])
    with pytest.warns(NonsymmetricStepWarning, match="symmetric part"):
        ours, problem = model_step(system, q, v, 0.01)
    S = problem.native.step_matrix
    assert np.abs(S - S.T).max() > 1e-4  # MuJoCo's implicit step matrix is not symmetric ...
    np.testing.assert_allclose(to_dense(problem.dynamics.M), 0.5 * (S + S.T), atol=1e-14)  # ... the QPs' is
    np.testing.assert_allclose(ours, mujoco_step(path, q, v, np.zeros(0)), rtol=0, atol=1e-10)


def test_a_step_matrix_that_is_not_positive_definite_is_refused(tmp_path: Path) -> None:
    text = ARMS.format(integrator="implicitfast", floor="", height=0.5).replace('kv="3"', 'kv="-500"')
    system = MjcfSystem(write(tmp_path, text, "unstable.xml"))
    with pytest.raises(StepMatrixError, match="not positive definite"):
        system.step_dynamics(system.dynamics(*STATE[:2]), 0.01)


@pytest.mark.parametrize("name", ["ccp", "anitescu", "lcp"])
def test_a_stiff_position_servo_stays_bounded(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, SERVO, "servo.xml")
    model = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    fastest = 0.0
    for _ in range(250):
        mujoco.mj_step(model, data)
        fastest = max(fastest, float(np.abs(data.qvel).max()))
    scene = co.load_scene(path)  # keyframe 0, its ctrl held
    trajectory = co.simulate(scene, formulation=name, solver="lemke" if name == "lcp" else "clarabel",
                             duration=250 * scene.dt)
    assert len(trajectory.t) == 251
    assert float(np.abs(trajectory.v).max()) <= 2.0 * fastest + 0.1


def test_a_tendon_within_one_branch_keeps_its_cross_term(tmp_path: Path) -> None:
    """MuJoCo drops a damped tendon's coupling between branches (see the arms) but keeps it
    between a joint and its ancestor: both as ``mj_step`` does."""
    text = ARMS.format(integrator="implicitfast", floor="", height=0.5).replace(
        '<joint joint="c" coef="-1"/>', '<joint joint="b" coef="-1"/>')
    path = write(tmp_path, text, "chain.xml")
    system = MjcfSystem(path)
    q, v, ctrl = STATE
    system.set_control(ctrl)
    ours, problem = model_step(system, q, v, 0.01)
    M = to_dense(system.dynamics(q, v).M)
    coupling = problem.native.step_matrix[0, 1] - M[0, 1]  # -h * d(tendon forces)/dv = -h * (-(2 + 4) * 1 * -1)
    assert coupling == pytest.approx(-0.06)
    np.testing.assert_allclose(ours, mujoco_step(path, q, v, ctrl), rtol=0, atol=1e-10)
