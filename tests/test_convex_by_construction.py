"""The formulations' programs are convex by construction (issue 34, item 2: "convexity comes by
construction for formulations (marked); a program a user gives is checked once").

``P`` built from a mass matrix the step knows positive definite (a dense ``M`` whose Cholesky
factor was computed, or a system's own factorization: MuJoCo's, block-diagonal inertias) is
marked (:func:`contactopt.programs.csc.mark_symmetric`) and skips the convexity check. The first
test shows the mark present on each formulation's program and that ``P`` positive semidefinite by
its own eigenvalues (to 1e-12 of its largest); these ``P`` are semidefinite with or without the
mark, so it cannot catch a wrong mark. What the mark could get wrong is caught by the others: a
dense indefinite ``M`` is refused by its Cholesky factorization before anything is marked (with or
without the change), a sparse ``M`` factored by LU alone proves nothing and its programs are still
checked (an indefinite one is refused as not convex), and a dense asymmetric ``M`` too large for
``Dynamics``' own symmetry check is not marked, and refused by the program.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.core.errors import NonconvexProgramError
from contactopt.integrators.time_stepping import build_step_problem
from contactopt.model.step import Bilateral, Contacts, Dynamics, State, StepProblem
from contactopt.programs.csc import symmetric_by_construction

FORMULATIONS = [("sap", {}), ("ccp", {"form": "primal"}), ("ccp", {"form": "dual"}), ("gauss", {}),
                ("anitescu", {}), ("regularized", {}), ("regularized", {"form": "primal"})]


def _problem(scene: str) -> StepProblem:
    loaded = co.load_scene(scene)
    system = loaded.system
    q, v = np.array(loaded.q0), np.array(loaded.v0)
    if scene == "box_drop":  # its lowest corner 1 mm into the floor: contact rows in every formulation
        q[2] -= float(system.contacts(q).phi.min()) + 1e-3
    else:  # the UR5-like arm's wrist 0.7 mm into the floor (tests/test_urdf_derivatives.py)
        q = np.array([0.3, 1.401, 0.4, 0.5, 0.8, 0.1])
    problem = build_step_problem(system, q, v, loaded.dt)
    assert problem.contacts.count and problem.contacts.phi.min() < 0
    return problem


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("formulation,options", FORMULATIONS)
@pytest.mark.parametrize("scene", ["box_drop", "ur5_like_arm_floor"])
def test_a_formulations_program_is_marked_and_positive_semidefinite(scene: str, formulation: str,
                                                                    options: dict) -> None:
    """rigid3d's block-diagonal inertia (its own inverse) and a URDF arm's dense M (Cholesky)."""
    if scene == "ur5_like_arm_floor":
        pytest.importorskip("pinocchio")
    problem = _problem(scene)
    form = co.formulations.get(formulation)
    program = form.build(problem, form.resolve_options(options))
    P = program.P
    assert problem.dynamics.known_positive_definite and symmetric_by_construction(P)
    dense = P.toarray()
    eigenvalues = np.linalg.eigvalsh(0.5 * (dense + dense.T))
    assert np.abs(dense - dense.T).max() <= 1e-12 * np.abs(dense).max()
    assert eigenvalues[0] >= -1e-12 * eigenvalues[-1]


def _indefinite(sparse: bool) -> StepProblem:
    M = np.diag([2.0, -1.0])
    contacts = Contacts(phi=np.array([-0.01]), J=np.array([[1.0, 0.5]]), mu=np.zeros(1), restitution=np.zeros(1),
                        dim=1)
    return StepProblem(State(np.zeros(2), np.zeros(2)), 0.01,
                       Dynamics(sp.csc_matrix(M) if sparse else M, np.array([0.0, -9.81])), contacts,
                       Bilateral.empty(2))


def test_a_sparse_mass_matrix_factored_by_lu_is_still_checked() -> None:
    """splu factors an indefinite M without complaint: nothing is known, and the program refuses it."""
    problem = _indefinite(sparse=True)
    form = co.formulations.get("gauss")
    with pytest.raises(NonconvexProgramError, match="not positive semidefinite"):
        form.build(problem, form.resolve_options({}))
    assert not problem.dynamics.known_positive_definite


def test_a_dense_indefinite_mass_matrix_is_refused_by_its_factorization() -> None:
    problem = _indefinite(sparse=False)
    form = co.formulations.get("gauss")
    with pytest.raises(co.errors.ContactoptError, match="not positive definite"):
        form.build(problem, form.resolve_options({}))
    assert not problem.dynamics.known_positive_definite


def test_a_large_dense_asymmetric_mass_matrix_is_not_marked_and_is_refused() -> None:
    """nv = 80 (6400 entries, past ``Dynamics``' 4096-entry symmetry check; the Cholesky factor
    behind the mark reads one triangle): the asymmetric ``M`` is not known definite, not marked,
    and the program refuses it, as before the mark; its symmetric part is marked."""
    from contactopt.formulations.constraint_rows import mass_hessian

    rng = np.random.default_rng(0)
    A = rng.normal(size=(80, 80))
    skew = np.triu(rng.normal(size=(80, 80)), 1)
    symmetric = A @ A.T + 80 * np.eye(80)
    for M, marked in ((symmetric + (skew - skew.T), False), (symmetric, True)):
        dynamics = Dynamics(M, np.zeros(80))
        assert dynamics.cholesky is not None  # the factorization computed: definite, if symmetric
        assert dynamics.known_positive_definite == marked
        assert symmetric_by_construction(mass_hessian(dynamics)) == marked
    contacts = Contacts(phi=np.array([-0.01]), J=rng.normal(size=(1, 80)), mu=np.zeros(1), restitution=np.zeros(1),
                        dim=1)
    problem = StepProblem(State(np.zeros(80), np.zeros(80)), 0.01, Dynamics(symmetric + (skew - skew.T), np.zeros(80)),
                          contacts, Bilateral.empty(80))
    assert problem.dynamics.cholesky is not None and not problem.dynamics.known_positive_definite
    form = co.formulations.get("gauss")
    with pytest.raises(co.errors.ContactoptError, match="symmetric"):
        form.build(problem, form.resolve_options({}))
