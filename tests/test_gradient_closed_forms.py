"""Derivatives against closed forms (issue 26, "Must show"): the box slide's stop distance and
the cart-and-wall LCP's step.

**Box slide** (problems/box_slide.toml: a cube on the ground launched at ``v0 = 1 m/s`` with
``mu = 0.5``). Coulomb friction decelerates it at ``a = mu g`` until it stops after
``T = v0 / (mu g)`` having slid ``D = v0^2 / (2 mu g)``, so ``dD/dv0 = v0 / (mu g) = T`` and
``dD/dmu = -v0^2 / (2 mu^2 g) = -g T^2 / 2``. Time stepping with step ``h`` slides
``K = floor(T / h)`` full steps, ``x_N = h sum_{n=1..K} (v0 - n a h)``, and stops (sticks) in the
next one. With ``T / h = K + f``:

    dx_N/dv0 = h K = T - f h,
    dx_N/dmu = -g h^2 K (K + 1) / 2 = -g T^2 / 2 - g/2 (T h (1 - 2 f) + h^2 f (f - 1)),

so the error of the discrete derivative is first order: ``f h`` and at most ``T h / 2 (1 + h / (4 T))``
times ``g``, i.e. relative error at most ``h / T`` for both (the stop resolved to one step, the
tolerance asserted). The two steps are chosen with the same ``f = 1/3`` (``T / h = 10 1/3`` and
``41 1/3``, a ratio of 4), so that the first-order term is the same multiple of ``h`` and the error
must shrink by about 4: checked. ``lcp`` (Stewart-Trinkle, pyramid with a direction along the
slide) follows the discrete forms exactly (to 1e-8). ``ccp`` lifts the box while it slides
(Anitescu's relaxation: a gap ``h mu |v_t|``), which changes the O(h) constant, not the order.

**Cart and wall** (Tedrake 2022, "Time-stepping LCP: Normal force"; problems/cart_wall.toml,
``m = 1``, ``h = 0.1``): ``q[n+1] = max(0, q + h v + h^2 u / m)``, ``v[n+1] = (q[n+1] - q) / h``.
Free flight (``q + h v + h^2 u/m > 0``): ``dq'/dq = 1``, ``dq'/dv = h``, ``dq'/du = h^2 / m``,
``dv'/dq = 0``, ``dv'/dv = 1``, ``dv'/du = h / m``; in contact: ``q' = 0`` and ``v' = -q / h``, so
``dq' = 0`` and ``dv'/dq = -1/h``. At the kink itself each branch gives its side.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import PROBLEMS

import contactopt as co
from contactopt.derivatives import NondifferentiableWarning, StepDerivative
from contactopt.integrators.time_stepping import TimeStepping
from contactopt.model.step import State

G = 9.81
MU, V0 = 0.5, 1.0
STOP_TIME = V0 / (MU * G)
#: ``T / h`` at the two steps: the same fractional part 1/3, steps in the ratio 4.
STEPS_PER_STOP = (10 + 1 / 3, 41 + 1 / 3)


def _stop_derivatives(formulation: str, solver: str, steps_per_stop: float) -> tuple[float, float, float, int]:
    """``(h, dx_N/dv0, dx_N/dmu, K)`` for the box slid until after its stop."""
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    h = STOP_TIME / steps_per_stop
    whole_steps = int(steps_per_stop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NondifferentiableWarning)  # stuck after the stop: one-sided
        trajectory = co.simulate(scene, formulation, solver, dt=h, duration=(whole_steps + 3) * h,
                                 sensitivities=["mu", "v0"])
    assert trajectory.completed and np.abs(trajectory.v[-1]).max() < 1e-9  # stopped before the end
    dv0 = float(trajectory.sensitivities["v0"][-1, 0, 0])  # d x / d vx0
    dmu = float(trajectory.sensitivities["mu"][-1, 0])
    return h, dv0, dmu, whole_steps


@pytest.mark.parametrize(("formulation", "solver"), [("lcp", "lemke"), ("ccp", "clarabel")])
def test_box_stop_distance_derivatives(formulation: str, solver: str) -> None:
    exact_v0, exact_mu = STOP_TIME, -G * STOP_TIME**2 / 2
    errors = []
    for steps_per_stop in STEPS_PER_STOP:
        h, dv0, dmu, whole_steps = _stop_derivatives(formulation, solver, steps_per_stop)
        relative = (abs(dv0 - exact_v0) / abs(exact_v0), abs(dmu - exact_mu) / abs(exact_mu))
        assert max(relative) <= h / STOP_TIME  # first order: the stop resolved to one step
        if formulation == "lcp":  # the scheme's own closed forms
            assert dv0 == pytest.approx(h * whole_steps, rel=1e-8)
            assert dmu == pytest.approx(-G * h**2 * whole_steps * (whole_steps + 1) / 2, rel=1e-8)
        errors.append(relative)
    ratio = STEPS_PER_STOP[1] / STEPS_PER_STOP[0]  # = h1 / h2 = 4
    assert errors[0][0] / errors[1][0] == pytest.approx(ratio, rel=0.05)  # dv0: f h exactly linear
    # dmu: lcp's T h (1 - 2f) + h^2 f (f - 1) is linear up to its h^2 term (ratio 3.8); ccp's O(h^2)
    # term is larger at these steps (ratio ~2.2 here, 3.6 from T/h = 41 1/3 to 167 1/3)
    assert errors[0][1] / errors[1][1] >= (0.9 if formulation == "lcp" else 0.5) * ratio


def _cart_step(q: float, v: float, branch: str = "active") -> tuple[np.ndarray, StepDerivative]:
    scene = co.load_scene(PROBLEMS / "cart_wall.toml")
    stepper = TimeStepping(scene.system, "lcp", "lemke", scene.dt)
    state = State(np.array([q]), np.array([v]), 0.0)
    next_state, record = stepper.step(state)
    assert next_state is not None and record.status is co.Status.OPTIMAL
    assert stepper.last_problem is not None and stepper.last_program is not None
    assert stepper.last_solution is not None
    derivative = StepDerivative(stepper, state, None, stepper.last_problem, stepper.last_program,  # type: ignore[arg-type]
                                stepper.last_solution, parameters=("u",), branch=branch)
    jacobian = derivative.jacobian()
    return np.hstack([jacobian["q"], jacobian["v"], jacobian["params"]]), derivative


H, M = 0.1, 1.0
#: Rows (q', v'), columns (q, v, u) of the step's Jacobian on each side of the kink.
FREE = np.array([[1.0, H, H**2 / M], [0.0, 1.0, H / M]])
CONTACT = np.array([[0.0, 0.0, 0.0], [-1.0 / H, 0.0, 0.0]])


@pytest.mark.parametrize(("q", "v", "expected"), [(1.0, -2.0, FREE), (0.5, 1.0, FREE), (0.1, -2.0, CONTACT),
                                                  (0.05, -1.0, CONTACT)],
                         ids=["approaching", "leaving", "hitting", "hitting-slowly"])
def test_cart_wall_step_on_both_sides_of_the_kink(q: float, v: float, expected: np.ndarray) -> None:
    jacobian, derivative = _cart_step(q, v)
    assert derivative.degenerate == 0
    np.testing.assert_allclose(jacobian, expected, atol=1e-9)


@pytest.mark.parametrize(("branch", "expected"), [("active", CONTACT), ("inactive", FREE)])
def test_cart_wall_kink_gives_each_branch_its_side(branch: str, expected: np.ndarray) -> None:
    """``q + h v = 0``: the cart reaches the wall exactly at the step's end, impulse and gap 0
    (counted in ``degenerate``, the step's answer to the program's warning)."""
    jacobian, derivative = _cart_step(0.2, -2.0, branch)
    assert derivative.degenerate == 1
    np.testing.assert_allclose(jacobian, expected, atol=1e-9)
