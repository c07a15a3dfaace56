"""A user's own MJCF arm (``problems/mjcf/user_arm.xml``: a base box part of the world, two
hinges with capsule links, a free box on the floor) under every time-stepping formulation at its
default options. The upper link's capsule sinks 3 cm into the base at the shoulder; MuJoCo
reports that contact, and two of its four pyramid edges (``n +- mu t1``, ``t1`` along the hinge
axis, ``n`` along the lever arm) move nothing: their Delassus diagonal is the rounding 1e-32, so
``R = 0`` there with ``c < 0`` and the regularized dual was unbounded at step 0 (clarabel, osqp:
"unbounded", pgs: numerical error). Such a row now takes a moving row's ``R`` of its contact and
no reference (:func:`contactopt.formulations.regularized_unmoved.unmoved_rows_regularized`); gauss leaves
a contact whose normal row is zero out (its row ``phi/h >= 0`` was infeasible). Near 0.6255 rad (step
106 under the tests' pinned OpenBLAS kernel) MuJoCo reports a second shoulder contact, 3 cm deep, whose
normal lever about the shoulder (3.75e-3) is below mu times its tangent's (0.085): no ``v'`` separates it
in Anitescu's cone, and anitescu keeps its rows without ``phi/h`` there
(:mod:`contactopt.formulations.anitescu_stabilization`; tests/test_anitescu_stabilization.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")

MODEL = Path(__file__).resolve().parents[1] / "problems" / "mjcf" / "user_arm.xml"
STEPS = 200


@pytest.fixture(scope="module")
def scene() -> co.Scene:
    return co.load_scene(MODEL)


def simulate(scene: co.Scene, formulation: str, steps: int = STEPS, **kwargs: object) -> co.Trajectory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        return co.simulate(scene, formulation=formulation, duration=steps * scene.dt, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("formulation", [
    "gauss", "lcp", "anitescu", "ccp", "regularized", "sap",
    "coulomb",  # nsgs drifted along W's null space at step 140 (tests/test_nsgs_drift.py)
])
def test_every_formulation_completes_at_its_defaults(scene: co.Scene, formulation: str) -> None:
    traj = simulate(scene, formulation)
    assert traj.completed and len(traj.steps) == STEPS
    assert {record.status for record in traj.steps} <= {co.Status.OPTIMAL, co.Status.INACCURATE}
    assert np.isfinite(traj.q).all()


def test_the_unmoved_edges_are_regularized_and_carry_nothing(scene: co.Scene) -> None:
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation="regularized")
    assert isinstance(program, co.ConicProgram)
    P = program.P.toarray()
    # the shoulder contact is the last one: its edges (n + mu t1, n - mu t1, n + mu t2, n - mu t2)
    edges = slice(P.shape[0] - 4, P.shape[0])
    diagonal = np.diag(P)[edges]
    assert diagonal.min() > 0  # before: 1e-32 on the first two (the dual unbounded along them)
    # they take the moving edges' R: (1 - d)/d diag(A) with A of a moving edge = P - R there
    d = program.metadata["impedance"][-1]
    moving_R = diagonal[2] / (1.0 + d / (1.0 - d))  # P = A + R = R (1 + d/(1-d)) on a moving edge
    np.testing.assert_allclose(diagonal[:2], moving_R, rtol=1e-9)
    solution = co.solve(program, solver="clarabel")
    assert solution.status == co.Status.OPTIMAL
    # no reference on a row that moves nothing: its impulse is 0 to the solver's tolerance (1e-8
    # of the 1.4e3 N s the moving edges carry), as the primal form (which leaves it out) gives
    assert np.abs(solution.x[-4:-2]).max() <= 1e-8 * np.abs(solution.x[-2:]).max()


def test_the_regularized_solvers_and_forms_agree(scene: co.Scene) -> None:
    """One program, four ways of solving it: clarabel and osqp (the dual), pgs (the dual's rows one
    by one), newton (the primal form): the same trajectory over 50 steps to the solvers' tolerances."""
    runs = {name: simulate(scene, "regularized", 50, solver=solver, options=options)
            for name, solver, options in (("clarabel", "clarabel", {}), ("osqp", "osqp", {}), ("pgs", "pgs", {}),
                                          ("primal", "newton", {"form": "primal"}))}
    for name, traj in runs.items():
        assert traj.completed and {record.status for record in traj.steps} == {co.Status.OPTIMAL}, name
        np.testing.assert_allclose(traj.q, runs["clarabel"].q, rtol=0, atol=1e-5, err_msg=name)


def test_params_model_is_mujoco(scene: co.Scene) -> None:
    """``params=model`` is MuJoCo's own program: its 100 steps are mj_step's to 1e-9 (MuJoCo's
    solver tolerance 1e-8 on its own iterations, accumulated)."""
    model = mujoco.MjModel.from_xml_path(str(MODEL))
    data = mujoco.MjData(model)
    expected = [data.qpos.copy()]
    for _ in range(100):
        mujoco.mj_step(model, data)
        expected.append(data.qpos.copy())
    traj = simulate(scene, "regularized", 100, options={"params": "model"})
    assert traj.completed
    np.testing.assert_allclose(traj.q, np.array(expected), rtol=0, atol=1e-9)
