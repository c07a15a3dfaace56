"""Property-based fuzzing (hypothesis): random programs through every installed solver that
takes them, and random (valid and corrupted) scene files through ``load_scene``.

Properties, whatever the program (feasible, degenerate, infeasible, unbounded):
* a status of ``optimal`` comes with residuals that contactopt recomputes here, from ``x`` and
  ``y`` alone, below the level at which the solver layer believes a solver (each relative to
  its own row, :data:`contactopt.solvers.base.INACCURATE_LEVEL`);
* two solvers that both claim ``optimal`` agree on the objective value;
* a program with a known infeasibility certificate is never reported optimal.
Scenes: ``load_scene`` returns a Scene or raises one :class:`SceneError` whose message names
the corrupted key; nothing else escapes.

Budgets: the ``default`` profile (tests/conftest.py) keeps this file at a few seconds; run
``HYPOTHESIS_PROFILE=slow python -m pytest tests/test_fuzz.py -m "slow or not slow" --timeout 1800`` for
10^4 cases per property.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, note
from hypothesis import strategies as st

import contactopt as co
from contactopt import solvers
from contactopt.core.errors import ContactoptError, SceneError
from contactopt.programs import LCP, ConicProgram, Nonneg, Status, Zero, residuals
from contactopt.programs.conic import SOC
from contactopt.solvers.base import INACCURATE_LEVEL

# Solvers fuzzed: every installed one; cvxpy once (its default inner solver is clarabel, so
# it checks the modelling layer, not a new algorithm) and qpsolvers with its default.
SOLVERS = solvers.available()

entries = st.integers(-4, 4).map(float) | st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)


def _matrix(draw: st.DrawFn, rows: int, cols: int) -> np.ndarray:
    return np.array(draw(st.lists(entries, min_size=rows * cols, max_size=rows * cols))).reshape(rows, cols)


def _psd(draw: st.DrawFn, n: int) -> np.ndarray:
    """``L L^T`` with ``L`` of rank ``r <= n`` (``r = 0``: a linear objective)."""
    rank = draw(st.integers(0, n))
    L = _matrix(draw, n, rank)
    return L @ L.T


@st.composite
def conic_programs(draw: st.DrawFn, soc: bool) -> tuple[ConicProgram, str]:
    """``(program, case)``: case ``feasible`` (built around a point with ``s in K``, slacks
    at zero on purpose: degenerate), ``infeasible`` (two rows ``a x <= beta`` and
    ``-a x <= -beta - 1``) or ``free`` (no structure imposed: may be unbounded)."""
    n = draw(st.integers(1, 5))
    case = draw(st.sampled_from(["feasible", "infeasible", "free"]))
    cones: list[Any] = []
    dims: list[int] = []
    if draw(st.booleans()):
        dims.append(draw(st.integers(1, 2)))
        cones.append(Zero(dims[-1]))
    dims.append(draw(st.integers(0, 5)))
    cones.append(Nonneg(dims[-1]))
    if soc:
        for _ in range(draw(st.integers(1, 2))):
            dims.append(draw(st.integers(2, 3)))
            cones.append(SOC(dims[-1]))
    m = sum(dims)
    A = _matrix(draw, m, n)
    if m >= 2 and draw(st.booleans()):
        A[-1] = A[0]  # a repeated row: linearly dependent constraints
    x0 = np.array(draw(st.lists(entries, min_size=n, max_size=n)))
    s0 = np.zeros(m)
    row = 0
    for cone, dim in zip(cones, dims, strict=True):
        block = np.array(draw(st.lists(st.integers(0, 3).map(float), min_size=dim, max_size=dim)))
        if cone.kind == "nonneg":
            s0[row:row + dim] = block  # zeros included: active rows
        elif cone.kind == "soc":
            tail = block[1:] - 1.5
            where = draw(st.sampled_from(["apex", "boundary", "interior"]))
            head = {"apex": 0.0, "boundary": float(np.linalg.norm(tail)),
                    "interior": float(np.linalg.norm(tail)) + 1.0}[where]
            s0[row:row + dim] = np.concatenate([[head], tail if where != "apex" else 0 * tail])
        row += dim
    b = A @ x0 + s0
    if case == "infeasible":
        a = np.array(draw(st.lists(st.integers(-3, 3).map(float), min_size=n, max_size=n)))
        assume(np.any(a))
        A = np.vstack([A, a, -a])
        beta = float(draw(st.integers(-3, 3)))
        b = np.concatenate([b, [beta, -beta - 1.0]])
        cones.append(Nonneg(2))
    elif case == "free":
        b = b + np.array(draw(st.lists(entries, min_size=m, max_size=m))) if m else b
    P = _psd(draw, n)
    c = np.array(draw(st.lists(entries, min_size=n, max_size=n)))
    program = ConicProgram(P=sp.csc_matrix(P), c=c, A=sp.csc_matrix(A), b=b, cones=tuple(cones))
    return program, case


@st.composite
def lcps(draw: st.DrawFn) -> tuple[LCP, str]:
    """``(lcp, case)``: ``monotone`` (``B B^T`` plus a skew part, degenerate ``q`` zeros
    allowed), ``symmetric`` (PSD, a convex QP's KKT), ``pmatrix`` (diagonally dominant: one
    solution), or ``free`` (any ``M``: may have none)."""
    n = draw(st.integers(1, 6))
    case = draw(st.sampled_from(["monotone", "symmetric", "pmatrix", "free"]))
    B = _matrix(draw, n, n)
    if case == "monotone":
        M = B @ B.T + (B - B.T)
    elif case == "symmetric":
        M = B @ B.T
    elif case == "pmatrix":
        M = B + np.diag(np.abs(B).sum(axis=1) + 1.0)
    else:
        M = B
    q = np.array(draw(st.lists(st.integers(-3, 3).map(float) | entries, min_size=n, max_size=n)))
    return LCP(M=M, q=q), case


def _objective(program: ConicProgram | LCP, x: np.ndarray) -> float:
    if isinstance(program, LCP):
        return float(0.5 * x @ program.M @ x + program.q @ x)
    return float(0.5 * x @ (program.P @ x) + program.c @ x)


def _run_all(program: ConicProgram | LCP) -> dict[str, co.Solution]:
    """Every installed solver that takes ``program``; each claim of optimal is re-checked."""
    answers: dict[str, co.Solution] = {}
    if isinstance(program, ConicProgram):  # the data, for a failing example's report
        note(f"P={program.P.toarray().tolist()} c={program.c.tolist()} A={program.A.toarray().tolist()} "
             f"b={program.b.tolist()} cones={program.cones}")
    for name in SOLVERS:
        if not solvers.can_take(program, name):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                solution = solvers.solve(program, name)
            except ContactoptError as exc:  # e.g. a conversion whose conditions fail at solve time
                note(f"{name}: {exc}")
                continue
        note(f"{name}: {solution.status} x={solution.x} ({solution.message})")
        if solution.status is Status.OPTIMAL:
            y = None if isinstance(program, LCP) else solution.y
            res = residuals(program, solution.x, y)  # recomputed here, from x and y only
            assert res.relative <= INACCURATE_LEVEL * (1 + 1e-9), (name, res)
            answers[name] = solution
    return answers


def scale(program: ConicProgram | LCP, x: np.ndarray, y: np.ndarray) -> float:
    """The size of the numbers an answer adds up (data and products, at least 1): the unit of
    the agreement bounds below (a global bound, for comparing two solvers' answers)."""
    if isinstance(program, LCP):
        terms = [np.abs(program.q).max(initial=0.0), np.abs(program.M @ x).max(initial=0.0)]
    else:
        terms = [np.abs(program.c).max(initial=0.0), np.abs(program.b).max(initial=0.0),
                 np.abs(program.P @ x).max(initial=0.0), np.abs(program.A.T @ y).max(initial=0.0),
                 np.abs(program.A @ x).max(initial=0.0)]
    return max(1.0, *map(float, terms))


def _agree(program: ConicProgram | LCP, answers: dict[str, co.Solution]) -> None:
    values = {name: _objective(program, sol.x) for name, sol in answers.items()}
    if len(values) < 2:
        return
    size = max(scale(program, sol.x, sol.y) for sol in answers.values())
    # Perturbation bound (weak duality): an answer whose residuals are r can be below the
    # optimum by at most ||y||_1 r_primal (the price of its infeasibility) and above it by at
    # most ||x||_1 r_dual + gap + complementarity. Summed over the answers, plus rounding at
    # the data's scale. Ill-posed data (a constraint row of 1e-45, a dual of 1e45) make the
    # optimal value discontinuous, and this bound then says how far "optimal" answers may be.
    # Any answer's dual prices any other answer's infeasibility, so the largest dual is used.
    tolerance = 1e-9 * size * size
    y_norm = max(float(np.abs(sol.y if sol.y.size else sol.x).sum()) for sol in answers.values())
    x_norm = max(float(np.abs(sol.x).sum()) for sol in answers.values())
    for sol in answers.values():
        res = residuals(program, sol.x, None if isinstance(program, LCP) else sol.y)
        products = sum(v for v in (res.gap, res.complementarity) if not math.isnan(v))
        tolerance += 2 * (y_norm * res.primal + x_norm * res.dual + products)
    spread = max(values.values()) - min(values.values())
    assert spread <= tolerance, values


def _nearly_flat(program: ConicProgram) -> bool:
    """Whether a variable's reach ``|c_j| / P_jj`` exceeds what the rows ask of it by 1e6 or more:
    the known limit of ``test_found_nearly_flat_infeasible_qp_is_not_optimal`` (a row violated by
    what the rows ask is within such a program's precision)."""
    from contactopt.programs.relative import column_max, data_reach

    asked = column_max(abs(program.A).tocsc(), np.abs(program.b))
    return bool(np.any((asked > 0) & (data_reach(program) > 1e6 * asked)))


@given(conic_programs(soc=False))
def test_fuzz_qp(case_program: tuple[ConicProgram, str]) -> None:
    program, case = case_program
    answers = _run_all(program)
    if case == "infeasible" and not _nearly_flat(program):  # the known limit is pinned below
        assert not answers, "a program with rows a x <= beta and a x >= beta + 1 reported optimal"
    _agree(program, answers)


@given(conic_programs(soc=True))
def test_fuzz_socp(case_program: tuple[ConicProgram, str]) -> None:
    program, case = case_program
    answers = _run_all(program)
    if case == "infeasible":
        assert not answers
    _agree(program, answers)


@given(lcps())
def test_fuzz_lcp(case_lcp: tuple[LCP, str]) -> None:
    lcp, case = case_lcp
    answers = _run_all(lcp)
    if case == "symmetric":  # a convex QP's KKT: every solution has the same QP objective
        _agree(lcp, answers)
    if case == "pmatrix":  # exactly one solution
        zs = [sol.x for sol in answers.values()]
        # a believed answer has z_i w_i <= 1e-6 (relative); at a degenerate index (z = w = 0)
        # that allows z_i up to sqrt(1e-6) = 1e-3 of the scale, the bound used here
        size = max(scale(lcp, sol.x, sol.y) for sol in answers.values())
        for z in zs[1:]:
            np.testing.assert_allclose(z, zs[0], rtol=0, atol=2 * math.sqrt(INACCURATE_LEVEL) * size)


# --- examples the fuzzer found (kept as explicit regression tests) ------------------------------
def _qp(P: list[list[float]], c: list[float], A: list[list[float]], b: list[float]) -> ConicProgram:
    A_arr = np.array(A, dtype=float).reshape(len(b), len(c))
    return ConicProgram(P=sp.csc_matrix(np.array(P)), c=np.array(c), A=sp.csc_matrix(A_arr), b=np.array(b),
                        cones=(Nonneg(len(b)),))


def test_found_conversion_status_is_judged_on_the_given_program() -> None:
    # P = 1e-114: qp->lcp recovers x = -P^{-1} c = -1e114, the exact minimizer; judged on the
    # QP itself, against the terms of its own stationarity row (|P x| = |c| = 1), it is right
    # to rounding, and a wrong x of that size would not be (the global scale this test once
    # used saw a gap of 1e98 and could not tell)
    solution = solvers.solve(_qp([[1e-114]], [1.0], [], []), "lemke")
    assert solution.conversion == "qp->lcp"
    assert solution.residuals.relative <= 1e-15
    assert solution.x[0] == pytest.approx(-1e114, rel=1e-15)
    wrong = residuals(_qp([[1e-114]], [1.0], [], []), solution.x * (1 + 1e-3))
    assert wrong.relative > 1e-4


@pytest.mark.parametrize(("P", "c", "b"), [(1e-160, 1.0, 1.0), (1.0, 1e160, -1.0)])
def test_found_huge_answers_do_not_overflow_the_judge(P: float, c: float, b: float) -> None:
    # x = -1e160: the scale squared overflowed (OverflowError out of solve); the gap is inf - inf
    solution = solvers.solve(_qp([[P]], [c], [[1.0]], [b]), "lemke")
    if solution.status is Status.OPTIMAL:
        assert all(math.isfinite(v) for v in solution.residuals.as_dict().values())


def test_found_degenerate_lcp_through_a_conversion_is_refined() -> None:
    # 0 <= z _|_ z >= 0: z = w = 0 (degenerate). clarabel through lcp->qp gave z = 5e-6 before
    # the refinement also ran on converted programs
    solution = solvers.solve(LCP(M=np.eye(1), q=np.zeros(1)), "clarabel")
    assert solution.refined and solution.x[0] == 0.0


# --- scene files ---------------------------------------------------------------------------------
BASES: dict[str, dict[str, Any]] = {
    "cart": {"scene": {"name": "s", "dt": 0.1, "duration": 0.3, "formulation": "gauss", "solver": "clarabel"},
             "system": {"type": "cart", "parameters": {"m": 1.0, "u": 0.0}},
             "initial": {"q": [1.0], "v": [-2.0]}},
    "point_mass": {"scene": {"name": "s", "dt": 0.01, "duration": 0.1, "formulation": "anitescu"},
                   "system": {"type": "point_mass", "parameters": {"m": 1.0, "g": 9.81, "radius": 0.1}},
                   "initial": {"q": [0.0, 1.0], "v": [0.5, 0.0]},
                   "contact": {"mu": 0.3, "restitution": 0.0}, "options": {"form": "dual"}},
}

bad_values = st.sampled_from(["text", "", True, -1.0, 0.0, math.nan, math.inf, -math.inf, 1e308, [], [1.0, "a"],
                              [math.nan], {"x": 1}, 3, [1.0, 2.0, 3.0, 4.0]])


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value == math.inf else "-inf" if value == -math.inf
                                                else repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


def _toml(tables: dict[str, Any]) -> str:
    lines: list[str] = []

    def emit(prefix: str, table: dict[str, Any]) -> None:
        lines.append(f"[{prefix}]")
        nested = {k: v for k, v in table.items() if isinstance(v, dict) and k != "inline"}
        for key, value in table.items():
            if key not in nested:
                lines.append(f"{key} = {_toml_value(value)}")
        for key, value in nested.items():
            emit(f"{prefix}.{key}", value)

    for name, table in tables.items():
        if isinstance(table, dict):
            emit(name, table)
        else:
            lines.insert(0, f"{name} = {_toml_value(table)}")
    return "\n".join(lines) + "\n"


@st.composite
def corrupted_scenes(draw: st.DrawFn) -> tuple[dict[str, Any], set[str]]:
    """A base scene with 0-2 mutations: ``(tables, the names on the mutated keys' paths)``."""
    import copy

    tables = copy.deepcopy(BASES[draw(st.sampled_from(sorted(BASES)))])
    culprits: set[str] = set()
    for _ in range(draw(st.integers(0, 2))):
        paths: list[tuple[str, ...]] = [(t,) for t in tables]
        paths += [(t, k) for t, v in tables.items() if isinstance(v, dict) for k in v]
        system = tables.get("system")
        if isinstance(system, dict) and isinstance(system.get("parameters"), dict):
            paths += [("system", "parameters", k) for k in system["parameters"]]
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["delete", "replace", "unknown"]))
        parent: Any = tables
        for part in path[:-1]:
            parent = parent[part]
        if not isinstance(parent, dict):
            continue
        if action == "delete":
            parent.pop(path[-1], None)
        elif action == "replace":
            # a copy: a later mutation must not change the strategy's own sample (that made
            # data generation depend on earlier cases: hypothesis' FlakyStrategyDefinition)
            parent[path[-1]] = copy.deepcopy(draw(bad_values))
        else:
            target = parent.get(path[-1])
            if isinstance(target, dict):
                target["bogus_key"] = 1.0
                path = (*path, "bogus_key")
            else:
                parent["bogus_key"] = 1.0
                path = (*path[:-1], "bogus_key")
        culprits.update(path)
    return tables, culprits


