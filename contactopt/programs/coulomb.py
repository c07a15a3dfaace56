"""The exact Coulomb problem of a step, in FCLIB's local form, and its residuals.

``CoulombProgram(W, q, mu)``: find impulses ``r`` (``dim`` rows per contact, normal first) with ::

    u = W r + q,    û_c = u_c + [mu_c ||u_cT||, 0(, 0)],    C*_mu ∋ û ⟂ r ∈ C_mu

``C_mu = prod_c {||r_cT|| <= mu_c r_cN}`` (a ray ``r_cT = 0, r_cN >= 0`` where ``mu_c = 0``: a
frictionless unilateral row, such as a joint limit, is a contact with ``mu = 0``) and ``C*_mu``
its dual cone. This is Coulomb's law with Signorini's condition and maximum dissipation
written as one cone complementarity problem by De Saxcé's bipotential (De Saxcé & Feng 1991;
Acary, Cadoux, Lemaréchal & Malick, ZAMM 91 (2011); FCLIB, Acary et al. JOTA 2014; Tedrake
2022, the friction section). It is **not** a convex program: the term ``mu_c ||u_cT||`` makes
the map ``r -> û`` nonmonotone, so the problem is the first-order condition of no
optimization problem, may have several solutions, and existence needs conditions on ``mu``
(Acary et al. 2011, section 3). Dropping that term gives the convex cone complementarity problem
of the ``ccp`` formulation (Anitescu & Tasora 2010), whose sliding contacts lift off by
``h mu ||u_T||``; every time-stepping formulation here relaxes or approximates this one.

**Residuals** (:func:`coulomb_residuals`, computed by contactopt, never read from a solver):
``primal``: distance of ``r`` from ``C_mu``; ``dual``: distance of ``û`` from ``C*_mu``;
``complementarity``: ``max_c |r_c . û_c|``; ``gap``: undefined (NaN); ``fclib``: FCLIB's error
(``fclib_merit``: ``||r - P_C(r - û)|| / (1 + sqrt(||q||))``); ``relative``: the unit-free
reading the solver layer judges by. Per contact, with ``rho_c = 1 / max diag W_cc`` (an
impulse per unit of velocity, the contact's own mass), the natural map
``e_c = r_c - P_C(r_c - rho_c û_c)``, zero exactly at a solution for any ``rho_c > 0`` (Alart &
Curnier 1991), is measured against the terms it is made of,
``||r_c|| + rho_c (||q_c|| + ||(|W| |r|)_c||)`` (componentwise backward error, as in
:mod:`contactopt.programs.relative`), with the same floor of 1e-10 of the largest contact's scale.
Each ratio is unchanged when the masses, the lengths or the time unit of a scene change.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactopt.core.errors import ShapeError
from contactopt.programs.conic import Block, _check_blocks, _find
from contactopt.programs.coulomb_error import natural_map, project_cones
from contactopt.programs.relative import FLOOR
from contactopt.programs.solution import Residuals

if TYPE_CHECKING:
    from contactopt.programs.fclib_io import FclibLocal, FclibProblem

FloatArray = NDArray[np.float64]

__all__ = ["COULOMB_CONFIRM_LEVEL", "SYMMETRY_TOLERANCE", "CoulombProgram", "coulomb_believed", "coulomb_criteria",
           "coulomb_from_fclib", "coulomb_residuals", "coulomb_to_fclib", "local_scaling", "natural_map_relative"]

#: ``W`` counts as symmetric when ``max |W - W^T| <= SYMMETRY_TOLERANCE * max |W|``: files of
#: other tools store Delassus matrices to 7-8 significant digits.
SYMMETRY_TOLERANCE = 1e-6

#: The relative residual a Coulomb solver must reach before it stops: the judge's own level
#: for ``optimal`` (:data:`contactopt.solvers.base.INACCURATE_LEVEL`). The solvers compute the
#: very measure the judge reads (:func:`coulomb_residuals`), so no margin for a recomputation
#: is needed; asking for less than the judge stalls a pile step whose FCLIB error is met.
COULOMB_CONFIRM_LEVEL = 1e-6


@dataclass(frozen=True)
class CoulombProgram:
    """FCLIB's local Coulomb problem (module docstring).

    Attributes:
        W: (m, m) Delassus operator ``J M^-1 J^T`` (CSC), ``m = contacts * dim``; may be
            nonsymmetric when read from another tool's file (:attr:`symmetric`).
        q: (m,) local velocity without impulses (``J v_free`` plus stabilization).
        mu: (contacts,) friction coefficients, ``>= 0`` (0: frictionless, ``r_cT = 0``).
        dim: rows per contact: 3 (``[n, t1, t2]``) or 2 (planar ``[n, t]``).
        variables: named blocks of ``r`` (``impulse``, ``per = dim``).
        metadata: JSON-serialisable description.
    """

    W: sp.csc_matrix
    q: FloatArray
    mu: FloatArray
    dim: int = 3
    variables: tuple[Block, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.dim not in (2, 3):
            raise ShapeError(f"CoulombProgram.dim must be 2 or 3, got {self.dim!r}")
        q = np.array(self.q, dtype=np.float64).reshape(-1)
        mu = np.array(self.mu, dtype=np.float64).reshape(-1)
        m = q.shape[0]
        if m != mu.shape[0] * self.dim:
            raise ShapeError(f"CoulombProgram: q has {m} rows, expected contacts * dim = "
                             f"{mu.shape[0]} * {self.dim}")
        W = sp.csc_matrix(self.W, dtype=np.float64)
        if W.shape != (m, m):
            raise ShapeError(f"CoulombProgram.W: expected shape ({m}, {m}), got {W.shape}")
        if not (np.all(np.isfinite(W.data)) and np.all(np.isfinite(q))):
            raise ShapeError("CoulombProgram: W or q contains NaN or infinite entries")
        if not np.all(np.isfinite(mu)) or np.any(mu < 0):
            raise ShapeError("CoulombProgram.mu: friction coefficients must be finite and >= 0")
        _check_blocks(tuple(self.variables), m, "variable")
        q.setflags(write=False)
        mu.setflags(write=False)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "metadata", dict(self.metadata))

    @property
    def kind(self) -> str:
        return "coulomb"

    @property
    def m(self) -> int:
        return int(self.q.shape[0])

    @property
    def n(self) -> int:
        """Number of unknowns (the impulses ``r``)."""
        return self.m

    @property
    def contacts(self) -> int:
        return int(self.mu.shape[0])

    @functools.cached_property
    def asymmetry(self) -> float:
        """``max |W - W^T| / max |W|`` (0 for an empty or zero ``W``)."""
        peak = float(abs(self.W).max()) if self.W.nnz else 0.0
        if peak == 0.0:
            return 0.0
        difference = self.W - self.W.T
        return float(abs(difference).max()) / peak if difference.nnz else 0.0

    @property
    def symmetric(self) -> bool:
        return self.asymmetry <= SYMMETRY_TOLERANCE

    def velocity(self, r: ArrayLike) -> FloatArray:
        """``u = W r + q``."""
        return np.asarray(self.W @ np.asarray(r, dtype=np.float64), dtype=np.float64) + self.q

    def variable(self, r: ArrayLike, name: str) -> FloatArray:
        return np.asarray(r, dtype=np.float64)[_find(self.variables, name).slice]

    @functools.cached_property
    def diagonal_blocks(self) -> FloatArray:
        """(contacts, dim, dim) dense diagonal blocks ``W_cc``."""
        d, nc = self.dim, self.contacts
        blocks = np.zeros((nc, d, d))
        coo = self.W.tocoo()
        same = coo.row // d == coo.col // d
        np.add.at(blocks, (coo.row[same] // d, coo.row[same] % d, coo.col[same] % d), coo.data[same])
        return blocks

    def symmetrized(self) -> CoulombProgram:
        """The program with ``(W + W^T) / 2`` (said in its metadata)."""
        return CoulombProgram(W=sp.csc_matrix(0.5 * (self.W + self.W.T)), q=self.q, mu=self.mu, dim=self.dim,
                              variables=self.variables,
                              metadata={**self.metadata, "symmetrized_from_asymmetry": self.asymmetry})

    def summary(self) -> str:
        return (f"Coulomb problem: {self.contacts} contacts of dimension {self.dim}, W {self.m}x{self.m} "
                f"({self.W.nnz} nonzeros{'' if self.symmetric else f', nonsymmetric {self.asymmetry:.1e}'})")


def local_scaling(program: CoulombProgram) -> FloatArray:
    """(contacts,) ``rho_c = 1 / max diag W_cc``; a contact that no impulse moves (zero block)
    takes the geometric mean of the others' (1 when none has one)."""
    diagonal = np.diagonal(program.diagonal_blocks, axis1=1, axis2=2).max(axis=1, initial=0.0)
    positive = diagonal > 0
    rho = np.empty(program.contacts)
    rho[positive] = 1.0 / diagonal[positive]
    fill = float(np.exp(np.mean(np.log(rho[positive])))) if positive.any() else 1.0
    rho[~positive] = fill
    return rho


