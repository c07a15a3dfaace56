"""The derivative of SAP's primal through its Newton Hessian (contactopt.derivatives.primal).

References: the general conic derivative (:class:`ConicDerivative`, the residual map's
Jacobian) on the same program and solution, which must be the same linear map (the Schur
complement identity of the module docstring: measured 1e-16 to 5e-14 relative, asked 1e-6);
central differences of the ``newton`` solver re-solved on perturbed steps (its answer is exact
to rounding ~1e-15, so with ``h = 1e-6`` the quotient errs by ``O(h^2)`` plus ``1e-15 / h``,
~1e-9, asked 1e-5); the JVP/VJP adjoint identity (rounding, 1e-10); and a closed form at the
cone's tip for the one-sided derivatives.
"""

from __future__ import annotations

import dataclasses
import warnings
from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import PROBLEMS

import contactopt as co
from contactopt.core.errors import OptionError, UnsupportedProgramError
from contactopt.derivatives import NondifferentiableWarning, PrimalDerivative, program_derivative
from contactopt.derivatives.conic import ConicDerivative
from contactopt.programs.cone_projection import project
from contactopt.programs.primal import PrimalConicProgram, PrimalProgram

AGREE = 1e-6  # against ConicDerivative (issue 26's program-level bound)
FD_TOL = 1e-5
ADJOINT_TOL = 1e-10
STEP = 1e-6
EXACT = {"tol": 0.0, "tol_abs": 0.0}  # newton to its rounding floor (cost_tol)


