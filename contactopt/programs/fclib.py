"""FCLIB problems and the convex program contactopt solves for them (the files: layout, reading
and writing in :mod:`contactopt.programs.fclib_io`).

FCLIB (Acary, Brémond, Huber, Pérignon et al., "FCLIB: a collection of discrete 3D frictional
contact problems", JOTA 2014; ``fclib.h``) defines the local problem ``FC(W, q, mu)``, optionally
mixed with ``V, R, s``, and the global problem ``(M, H, G, f, w, b, mu)``::

    local:   V^T r + R lambda + s = 0,   u = W r + V lambda + q
    global:  M v = H r + G lambda + f,   G^T v + b = 0,   u = H^T v + w
    both:    û = u + [mu_c ||u_cT||, 0(, 0)]_c,   C*_mu ∋ û ⟂ r ∈ C_mu

(``C_mu = prod_c {||r_cT|| <= mu_c r_cN}``, ``C*_mu`` its dual cone; ``r`` impulses, ``u`` local
velocities, normal first per contact.)

**The convex program.** FCLIB's problem with De Saxcé's term is a nonmonotone complementarity
problem, not a convex program. :func:`fclib_program` builds its convex relaxation without that
term, the cone complementarity problem (CCP; Anitescu & Tasora, Comput. Optim. Appl. 47,
2010; the ``ccp`` formulation here)::

    local ("dual", x = [r, lambda]):  min 1/2 [r;l]' [[W, V], [V', R]] [r;l] + [q; s]'[r;l]
                                      s.t. r_c in C_mu_c        (rows [mu_c r_cN, r_cT] in SOC)
    global "primal" (x = v):          min 1/2 v'Mv - f'v
                                      s.t. G^T v + b = 0, [u_cN, mu_c u_cT] in SOC, u = H^T v + w
    global "dual":                    the local problem of the global one, W = H'M^-1 H,
                                      q = w + H'M^-1 f, V = H'M^-1 G, R = G'M^-1 G, s = b + G'M^-1 f

whose optimality conditions are ``C*_mu ∋ u ⟂ r ∈ C_mu`` (impulses ``r = x`` in the dual form;
``r_c = diag(1, mu_c, mu_c) y_c`` from the cone duals and ``lambda = -y`` on the equality rows in
the primal form). A CCP solution solves FCLIB's problem exactly where no contact slides with a
nonzero impulse (``u_cT = 0`` or ``r_c = 0``); a sliding contact gets ``u_cN = mu_c ||u_cT|| > 0``
instead of 0. :func:`contactopt.solvers.coulomb.fclib_solve.solve_coulomb` solves FCLIB's own
problem as a sequence of such convex programs (the fixed point on De Saxcé's term), and
:func:`~contactopt.programs.coulomb_error.fclib_merit` is FCLIB's error measure, computed here.

**Symmetry.** The program's ``P`` (``W``, ``R`` or ``M``) must be symmetric (its objective only
sees the symmetric part). The problem types keep a file's matrices as stored
(:mod:`contactopt.programs.fclib_io`); :func:`fclib_program` uses ``(W + W^T)/2`` where ``W``
is symmetric at the stored precision (``max|W - W^T| <= 1e-6 max|W|``,
:mod:`contactopt.programs.fclib_matrix`), and refuses a ``W`` beyond it by name unless asked
(``symmetrize=True``) to solve the problem with the symmetric part: a genuinely nonsymmetric
``W`` (Siconos's Capsules, ``1.3e-3``) makes FCLIB's problem no longer the optimality
condition of any such program, and its symmetric part poses another problem. The metadata
says which was done; FCLIB's error of an answer is always measured with ``W`` as stored.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, UnsupportedProgramError
from contactopt.programs.conic import SOC, Block, Cone, ConicProgram, Nonneg, Zero
from contactopt.programs.fclib_io import (
    FclibGlobal,
    FclibLocal,
    FclibProblem,
    is_fclib_file,
    read_fclib,
    write_fclib_matrix,
    write_fclib_problem,
)
from contactopt.programs.fclib_matrix import SYMMETRY_TOLERANCE

__all__ = ["FclibGlobal", "FclibLocal", "FclibProblem", "condense", "fclib_program", "is_fclib_file", "read_fclib",
           "write_fclib_matrix", "write_fclib_problem"]

FloatArray = NDArray[np.float64]
Form = Literal["primal", "dual"]


# --- the convex program -------------------------------------------------------------------


def _cone_rows(mu: FloatArray, dim: int) -> tuple[FloatArray, tuple[Cone, ...]]:
    """Per-row scale and cones: ``[mu_c x_cN, x_cT] in SOC`` (mu > 0); ``x_cN >= 0, x_cT = 0``
    for ``mu = 0`` (the same rows as the ``ccp`` formulation's dual program)."""
    scale = np.ones((mu.shape[0], dim))
    cones: list[Cone] = []
    for c, value in enumerate(mu):
        if value > 0:
            scale[c, 0] = value
            cones.append(SOC(dim))
        else:
            cones += [Nonneg(1), Zero(dim - 1)]
    return scale.reshape(-1), tuple(cones)


def _symmetric_matrices(problem: FclibProblem, symmetrize: bool, where: str) -> tuple[dict[str, sp.csc_matrix],
                                                                                    dict[str, Any]]:
    """The matrices of ``problem`` that the program needs symmetric (W, R / M), symmetric, and
    the metadata saying what was done (module docstring: refused beyond the stored precision
    unless ``symmetrize``)."""
    stored = {"W": problem.W, "R": problem.R} if isinstance(problem, FclibLocal) else {"M": problem.M}
    out: dict[str, sp.csc_matrix] = {}
    symmetrized: dict[str, float] = {}
    for name, asymmetry in problem.asymmetry.items():
        matrix = stored[name]
        assert matrix is not None
        if asymmetry == 0.0:
            out[name] = matrix
            continue
        if asymmetry > SYMMETRY_TOLERANCE and not symmetrize:
            raise UnsupportedProgramError(
                f"{where}: {name} is not symmetric (max|{name} - {name}^T| = {asymmetry:.3g} of max|{name}|, "
                f"beyond the {SYMMETRY_TOLERANCE:g} a stored file's rounding explains): the convex program "
                f"needs a symmetric {name}; symmetrize=True (contactopt bench --symmetrize) solves the "
                f"problem with ({name} + {name}^T)/2 instead, a different problem")
        out[name] = sp.csc_matrix(0.5 * (matrix + matrix.T))
        symmetrized[name] = asymmetry
    notes: dict[str, Any] = {"symmetric": problem.symmetric, "asymmetry": dict(problem.asymmetry)}
    if symmetrized:
        notes["symmetrized"] = {
            name: (f"({name} + {name}^T)/2 used: {name} asymmetric by {value:.3g} of max|{name}|, "
                   + ("within the stored precision" if value <= SYMMETRY_TOLERANCE else "symmetrize=True"))
            for name, value in symmetrized.items()}
    return out, notes


def _local_program(problem: FclibLocal, metadata: dict[str, Any], symmetrize: bool) -> ConicProgram:
    m, p, dim = problem.W.shape[0], problem.equalities, problem.spacedim
    matrices, notes = _symmetric_matrices(problem, symmetrize, metadata["source"] or "FCLIB problem")
    W = matrices["W"]
    if p:
        assert problem.V is not None and problem.R is not None and problem.s is not None
        P: Any = sp.bmat([[W, problem.V], [sp.csc_matrix(problem.V.T), matrices["R"]]], format="csc")
        c = np.concatenate([problem.q, problem.s])
    else:
        P, c = W, problem.q
    scale, cones = _cone_rows(problem.mu, dim)
    diagonal = np.arange(m, dtype=np.int32)  # A = [-diag(scale), 0]: written as CSC directly
    A = sp.csc_matrix((-scale, diagonal, np.r_[diagonal, np.full(p + 1, m, dtype=np.int32)]), shape=(m, m + p))
    variables = (Block("impulse", 0, m, dim), *((Block("bilateral", m, m + p),) if p else ()))
    return ConicProgram(P=P, c=c, A=A, b=np.zeros(m), cones=cones, variables=variables,
                        constraints=(Block("impulse_in_cone", 0, m, dim),),
                        metadata={**metadata, **notes, "form": "dual", "bilateral": p})


def condense(problem: FclibGlobal) -> FclibLocal:
    """The local problem of a global one (``W = H'M^-1 H`` ..., module docstring), with ``M`` as
    stored (as Siconos condenses: its condensed files agree with this to rounding; a
    nonsymmetric ``M`` gives a nonsymmetric ``W``, judged by the program that needs symmetry)."""
    from scipy.sparse.linalg import splu

    M = sp.csc_matrix(problem.M)
    diagonal = M.diagonal()
    if sp.triu(M, 1).nnz == 0 and sp.tril(M, -1).nnz == 0 and np.all(diagonal != 0):
        # point masses (Siconos's spheres): M^-1 entrywise, H kept sparse (12000 x 1068: 1 s dense)
        def solve(rhs: Any) -> Any:
            return sp.diags(1.0 / diagonal) @ rhs
    else:
        try:
            lu = splu(M)
        except RuntimeError as exc:
            raise ContactoptError(f"global FCLIB problem: M is singular ({exc})") from None

        def solve(rhs: Any) -> Any:
            return lu.solve(rhs if isinstance(rhs, np.ndarray) else rhs.toarray())
    MinvH = solve(problem.H) if problem.H.shape[1] else np.zeros((M.shape[0], 0))
    Minvf = np.asarray(solve(problem.f), dtype=np.float64).reshape(-1)
    HT = problem.H.T
    W = sp.csc_matrix(HT @ MinvH)
    V = R = s = None
    if problem.G is not None and problem.b is not None:
        MinvG = solve(problem.G)
        V = sp.csc_matrix(HT @ MinvG)
        R = sp.csc_matrix(problem.G.T @ MinvG)
        s = problem.b + problem.G.T @ Minvf
    return FclibLocal(W=W, q=problem.w + HT @ Minvf, mu=problem.mu, spacedim=problem.spacedim, V=V, R=R, s=s,
                      info=problem.info, metadata={**problem.metadata, "condensed": True})


def _global_primal(problem: FclibGlobal, metadata: dict[str, Any], symmetrize: bool) -> ConicProgram:
    n, dim, p = problem.M.shape[0], problem.spacedim, problem.equalities
    matrices, notes = _symmetric_matrices(problem, symmetrize, metadata["source"] or "FCLIB problem")
    scale = np.ones((problem.contacts, dim))
    scale[:, 1:] = problem.mu[:, None]  # [u_N, mu u_T] in SOC; mu = 0 leaves u_N >= 0 alone
    S = sp.diags(scale.reshape(-1))
    contact_A = -(S @ problem.H.T)
    contact_b = np.asarray(S @ problem.w, dtype=np.float64)
    cones: tuple[Cone, ...] = tuple(SOC(dim) for _ in range(problem.contacts))
    blocks: tuple[Block, ...] = (Block("friction_cones", p, p + problem.H.shape[1], dim),)
    if p:
        assert problem.G is not None and problem.b is not None
        A: Any = sp.vstack([problem.G.T, contact_A], format="csc")
        b = np.concatenate([-problem.b, contact_b])
        cones = (Zero(p), *cones)
        blocks = (Block("bilateral", 0, p), *blocks)
    else:
        A, b = sp.csc_matrix(contact_A), contact_b
    return ConicProgram(P=matrices["M"], c=-problem.f, A=A, b=b, cones=cones, variables=(Block("v", 0, n),),
                        constraints=blocks, metadata={**metadata, **notes, "form": "primal", "bilateral": p})


def fclib_program(problem: FclibProblem, form: Form | None = None, source: str = "", *,
                  symmetrize: bool = False) -> ConicProgram:
    """The CCP convex program of an FCLIB problem (module docstring).

    ``form``: a local problem has only ``"dual"`` (impulses); a global one ``"primal"``
    (velocities, the default: keeps M sparse) or ``"dual"`` (condensed to the local problem).
    The program needs ``W`` (``R``, ``M``) symmetric: one within the stored precision is replaced
    by its symmetric part, said in ``metadata["symmetrized"]``; one beyond it is refused
    (:class:`~contactopt.core.errors.UnsupportedProgramError` naming the file and the matrix) unless
    ``symmetrize``, which takes its symmetric part and says so likewise. ``metadata`` also has
    ``symmetric``, ``asymmetry`` (relative, per matrix) and, for triplet files, ``triplets``.
    """
    kind = "local" if isinstance(problem, FclibLocal) else "global"
    if form not in (None, "primal", "dual"):
        raise ContactoptError(f"unknown FCLIB form {form!r}; known: primal, dual")
    source = source or str(problem.metadata.get("source", ""))
    metadata: dict[str, Any] = {"format": "fclib", "problem": kind, "spacedim": problem.spacedim,
                                "contacts": problem.contacts, "mu": problem.mu.tolist(), "source": source,
                                "title": problem.info.get("title", "")}
    if "triplets" in problem.metadata:
        metadata["triplets"] = dict(problem.metadata["triplets"])
    if isinstance(problem, FclibLocal):
        if form == "primal":
            raise ContactoptError("a local FCLIB problem has no primal (velocity) form; use form='dual'")
        return _local_program(problem, metadata, symmetrize)
    if form == "dual":
        return _local_program(condense(problem), {**metadata, "condensed": True}, symmetrize)
    return _global_primal(problem, metadata, symmetrize)
