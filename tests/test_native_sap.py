"""``sap -o rows=model``: SAP's regularization over the system's own rows, the step as arrays
(:mod:`contactopt.formulations.sap_rows`, :mod:`contactopt.integrators.native_step`).

* On scenes whose rows are contacts alone, its program is ``sap``'s own (the same ``R``, ``v_hat``,
  ``J`` and ``v*``), built from MuJoCo's rows instead of the system's contact candidates.
* Each row's ``R`` and ``v_hat`` against (S7)-(S9) computed by brute force (a dense
  ``J M^{-1} J^T``) on every row kind: equality, limit, dry friction, contact frame, angular.
* The compiled step and the program object are one build (conic arrays entry for entry, ``v'``
  against ``co.solve`` plus ``recover``).
* Physics: a box at rest carries its weight; a batch equals its single runs; bad options and
  systems without rows of their own are refused in one line.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.formulations import get, model_primal, sap_rows
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.model.native import CONE, EDGE, EQUALITY, FRICTION_LOSS, LIMIT
from contactopt.model.step import State

mujoco = pytest.importorskip("mujoco")

from contactopt.integrators.native_step import NativeStepping  # noqa: E402
from contactopt.systems.mjcf.native_arrays import native_arrays  # noqa: E402
from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402
from tests.test_mjcf_rows import suite_model  # noqa: E402
from tests.test_native_step import assert_compiled_assembly_is_the_object, sampled_states  # noqa: E402

MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"
ROWS = {"rows": "model"}


def programs_at(system: MjcfSystem, q: np.ndarray, v: np.ndarray, h: float, options: dict[str, object]) -> object:
    formulation = get("sap")
    resolved = formulation.resolve_options(options)
    problem = build_step_problem(system, q, v, h, native=formulation.native_request(resolved))
    return problem, formulation.build(problem, resolved), resolved


@pytest.mark.parametrize("name", ["box_plane.xml", "box_stack.xml"])
def test_on_contact_rows_alone_it_is_saps_own_program(name: str) -> None:
    """Settled boxes (condim 3 contacts, no other rows): the primal's R, v_hat, J, v* and A equal
    sap's own build from the system's candidates to 1e-12 (the same formulas, Jacobians computed
    by MuJoCo's efc rows and by the system's chains, round differently)."""
    scene = co.load_scene(str(MJCF / name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="sap", solver="newton", duration=0.1)
    q, v = traj.q[-1], traj.v[-1]
    _, own, _ = programs_at(scene.system, q, v, scene.dt, {})
    _, model, _ = programs_at(scene.system, q, v, scene.dt, ROWS)
    a, b = own.primal, model.primal
    assert b.R.shape[0] >= 12 and b.J.shape == a.J.shape
    for ours, theirs in ((b.R, a.R), (b.v_hat, a.v_hat), (b.J.toarray(), a.J.toarray()), (b.v_star, a.v_star),
                         (b.A.toarray(), a.A.toarray()), (b.scale, a.scale)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(theirs).max())))


DAMPED_BOX = """<mujoco><option timestep="0.002" integrator="implicitfast"/><worldbody>
<geom type="plane" size="1 1 0.1"/><body pos="0 0 0.0995"><joint type="free" damping="3"/>
<geom type="box" size="0.1 0.1 0.1" mass="1"/></body></worldbody></mujoco>"""


def test_a_damped_box_under_implicitfast_is_saps_own_program(tmp_path: Path) -> None:
    """A box whose free joint is damped, under implicitfast: the primal's A is the step matrix
    M + h diag(damping) (sap's own step_dynamics), not M, and v* = v + h A^-1 tau, as in sap's
    own build (1e-12); the damping is large enough to show (A differs from M by 0.6 %)."""
    (tmp_path / "damped.xml").write_text(DAMPED_BOX)
    system = MjcfSystem(str(tmp_path / "damped.xml"))
    q, v = np.array([0, 0, 0.0995, 1, 0, 0, 0.0]), np.array([0.3, 0, -0.2, 0, 0.5, 0])
    _, own, _ = programs_at(system, q, v, 0.002, {})
    _, model, _ = programs_at(system, q, v, 0.002, ROWS)
    a, b = own.primal, model.primal
    assert np.abs(a.A.toarray() - system.dynamics(q, v).M).max() > 1e-3
    for ours, theirs in ((b.A.toarray(), a.A.toarray()), (b.v_star, a.v_star), (b.R, a.R), (b.v_hat, a.v_hat)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(theirs).max())))


def brute_force(native: object, numbers: sap_rows.SapParameters) -> tuple[np.ndarray, np.ndarray]:
    """(S7)-(S9) row by row from a dense ``W = J M^{-1} J^T`` (sap_rows' module docstring)."""
    near_rigid, compliant, sigma, tau_d, v_max = numbers
    J, h = native.J, native.dt
    W = J @ np.linalg.solve(native.M, J.T)
    R, v_hat = np.zeros(native.m), np.zeros(native.m)
    for i, kind in enumerate(native.kind):
        if kind == EQUALITY:
            R[i], v_hat[i] = near_rigid * W[i, i], np.clip(-native.position[i] / (h + tau_d), -v_max, v_max)
        elif kind == LIMIT:
            R[i], v_hat[i] = max(near_rigid * W[i, i], compliant), min(-native.position[i] / (h + tau_d), v_max)
        elif kind == FRICTION_LOSS:
            R[i] = sigma * W[i, i]
        else:
            c = native.contact[i]
            first, j = native.contact_address[c], i - native.contact_address[c]
            frame = min(int(native.contact_dim[c]), 3) if kind == CONE else 1
            w = np.linalg.norm(W[first:first + frame, first:first + frame]) / frame
            if w == 0:
                R[i] = 1.0
            elif j == 0:
                R[i], v_hat[i] = max(near_rigid * w, compliant), min(-native.contact_distance[c] / (h + tau_d), v_max)
            else:
                R[i] = sigma * (w if j < 3 or W[i, i] == 0 else W[i, i])
    return R, v_hat


FRICTIONLESS_BOX = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="1 1 0.1" condim="1"/>
<body pos="0 0 0.099"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1" condim="1"/></body>
</worldbody></mujoco>"""


def run_states(model: object, steps: int, every: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """States along MuJoCo's own run from the model's default state."""
    data = mujoco.MjData(model)
    states = []
    for k in range(steps):
        mujoco.mj_step(model, data)
        if k % every == every - 1:
            states.append((data.qpos.copy(), data.qvel.copy()))
    return states


@pytest.mark.parametrize("stiffness", [math.inf, 2e4])
def test_every_row_kinds_values_are_s7_to_s9(stiffness: float, tmp_path: Path) -> None:
    """limited_arm has every row kind but a frictionless contact (a joint equality, joint and
    tendon limits, dof and tendon frictionloss, contacts of condim 3, 4 and 6), a box of condim 1
    the last: each row's R and v_hat against the brute force to 1e-12, near-rigid and compliant."""
    (tmp_path / "frictionless.xml").write_text(FRICTIONLESS_BOX)
    seen: set[tuple[int, int]] = set()
    for path in (str(MJCF / "limited_arm.xml"), str(tmp_path / "frictionless.xml")):
        system = MjcfSystem(path)
        model = mujoco.MjModel.from_xml_path(path)
        h = float(model.opt.timestep)
        options = get("sap").resolve_options({**ROWS, "stiffness": stiffness, "dissipation_time_scale": 0.01})
        numbers = sap_rows.parameters(options, h, 0.1)
        for q, v in sampled_states(model, 6, seed=4) + run_states(model, 2400, 400):
            native = native_arrays(system, q, v, h, "elliptic")
            R, v_hat = sap_rows.sap_values(native, numbers)
            expected_R, expected_v_hat = brute_force(native, numbers)
            np.testing.assert_allclose(R, expected_R, rtol=1e-12, atol=0)
            np.testing.assert_allclose(v_hat, expected_v_hat, rtol=1e-12, atol=1e-15)
            for i, kind in enumerate(native.kind):
                c = native.contact[i]
                seen.add((int(kind), int(i - native.contact_address[c]) if c >= 0 else -1))
    assert {(EQUALITY, -1), (LIMIT, -1), (FRICTION_LOSS, -1), (CONE, 0), (CONE, 1), (CONE, 3), (EDGE, 0)} <= seen
    compliant = sap_rows.parameters(get("sap").resolve_options({"stiffness": stiffness}), 0.002, 0.1)[1]
    assert compliant == (pytest.approx(1.0 / (0.002 * stiffness * 0.002)) if math.isfinite(stiffness) else 0.0)


@pytest.mark.parametrize(("path", "integrator"), [
    (str(MJCF / "limited_arm.xml"), None), (str(MJCF / "limited_arm.xml"), "mjINT_IMPLICITFAST"),
    (str(MJCF / "limited_arm.xml"), "mjINT_RK4"), (str(MJCF / "box_stack.xml"), None), ("walker", None)])
def test_compiled_step_and_program_object_are_one_build(path: str, integrator: str | None) -> None:
    """co.formulate's program and the compiled step read the same arrays: the object's conic
    arrays equal the compiled assembly's exactly, and the compiled step's v' equals co.solve +
    recover to 1e-12 of |v'| (as tests/test_native_step.py holds for params=model), under the
    model's Euler, implicitfast (its step matrix M - h D) and RK4 (sap takes one program a step)."""
    system = MjcfSystem(suite_model(path) if path == "walker" else path)
    if integrator is not None:
        system.native_model_data()[0].opt.integrator = getattr(mujoco.mjtIntegrator, integrator)
    h = float(system.native_model_data()[0].opt.timestep)
    stepper = NativeStepping(system, "sap", "newton", h, ROWS)
    formulation = get("sap")
    for q, v in sampled_states(mujoco.MjModel.from_xml_path(str(system.path)), 4, seed=5):
        problem, program, _ = programs_at(system, q, v, h, ROWS)
        solution = co.solve(program, "newton")
        assert solution.status.usable, solution.message
        ours = formulation.recover(problem, program, solution).v_next
        next_state, record = stepper.step(State(q, v, 0.0, np.zeros(system.na)))
        assert next_state is not None, record.message
        assert np.abs(next_state.v - ours).max() <= 1e-12 * max(1.0, np.abs(ours).max())
        native = sap_rows.sap_arrays(native_arrays(system, q, v, h, "elliptic"))
        assert_compiled_assembly_is_the_object(native, model_primal.primal_rows(native, stepper._row_values(native)),
                                               program, solution)


def test_a_box_at_rest_carries_its_weight_and_records_its_contacts() -> None:
    """The 1 kg box settled on the plane: the normal impulses of the last step sum to m g h
    (1e-6: Newton's tolerance), no speed above the friction regularization's creep, and the
    record names MuJoCo's own contacts."""
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    traj = co.simulate(scene, formulation="sap", solver="newton", options=ROWS, duration=0.3)
    assert traj.completed, traj.message
    record = traj.steps[-1]
    assert record.candidates == 4 and record.impulses.shape == (4, 3)
    assert record.impulses[:, 0].sum() == pytest.approx(1.0 * 9.81 * scene.dt, rel=1e-6)
    assert np.abs(traj.v[-1]).max() < 1e-4


def test_a_batch_equals_its_single_runs() -> None:
    scene = co.load_scene(str(MJCF / "box_plane.xml"))
    V0 = np.zeros((2, scene.system.nv))
    V0[:, 0] = [0.0, 1.0]
    batch = co.simulate_batch(scene, v0=V0, formulation="sap", solver="newton", options=ROWS, duration=0.05)
    for i in range(2):
        single = co.simulate(dataclasses.replace(scene, v0=V0[i]), formulation="sap", solver="newton", options=ROWS,
                             duration=0.05)
        np.testing.assert_allclose(batch.q[i], single.q, rtol=0, atol=1e-12)
    assert batch.completed.all() and batch.q[1, -1, 0] - batch.q[0, -1, 0] > 1e-3


def test_bad_options_and_systems_without_rows_are_one_line() -> None:
    formulation = get("sap")
    with pytest.raises(OptionError, match="rows must be 'own'"):
        formulation.resolve_options({"rows": "mujoco"})
    with pytest.raises(OptionError, match="epsilon does not apply"):
        formulation.resolve_options({**ROWS, "epsilon": 0.0})
    scene = co.load_scene("problems/box_slide.toml")
    with pytest.raises(ContactoptError, match="rows=model need an mjcf system"):
        co.simulate(scene, formulation="sap", solver="newton", options=ROWS, duration=0.01)


@pytest.mark.parametrize(("formulation", "options"), [("sap", ROWS), ("regularized", {"params": "model",
                                                                                      "form": "primal"})])
def test_the_compiled_step_takes_mujocos_scaled_cones(formulation: str, options: dict[str, object]) -> None:
    """limited_arm's condim 6 tip on the floor, elliptic (MuJoCo's cone ``f_n >= ||(f_i / mu_i)||``
    with unequal mu_i): the compiled step solves it (GENERAL blocks, as cone_layout groups them:
    soc_scaled) and its v' equals newton on the program object to 1e-12 of |v'| (the same blocks
    in another order)."""
    path = str(MJCF / "limited_arm.xml")
    system = MjcfSystem(path)
    model = mujoco.MjModel.from_xml_path(path)
    model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    system.native_model_data()[0].opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    system.native_cone = int(mujoco.mjtCone.mjCONE_ELLIPTIC)
    h = float(model.opt.timestep)
    stepper = NativeStepping(system, formulation, "newton", h, options)
    taken = 0
    for q, v in run_states(model, 2400, 400):
        native = native_arrays(system, q, v, h, "elliptic")
        if formulation == "sap":
            native = sap_rows.sap_arrays(native)
        if not np.any(native.contact_dim == 6):
            continue
        values = stepper._row_values(native)
        solved = stepper._solve_arrays(native, values)
        assert solved is not None and solved[0].usable, solved
        _, x, _, _, _, _ = stepper._solve_object(native, values)
        ours = model_primal.next_velocity(native, x)
        assert np.abs(solved[2] - ours).max() <= 1e-12 * max(1.0, np.abs(ours).max())
        taken += 1
    assert taken >= 3


@pytest.mark.parametrize("options", [{}, ROWS])
def test_a_torsion_row_that_moves_nothing_carries_nothing(options: dict[str, object]) -> None:
    """limited_arm's condim 6 tip on the floor: its arm turns about y only, so the torsional row
    (about the vertical normal) moves no dof and its Delassus diagonal is 0. Both of sap's builds
    give it a positive R (plain sap raised 'R must be positive' there) and it carries no impulse."""
    path = str(MJCF / "limited_arm.xml")
    system = MjcfSystem(path)
    model = mujoco.MjModel.from_xml_path(path)
    h = float(model.opt.timestep)
    q, v = run_states(model, 2400, 2400)[0]
    _, program, _ = programs_at(system, q, v, h, options)
    J = program.primal.J.toarray()
    inert = np.flatnonzero(np.abs(J).max(axis=1) == 0)
    assert inert.size and np.all(program.primal.R > 0)
    solution = co.solve(program, "newton")
    assert solution.status.usable, solution.message
    assert np.all(program.variable(solution.x, "sigma")[inert] == 0.0)


def test_the_kernels_cone_blocks_are_cone_layouts_groups() -> None:
    """native_kernel.cone_block against cone_projection.cone_layout on the three kinds of cone
    (isotropic, unequal tangential R, unequal scales) and a row scale of 0 (refused by both)."""
    from contactopt.integrators import native_kernel
    from contactopt.programs import SOC
    from contactopt.programs.cone_projection import cone_layout
    from contactopt.solvers.newton import kernels

    native_kernel.ensure_compiled()
    codes = {"soc": kernels.SOC, "soc_general": kernels.GENERAL, "soc_scaled": kernels.GENERAL}
    for scale, R, expected in (
            ([1.0, 0.5, 0.5], [2.0, 1e-3, 1e-3], "soc"), ([1.0, 0.5, 0.5], [2.0, 1e-3, 2e-3], "soc_general"),
            ([1.0, 0.5, 0.5, 0.02, 0.001, 0.001], [2.0] + [1e-3] * 5, "soc_scaled"),
            ([1.0, 0.5, 0.5 * (1 + 1e-12)], [2.0, 1e-3, 1e-3 * (1 + 1e-12)], "soc")):
        scale_array, R_array = np.array(scale), np.array(R)
        layout = cone_layout((SOC(len(scale)),), scale_array, R_array)
        group = layout.groups[0]
        kind, mu, scaled = native_kernel.cone_block(scale_array, R_array, 0, len(scale))
        assert group.kind == expected and kind == codes[expected] and scaled == (expected == "soc_scaled")
        assert mu == group.mu[0]
    zero = np.array([1.0, 0.0, 0.0])
    assert isinstance(cone_layout((SOC(3),), zero, np.ones(3)), str)
    assert native_kernel.cone_block(zero, np.ones(3), 0, 3)[0] == -1
