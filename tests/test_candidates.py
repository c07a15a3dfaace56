"""Contact candidates that move no degree of freedom (a zero Jacobian block, found e.g.
through a detection margin between geoms of one welded chain) are skipped by ``sap``, not
refused, and leave the step unchanged."""

from __future__ import annotations

import numpy as np

import contactopt as co
from contactopt.formulations import get
from contactopt.model.step import Bilateral, Contacts, Dynamics, State, StepProblem


def step(contacts: Contacts) -> tuple[np.ndarray, np.ndarray]:
    """One ``sap`` step of a unit point mass falling at 1 m/s onto a floor (contact 0)."""
    problem = StepProblem(state=State(np.zeros(3), np.array([0.0, 0.0, -1.0])), dt=0.01,
                          dynamics=Dynamics(M=np.eye(3), tau=np.array([0.0, 0.0, -9.81])), contacts=contacts,
                          bilateral=Bilateral.empty(3))
    sap = get("sap")
    program = sap.build(problem, sap.resolve_options({}))
    solution = co.solve(program, "clarabel")
    assert solution.status == co.Status.OPTIMAL
    result = sap.recover(problem, program, solution)
    return result.v_next, result.impulses


def test_zero_jacobian_candidate_is_skipped() -> None:
    floor = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    alone = Contacts(phi=np.zeros(1), J=floor, mu=np.array([0.5]), restitution=np.zeros(1), dim=3)
    with_void = Contacts(phi=np.array([0.0, -0.001]), J=np.vstack([floor, np.zeros((3, 3))]),
                         mu=np.array([0.5, 0.5]), restitution=np.zeros(2), dim=3)
    v_alone, impulses_alone = step(alone)
    v_void, impulses_void = step(with_void)
    assert np.allclose(v_void, v_alone, atol=1e-12)
    assert np.allclose(impulses_void[0], impulses_alone[0], atol=1e-12)
    assert np.all(impulses_void[1] == 0.0)