@given(corrupted_scenes())
def test_fuzz_scene_files(scene_and_culprits: tuple[dict[str, Any], set[str]]) -> None:
    tables, culprits = scene_and_culprits
    text = _toml(tables)
    note(text)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_text(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                scene = co.load_scene(path)
            except SceneError as exc:
                message = str(exc)
                assert "\n" not in message and str(path) in message
                # the message names a mutated key or the table it sits in
                assert any(name in message for name in culprits), (culprits, message)
                return
    assert isinstance(scene, co.Scene)
    assert np.all(np.isfinite(scene.q0)) and np.all(np.isfinite(scene.v0))
    assert math.isfinite(scene.dt) and scene.dt > 0 and math.isfinite(scene.duration) and scene.duration > 0


@pytest.mark.parametrize("name", sorted(BASES))
def test_fuzz_bases_are_valid(name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "base.toml"
        path.write_text(_toml(BASES[name]))
        assert isinstance(co.load_scene(path), co.Scene)


@pytest.mark.parametrize("q3", [-1.0, -2.38799256e-191])
def test_found_pmatrix_lcp_in_any_units_is_solved(q3: float) -> None:
    """Found by the slow profile: z1, z2 driven by no q_j got the data check's floor as their
    rows' scale (pgs's right answer refused) and normalization's unit 1 (lemke failed at
    1e-191). The unique solution is z = -q3 (1, 2, 4) / 10 in any units."""
    lcp = LCP(M=np.array([[2.0, -1.0, 0.0], [0.0, 2.0, -1.0], [0.0, 1.0, 2.0]]), q=np.array([0.0, 0.0, q3]))
    for solver in ("pgs", "lemke"):
        solution = solvers.solve(lcp, solver)
        assert solution.status is Status.OPTIMAL, (solver, solution.message)
        # believed answers: rows met to CONFIRM_LEVEL (1e-7) of their terms
        np.testing.assert_allclose(solution.x, -q3 * np.array([1.0, 2.0, 4.0]) / 10, rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="known limit (issue 24's note): a nearly flat direction (P = 4.5e-48 or "
                   "1e-10, c = 1) gives x a reach (|c| / P) of 2e47 or 1e10 next to which a row violated by 1 is "
                   "within the program's precision; found by the slow profile")
@pytest.mark.parametrize("flat", [4.504115655668969e-48, 1.0000000000000002e-10])
def test_found_nearly_flat_infeasible_qp_is_not_optimal(flat: float) -> None:
    # x <= 0 and x >= 1: infeasible; lemke through the KKT LCP returns x = 0 or 1
    program = ConicProgram(P=sp.csc_matrix(np.array([[flat]])), c=np.array([1.0]),
                           A=sp.csc_matrix(np.array([[0.0], [0.0], [0.0], [1.0], [-1.0]])),
                           b=np.array([0.0, 0.0, 0.0, 0.0, -1.0]), cones=(Nonneg(3), Nonneg(2)))
    assert solvers.solve(program, "lemke").status is not Status.OPTIMAL
