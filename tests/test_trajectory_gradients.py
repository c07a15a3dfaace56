"""Reverse mode against forward mode (issue 26, item 3), and the errors of both.

``co.gradient`` sweeps the adjoint recursion backwards through the step Jacobians
(Bryson & Ho §2.2); ``co.simulate(..., sensitivities=...)`` pushes the tangents forwards
through the same Jacobians. For a loss ``L(x_0, ..., x_N)`` the chain rule gives, per name,
``dL/dtheta = sum_n <dL/dx_n, dx_n/dtheta>``: the two must agree to rounding (1e-9 relative;
measured <= 8e-16), with an open-loop input (a constant ``[control]`` table: ``f_x = 0``), with a
PD controller (the feedback path ``F_u f_x`` in both recursions) and for ``dt``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from conftest import PROBLEMS

import contactopt as co
from contactopt.core.errors import OptionError
from contactopt.derivatives import final_state_loss, tracking_loss

AGREE = 1e-9


def _contract(trajectory: co.Trajectory, name: str, gq: np.ndarray, gv: np.ndarray) -> Any:
    """``sum_n <dL/dx_n, dx_n/d name>`` from the recorded forward sensitivities."""
    g = np.concatenate([gq, gv], axis=1)  # (N+1, nx)
    sensitivity = trajectory.sensitivities[name]
    return np.tensordot(g, sensitivity, axes=([0, 1], [0, 1]))


def _compare(scene: co.Scene, formulation: str, solver: str, names: Sequence[str], loss: Any,
             controller: Any = None, duration: float | None = None) -> None:
    # q0 and v0 first: the forward recursion then goes through the whole step Jacobian, the
    # one the reverse sweep transposes (else through products along each column)
    forward = co.simulate(scene, formulation, solver, duration=duration, controller=controller,
                          sensitivities=names)
    backward = co.gradient(scene, loss, names, formulation, solver, duration=duration, controller=controller)
    np.testing.assert_array_equal(backward.trajectory.q, forward.q)  # the same run
    _, gq, gv = loss(forward.q, forward.v)
    for name in names:
        expected = _contract(forward, name, np.asarray(gq), np.asarray(gv))
        got = np.asarray(backward.gradients[name])
        assert got.shape == np.shape(expected), name
        assert np.linalg.norm(got - expected) <= AGREE * np.linalg.norm(expected), name


def test_box_final_state_gradient_equals_contracted_sensitivities() -> None:
    """Parameters (``mu``, the box's mass, gravity), ``dt`` and the initial state on the box
    sliding under ``ccp`` (contacts active at every step)."""
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    loss = final_state_loss(q_target=scene.q0 + 0.05, v_target=np.zeros(6))
    _compare(scene, "ccp", "clarabel", ["q0", "v0", "mu", "box.mass", "gravity", "dt"], loss, duration=0.01)


def test_arm_open_loop_input_gradient() -> None:
    """The MJCF arm under a constant ``[control]`` table: ``"u"`` (each step's input) and the
    arm's own parameters, with a tracking loss (every state enters)."""
    scene = co.load_scene(PROBLEMS / "two_link_arm_mjcf.toml")
    recorded = co.simulate(scene, "regularized", "clarabel", duration=0.015)
    loss = tracking_loss(recorded.q + 0.01, recorded.v)
    control = {"type": "constant", "u": [0.2, -0.1]}
    _compare(scene, "regularized", "clarabel", ["q0", "v0", "u", "forearm.mass", "dt"], loss, control, 0.015)


def test_pendulum_feedback_gradient() -> None:
    """A PD controller (``u = kp (target - theta) - kd thetadot``): the state's gradient goes
    through the controller too, and ``"u"`` is the open-loop perturbation of each step."""
    scene = co.load_scene(PROBLEMS / "pendulum.toml")
    recorded = co.simulate(scene, "gauss", "clarabel", duration=0.02)
    loss = tracking_loss(recorded.q * 0.9, recorded.v)
    control = {"type": "pd", "kp": 20.0, "kd": 2.0, "target": [0.3]}
    _compare(scene, "gauss", "clarabel", ["q0", "v0", "u", "m", "dt"], loss, control, 0.02)
    # the feedback matters: without it the initial-state gradient differs
    open_loop = co.gradient(scene, loss, ["q0"], "gauss", "clarabel", duration=0.02,
                            controller={"type": "constant", "u": [0.0]})
    closed_loop = co.gradient(scene, loss, ["q0"], "gauss", "clarabel", duration=0.02, controller=control)
    assert not np.allclose(open_loop.gradients["q0"], closed_loop.gradients["q0"], rtol=1e-3)


# -- errors: one clear error each ---------------------------------------------------------------


@pytest.fixture(scope="module")
def box() -> co.Scene:
    return co.load_scene(PROBLEMS / "box_slide.toml")


def test_unknown_name_is_refused(box: co.Scene) -> None:
    with pytest.raises(OptionError, match=r"unknown name\(s\) 'friction'.*known: q0, v0"):
        co.simulate(box, "ccp", "clarabel", duration=2 * box.dt, sensitivities=["v0", "friction"])
    with pytest.raises(OptionError, match=r"unknown name\(s\) 'friction'"):
        co.gradient(box, final_state_loss(box.q0), ["friction"], "ccp", "clarabel", duration=2 * box.dt)


def test_input_without_controller_is_refused() -> None:
    scene = co.load_scene(PROBLEMS / "two_link_arm_mjcf.toml")
    scene = dataclasses.replace(scene, control=None)
    with pytest.raises(OptionError, match=r"'u'.*no controller"):
        co.simulate(scene, "regularized", "clarabel", duration=2 * scene.dt, sensitivities=["u"])
    with pytest.raises(OptionError, match=r"'u'.*no controller"):
        co.gradient(scene, final_state_loss(scene.q0), ["u"], "regularized", "clarabel", duration=2 * scene.dt)


def test_input_of_a_system_without_inputs_is_refused(box: co.Scene) -> None:
    with pytest.raises(OptionError, match="takes no input"):
        co.simulate(box, "ccp", "clarabel", duration=2 * box.dt, sensitivities=["u"])


def test_fallback_solver_is_refused(box: co.Scene) -> None:
    with pytest.raises(OptionError, match="fallback"):
        co.simulate(box, "ccp", "clarabel", duration=2 * box.dt, fallback="cvxpy", sensitivities=["v0"])


@pytest.mark.parametrize(("scene_name", "method"), [("box_slide", "compliant"), ("pendulum", "ode")])
def test_method_that_is_not_time_stepping_is_refused(scene_name: str, method: str) -> None:
    scene = co.load_scene(PROBLEMS / f"{scene_name}.toml")
    with pytest.raises(OptionError, match="only a time-stepping formulation"):
        co.simulate(scene, method, duration=2 * scene.dt, sensitivities=["v0"])
    with pytest.raises(OptionError, match="only a time-stepping formulation"):
        co.gradient(scene, final_state_loss(scene.q0), ["v0"], method, duration=2 * scene.dt)


def test_coulomb_gradient_equals_contracted_sensitivities(box: co.Scene) -> None:
    """The exact Coulomb problem (``coulomb``/``nsgs``, its derivative through the Alart-Curnier
    function): reverse and forward agree as for the convex formulations."""
    loss = final_state_loss(q_target=box.q0 + 0.05, v_target=np.zeros(6))
    _compare(box, "coulomb", "nsgs", ["q0", "v0", "mu"], loss, duration=5 * box.dt)


def _final_state(scene: co.Scene, steps: int, dt: float, controller: Any) -> np.ndarray:
    run = co.simulate(scene, "regularized", "clarabel", dt=dt, duration=steps * dt, controller=controller)
    assert run.completed
    return np.concatenate([run.q[-1], run.v[-1]])


def test_dt_moves_a_time_dependent_controllers_input() -> None:
    """Step ``n`` starts at ``n dt``: with ``u = 3 + 40 t - 2 x - v_x`` a change of ``dt`` moves
    each step's input by ``40 n``. Forward and reverse against central differences of whole runs
    (1e-5: the runs' own difference error at a relative step of 1e-6)."""
    scene = co.load_scene(PROBLEMS / "pushed_box_mjcf.toml", system_options={"detection_margin": 0.01})

    def controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.array([3.0 + 40.0 * t - 2.0 * q[0] - v[0]])

    steps, dt = 10, scene.dt
    forward = co.simulate(scene, "regularized", "clarabel", duration=steps * dt, controller=controller,
                          sensitivities=["dt"])
    width = 1e-6 * dt
    reference = (_final_state(scene, steps, dt + width, controller)
                 - _final_state(scene, steps, dt - width, controller)) / (2 * width)
    ours = forward.sensitivities["dt"][-1]
    assert np.linalg.norm(ours - reference) <= 1e-5 * np.linalg.norm(reference)
    loss = final_state_loss(q_target=np.zeros(scene.system.nq))
    backward = co.gradient(scene, loss, ["dt"], "regularized", "clarabel", duration=steps * dt, controller=controller)
    expected = float(forward.q[-1] @ ours[:scene.system.nq])
    assert abs(backward.gradients["dt"] - expected) <= AGREE * abs(expected)


def test_a_parameter_at_its_bound_takes_the_one_sided_difference() -> None:
    """The brick without friction (``mu = 0``, the lower end of its range): the difference by
    ``mu`` is taken on the side that exists, counted as one-sided, and equals the right
    difference quotient of whole runs."""
    scene = co.load_scene(PROBLEMS / "brick_push.toml")
    scene = dataclasses.replace(scene, system=scene.system.with_parameters({"mu": 0.0}))
    steps = 5
    run = co.simulate(scene, "lcp", "lemke", duration=steps * scene.dt, sensitivities=["mu"])
    assert run.info["sensitivities"]["one_sided_steps"] > 0
    width = 1e-7

    def final(mu: float) -> np.ndarray:
        moved = dataclasses.replace(scene, system=scene.system.with_parameters({"mu": mu}))
        done = co.simulate(moved, "lcp", "lemke", duration=steps * scene.dt)
        return np.concatenate([done.q[-1], done.v[-1]])

    reference = (-3 * final(0.0) + 4 * final(width) - final(2 * width)) / (2 * width)
    np.testing.assert_allclose(run.sensitivities["mu"][-1], reference, rtol=1e-5, atol=1e-7)


def test_a_string_of_names_is_refused(box: co.Scene) -> None:
    with pytest.raises(OptionError, match="list of names"):
        co.simulate(box, "ccp", "clarabel", duration=2 * box.dt, sensitivities="mu")
    with pytest.raises(OptionError, match="list of names"):
        co.gradient(box, final_state_loss(box.q0), "mu", "ccp", "clarabel", duration=2 * box.dt)


def test_a_loss_whose_value_is_not_one_number_is_refused(box: co.Scene) -> None:
    def loss(q: np.ndarray, v: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        return np.ones(3), np.zeros_like(q), np.zeros_like(v)

    with pytest.raises(OptionError, match="one real number"):
        co.gradient(box, loss, ["v0"], "ccp", "clarabel", duration=2 * box.dt)
