"""The discrete energy balance (contactopt.analysis.energy) against closed forms of
semi-implicit Euler: exact for the box slide under the LCP, Anitescu's launch, free fall."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.analysis import metrics

G, MU, H, V0 = 9.81, 0.5, 1e-3, 1.0


def _run(scene: co.Scene, formulation: str, solver: str, duration: float) -> tuple[co.Trajectory, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation=formulation, solver=solver, dt=H, duration=duration)
    table, run = metrics.evaluate(scene, traj)
    return traj, {"table": table, **run}


def test_box_slide_balance_is_round_off_for_the_lcp_with_lemke() -> None:
    """Friction takes exactly the kinetic energy: |B| < 1e-6 J over the whole slide, while the
    energy itself falls by 1/2 m v0^2 = 0.5 J (the old "drift"), and the same impulses measured
    at the end-of-step velocity miss 1/2 m (mu g h)^2 per step (the midpoint is what is exact)."""
    scene = co.load_scene("box_slide")
    traj, run = _run(scene, "lcp", "lemke", 0.25)
    assert run["max_abs_energy_balance"] < 1e-6
    assert run["final_energy_drift"] == pytest.approx(-0.5 * V0**2, rel=1e-9)
    dissipated = run["table"]["dissipation"].sum()
    assert dissipated == pytest.approx(-0.5 * V0**2, rel=1e-9)
    # end-of-step velocity instead of the midpoint: off by sum of 1/2 m (v' - v)^2 per sliding step
    vx = traj.v[:, 0]
    end_work = -sum(H * MU * G * vx[i + 1] for i in range(len(vx) - 1) if vx[i] > 1e-12 and vx[i + 1] > 1e-12)
    assert abs(end_work - dissipated) > 1e-3


def test_anitescu_launch_shows_in_the_balance_with_its_closed_form() -> None:
    """First step of Anitescu's relaxation on the sliding box: u_n' = mu |u_t'| lifts it with
    v_z' = mu (v0 - mu g h) / (1 + mu^2) (both rows active). Friction dissipates what it
    should; the normal impulse r_n = m (v_z' + g h) does work r_n v_z' / 2 and semi-implicit
    Euler adds (h/2) m g v_z': B after one step is their sum (0.0831 J), far from 0."""
    scene = co.load_scene("box_slide")
    traj, run = _run(scene, "anitescu", "clarabel", 0.02)
    vz = MU * (V0 - MU * G * H) / (1 + MU**2)
    assert traj.v[1, 2] == pytest.approx(vz, rel=1e-6)
    expected = (vz + G * H) * vz / 2 + H / 2 * G * vz
    balance = run["table"]["energy_balance"].to_numpy()
    assert balance[1] == pytest.approx(expected, rel=1e-5) and expected > 0.08
    assert run["max_abs_energy_balance"] > 0.05  # visibly nonzero over the launch


def test_free_fall_balance_is_semi_implicit_eulers_own_error(tmp_path: Path) -> None:
    """No contact: B_k = E_k - E_0 = -k m g^2 h^2 / 2 (the -(h/2) tau_g·(v' - v) term of the
    derivation), not zero; the balance reports the integrator, honestly."""
    scene = co.load_scene("box_slide")
    scene = dataclasses.replace(scene, q0=np.array([0.0, 0.0, 5.0, 1.0, 0.0, 0.0, 0.0]), v0=np.zeros(6))
    _, run = _run(scene, "lcp", "lemke", 0.05)
    k = np.arange(len(run["table"]))
    np.testing.assert_allclose(run["table"]["energy_balance"], -k * G**2 * H**2 / 2, atol=1e-12)


def test_hybrid_impacts_are_counted_exactly() -> None:
    """Event-driven bouncing ball (e = 0.8) through its first impact: the energy falls by
    (1 - e^2) m g h0 = 3.5316 J, all of it the impact's admissible loss 1/2 (v+ - v-)^T M (v+ + v-),
    so the balance is round-off (the flight is integrated by the ODE solver)."""
    scene = co.load_scene("bouncing_ball")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, duration=0.6)
    run = metrics.run_metrics(scene, traj)
    assert len(traj.all_impacts()) == 1
    assert run["final_energy_drift"] == pytest.approx(-(1 - 0.8**2) * G * 1.0, rel=1e-6)
    assert run["max_abs_energy_balance"] < 1e-9
