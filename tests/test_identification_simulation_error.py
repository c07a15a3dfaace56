"""``estimate(..., method="simulation_error")``: mu and the mass of a rigid3d box pushed along
x and then released (``experiments/push_scenes.py``, ``experiments/sysid.py``'s ``box`` case),
fitted by Gauss-Newton least squares through whole simulations.

Tolerance: the data are noise-free and simulated by the same scheme, so the truth is a zero of
the residual; Gauss-Newton converges quadratically to it and stops at ``xtol = 1e-10``, so
1e-6 relative (the issue's figure) leaves four orders of margin for the solver's rounding.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

import contactopt as co
from contactopt.identification import IdentificationError, estimate
from contactopt.identification.estimation import METHODS
from contactopt.systems.rigid3d import Rigid3D

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
from push_scenes import PushedRigid3D  # noqa: E402  (the pushed box of experiments/sysid.py)

FloatArray = NDArray[np.float64]


DT = 0.02


def push(t: float, q: FloatArray, v: FloatArray) -> FloatArray:
    """8 N for the steps that start before 0.2 s, then released: the two accelerations
    ``F / m - mu g`` and ``-mu g`` separate mass from mu (push_scenes.py's module docstring)."""
    return np.array([8.0 if t < 0.2 - 0.5 * DT else 0.0])


def _scene() -> co.Scene:
    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    system = scene.system
    assert isinstance(system, Rigid3D)
    pushed = PushedRigid3D(system.bodies, {"mu": system.mu, "restitution": system.restitution},
                           gravity=system.gravity)
    return dataclasses.replace(scene, system=pushed, v0=np.zeros(pushed.nv), dt=DT, duration=0.4,
                               formulation="ccp", solver="clarabel")


def test_mu_and_mass_of_a_pushed_box_by_simulation_error() -> None:
    scene = _scene()
    truth = scene.system.with_parameters({"mu": 0.5, "box.mass": 1.0})
    recorded = co.simulate(dataclasses.replace(scene, system=truth), controller=push, on_failure="raise")
    assert recorded.completed and recorded.q[-1, 0] > 0.05  # it moved: pushed past mu m g = 4.9 N
    est = estimate(truth, recorded, method="simulation_error", scene=scene, parameters=("mu", "box.mass"),
                   initial={"mu": 0.3, "box.mass": 1.5}, controller=push)
    assert "simulation_error" in METHODS
    assert est.names == ("mu", "box.mass") and est.method == "simulation_error"
    np.testing.assert_allclose(est.values, [0.5, 1.0], rtol=1e-6)
    assert est.identifiable.rank == 2 and est.identifiable.names == ("mu", "box.mass")
    assert np.isfinite(est.condition) and est.condition >= 1.0
    assert est.covariance.shape == (2, 2) and np.all(est.standard_errors < 1e-6)  # noise-free: ~0
    assert est.residual < 1e-8 and all(est.consistent.values())
    assert est.system.parameter_values(("mu",))["mu"] == pytest.approx(0.5, rel=1e-6)
    stated = estimate(truth, recorded, method="simulation_error", noise=1e-3, scene=scene, parameters=("mu",),
                      controller=push)
    assert stated.values[0] == pytest.approx(0.5, rel=1e-9)  # from the truth: stays there
    assert stated.sigma == 1e-3 and stated.covariance[0, 0] > 0.0
    with pytest.raises(IdentificationError, match="predict"):
        est.predict(recorded.q[0], recorded.v[0], np.zeros(scene.system.nv))


def test_simulation_error_refuses_bad_arguments_by_name() -> None:
    scene = _scene()
    data = {"t": np.arange(3) * DT, "q": np.tile(scene.q0, (3, 1)), "v": np.zeros((3, scene.system.nv))}
    system = scene.system
    with pytest.raises(IdentificationError, match="needs scene"):
        estimate(system, data, method="simulation_error", parameters=("mu",))
    with pytest.raises(IdentificationError, match="needs parameters"):
        estimate(system, data, method="simulation_error", scene=scene)
    with pytest.raises(IdentificationError, match=r"'box\.mas'"):
        estimate(system, data, method="simulation_error", scene=scene, parameters=("mu", "box.mas"))
    with pytest.raises(IdentificationError, match="'friction'"):
        estimate(system, data, method="simulation_error", scene=scene, parameters=("mu",), initial={"friction": 1.0})
    with pytest.raises(IdentificationError, match="mu"):
        estimate(system, data, method="simulation_error", scene=scene, parameters=("mu",), initial={"mu": -1.0})
    with pytest.raises(IdentificationError, match="scene"):
        estimate(system, data, method="equation_error", scene=scene)
    with pytest.raises(IdentificationError, match="missing v"):
        estimate(system, {"t": data["t"], "q": data["q"]}, method="simulation_error", scene=scene,
                 parameters=("mu",))
