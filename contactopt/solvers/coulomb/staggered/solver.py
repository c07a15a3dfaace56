"""``staggered``: staggered projections for the exact Coulomb problem (ours), after Kaufman,
Sueda, James & Pai, "Staggered projections for frictional contact in multibody systems", ACM
Trans. Graph. 27(5), 2008 (SIGGRAPH Asia), written on FCLIB's local problem
(:mod:`contactopt.programs.coulomb`: ``u = W r + q``, impulses ``r_c = [r_cN, r_cT]``).

Each iteration solves two convex QPs in turn, each one a projection in the metric of ``W``
(Kaufman et al., section 4), the other part of ``r`` held at its latest value::

    normal QP   (r_T fixed):  min 1/2 r'W r + q'r  over r_N >= 0
                              (Signorini: 0 <= r_N ⟂ u_N >= 0)
    friction QP (r_N fixed):  min 1/2 r'W r + q'r  over ||r_cT|| <= mu_c r_cN for every c
                              (maximum dissipation: the friction impulse that removes the most
                              kinetic energy; Moreau's and Coulomb's sliding law: u_cT = 0
                              inside the disk, r_cT = -mu_c r_cN u_cT / ||u_cT|| on its rim)

starting from ``r0`` (default 0: the first normal QP is frictionless, as in the paper). A
fixed point satisfies both QPs' optimality conditions, which are Signorini's condition and
Coulomb's law with maximum dissipation, i.e. De Saxcé's complementarity ``C*_mu ∋ û ⟂ r ∈
C_mu`` (where ``r_cN > 0``: ``u_cN = 0`` and ``r_cT . û_cT = -mu_c r_cN ||u_cT|| = -r_cN
û_cN + r_cN u_cN``; where ``r_cN = 0``: ``r_c = 0`` and ``û_cN = u_cN + mu_c ||u_cT|| >= mu_c
||u_cT||``). The iteration stops when FCLIB's error is at most ``tol`` and contactopt's own
judgement believes the answer (:func:`~contactopt.programs.coulomb.coulomb_believed`), else
after ``max_iterations`` with ``MAX_ITERATIONS`` and the error reached. Like the paper's method
it has no general convergence proof: each QP is convex, their alternation is not a descent
method of one function (the friction disks move with ``r_N``).

**Inner solver** (option ``inner``): ``"gauss_seidel"`` (default, 5-50x faster than an interior
point on the box, table, stack and pile steps) or ``"clarabel"`` or any contactopt solver that takes
the QPs, built as :class:`~contactopt.programs.conic.ConicProgram` (normal: ``Nonneg`` rows;
friction: one second-order cone ``(mu_c r_cN, r_cT)`` per contact with a fixed first entry,
``Zero`` rows where the disk has radius 0), answers projected onto the sets; ``"gauss_seidel"``:
exact projected Gauss-Seidel on ``W``'s blocks
(:mod:`contactopt.solvers.coulomb.staggered.kernel`, compiled with numba), each stage swept until no
impulse moves by more than ``inner_tol`` of the largest (at most ``inner_sweeps`` sweeps; a
stage left unsettled is taken up again by the next iteration, warm).

Options (:mod:`contactopt.programs.coulomb`'s common ones): ``tol`` (1e-8, FCLIB's error),
``max_iterations`` (200, iterations of the two QPs), ``history`` (False; True: one
:func:`~contactopt.programs.coulomb.coulomb_criteria` row per iteration, the start included,
with ``iteration``, ``time`` and ``inner`` (the inner iterations of the two QPs), as
:attr:`Solution.history`), ``r0`` (warm start, projected onto ``C_mu``), ``symmetrize`` (the
QPs need a symmetric ``W``: a nonsymmetric one is refused unless True, which iterates on
``(W + W^T)/2`` and says so); and ``inner``, ``inner_options`` (options of an inner
contactopt solver), ``inner_tol`` (1e-12) and ``inner_sweeps`` (200) for ``gauss_seidel``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, OptionError
from contactopt.programs import ConicProgram, Solution, Status
from contactopt.programs.conic import SOC, Cone, Nonneg, Zero
from contactopt.programs.coulomb import COULOMB_CONFIRM_LEVEL, CoulombProgram, coulomb_criteria, coulomb_residuals
from contactopt.programs.coulomb_error import project_cones
from contactopt.solvers.base import Program, Registry, SolverSpec, Stopwatch, make_solution
from contactopt.solvers.coulomb.options import coulomb_program
from contactopt.solvers.coulomb.staggered import kernel
from contactopt.solvers.history import Recorder

FloatArray = NDArray[np.float64]

SPEC = SolverSpec(
    name="staggered", kinds=frozenset({"coulomb"}), module=__name__, requires=None, install_hint="(built in)",
    description="staggered projections: normal and friction QPs in turn (Kaufman et al. 2008; ours)",
    warm_start="r0", normalize=False, history=True, composite=True,
)

GAUSS_SEIDEL = "gauss_seidel"
DEFAULTS: dict[str, Any] = {"tol": 1e-8, "max_iterations": 200, "history": False, "r0": None, "symmetrize": False,
                            "inner": "gauss_seidel", "inner_options": None, "inner_tol": 1e-12, "inner_sweeps": 200}


def solve(program: Program, variant: str | None, options: Mapping[str, Any], *, registry: Registry) -> Solution:
    """``registry``: the solver registry, whose ``solve`` takes the conic stages' QPs."""
    watch = Stopwatch()
    with watch.time("setup"):
        solved, start, note = coulomb_program("staggered", program, options, set(DEFAULTS), needs_symmetry=True)
        opts = _checked({**DEFAULTS, **options}, registry)
        r = np.asarray(project_cones(start.reshape(-1, solved.dim), solved.mu).reshape(-1))  # a start in C_mu
        if opts["inner"] == GAUSS_SEIDEL:
            kernel.ensure_compiled()
            stage: _GaussSeidel | _ConicStages = _GaussSeidel(solved, opts)
        else:
            stage = _ConicStages(solved, opts, registry)
    recorder = Recorder() if opts["history"] else None
    with watch.time("solve"):
        if recorder is not None:
            recorder.restart()
        status, r, iterations, message = _iterate(solved, r, stage, opts, recorder)
    return make_solution(program, solver="staggered", status=status, x=r, y=None, iterations=iterations,
                         watch=watch, message=message + note, raw={"inner_iterations": stage.inner_total},
                         history=None if recorder is None else recorder.arrays())


