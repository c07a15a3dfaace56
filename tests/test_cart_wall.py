"""Cart against a wall (Tedrake 2022, "Time-stepping LCP: Normal force"), m = 1, h = 0.1.

With semi-implicit Euler the reference's LCP gives, in closed form,

    q[n+1] = max(0, q + h v + h^2 u / m),      f[n] = max(0, -m (q + h v) / h^2 - u),

and our programs solve for the impulse ``lambda = h f``. One table of cases runs the gauss
primal, the gauss dual and the LCP of the primal's KKT conditions over every installed
solver that takes the program (natively or through the tested conversions).

The grid avoids the kink ``q + h v + h^2 u/m = 0`` by at least 1e-2 (asserted below): there
both sides of the complementarity vanish, strict complementarity fails and an interior-point
iterate is only O(sqrt(tolerance)) from the answer, which is a property of the method, not a
bug. Exact pivoting (Lemke) is also checked on the kink itself.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import contactopt as co
from contactopt.solvers.backends import cvxpy as cvxpy_

M_CART, H = 1.0, 0.1

# Tolerances in one place (absolute, on q[n+1] in m and f[n] in N; |f| <= 500 on the grid).
# Interior point (clarabel, tol 1e-10) and polished OSQP / exact pivoting reach ~1e-9 on
# q and ~1e-7 on f = lambda / h^2 * h. Plain cvxpy runs CLARABEL at cvxpy's default
# tolerance 1e-8, ~100x looser than our backend's 1e-10: 1e-6 on q. SCS is a first-order
# splitting method run at its default accuracy (1e-4 relative), so it is held to 1e-3.
TOLERANCE = {"default": (1e-7, 1e-5), "cvxpy": (1e-6, 1e-4), "cvxpy:SCS": (1e-3, 1e-1)}

Q_GRID = np.linspace(-0.45, 0.95, 8)
V_GRID = np.linspace(-4.15, 2.85, 8)
U_VALUES = (0.0, 2.0)


def _solvers() -> list[str]:
    names = [s for s in co.solvers.available()]
    if "cvxpy" in names and "SCS" in cvxpy_.installed_variants():
        names.append("cvxpy:SCS")
    return names


def _cases() -> list[tuple[str, str]]:
    """(program, solver): gauss primal/dual QPs and the KKT LCP, with every capable solver."""
    probe = co.load_scene("cart_wall")
    primal = co.formulate(probe.system, [1.0], [0.0], H, "gauss", {"form": "primal"})
    dual = co.formulate(probe.system, [1.0], [0.0], H, "gauss", {"form": "dual"})
    kkt = co.qp_to_lcp(primal)
    cases = []
    for program_name, program in (("primal", primal), ("dual", dual), ("kkt_lcp", kkt)):
        cases += [(program_name, s) for s in _solvers() if co.solvers.can_take(program, s)]
    return cases


def closed_form(q: float, v: float, u: float) -> tuple[float, float]:
    predicted = q + H * v + H**2 * u / M_CART
    return max(0.0, predicted), max(0.0, -M_CART * predicted / H**2)


def _scene(u: float) -> co.Scene:
    scene = co.load_scene("cart_wall")
    system = co.systems.get("cart").from_config({"parameters": {"m": M_CART, "u": u}}, {})
    return dataclasses.replace(scene, system=system, dt=H)


def _step(scene: co.Scene, program: str, solver: str, q: float, v: float) -> tuple[float, float]:
    """One step; returns (q[n+1], f[n])."""
    if program == "kkt_lcp":
        primal = co.formulate(scene.system, [q], [v], H, "gauss", {"form": "primal"})
        lcp = co.qp_to_lcp(primal)
        sol = co.solve(lcp, solver)
        assert sol.status.usable, sol.message
        # z is the impulse (dual of the non-penetration row); w = phi/h + n v' = q[n+1]/h.
        return H * float(sol.s[0]), float(sol.x[0]) / H
    traj = co.simulate(dataclasses.replace(scene, q0=[q], v0=[v]), formulation="gauss",
                       solver=solver, duration=H, options={"form": program})
    assert traj.completed, traj.message
    assert traj.steps[0].status.usable
    return float(traj.q[1, 0]), float(traj.steps[0].impulses[0, 0]) / H


def test_grid_avoids_the_kink() -> None:
    for q, v, u in itertools.product(Q_GRID, V_GRID, U_VALUES):
        assert abs(q + H * v + H**2 * u / M_CART) >= 1e-2


@pytest.mark.parametrize(("program", "solver"), _cases())
@pytest.mark.parametrize("u", U_VALUES)
def test_cart_wall_step_matches_closed_form(program: str, solver: str, u: float) -> None:
    scene = _scene(u)
    tol_q, tol_f = TOLERANCE.get(solver, TOLERANCE["default"])
    for q, v in itertools.product(Q_GRID, V_GRID):
        q_next, force = _step(scene, program, solver, float(q), float(v))
        q_expected, f_expected = closed_form(float(q), float(v), u)
        assert q_next == pytest.approx(q_expected, abs=tol_q), (q, v)
        assert force == pytest.approx(f_expected, abs=tol_f), (q, v)


@pytest.mark.parametrize("v", [-2.0, -1.0, 0.0, 1.5])
def test_lemke_is_exact_on_the_kink(v: float) -> None:
    scene = _scene(0.0)
    q = -H * v  # q + h v = 0: both q[n+1] and f[n] are zero, a degenerate LCP
    q_next, force = _step(scene, "kkt_lcp", "lemke", q, v)
    assert abs(q_next) <= 1e-12
    assert abs(force) <= 1e-10


def test_textbook_scene_rests_against_the_wall() -> None:
    """The bundled scene (m = 1, h = 0.1, u = 0, from 1 m at -2 m/s) hits the wall after 5
    steps, receives one impulse m |v| = 2 N·s and stays at q = 0."""
    scene = co.load_scene("cart_wall")
    traj = co.simulate(scene, solver="lemke")
    impulses = traj.impulses()[:, 0, 0]
    np.testing.assert_allclose(traj.q[:6, 0], [1.0, 0.8, 0.6, 0.4, 0.2, 0.0], atol=1e-12)
    np.testing.assert_allclose(traj.q[6:, 0], 0.0, atol=1e-12)
    assert impulses[5] == pytest.approx(2.0, abs=1e-12)
    np.testing.assert_allclose(np.delete(impulses, 5), 0.0, atol=1e-12)
