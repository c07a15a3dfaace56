"""The compiled verdict (:mod:`contactopt.programs.relative_kernel`) against the NumPy one
(``conic_check`` and ``conic_data_violation``), on random programs that reach every branch of
the scales and on real step programs, compiled and as plain Python.

Two tolerances, both from how the numbers are made. Away from an optimum (a candidate off the
solution) every field is a sum whose terms do not cancel: the two summation orders agree to
1e-12 of the field itself. At a solution the absolute fields are round-off of cancelling sums
(``s = b - A x`` of a satisfied row, ``x'Px + c'x + b'y``): any two orders agree to
``n eps`` of the terms summed (Higham, "Accuracy and Stability of Numerical Algorithms",
2nd ed., section 3.1), so they are compared to 1e-12 of those terms; the relative residual and
the data violation are such round-off divided by the terms of their own rows (unit-free),
compared to 1e-12 absolute.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.programs import ConicProgram
from contactopt.programs.conic import SOC, Nonneg, Zero
from contactopt.programs.relative import FLOOR, conic_data_violation, data_reach
from contactopt.programs.relative_kernel import cone_arrays, conic_verdict
from contactopt.programs.residuals import conic_check

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("primal", "dual", "gap", "complementarity", "relative")
CONES = (Zero(2), Nonneg(4), SOC(1), SOC(3), SOC(3), SOC(4), SOC(6))
N = 10  # x_0, x_1: no curvature; x_2: curvature alone, no force, an empty column of A
EMPTY_ROW = 1  # a row of the zero cone with A_i = 0 and b_i = 0: its scale is the floor


def random_program(seed: int, force: bool) -> tuple[ConicProgram, np.ndarray, np.ndarray]:
    """A feasible, bounded program over :data:`CONES` (``b = A x0 + s0``, ``s0 in K``; with
    ``force``, ``c = -P z - A'y0`` with ``y0 in K*``; else ``c = 0``), and a candidate off its
    solution with ``x_0 = x_2 = 0`` (empty reaches: one without curvature, one with)."""
    rng = np.random.default_rng(seed)
    m = sum(cone.dim for cone in CONES)
    A = rng.normal(size=(m, N)) * (rng.random((m, N)) < 0.5) * 10.0 ** rng.uniform(-2, 2, (m, 1))
    A[EMPTY_ROW] = 0.0
    A[:, 2] = 0.0
    B = rng.normal(size=(N, 4)) * 10.0 ** rng.uniform(-1, 1, (N, 1))
    B[:3] = 0.0
    P = B @ B.T
    P = 0.5 * (P + P.T)
    P[2, 2] = rng.uniform(0.5, 2.0)
    s0, y0 = np.zeros(m), np.zeros(m)
    for (kind, start, dim) in zip(*cone_arrays(CONES), strict=True):
        if kind == 1:
            s0[start:start + dim], y0[start:start + dim] = rng.uniform(0.1, 1.0, dim), rng.uniform(0.1, 1.0, dim)
        elif kind == 2:
            for v in (s0, y0):
                v[start + 1:start + dim] = rng.normal(size=dim - 1)
                v[start] = np.linalg.norm(v[start + 1:start + dim]) + rng.uniform(0.1, 1.0)
        else:
            y0[start:start + dim] = rng.normal(size=dim)
    x0 = rng.normal(size=N)
    b = A @ x0 + s0
    b[EMPTY_ROW] = 0.0
    z = rng.normal(size=N)
    z[2] = 0.0
    c = -(P @ z) - A.T @ y0 if force else np.zeros(N)
    program = ConicProgram(sp.csc_matrix(P), c, sp.csc_matrix(A), b, CONES)
    x, y = rng.normal(size=N), rng.normal(size=m) * 10.0 ** rng.uniform(-1, 1, m)
    x[[0, 2]] = 0.0
    y[rng.random(m) < 0.2] = 0.0
    return program, x, y


def assert_same(program: ConicProgram, x: np.ndarray, y: np.ndarray, at_solution: bool,
                got: tuple[np.ndarray, float] | None = None) -> None:
    """The kernel's fields (``got``: computed elsewhere, e.g. in a process without numba)
    against ``conic_check`` and ``conic_data_violation`` (see the module docstring)."""
    expected, s = conic_check(program, x, y)
    numbers = [*(getattr(expected, name) for name in FIELDS), conic_data_violation(program, x, s)]
    if got is None:
        residuals, data = conic_verdict(program, x, y)
        got = (np.array([getattr(residuals, name) for name in FIELDS]), data)
    values = [*got[0], got[1]]
    atol = np.full(6, 1e-300)
    if at_solution:
        abs_A, abs_P, ax, ay = abs(program.A), abs(program.P), np.abs(x), np.abs(y)
        rows = np.abs(program.b) + abs_A @ ax
        atol[:4] = 1e-12 * np.array([
            rows.max(initial=0.0),
            max((np.abs(program.c) + abs_P @ ax + abs_A.T @ ay).max(initial=0.0), ay.max(initial=0.0)),
            ax @ (abs_P @ ax) + np.abs(program.c) @ ax + np.abs(program.b) @ ay,
            rows @ ay])
        atol[4:] = 1e-12
    for name, value, reference, tol in zip([*FIELDS, "data violation"], values, numbers, atol, strict=True):
        assert abs(value - reference) <= max(1e-12 * abs(reference), tol), (name, value, reference)


@pytest.mark.parametrize("force", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_programs_off_and_at_the_solution(seed: int, force: bool) -> None:
    program, x, y = random_program(seed, force)
    reach = np.abs(x) + data_reach(program)
    assert not (reach[[0, 2]] > FLOOR * reach.max()).any()  # both branches of filled_reach are read
    assert program.P[0, 0] == 0.0 < program.P[2, 2] and program.A[:, 2].nnz == 0 and program.A[EMPTY_ROW].nnz == 0
    assert data_reach(program).any() == force  # without a force: the rows' own demand (_driven_reach)
    assert_same(program, x, y, at_solution=False)
    solution = co.solve(program, "clarabel")
    assert solution.status.usable, solution.message
    assert_same(program, solution.x, solution.y, at_solution=True)


def test_empty_program_and_non_finite_candidate() -> None:
    empty = ConicProgram(sp.csc_matrix((2, 2)), np.zeros(2), sp.csc_matrix((0, 2)), np.zeros(0), ())
    assert_same(empty, np.array([1.0, -2.0]), np.zeros(0), at_solution=False)
    program, x, y = random_program(3, True)
    residuals, data = conic_verdict(program, np.full(N, np.nan), y)
    assert residuals.relative == np.inf and data == np.inf
    with pytest.raises(co.ContactoptError, match="conic_verdict: x must have shape"):
        conic_verdict(program, x[:-1], y)


STEPS = [("box_slide.toml", "ccp", {}, "clarabel"), ("box_slide.toml", "anitescu", {}, "clarabel"),
         ("box_slide.toml", "sap", {}, "newton"), ("box_slide.toml", "regularized", {"form": "primal"}, "newton"),
         ("box_slide.toml", "regularized", {"form": "dual"}, "clarabel"), ("box_stack.toml", "ccp", {}, "clarabel"),
         ("mjcf/sphere_pile.xml", "ccp", {}, "clarabel")]


def step_program(path: str, formulation: str, options: dict[str, str]) -> ConicProgram:
    scene = co.load_scene(ROOT / "problems" / path)
    program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation, options)
    assert isinstance(program, ConicProgram)
    return program


@pytest.mark.parametrize(("path", "formulation", "options", "solver"), STEPS)
def test_step_programs_at_and_near_the_solution(path: str, formulation: str, options: dict[str, str],
                                                solver: str) -> None:
    program = step_program(path, formulation, options)
    solution = co.solve(program, solver)
    assert solution.status.usable, solution.message
    assert_same(program, solution.x, solution.y, at_solution=True)
    rng = np.random.default_rng(5)  # a candidate 0.1 % off: residuals made by the rows, not round-off
    x = solution.x * (1.0 + 1e-3 * rng.normal(size=program.n))
    y = solution.y * (1.0 + 1e-3 * rng.normal(size=program.m))
    assert_same(program, x, y, at_solution=False)


def test_a_change_of_units_leaves_the_relative_residual() -> None:
    # P' = a D P D, c' = a D c, A' = R A D, b' = R b (one row factor per cone) with x' = x / d,
    # y' = a y / r: every row and column is multiplied by a positive constant, which every ratio
    # of relative.py cancels; left: the rounding of the scaled data (1e-10 of the value)
    for force in (True, False):
        program, x, y = random_program(4, force)
        rng = np.random.default_rng(6)
        d, a = 10.0 ** rng.uniform(-3, 3, N), 10.0 ** rng.uniform(-3, 3)
        r = np.repeat(10.0 ** rng.uniform(-3, 3, len(CONES)), [cone.dim for cone in CONES])
        D, R = sp.diags(d), sp.diags(r)
        scaled = ConicProgram(sp.csc_matrix(a * (D @ program.P @ D)), a * d * program.c,
                              sp.csc_matrix(R @ program.A @ D), r * program.b, program.cones)
        before = conic_verdict(program, x, y)[0].relative
        after = conic_verdict(scaled, x / d, a * y / r)[0].relative
        assert after == pytest.approx(before, rel=1e-10)
        assert_same(scaled, x / d, a * y / r, at_solution=False)


def test_without_numba_the_same_numbers(tmp_path: Path) -> None:
    """A process with ``CONTACTOPT_NO_NUMBA`` runs the kernel as plain Python: the same numbers
    (to the tolerances above) on the random programs and the box's step programs."""
    cases = []
    for seed in (0, 1):
        for force in (True, False):
            program, x, y = random_program(seed, force)
            cases.append((program, x, y, False))
    for path, formulation, options, solver in STEPS[:3]:
        program = step_program(path, formulation, options)
        solution = co.solve(program, solver)
        cases.append((program, solution.x, solution.y, True))
    arrays = {}
    for i, (program, x, y, _) in enumerate(cases):
        P, A = program.P, program.A
        kind, start, dim = cone_arrays(program.cones)
        for name, value in zip(("Pp", "Pi", "Px", "c", "Ap", "Ai", "Ax", "b", "kind", "start", "dim", "x", "y"),
                               (P.indptr, P.indices, P.data, program.c, A.indptr, A.indices, A.data, program.b,
                                kind, start, dim, x, y), strict=True):
            arrays[f"{i}_{name}"] = value
    np.savez(tmp_path / "cases.npz", **arrays)
    script = (
        "import sys, numpy as np\n"
        "from contactopt.programs import relative_kernel as rk\n"
        "rk.ensure_compiled()\n"
        "assert not rk.AVAILABLE and type(rk.verdict_kernel).__name__ == 'function'\n"
        "d = np.load(sys.argv[1])\n"
        "names = ('Pp', 'Pi', 'Px', 'c', 'Ap', 'Ai', 'Ax', 'b', 'kind', 'start', 'dim', 'x', 'y')\n"
        "out = [rk.verdict_kernel(*(d[f'{i}_{n}'] for n in names), np.empty(d[f'{i}_b'].shape[0]))\n"
        "       for i in range(int(sys.argv[3]))]\n"
        "np.save(sys.argv[2], np.array(out))\n")
    env = {**os.environ, "CONTACTOPT_NO_NUMBA": "1"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "cases.npz"), str(tmp_path / "out.npy"),
                    str(len(cases))], check=True, env=env, timeout=120)
    plain = np.load(tmp_path / "out.npy")
    for (program, x, y, at_solution), row in zip(cases, plain, strict=True):
        assert_same(program, x, y, at_solution, got=(row[:5], float(row[5])))