def _hat(program: CoulombProgram, u: FloatArray) -> FloatArray:
    """(contacts, dim) De Saxcé's modified velocity ``û``."""
    U = u.reshape(-1, program.dim).copy()
    U[:, 0] += program.mu * np.linalg.norm(U[:, 1:], axis=1)
    return U


def natural_map_relative(program: CoulombProgram, r: FloatArray, velocity: FloatArray) -> float:
    """The worst contact's ``||r_c - P_C(r_c - rho_c w_c)||`` against its terms (module
    docstring), ``w`` the (contacts, dim) velocity of the complementarity: De Saxcé's ``û`` for
    Coulomb's problem, ``u`` itself for its convex relaxation (the CCP)."""
    R = r.reshape(-1, program.dim)
    rho = local_scaling(program)
    e = R - project_cones(R - rho[:, None] * velocity, program.mu)
    terms = abs(program.W) @ np.abs(r)
    scale = (np.linalg.norm(R, axis=1)
             + rho * (np.linalg.norm(program.q.reshape(-1, program.dim), axis=1)
                      + np.linalg.norm(terms.reshape(-1, program.dim), axis=1)))
    floor = FLOOR * float(scale.max(initial=0.0))
    if floor == 0.0:  # nothing moves and no impulse: exact when e is zero
        return 0.0 if not np.any(e) else float("inf")
    return float((np.linalg.norm(e, axis=1) / np.maximum(scale, floor)).max(initial=0.0))