@cache
def _step(case: str) -> PrimalConicProgram:
    """One step's program: the box sliding (four sliding, four separated corners), three
    spheres with the bottom one pushed sideways (sliding, sticking and separated contacts),
    and the box under ``regularized -o form=primal`` (pyramidal: half lines; elliptic: cones)."""
    elliptic = {"form": "primal", "cone": "elliptic", "epsilon": float("inf")}
    name, formulation, options = {
        "box_sap": ("box_slide.toml", "sap", {}),
        "spheres_sap": ("sphere_stack.toml", "sap", {}),
        "box_pyramidal": ("box_slide.toml", "regularized", {"form": "primal"}),
        "box_elliptic": ("box_slide.toml", "regularized", elliptic),
        "tilted_box_general": ("box_slide.toml", "regularized", elliptic),
        "tilted_box_scaled": ("box_slide.toml", "regularized", elliptic),
    }[case]
    scene = co.load_scene(PROBLEMS / name)
    q, v = scene.q0.copy(), scene.v0.copy()
    if name == "sphere_stack.toml":
        v[0] = 0.5
    if case.startswith("tilted"):  # pitched by 0.1 rad: unequal diag(W) on t1, t2 (as tests/test_sap.py)
        q[3:7] = [np.cos(0.05), 0.0, np.sin(0.05), 0.0]
    program = co.formulate(scene.system, q, v, scene.dt, formulation, options=options)
    assert isinstance(program, PrimalConicProgram) and program.primal is not None
    if case == "tilted_box_scaled":  # a coefficient per tangential row (MuJoCo's condim 4 and 6 cones)
        primal = program.primal
        program = dataclasses.replace(primal, scale=primal.scale * np.tile([1.0, 1.0, 1.5], primal.m // 3)).to_conic()
    assert program.primal is not None
    kinds = {group.kind for group in program.primal.cone_layout.groups}
    assert kinds >= {"tilted_box_general": {"soc_general"}, "tilted_box_scaled": {"soc_scaled"}}.get(case, set())
    return program


def _solve(program: co.ConicProgram) -> co.Solution:
    solution = co.solve(program, "newton", EXACT)
    assert solution.status is co.Status.OPTIMAL, solution.message
    return solution


def _regimes(program: PrimalConicProgram, solution: co.Solution) -> set[str]:
    primal = program.primal
    assert primal is not None
    y = (primal.v_hat - primal.J @ solution.x[:primal.nv]) / primal.R
    gamma = project(primal.cone_layout, y, primal.R, hessian=False)[0]
    found = set()
    for group in primal.cone_layout.groups:
        Y, g = y[group.rows], gamma[group.rows]
        if group.dim == 1:
            found |= {"active" if value > 0 else "off" for value in g[:, 0]}
            continue
        stick = np.linalg.norm(Y[:, 1:], axis=1) <= group.mu * Y[:, 0]
        found |= {"stick" if s else ("off" if n == 0 else "slide") for s, n in zip(stick, g[:, 0], strict=True)}
    return found


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _stacked(tangent: co.derivatives.ConicTangent) -> np.ndarray:
    return np.concatenate([tangent.x, tangent.y, tangent.s])


def _dense(value: object) -> np.ndarray:
    return value.toarray() if sp.issparse(value) else np.asarray(value)  # type: ignore[attr-defined]


def _pair(gradient: co.derivatives.ConicGradient, d: dict[str, np.ndarray]) -> float:
    return float(np.sum(d["P"] * _dense(gradient.P)) + d["c"] @ gradient.c + np.sum(d["A"] * _dense(gradient.A))
                 + d["b"] @ gradient.b)


@pytest.mark.parametrize("case", ["box_sap", "spheres_sap", "box_pyramidal", "box_elliptic", "tilted_box_general",
                                  "tilted_box_scaled"])
def test_same_map_as_the_conic_derivative(case: str) -> None:
    """Arbitrary (dense, structure-breaking) data directions: JVP and VJP equal ConicDerivative's."""
    program = _step(case)
    solution = _solve(program)
    primal_derivative = program_derivative(program, solution)
    conic = program_derivative(program, solution, method="conic")
    assert isinstance(primal_derivative, PrimalDerivative) and isinstance(conic, ConicDerivative)
    assert primal_derivative.degenerate == conic.degenerate == ()
    rng = np.random.default_rng(len(case))
    n, m = program.n, program.m
    dP = rng.standard_normal((n, n))
    d = {"P": dP + dP.T, "c": rng.standard_normal(n), "A": rng.standard_normal((m, n)), "b": rng.standard_normal(m)}
    tangent = primal_derivative.jvp(d["P"], d["c"], d["A"], d["b"])
    assert _relative(_stacked(tangent), _stacked(conic.jvp(d["P"], d["c"], d["A"], d["b"]))) <= AGREE
    g = (rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal(m))
    gradient, reference = primal_derivative.vjp(*g), conic.vjp(*g)
    for name in ("P", "c", "A", "b"):
        assert _relative(_dense(getattr(gradient, name)), _dense(getattr(reference, name))) <= AGREE, name
    pairing = tangent.x @ g[0] + tangent.y @ g[1] + tangent.s @ g[2]
    assert abs(pairing - _pair(gradient, d)) <= ADJOINT_TOL * abs(pairing)
    sparse_form = primal_derivative.vjp(*g, dense=False)  # the same entries on the data's pattern
    assert np.array_equal(sparse_form.A.indptr, program.A.indptr)
    np.testing.assert_allclose(sparse_form.A.toarray(), gradient.A * (program.A.toarray() != 0), rtol=1e-14)


def _perturbed(primal: PrimalProgram, h: float, d: dict[str, np.ndarray]) -> PrimalConicProgram:
    """The step with its physical data moved along ``d``: free velocity, target velocity,
    constraint Jacobian (its stored entries) and regularization (relative)."""
    J = primal.J.copy()
    J.data = J.data + h * d["J"]
    return dataclasses.replace(primal, v_star=primal.v_star + h * d["v_star"], v_hat=primal.v_hat + h * d["v_hat"],
                               J=J, R=primal.R * (1.0 + h * d["R"])).to_conic()


def _data_direction(primal: PrimalProgram, d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The conic data's tangent along ``d`` (exact: P, c, A, b are linear in the moved data)."""
    plus, minus = _perturbed(primal, STEP, d), _perturbed(primal, -STEP, d)
    return {"P": (plus.P - minus.P).toarray() / (2 * STEP), "c": (plus.c - minus.c) / (2 * STEP),
            "A": (plus.A - minus.A).toarray() / (2 * STEP), "b": (plus.b - minus.b) / (2 * STEP)}


def _physical_direction(rng: np.random.Generator, primal: PrimalProgram) -> dict[str, np.ndarray]:
    size = float(np.abs(primal.v_star).max())
    return {"v_star": size * rng.standard_normal(primal.nv), "v_hat": size * rng.standard_normal(primal.m),
            "J": rng.standard_normal(primal.J.nnz), "R": rng.standard_normal(primal.m)}


@pytest.mark.parametrize("case", ["box_sap", "spheres_sap"])
def test_central_differences_of_the_newton_solver(case: str) -> None:
    program = _step(case)
    primal = program.primal
    assert primal is not None
    solution = _solve(program)
    regimes = _regimes(program, solution)
    assert {"slide", "off"} <= regimes and (case == "box_sap" or "stick" in regimes)
    derivative = program_derivative(program, solution)
    assert isinstance(derivative, PrimalDerivative)
    rng = np.random.default_rng(3)
    d = _physical_direction(rng, primal)
    data = _data_direction(primal, d)
    solutions = {h: _solve(_perturbed(primal, h, d)) for h in (STEP, -STEP)}
    central = np.concatenate([(solutions[STEP].x - solutions[-STEP].x), (solutions[STEP].y - solutions[-STEP].y),
                              (solutions[STEP].s - solutions[-STEP].s)]) / (2 * STEP)
    assert _relative(_stacked(derivative.jvp(data["P"], data["c"], data["A"], data["b"])), central) <= FD_TOL
    # VJP: the gradient of <g, x> paired with another physical direction, against its quotient
    g = rng.standard_normal(program.n)
    e = _physical_direction(rng, primal)
    predicted = _pair(derivative.vjp(gx=g), _data_direction(primal, e))
    quotient = (g @ _solve(_perturbed(primal, STEP, e)).x - g @ _solve(_perturbed(primal, -STEP, e)).x) / (2 * STEP)
    assert abs(predicted - quotient) <= FD_TOL * abs(predicted)


def _tip_program() -> PrimalConicProgram:
    """``A = I``, ``J = I``, one friction cone with ``v_hat = v*``: the optimum is ``v = v*``
    with ``gamma = 0`` and ``y = 0`` in (S3): the cone's tip, ``s = y = 0`` in conic terms."""
    v_star = np.array([0.2, -0.1, 0.3])
    return PrimalProgram(A=sp.identity(3, format="csc"), v_star=v_star, J=sp.identity(3, format="csr"),
                         R=np.array([0.5, 0.1, 0.1]), v_hat=v_star.copy(), scale=np.array([1.0, 0.4, 0.4]),
                         cones=(co.SOC(3),)).to_conic()


@pytest.mark.parametrize(("branch", "expected"), [("active", 1.0 / 1.5), ("inactive", 0.0)])
def test_cone_tip_reported_with_its_one_sided_derivative(branch: str, expected: float) -> None:
    """Raising ``v_hat_n`` closes the contact in stiction, where ``v = (R v* + v_hat) / (R + 1)``
    per row: ``dv_n / dv_hat_n = 1 / (1 + R_n)`` (the active side); lowering it leaves the
    contact open, ``v = v*`` (the inactive side, 0). Each branch gives its side's, as
    ConicDerivative does, and the one-sided quotient of the solver agrees."""
    program = _tip_program()
    solution = _solve(program)
    with pytest.warns(NondifferentiableWarning, match="strict complementarity"):
        derivative = program_derivative(program, solution, branch=branch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NondifferentiableWarning)
        conic = program_derivative(program, solution, branch=branch, method="conic")
    assert isinstance(derivative, PrimalDerivative)
    assert [(p.cone, p.rows, p.kind, p.branch) for p in derivative.degenerate] == [(0, (0, 3), "soc_tip", branch)]
    assert derivative.degenerate == conic.degenerate
    primal, normal = program.primal, np.array([1.0, 0.0, 0.0])
    assert primal is not None
    db = -primal.scale * normal  # b = -S v_hat
    tangent = derivative.jvp(db=db)
    assert tangent.x[0] == pytest.approx(expected, abs=1e-12)
    assert _relative(_stacked(tangent), _stacked(conic.jvp(db=db))) <= AGREE
    side = 1.0 if branch == "active" else -1.0
    moved = dataclasses.replace(primal, v_hat=primal.v_hat + side * STEP * normal).to_conic()
    assert (_solve(moved).x[0] - solution.x[0]) / (side * STEP) == pytest.approx(expected, abs=1e-9)


def test_dispatch_and_refusals() -> None:
    program = _step("box_sap")
    solution = _solve(program)
    assert isinstance(program_derivative(program, solution, method="conic"), ConicDerivative)
    with pytest.raises(OptionError, match="method"):
        program_derivative(program, solution, method="newton")
    plain = co.ConicProgram(program.P, program.c, program.A, program.b, program.cones, variables=program.variables)
    assert isinstance(program_derivative(plain, solution), ConicDerivative)  # no primal carried: the general one
    with pytest.raises(UnsupportedProgramError, match="PrimalConicProgram"):
        program_derivative(plain, solution, method="primal")
    assert program.primal is not None
    boxed = dataclasses.replace(program.primal, J=sp.vstack([program.primal.J, program.primal.J[:1]], format="csr"),
                                R=np.r_[program.primal.R, 1.0], v_hat=np.r_[program.primal.v_hat, 0.0],
                                scale=np.r_[program.primal.scale, 1.0], box=np.array([0.1])).to_conic()
    boxed_solution = _solve(boxed)
    assert isinstance(program_derivative(boxed, boxed_solution), ConicDerivative)  # box rows: the general one
    with pytest.raises(UnsupportedProgramError, match="box"):
        PrimalDerivative(boxed, boxed_solution)
