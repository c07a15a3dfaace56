"""The recovery cap on every unilateral row and every formulation (:mod:`contactopt.formulations.recovery`):
a joint that starts outside its range is driven back at ``max_recovery_speed`` at most, like a
contact that starts in penetration, and ``sap`` and ``regularized`` (its own parameters) cap
their bias and reference the same way. Before, the hinge of ``tests/data/recovery_cap.xml``
(0.2 rad below its range) left at ``0.2 / h = 100`` rad/s under every rigid formulation, and
``sap`` / ``regularized`` launched the sphere (10 mm in the floor) at 4.8 / 1.25 m/s, where the
cap is 0.1 m/s: dm-control's hopper (knee 0.087 rad outside its range) spun at 17 rad/s,
gymnasium's ant at 52 rad/s, where MuJoCo stays below 8 and 10.

Closed forms, one step of ``h = 2 ms`` from rest with no other force (gravity off), ``v_max = 0.1``:

* rigid rows (``ccp``, ``anitescu``, ``lcp``, ``gauss``, ``coulomb``): ``G v' >= min(-phi / h, v_max)``
  with nothing else pushing: ``v' = v_max`` exactly on both rows;
* ``sap`` (near-rigid, (S7)-(S8)): one scalar row of Delassus ``W`` with ``R = W_b / (4 pi^2)``
  and bias ``v_hat = v_max`` reaches ``v_max W / (W + R)``; for the hinge ``W_b = W``, for the
  sphere ``W_b = ||W_c||_F / 3`` of its 3x3 contact block (below);
* ``regularized`` (elliptic cone, default ``solref = (2 h, 1)``, impedance ``d = dwidth = 0.95``
  past the width): the reference ``v* = h b v_max = v_max / d`` and ``v' = d v*`` = ``v_max``
  (the sphere's contact has condim 1: its elliptic cone is the normal row alone);
  uncapped, ``v' = d h k |r| = h |r| / tc^2`` (1.25 m/s, 25 rad/s).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

pytestmark = [pytest.mark.filterwarnings("ignore::contactopt.core.errors.InitialPenetrationWarning"),
              pytest.mark.filterwarnings("ignore::contactopt.core.errors.InitialLimitViolationWarning")]

MODEL = Path(__file__).resolve().parent / "data" / "recovery_cap.xml"
H, DEPTH, VIOLATION, V_MAX = 0.002, 0.01, 0.2, 0.1
#: The sphere's vertical speed and the hinge's speed in v (free joint: vx vy vz wx wy wz; hinge).
SPHERE_VZ, HINGE = 2, 6
NEAR_RIGID = 1.0 / (4.0 * math.pi**2)  # SAP's beta^2 / (4 pi^2) with beta = 1


def _first_step(formulation: str, solver: str, **options: object) -> np.ndarray:
    scene = co.load_scene(MODEL)
    trajectory = co.simulate(scene, formulation=formulation, solver=solver, dt=H, duration=H, options=options)
    assert trajectory.steps[0].status == co.Status.OPTIMAL
    return np.asarray(trajectory.v[1])


def _sphere_contact_block() -> np.ndarray:
    """``W_c = J M^-1 J^T`` of the sphere's contact (mass 1 kg, radius 0.1 m, ``I = 2/5 m r^2``):
    MuJoCo puts the contact point halfway through the penetration, ``l = r - depth / 2`` below
    the centre, so the tangent rows turn the sphere: ``W_c = diag(1/m, 1/m + l^2/I, 1/m + l^2/I)``."""
    mass, radius = 1.0, 0.1
    lever, inertia = radius - DEPTH / 2, 0.4 * mass * radius**2
    return np.diag([1 / mass, 1 / mass + lever**2 / inertia, 1 / mass + lever**2 / inertia])


@pytest.mark.parametrize(("formulation", "solver"), [("ccp", "clarabel"), ("anitescu", "clarabel"),
                                                     ("lcp", "lemke"), ("gauss", "clarabel"), ("coulomb", "nsgs")])
def test_rigid_formulations_cap_limits_and_contacts(formulation: str, solver: str) -> None:
    v = _first_step(formulation, solver)
    assert v[HINGE] == pytest.approx(V_MAX, abs=1e-7)  # was 0.2 / h = 100 rad/s
    assert v[SPHERE_VZ] == pytest.approx(V_MAX, abs=1e-7)
    loose = _first_step(formulation, solver, max_recovery_speed=math.inf)  # the references' phi / h
    assert loose[HINGE] == pytest.approx(VIOLATION / H, rel=1e-6)
    assert loose[SPHERE_VZ] == pytest.approx(DEPTH / H, rel=1e-6)


def test_sap_caps_its_bias() -> None:
    v = _first_step("sap", "newton")
    assert v[HINGE] == pytest.approx(V_MAX / (1 + NEAR_RIGID), rel=1e-6)
    block = _sphere_contact_block()
    R = NEAR_RIGID * np.linalg.norm(block) / 3  # (S7)-(S9)
    assert v[SPHERE_VZ] == pytest.approx(V_MAX * block[0, 0] / (block[0, 0] + R), rel=1e-6)
    loose = _first_step("sap", "newton", max_recovery_speed=math.inf)  # (S8): -phi / h
    assert loose[HINGE] == pytest.approx(VIOLATION / H / (1 + NEAR_RIGID), rel=1e-6)


@pytest.mark.parametrize("form", ["dual", "primal"])
def test_regularized_caps_its_reference(form: str) -> None:
    solver = "clarabel" if form == "dual" else "newton"
    v = _first_step("regularized", solver, cone="elliptic", form=form)
    assert v[HINGE] == pytest.approx(V_MAX, rel=1e-6)
    assert v[SPHERE_VZ] == pytest.approx(V_MAX, rel=1e-6)
    # pyramidal: the frictionless contact is four equal edges n +- 0 t_j, each with v* = v_max / d
    # and R = (1 - d) / d W: together they reach v* 4 / (4 + (1 - d) / d), 4 % over v_max
    pyramid = _first_step("regularized", solver, form=form)
    assert pyramid[HINGE] == pytest.approx(V_MAX, rel=1e-6)
    d = 0.95
    assert pyramid[SPHERE_VZ] == pytest.approx(V_MAX / d * 4 / (4 + (1 - d) / d), rel=1e-6)
    loose = _first_step("regularized", solver, cone="elliptic", form=form, max_recovery_speed=math.inf)
    time_constant = 2 * H
    assert loose[HINGE] == pytest.approx(H * VIOLATION / time_constant**2, rel=1e-6)
    assert loose[SPHERE_VZ] == pytest.approx(H * DEPTH / time_constant**2, rel=1e-6)


def test_params_model_refuses_a_recovery_cap() -> None:
    scene = co.load_scene(MODEL)
    with pytest.raises(co.OptionError, match="max_recovery_speed"):
        co.simulate(scene, formulation="regularized", solver="clarabel", dt=H, duration=H,
                    options={"params": "model", "max_recovery_speed": 1.0})