def _dual_distance(program: CoulombProgram, U_hat: FloatArray) -> FloatArray:
    """Per contact, the distance of ``û_c`` from ``C*``: ``||P_C(-û_c)||`` (Moreau: the polar
    of ``C*`` is ``-C``)."""
    return np.asarray(np.linalg.norm(project_cones(-U_hat, program.mu), axis=1))


def coulomb_residuals(program: CoulombProgram, r: ArrayLike) -> Residuals:
    """contactopt's residuals of impulses ``r`` (module docstring); infinite for a non-finite ``r``."""
    r_arr = np.asarray(r, dtype=np.float64).reshape(program.m)
    if not np.all(np.isfinite(r_arr)):
        return Residuals(np.inf, np.inf, np.nan, np.inf, np.inf, np.inf)
    if program.m == 0:
        return Residuals(0.0, 0.0, np.nan, 0.0, 0.0, 0.0)
    u = program.velocity(r_arr)
    R = r_arr.reshape(-1, program.dim)
    U_hat = _hat(program, u)
    primal = float(np.linalg.norm(R - project_cones(R, program.mu), axis=1).max())
    dual = float(_dual_distance(program, U_hat).max())
    complementarity = float(np.abs(np.einsum("ij,ij->i", R, U_hat)).max())
    fclib = float(np.linalg.norm(natural_map(r_arr, u, program.mu, program.dim))
                  / (1.0 + np.sqrt(np.linalg.norm(program.q))))
    return Residuals(primal, dual, float("nan"), complementarity, natural_map_relative(program, r_arr, U_hat), fclib)