def _iterate(program: CoulombProgram, r: FloatArray, stage: _GaussSeidel | _ConicStages, opts: Mapping[str, Any],
             recorder: Recorder | None) -> tuple[Status, FloatArray, int, str]:
    """The alternation of the module docstring: (status, r, iterations, message)."""
    tol, budget = float(opts["tol"]), int(opts["max_iterations"])
    inner_before = 0

    def observe(iteration: int) -> None:
        if recorder is not None:
            row = {"inner": float(stage.inner_total - inner_before)}
            recorder.add(iteration, lambda: {**coulomb_criteria(program, r), **row})

    observe(0)
    error = math.inf
    for iteration in range(budget + 1):
        residuals = coulomb_residuals(program, r)
        error = residuals.fclib
        if not np.all(np.isfinite(r)):
            return Status.NUMERICAL_ERROR, r, iteration, f"non-finite impulses after {iteration} iterations"
        if error <= tol and residuals.relative <= COULOMB_CONFIRM_LEVEL:
            return Status.OPTIMAL, r, iteration, f"FCLIB error {error:.1e} <= {tol:g} after {iteration} iterations"
        if iteration == budget:
            break
        inner_before = stage.inner_total
        try:
            r = stage.friction(stage.normal(r))
        except ContactoptError as exc:
            return Status.NUMERICAL_ERROR, r, iteration, f"inner solve failed at iteration {iteration + 1}: {exc}"
        observe(iteration + 1)
    return Status.MAX_ITERATIONS, r, budget, f"FCLIB error {error:.1e} > {tol:g} after {budget} iterations"


class _GaussSeidel:
    """Both QPs by exact projected Gauss-Seidel on ``W``'s blocks (:mod:`.staggered_kernel`)."""

    def __init__(self, program: CoulombProgram, opts: Mapping[str, Any]) -> None:
        self.program = program
        self.rows = sp.csr_matrix(program.W)
        self.diagonal = np.ascontiguousarray(program.diagonal_blocks)
        self.mu = np.ascontiguousarray(program.mu)
        self.tol, self.sweeps = float(opts["inner_tol"]), int(opts["inner_sweeps"])
        self.inner_total = 0
        self.u: FloatArray | None = None

    def _run(self, r: FloatArray, which: int) -> FloatArray:
        r = np.array(r)
        u = self.program.velocity(r)  # exact each stage: no drift of the incremental updates
        self.inner_total += kernel.run_stage(self.rows, self.diagonal, self.mu, r, u, self.program.dim, which,
                                             self.tol, self.sweeps)
        return r

    def normal(self, r: FloatArray) -> FloatArray:
        return self._run(r, kernel.NORMAL)

    def friction(self, r: FloatArray) -> FloatArray:
        return self._run(r, kernel.FRICTION)


