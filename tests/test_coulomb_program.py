"""The Coulomb problem type: its residuals on closed forms, their unit invariance, files, and
the judgement of a claimed answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from fclib_data import FCLIB_DATA, MISSING, present

import contactopt as co
from contactopt.core.errors import ShapeError, UnsupportedProgramError
from contactopt.programs.coulomb import (
    CoulombProgram,
    coulomb_believed,
    coulomb_criteria,
    coulomb_residuals,
    coulomb_to_fclib,
    local_scaling,
)
from contactopt.solvers.base import Stopwatch, make_solution


def _point(mass: float = 2.0, slip: float = 1.0, approach: float = -1.0, mu: float = 0.5) -> CoulombProgram:
    """One contact of a point of ``mass``: ``W = I / mass``, ``q = [approach, slip, 0]``."""
    return CoulombProgram(W=sp.eye(3, format="csc") / mass, q=np.array([approach, slip, 0.0]), mu=np.array([mu]))


def _sliding_answer(mass: float = 2.0, slip: float = 1.0, approach: float = -1.0, mu: float = 0.5) -> np.ndarray:
    """Exact Coulomb: the normal impulse stops the approach (``u_N = 0``, no lift), the
    tangential one is ``mu r_N`` against the slip when that does not stop it."""
    r_normal = -approach * mass
    return np.array([r_normal, -mu * r_normal, 0.0])


def test_sliding_point_is_exact_and_believed() -> None:
    program = _point()
    r = _sliding_answer()
    u = program.velocity(r)
    assert u[0] == 0.0 and u[1] > 0.0  # still sliding: 1 - 0.5 * 2 / 2 = 0.5
    res = coulomb_residuals(program, r)
    assert res.fclib == 0.0 and res.relative == 0.0 and res.primal == 0.0 and res.dual == 0.0
    assert coulomb_believed(program, r)
    criteria = coulomb_criteria(program, r)
    assert criteria["dissipation_gap"] == 0.0 and criteria["signorini"] == 0.0
    assert criteria["cost"] == pytest.approx(0.5 * r @ r / 2.0 + program.q @ r)


def test_sticking_point_and_lifted_answer() -> None:
    program = _point(slip=0.1)  # mu r_N = 1 > 2 * 0.1: sticks, r = -W^-1 q
    r = -2.0 * program.q
    assert coulomb_residuals(program, r).relative == 0.0
    # the CCP's answer to the sliding point lifts (u_N = mu |u_T| instead of 0): not Coulomb
    sliding = _point()
    lifted = _sliding_answer() * np.array([1.0, 1.0, 1.0])
    lifted[0] *= 0.9
    lifted[1] = -0.5 * lifted[0]
    res = coulomb_residuals(sliding, lifted)
    assert res.relative > 1e-2 and res.fclib > 1e-2
    assert not coulomb_believed(sliding, lifted)


@pytest.mark.parametrize("mass", [1e-9, 1.0, 1e6])
@pytest.mark.parametrize("length", [1e-3, 1.0, 1e3])
def test_relative_residual_is_unit_free(mass: float, length: float) -> None:
    """Scaling the mass by ``a`` and lengths by ``b`` scales W by ``1/a``, velocities by
    ``b`` and impulses by ``a b``: the relative residual of the scaled answer is the same."""
    program = _point()
    r = _sliding_answer() + np.array([1e-4, 3e-4, -2e-4])  # slightly wrong
    base = coulomb_residuals(program, r).relative
    scaled = CoulombProgram(W=program.W / mass, q=program.q * length, mu=program.mu)
    assert coulomb_residuals(scaled, r * mass * length).relative == pytest.approx(base, rel=1e-9)
    assert 1e-5 < base < 1e-2


def test_frictionless_contact_and_planar_dimension() -> None:
    program = CoulombProgram(W=sp.csc_matrix(np.array([[1.0, 0.0], [0.0, 0.0]])), q=np.array([-1.0, 3.0]),
                             mu=np.array([0.0]), dim=2)
    assert coulomb_residuals(program, np.array([1.0, 0.0])).relative == 0.0  # r_T = 0, u_T free
    assert coulomb_residuals(program, np.array([1.0, 0.5])).primal == pytest.approx(0.5)
    assert local_scaling(program)[0] == 1.0


def test_malformed_programs_are_refused() -> None:
    with pytest.raises(ShapeError, match="contacts \\* dim"):
        CoulombProgram(W=sp.eye(3, format="csc"), q=np.zeros(4), mu=np.array([0.5]))
    with pytest.raises(ShapeError, match="mu"):
        CoulombProgram(W=sp.eye(3, format="csc"), q=np.zeros(3), mu=np.array([-0.5]))
    with pytest.raises(ShapeError, match="dim"):
        CoulombProgram(W=sp.eye(4, format="csc"), q=np.zeros(4), mu=np.array([0.5]), dim=4)


def test_nonsymmetric_w_is_kept_and_said() -> None:
    W = np.eye(3)
    W[0, 1] = 1e-3
    program = CoulombProgram(W=sp.csc_matrix(W), q=np.zeros(3), mu=np.array([0.5]))
    assert not program.symmetric and program.asymmetry == pytest.approx(1e-3)
    assert program.symmetrized().symmetric


def test_a_wrong_claim_is_judged() -> None:
    program = _point()
    right = make_solution(program, solver="hand", status=co.Status.OPTIMAL, x=_sliding_answer(), y=None,
                          iterations=1, watch=Stopwatch(), history={"iteration": [1], "fclib": [0.0]})
    assert right.status is co.Status.OPTIMAL and right.s[0] == 0.0 and right.history is not None
    wrong = make_solution(program, solver="hand", status=co.Status.OPTIMAL, x=np.array([2.0, -0.5, 0.0]), y=None,
                          iterations=1, watch=Stopwatch())
    assert wrong.status is co.Status.NUMERICAL_ERROR and wrong.claimed is co.Status.OPTIMAL


def test_npz_round_trip_and_no_solver_named_for_it(tmp_path: Path) -> None:
    program = _point()
    loaded = co.load_program(co.save_program(program, tmp_path / "point"))
    assert isinstance(loaded, CoulombProgram)
    assert (loaded.W != program.W).nnz == 0 and np.array_equal(loaded.q, program.q) and loaded.dim == 3
    with pytest.raises(UnsupportedProgramError, match="COULOMB"):
        co.solve(program, "osqp")


def test_fclib_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    import h5py

    from contactopt.programs.fclib_io import write_fclib_problem

    program = _point()
    path = tmp_path / "point.hdf5"
    with h5py.File(path, "w") as handle:
        write_fclib_problem(handle, coulomb_to_fclib(program))
    loaded = co.load_program(path, form="coulomb")
    assert isinstance(loaded, CoulombProgram)
    assert np.allclose(loaded.W.toarray(), program.W.toarray()) and np.array_equal(loaded.q, program.q)


@pytest.mark.skipif(not present("siconos_text_converted"), reason=MISSING)
def test_siconos_file_reads_as_a_coulomb_problem() -> None:
    pytest.importorskip("h5py")
    program = co.load_program(FCLIB_DATA / "siconos_text_converted" / "FrictionContact3D_1c.hdf5", form="coulomb")
    assert isinstance(program, CoulombProgram) and program.contacts == 1 and program.dim == 3