def coulomb_criteria(program: CoulombProgram, r: ArrayLike) -> dict[str, float]:
    """One row of a convergence history, the same columns for every Coulomb solver:

    ``fclib`` (FCLIB's error), ``signorini`` (``max_c |min(r_cN, rho_c u_cN)|``, the natural
    map of Signorini's condition in impulse units), ``complementarity`` (``max_c |r_c . û_c|``),
    ``dual_feasibility`` (distance of ``û`` from ``C*``), ``dissipation_gap`` (maximum
    dissipation: ``max_c (r_cT . u_cT + mu_c r_cN ||u_cT||)``, zero when the friction impulse is
    the one of the disk that removes the most energy), ``cost`` (``1/2 r'W r + q'r``) and
    ``relative`` (the unit-free measure the judgement uses)."""
    r_arr = np.asarray(r, dtype=np.float64).reshape(program.m)
    residuals = coulomb_residuals(program, r_arr)
    if program.m == 0 or not np.all(np.isfinite(r_arr)):
        value = 0.0 if program.m == 0 else float("inf")
        return {"fclib": residuals.fclib, "signorini": value, "complementarity": residuals.complementarity,
                "dual_feasibility": residuals.dual, "dissipation_gap": value, "cost": value,
                "relative": residuals.relative}
    u = program.velocity(r_arr)
    R, U = r_arr.reshape(-1, program.dim), u.reshape(-1, program.dim)
    rho = local_scaling(program)
    signorini = float(np.abs(np.minimum(R[:, 0], rho * U[:, 0])).max())
    slip = np.linalg.norm(U[:, 1:], axis=1)
    dissipation = float((np.einsum("ij,ij->i", R[:, 1:], U[:, 1:]) + program.mu * R[:, 0] * slip).max())
    cost = float(0.5 * r_arr @ (program.W @ r_arr) + program.q @ r_arr)
    return {"fclib": residuals.fclib, "signorini": signorini, "complementarity": residuals.complementarity,
            "dual_feasibility": residuals.dual, "dissipation_gap": max(dissipation, 0.0), "cost": cost,
            "relative": residuals.relative}


def coulomb_believed(program: CoulombProgram, r: ArrayLike) -> bool:
    """Whether ``r`` passes contactopt's judgement (relative residual at most
    :data:`COULOMB_CONFIRM_LEVEL`): what the Coulomb solvers ask before they stop."""
    return coulomb_residuals(program, r).relative <= COULOMB_CONFIRM_LEVEL


def coulomb_from_fclib(problem: FclibProblem, source: str = "") -> CoulombProgram:
    """The Coulomb problem of an FCLIB file's problem: a global one condensed to its local
    problem (:func:`contactopt.programs.fclib.condense`), then equality rows of a mixed local
    problem (``V^T r + R lambda + s = 0``) eliminated, ``lambda = -R^-1 (V^T r + s)``::

        W' = W - V R^-1 V^T,    q' = q - V R^-1 s

    (the Schur complement; ``R`` must be nonsingular, which independent equality rows give).
    ``W`` is kept as stored, symmetric or not."""
    from contactopt.programs.fclib import FclibLocal, condense

    local = problem if isinstance(problem, FclibLocal) else condense(problem)
    W, q = sp.csc_matrix(local.W, dtype=np.float64), np.asarray(local.q, dtype=np.float64)
    if local.equalities:
        assert local.V is not None and local.R is not None and local.s is not None
        V = local.V.toarray()
        try:
            RinvVT = np.linalg.solve(local.R.toarray(), V.T)
            Rinvs = np.linalg.solve(local.R.toarray(), local.s)
        except np.linalg.LinAlgError:
            raise ShapeError(f"{source or 'FCLIB problem'}: its equality rows are dependent (R is singular); "
                             "they cannot be eliminated") from None
        W = sp.csc_matrix(W.toarray() - V @ RinvVT)
        q = q - V @ Rinvs
    dim = local.spacedim
    metadata = {"format": "fclib", "problem": "local" if problem is local else "global", "source": source,
                "title": local.info.get("title", ""), "equalities_eliminated": local.equalities}
    return CoulombProgram(W=W, q=q, mu=local.mu, dim=dim,
                          variables=(Block("impulse", 0, q.shape[0], dim),), metadata=metadata)


def coulomb_to_fclib(program: CoulombProgram) -> FclibLocal:
    """FCLIB's local problem of ``program`` (written unchanged by
    :func:`contactopt.programs.fclib_io.write_fclib_problem`)."""
    from contactopt.programs.fclib import FclibLocal

    info = {"title": str(program.metadata.get("title", "") or program.metadata.get("scene", "")),
            "description": "the exact Coulomb problem of a contactopt step", "math_info": ""}
    return FclibLocal(W=program.W, q=np.array(program.q), mu=np.array(program.mu), spacedim=program.dim, info=info)
