"""Contact candidates whose Jacobian block is zero are skipped by every formulation
(:func:`contactopt.formulations.common.active_contacts`; gauss: a zero normal row,
``tests/test_user_arm.py``), not refused: their rigid row would read
``0 >= -phi/h`` (infeasible). End to end, ``tests/data/welded_overlap.xml`` (two spheres welded to
one sliding crate, overlapping by 6 cm, asked for by an explicit ``<pair>``): the crate's motion
equals the same model's without the pair (an impulse acts only through ``J^T lambda = 0``; 1e-9 is
the solvers' own convergence on the floor contacts). MuJoCo marks that contact ``exclude = 3``
("no dofs") and builds no constraint row for it, and neither is it a candidate here (candidates
are MuJoCo's contacts with ``exclude <= 1``); the program-level tests below put a zero block into
one step's contacts directly, which is what a welded pair that MuJoCo does count (dm/ant's) gives."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

MODEL = Path(__file__).resolve().parent / "data" / "welded_overlap.xml"
STEPS = 5

CASES = [("gauss", "clarabel", {}), ("lcp", "lemke", {}), ("anitescu", "clarabel", {}), ("ccp", "clarabel", {}),
         ("regularized", "clarabel", {}), ("regularized", "newton", {"form": "primal"}),
         ("regularized", "newton", {"form": "primal", "cone": "elliptic"}), ("sap", "newton", {}),
         ("coulomb", "fixed_point", {})]


def run(path: Path, formulation: str, solver: str, options: dict[str, object]) -> co.Trajectory:
    scene = co.load_scene(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        return co.simulate(scene, formulation=formulation, solver=solver, duration=STEPS * scene.dt, options=options)


@pytest.mark.parametrize(("formulation", "solver", "options"), CASES)
def test_a_welded_overlapping_pair_exerts_nothing(tmp_path: Path, formulation: str, solver: str,
                                                  options: dict[str, object]) -> None:
    without = tmp_path / "without_pair.xml"
    text = MODEL.read_text()
    without.write_text(text.replace('<pair name="welded" geom1="left" geom2="right"/>', ""))
    welded = run(MODEL, formulation, solver, options)
    reference = run(without, formulation, solver, options)
    assert welded.completed and reference.completed, (welded.message, reference.message)
    assert len(welded.steps) == STEPS
    assert np.max(np.abs(welded.v[0][:3])) > 0.4  # the crate does slide: the check is not of a body at rest
    np.testing.assert_allclose(welded.q, reference.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(welded.v, reference.v, rtol=0, atol=1e-9)



# --- the same at the level of one step's program: the pair reaches the formulations here ---------

# gauss (the textbook's frictionless QP, every contact a row in the given order) is left out: it
# keeps every candidate whose normal row moves something (tests/test_user_arm.py)
STEP_CASES = [("lcp", "lemke", {}), ("anitescu", "clarabel", {}), ("ccp", "clarabel", {}),
              ("regularized", "clarabel", {}), ("regularized", "newton", {"form": "primal"}), ("sap", "newton", {}),
              ("coulomb", "nsgs", {})]


def _step_problem(with_welded: bool) -> co.StepProblem:
    """A 6-dof body on four ground contacts (two approaching), and optionally a fifth contact
    16 cm in penetration whose Jacobian block is zero (a welded pair: nothing moves it)."""
    from contactopt.model.step import Bilateral, Contacts, Dynamics, State

    rng = np.random.default_rng(7)
    nv, dim = 6, 3
    J = rng.normal(size=(4 * dim, nv))
    phi = np.array([0.0, 0.001, -0.002, 0.003])
    if with_welded:
        J = np.vstack([J, np.zeros((dim, nv))])
        phi = np.append(phi, -0.16)
    nc = phi.shape[0]
    contacts = Contacts(phi=phi, J=J, mu=np.full(nc, 0.5), restitution=np.zeros(nc), dim=dim)
    B = rng.normal(size=(nv, nv))
    return co.StepProblem(State(np.zeros(nv), rng.normal(size=nv)), 0.01,
                          Dynamics(B @ B.T + nv * np.eye(nv), rng.normal(size=nv)), contacts, Bilateral.empty(nv))


@pytest.mark.parametrize(("formulation", "solver", "options"), STEP_CASES)
def test_a_zero_jacobian_contact_is_skipped_in_the_program(formulation: str, solver: str,
                                                           options: dict[str, object]) -> None:
    """With the zero block the rigid row would read ``0 >= 16`` (infeasible): skipped, the step
    is the one without it, and its impulse is 0."""
    results = []
    for with_welded in (False, True):
        problem = _step_problem(with_welded)
        form = co.formulations.get(formulation)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", co.errors.ContactoptWarning)
            program = form.build(problem, form.resolve_options(options))
        solution = co.solve(program, solver)
        assert solution.status is co.Status.OPTIMAL, (formulation, with_welded, solution.message)
        results.append(form.recover(problem, program, solution))
    np.testing.assert_allclose(results[1].v_next, results[0].v_next, rtol=0, atol=1e-9)
    assert np.all(results[1].impulses[4] == 0.0)


def test_skipping_is_said_once() -> None:
    form = co.formulations.get("ccp")
    with pytest.warns(co.errors.SkippedContactWarning, match="1 contact candidate"):
        form.build(_step_problem(True), form.resolve_options({}))


@pytest.mark.parametrize(("formulation", "solver", "options", "mu", "kept"),
                         [("lcp", "lemke", {}, 0.5, False), ("anitescu", "clarabel", {}, 0.5, False),
                          ("ccp", "clarabel", {}, 0.5, False), ("coulomb", "nsgs", {}, 0.5, False),
                          ("regularized", "clarabel", {}, 0.5, True), ("sap", "newton", {}, 0.5, True),
                          ("regularized", "clarabel", {}, 0.0, False), ("sap", "newton", {}, 0.0, False)])
def test_a_contact_whose_normal_row_is_zero(formulation: str, solver: str, options: dict[str, object],
                                            mu: float, kept: bool) -> None:
    """A fifth contact at ``phi = -1e-17`` whose normal row is zero and tangent rows are not (a
    finger sliding under the palm it touches; gym/pusher's puck on the table): rigid formulations
    skip it (its row ``0 >= -phi/h`` is infeasible, its normal impulse, and so its friction,
    arbitrary), and so do soft ones when it is frictionless (its tangent rows carry nothing);
    the step is the one without it."""
    problem = _step_problem(True)
    J = np.array(problem.contacts.J, dtype=float)
    J[12:] = 0.0
    J[13, 0] = J[14, 1] = 1.0  # tangent rows move dofs 0 and 1; the normal row (12) moves nothing
    phi = problem.contacts.phi.copy()
    phi[4] = -1e-17
    mus = np.full(5, 0.5)
    mus[4] = mu
    from contactopt.model.step import Contacts

    contacts = Contacts(phi=phi, J=J, mu=mus, restitution=np.zeros(5), dim=3)
    problem = co.StepProblem(problem.state, problem.dt, problem.dynamics, contacts, problem.bilateral)
    form = co.formulations.get(formulation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        program = form.build(problem, form.resolve_options(options))
    assert (4 in program.metadata["contacts"]) is kept
    if kept:
        return
    solution = co.solve(program, solver)
    assert solution.status is co.Status.OPTIMAL, solution.message
    without = _step_problem(False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        reference = form.build(without, form.resolve_options(options))
    expected = form.recover(without, reference, co.solve(reference, solver)).v_next
    np.testing.assert_allclose(form.recover(problem, program, solution).v_next, expected, rtol=0, atol=1e-9)
