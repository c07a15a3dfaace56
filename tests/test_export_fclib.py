"""FCLIB export: one FCLIB file per step, read back by a reader written here from FCLIB's
specification (``fclib.h``/``fclib.c``: ``/fclib_local`` at the root, matrices nzmax, m, n, nz, p,
i, x), against the local problem computed here from the system's own dynamics and contacts;
then read by ``co.load_program`` and solved for Coulomb's law."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import BOX_RUN_STEPS

import contactopt as co
from contactopt.analysis.export import export_run
from contactopt.cli.bench import add_bench_parser
from contactopt.cli.common import _Parser
from contactopt.solvers.coulomb.fclib_solve import solve_coulomb

STEPS = BOX_RUN_STEPS  # the box_run fixture's steps (tests/conftest.py)
pytestmark = pytest.mark.filterwarnings("ignore:formulation 'gauss' is frictionless")


@pytest.fixture(scope="module")
def fclib_export(box_run: tuple[co.Scene, co.Trajectory], tmp_path_factory: pytest.TempPathFactory) -> Path:
    scene, traj = box_run
    written = export_run(scene, traj, tmp_path_factory.mktemp("fclib_export"), formats="fclib",
                         formulation="ccp")
    return written["fclib"]


def _independent_local(system: Any, q: np.ndarray, v: np.ndarray, h: float) -> dict[str, np.ndarray]:
    """FCLIB's W, q, mu computed here from the system: W = J M^-1 J^T, q = J v_free + [phi/h, 0..]."""
    dyn = system.dynamics(q, v)
    contacts = system.contacts(q)
    M, J = dyn.M_dense, contacts.J_dense
    v_free = v + h * np.linalg.solve(M, dyn.tau)
    local_q = J @ v_free
    local_q[:: contacts.dim] += contacts.phi / h
    return {"W": J @ np.linalg.solve(M, J.T), "q": local_q, "mu": contacts.mu, "dim": contacts.dim,
            "J": J, "M": M, "v_free": v_free}


def _read_fclib_matrix(group: h5py.Group) -> np.ndarray:
    """FCLIB's matrix (fclib.h): nz = -1 compressed columns, -2 compressed rows, >= 0 triplets
    (p rows, i columns); sizes as fclib_read_local allocates them."""
    m, n, nz, nzmax = (int(group[key][0]) for key in ("m", "n", "nz", "nzmax"))
    for key in ("m", "n", "nz", "nzmax", "p", "i"):
        assert group[key].dtype == np.int32
    p, i, x = group["p"][:], group["i"][:], group["x"][:]
    assert x.shape == (nzmax,)
    if nz >= 0:
        return sp.coo_matrix((x[:nz], (p[:nz], i[:nz])), shape=(m, n)).toarray()
    assert i.shape == (nzmax,)
    if nz == -1:
        assert p.shape == (n + 1,)
        return sp.csc_matrix((x, i, p), shape=(m, n)).toarray()
    assert nz == -2 and p.shape == (m + 1,)
    return sp.csr_matrix((x, i, p), shape=(m, n)).toarray()


# --- the files --------------------------------------------------------------------------------


