"""The formulations' programs are convex by construction (issue 34, item 2: "convexity comes by
construction for formulations (marked); a program a user gives is checked once").

``P`` built from a mass matrix the step knows positive definite (a dense ``M`` whose Cholesky
factor was computed, or a system's own factorization: MuJoCo's, block-diagonal inertias) is
marked (:func:`contactopt.programs.csc.mark_symmetric`) and skips the convexity check; each marked
``P`` here is positive semidefinite by its own eigenvalues (to 1e-12 of its largest), so a mark
that were wrong would fail. A sparse ``M`` factored by LU alone proves nothing, and its programs
are still checked: an indefinite one is refused as not convex.
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