class _ConicStages:
    """Both QPs as conic programs solved by a contactopt solver (module docstring)."""

    def __init__(self, program: CoulombProgram, opts: Mapping[str, Any], registry: Registry) -> None:
        self.program = program
        self.registry = registry
        self.solver = str(opts["inner"])
        self.options = dict(opts["inner_options"] or {})
        d, nc = program.dim, program.contacts
        index = np.arange(program.m).reshape(nc, d)
        self.N, self.T = index[:, 0], index[:, 1:].reshape(-1)
        W = sp.csc_matrix(program.W)
        self.W_NN, self.W_NT = W[self.N][:, self.N], W[self.N][:, self.T]
        self.W_TT, self.W_TN = W[self.T][:, self.T], W[self.T][:, self.N]
        self.inner_total = 0

    def _solve(self, qp: ConicProgram) -> FloatArray:
        solution = self.registry.solve(qp, self.solver, self.options)
        self.inner_total += solution.iterations
        # the solver's own claim: contactopt's row-wise judgement of a QP whose data is all
        # rounding (the friction QP of contacts at rest) can refuse an exact answer, and the
        # outer iteration judges every iterate on the Coulomb problem itself
        claim = solution.claimed or solution.status
        x = np.asarray(solution.x, dtype=np.float64)
        if not claim.usable or not np.all(np.isfinite(x)):
            raise ContactoptError(f"{self.solver} returned {solution.status}: {solution.message}")
        return x

    def normal(self, r: FloatArray) -> FloatArray:
        nc = self.program.contacts
        c = self.program.q[self.N] + self.W_NT @ r[self.T]
        qp = ConicProgram(P=self.W_NN, c=c, A=-sp.eye(nc, format="csc"), b=np.zeros(nc), cones=(Nonneg(nc),),
                          metadata={"staggered": "normal"})
        out = np.array(r)
        out[self.N] = np.maximum(self._solve(qp), 0.0)
        return out

    def friction(self, r: FloatArray) -> FloatArray:
        program, d = self.program, self.program.dim
        if d == 1 or self.T.size == 0:
            return r
        radius = program.mu * r[self.N]
        # a disk below the rounding of the largest is a point: a cone of radius 1e-32 next to
        # impulses of 1e-3 (a normal QP's rounding of 0) is no constraint a solver can resolve
        radius[radius <= np.finfo(float).eps * radius.max(initial=0.0)] = 0.0
        t, disk = d - 1, radius > 0.0
        # per contact: (rho, r_cT) in SOC(d) (a first row of A empty, b = rho), or r_cT in Zero(t)
        sizes = np.where(disk, d, t)
        first = np.cumsum(sizes) - sizes
        tangent_rows = (first + disk)[:, None] + np.arange(t)[None, :]
        A = sp.csc_matrix((-np.ones(self.T.size), (tangent_rows.reshape(-1), np.arange(self.T.size))),
                          shape=(int(sizes.sum()), self.T.size))
        b = np.zeros(int(sizes.sum()))
        b[first[disk]] = radius[disk]
        cones: tuple[Cone, ...] = tuple(SOC(d) if positive else Zero(t) for positive in disk)
        c_T = program.q[self.T] + self.W_TN @ r[self.N]
        qp = ConicProgram(P=self.W_TT, c=c_T, A=A, b=b, cones=cones, metadata={"staggered": "friction"})
        out = np.array(r)
        out[self.T] = self._solve(qp)
        R = out.reshape(-1, d)
        return np.asarray(_project_disks(R, radius).reshape(-1))


def _project_disks(R: FloatArray, radius: FloatArray) -> FloatArray:
    """``R`` with each ``r_cT`` scaled back into its disk ``||r_cT|| <= radius_c`` (an interior
    point solver's answer sits on the rim to its tolerance)."""
    out = np.array(R)
    norm = np.linalg.norm(out[:, 1:], axis=1)
    over = norm > radius
    out[over, 1:] *= (radius[over] / norm[over])[:, None]
    return out


def _checked(opts: dict[str, Any], registry: Registry) -> dict[str, Any]:
    """The options with their types checked (one error naming the option)."""
    for key in ("tol", "inner_tol"):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and value > 0):
            raise OptionError(f"solver 'staggered': {key} must be a positive number, got {value!r}")
    for key in ("max_iterations", "inner_sweeps"):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < (0 if key[0] == "m" else 1):
            raise OptionError(f"solver 'staggered': {key} must be an integer >= {0 if key[0] == 'm' else 1}, "
                              f"got {value!r}")
    for key in ("history", "symmetrize"):
        if not isinstance(opts[key], bool | np.bool_):
            raise OptionError(f"solver 'staggered': {key} must be true or false, got {opts[key]!r}")
    inner = opts["inner"]
    if not isinstance(inner, str):
        raise OptionError(f"solver 'staggered': inner must be a solver name or {GAUSS_SEIDEL!r}, got {inner!r}")
    if inner != GAUSS_SEIDEL and not {"qp", "socp"} <= registry.kinds(inner):  # also raises for an unknown name
        raise OptionError(f"solver 'staggered': inner solver {inner!r} does not take QPs with second-order "
                          f"cones; use {GAUSS_SEIDEL!r} or a conic solver such as 'clarabel'")
    if opts["inner_options"] is not None and not isinstance(opts["inner_options"], Mapping):
        raise OptionError("solver 'staggered': inner_options must be a mapping of option names to values")
    return opts