def test_fclib_files_read_back_to_the_local_problems(box_run: tuple[co.Scene, co.Trajectory],
                                                     fclib_export: Path) -> None:
    """One FCLIB file per step, the problem at the root as fclib_read_local expects it."""
    scene, traj = box_run
    h = traj.dt
    files = sorted(fclib_export.glob("*.hdf5"))
    assert fclib_export.name == "box_slide" and [f.name for f in files] == [f"step_{i:06d}.hdf5" for i in range(STEPS)]
    for i, path in enumerate(files):
        with h5py.File(path, "r") as handle:
            assert set(handle) == {"fclib_local", "contactopt"}  # the extra group FCLIB readers skip
            local = handle["fclib_local"]
            assert local["spacedim"].dtype == np.int32 and local["spacedim"][:].tolist() == [3]
            W = _read_fclib_matrix(local["W"])
            q, mu = local["vectors/q"][:], local["vectors/mu"][:]
            assert "V" not in local and "R" not in local  # no bilateral rows in this scene
            assert {"title", "description", "math_info"} <= set(local["info"])
            assert handle["contactopt"].attrs["step"] == i
        ref = _independent_local(scene.system, traj.q[i], traj.v[i], h)
        assert W.shape == (3 * mu.size, 3 * mu.size)
        np.testing.assert_allclose(W, ref["W"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(q, ref["q"], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(mu, ref["mu"])
        assert np.allclose(W, W.T) and np.linalg.eigvalsh(W).min() > -1e-12
        # the ccp dual program of the step is min 1/2 r'Wr + q'r over the friction cones, and
        # that is what co.load_program makes of the file
        dual = co.formulate(scene.system, traj.q[i], traj.v[i], h, "ccp", {"form": "dual"})
        assert isinstance(dual, co.ConicProgram)
        np.testing.assert_allclose(dual.P.toarray(), W, atol=1e-12)
        np.testing.assert_allclose(dual.c, q, atol=1e-12)
        loaded = co.load_program(path)
        assert isinstance(loaded, co.ConicProgram)
        assert loaded.cones == dual.cones
        np.testing.assert_allclose(loaded.P.toarray(), W, atol=1e-15)
        np.testing.assert_array_equal(loaded.c, q)
        np.testing.assert_array_equal(loaded.A.toarray(), dual.A.toarray())


@pytest.mark.parametrize("solver", ["clarabel", "pgs"])
def test_exported_fclib_step_solved_for_coulomb(fclib_export: Path, solver: str) -> None:
    """Step 0 of the box slide (1 kg, v0 = 1 m/s along x, mu = 0.5, on the ground): 8 corner
    contacts, W of rank 6. Coulomb's law: the box keeps sliding on the ground, so the impulses
    sum to m g h up and mu m g h back, and every touching corner slides at v0 - mu g h. The
    convex program alone hydroplanes: sum r_N = m (g h + mu v0) / (1 + mu^2)."""
    m, g, h, mu, v0 = 1.0, 9.81, 1e-3, 0.5, 1.0
    path = fclib_export / "step_000000.hdf5"
    problem = co.programs.read_fclib(path)
    program = co.load_program(path)
    assert isinstance(problem, co.programs.FclibLocal) and isinstance(program, co.ConicProgram)
    solution = co.solve(program, solver)
    ccp = program.variable(solution.x, "impulse").reshape(-1, 3).sum(axis=0)
    assert ccp[0] == pytest.approx(m * (g * h + mu * v0) / (1 + mu**2), rel=1e-6)
    result = solve_coulomb(problem, solver, tol=1e-9)
    assert result.converged and result.error <= 1e-9
    total = result.answer.r.reshape(-1, 3).sum(axis=0)
    np.testing.assert_allclose(total, [m * g * h, -mu * m * g * h, 0.0], rtol=1e-6, atol=1e-10)
    u = result.answer.u.reshape(-1, 3)
    touching = problem.q[::3] < 0  # the 4 bottom corners (phi = 0); the top ones are 0.2 m up
    assert touching.sum() == 4
    np.testing.assert_allclose(u[touching], [[0.0, v0 - mu * g * h, 0.0]] * 4, atol=1e-7)
    # the same problem with every right-hand side 1e-6 times smaller has the answer 1e-6 times
    # smaller (homogeneity); solve_coulomb normalises the data so the solver's absolute
    # tolerance floors do not swamp it
    small = dataclasses.replace(problem, q=1e-6 * problem.q)
    tiny = solve_coulomb(small, solver, tol=1e-15, max_iter=20)
    np.testing.assert_allclose(tiny.answer.r.reshape(-1, 3).sum(axis=0), 1e-6 * total, rtol=1e-6, atol=1e-16)


def test_fclib_mixed_problem_with_bilateral_rows(tmp_path: Path) -> None:
    """A planar pendulum on a rod (one bilateral row) above a floor: FCLIB's V, R, s."""
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cartesian_pendulum_floor.toml")
    traj = co.simulate(scene, duration=3 * scene.dt)
    folder = export_run(scene, traj, tmp_path, formats=["fclib"])["fclib"]
    i, h = 2, traj.dt
    ref = _independent_local(scene.system, traj.q[i], traj.v[i], h)
    H = scene.system.constraints(traj.q[i], traj.v[i], traj.t[i]).H
    with h5py.File(folder / f"step_{i:06d}.hdf5", "r") as handle:
        local = handle["fclib_local"]
        assert local["spacedim"][0] == 2
        np.testing.assert_allclose(_read_fclib_matrix(local["W"]), ref["W"], atol=1e-12)
        np.testing.assert_allclose(_read_fclib_matrix(local["R"]), H @ np.linalg.solve(ref["M"], H.T), atol=1e-12)
        np.testing.assert_allclose(_read_fclib_matrix(local["V"]), ref["J"] @ np.linalg.solve(ref["M"], H.T),
                                   atol=1e-12)
        np.testing.assert_allclose(local["vectors/s"][:], H @ ref["v_free"], atol=1e-12)  # drift "none"


def test_fclib_skips_normal_only_contacts(tmp_path: Path) -> None:
    scene = co.load_scene(Path(__file__).resolve().parent.parent / "problems" / "cart_wall.toml")
    traj = co.simulate(scene, duration=3 * scene.dt)
    with pytest.warns(UserWarning, match="spacedim 2 or 3"):
        written = export_run(scene, traj, tmp_path, formats=["npz", "fclib"])
    assert set(written) == {"npz"}


# --- the benchmark on them ---------------------------------------------------------------


def test_bench_refuses_a_set_where_a_solver_can_take_nothing(fclib_export: Path, tmp_path: Path) -> None:
    """The README's old example: SOCPs with QP-only solvers gave 600 of 800 'unsupported' rows."""
    parser = _Parser(prog="contactopt")
    add_bench_parser(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    args: argparse.Namespace = parser.parse_args(["bench", str(fclib_export), "--solvers", "clarabel,osqp,lemke",
                              "--out", str(tmp_path / "b"), "--no-progress"])
    with pytest.raises(co.UnsupportedProgramError,
                       match=r"^solver\(s\) osqp, lemke can take none of the 10 program\(s\) "
                       r"\(SOCP\); solvers that can: clarabel.*pgs"):
        args.func(args)
    assert not (tmp_path / "b").exists()
