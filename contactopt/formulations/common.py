"""Pieces every contact formulation shares: which contacts enter a program, the friction
directions of polyhedral cones, and the assembly of impulses in contact frames.

Polyhedral cones (reference 000, "Anitescu's convex formulation", after Stewart & Trinkle
1996): ``k`` unit tangent directions ``d_i`` per contact, closed under negation. In 3-D
``d_i = cos(2 pi i / k) t1 + sin(2 pi i / k) t2`` (``k`` even); in 2-D ``k = 2``: ``+t, -t``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.errors import ContactoptError, OptionError
from contactopt.model import Contacts, Dynamics, StepProblem
from contactopt.programs import Block, Cone, ConicProgram, Zero

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]


def default_directions(dim: int) -> int:
    """Default number of friction directions: 4 in 3-D, 2 in 2-D, 0 without tangents."""
    return {1: 0, 2: 2, 3: 4}[dim]


def check_directions(k: Any, dim: int, formulation: str) -> int:
    """Validate the ``k`` option for contacts of frame dimension ``dim``."""
    if k is None:
        return default_directions(dim)
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise OptionError(f"formulation {formulation!r}: k must be an even integer >= 2, got {k!r}")
    if dim == 2 and k != 2:
        raise OptionError(f"formulation {formulation!r}: planar contacts have k = 2 directions (+t, -t), "
                          f"got k = {k}")
    return k if dim > 1 else 0


def check_margin(options: Mapping[str, Any], formulation: str) -> float:
    epsilon = options["epsilon"]
    number = isinstance(epsilon, int | float) and not isinstance(epsilon, bool)
    if not number or math.isnan(epsilon) or epsilon < 0:
        raise OptionError(f"formulation {formulation!r}: epsilon must be a number >= 0 (inf: every "
                          f"candidate contact), got {epsilon!r}")
    return float(epsilon)


def tangent_directions(dim: int, k: int) -> FloatArray:
    """(k, dim - 1) coefficients of ``d_i`` in the tangent basis of the contact frame."""
    if dim == 1 or k == 0:
        return np.zeros((0, max(dim - 1, 0)))
    if dim == 2:
        return np.array([[1.0], [-1.0]])
    angles = 2.0 * np.pi * np.arange(k) / k
    return np.column_stack([np.cos(angles), np.sin(angles)])


@dataclass(frozen=True)
class ActiveContacts:
    """The contacts that enter a program (``phi <= epsilon``) and their Jacobian blocks.

    Attributes:
        index: (na,) indices into the system's contact list.
        phi: (na,) separations; mu: (na,) friction coefficients.
        N: (na, nv) normal rows; T: (na, dim - 1, nv) tangent rows.
        J: (na * dim, nv) the frame rows, normal first, contact-major.
        dim: rows per contact frame.
    """

    index: IntArray
    phi: FloatArray
    mu: FloatArray
    N: FloatArray
    T: FloatArray
    J: FloatArray
    dim: int

    @property
    def count(self) -> int:
        return int(self.index.shape[0])

    def directions(self, k: int) -> FloatArray:
        """(na * k, nv) rows ``d_i`` (contact-major), in joint coordinates."""
        coefficients = tangent_directions(self.dim, k)
        if coefficients.shape[0] == 0:
            return np.zeros((0, self.N.shape[1]))
        return np.einsum("ij,cjv->civ", coefficients, self.T).reshape(-1, self.N.shape[1])


def active_contacts(contacts: Contacts, epsilon: float) -> ActiveContacts:
    """Contacts with ``phi <= epsilon`` (Anitescu's epsilon-active set; inf keeps all)."""
    return select_contacts(contacts, np.flatnonzero(contacts.phi <= epsilon))


def select_contacts(contacts: Contacts, index: Any) -> ActiveContacts:
    """The contacts at ``index``; ``recover`` re-selects the set recorded in the program."""
    index = np.asarray(index, dtype=np.int_).reshape(-1)
    dim, nv = contacts.dim, contacts.nv
    frames = contacts.J.reshape(contacts.count, dim, nv)[index]
    return ActiveContacts(index=index, phi=contacts.phi[index], mu=contacts.mu[index],
                          N=frames[:, 0, :], T=frames[:, 1:, :], J=frames.reshape(-1, nv), dim=dim)


def scatter_impulses(contacts: Contacts, active: ActiveContacts, frame_impulses: FloatArray) -> FloatArray:
    """(nc, dim) impulses of every candidate contact: the active ones' values, zeros elsewhere."""
    impulses = np.zeros((contacts.count, contacts.dim))
    impulses[active.index] = np.asarray(frame_impulses).reshape(active.count, contacts.dim)
    return impulses


def polyhedral_frame_impulses(active: ActiveContacts, normal: FloatArray, beta: FloatArray, k: int,
                              scale: FloatArray | None = None) -> FloatArray:
    """(na, dim) frame impulses from normal parts and edge magnitudes ``beta`` (na * k):
    tangential part ``sum_i scale_c beta_ci d_i`` in the tangent basis."""
    frame = np.zeros((active.count, active.dim))
    frame[:, 0] = normal
    if k and active.count:
        coefficients = tangent_directions(active.dim, k)
        weights = beta.reshape(active.count, k)
        if scale is not None:
            weights = weights * scale[:, None]
        frame[:, 1:] = weights @ coefficients
    return frame


# --- bilateral constraints --------------------------------------------------------------
# Reference 000, "Bilateral Position Constraints": the rows ``H v' = r`` (``r`` the driver's
# velocity target: ``b`` on velocity rows, 0 or ``-alpha h`` on position rows) enter the
# primal programs as equality (Zero) rows whose duals are minus the bilateral impulses, and
# the dual programs as free multipliers ``mu`` (no cone) with ``v' = v_free + M^{-1} H^T mu``.


def prepend_equalities(problem: StepProblem, A: Any, b: FloatArray, cones: tuple[Cone, ...],
                       blocks: tuple[Block, ...]) -> tuple[sp.csc_matrix, FloatArray, tuple[Cone, ...],
                                                           tuple[Block, ...]]:
    """Primal form: rows ``H v' = r`` (a Zero cone) before the contact rows."""
    nh = problem.bilateral.count
    shifted = tuple(Block(blk.name, blk.start + nh, blk.stop + nh, blk.per) for blk in blocks)
    A_all = sp.csc_matrix(sp.vstack([sp.csc_matrix(problem.bilateral.H), sp.csc_matrix(A)]))
    return (A_all, np.concatenate([problem.bilateral_target, b]), (Zero(nh), *cones),
            (Block("bilateral", 0, nh), *shifted))


def primal_bilateral_impulses(program: ConicProgram, y: FloatArray) -> FloatArray:
    """Bilateral impulses of a primal program: stationarity ``M (v' - v_free) + H^T y = ...``
    makes them ``-y`` on the equality rows."""
    if not any(block.name == "bilateral" for block in program.constraints):
        return np.zeros(0)
    return -program.row_block(y, "bilateral")


def dual_program(problem: StepProblem, rows: FloatArray, c: FloatArray, A: Any, cones: tuple[Cone, ...],
                 variables: tuple[Block, ...], constraints: tuple[Block, ...],
                 metadata: Mapping[str, Any], dynamics: Dynamics | None = None,
                 v_free: FloatArray | None = None, regularization: FloatArray | None = None,
                 bilateral_regularization: FloatArray | None = None) -> ConicProgram:
    """``min 1/2 x^T (K M^{-1} K^T + R) x + c^T x`` over contact variables (rows ``rows`` of K,
    constrained by ``A x + s = 0, s in cones``) and free bilateral multipliers ``mu``
    (rows ``H`` of K, linear term ``H v_free - r``)."""
    dynamics = problem.dynamics if dynamics is None else dynamics
    v_free = problem.v_free if v_free is None else v_free
    H = problem.bilateral.H
    nh, n = H.shape[0], rows.shape[0]
    K = np.vstack([rows, H])
    W = delassus(dynamics, K)
    if regularization is not None:
        W[:n, :n] += np.diag(regularization)
    if bilateral_regularization is not None:
        W[n:, n:] += np.diag(bilateral_regularization)
    A_contacts = sp.csc_matrix(A) if A.shape[0] else sp.csc_matrix((0, n))
    return ConicProgram(
        P=sp.csc_matrix(0.5 * (W + W.T)), c=np.concatenate([c, H @ v_free - problem.bilateral_target]),
        A=sp.csc_matrix(sp.hstack([A_contacts, sp.csc_matrix((A_contacts.shape[0], nh))])),
        b=np.zeros(A_contacts.shape[0]), cones=cones,
        variables=(*variables, *((Block("bilateral", n, n + nh),) if nh else ())),
        constraints=constraints, metadata={**metadata, "bilateral": nh})


def delassus(dynamics: Dynamics, rows: FloatArray) -> FloatArray:
    """``rows M^{-1} rows^T``. Contact rows touch few degrees of freedom, so for large problems
    the outer product goes through the sparse rows (O(nnz(rows) x n) instead of O(n^2 nv))."""
    solved = dynamics.solve_M(rows.T)
    if rows.shape[0] * rows.shape[1] > 20_000:
        sparse_rows = sp.csr_matrix(rows)
        if sparse_rows.nnz < 0.25 * rows.size:
            return np.asarray(sparse_rows @ solved)
    return rows @ solved


def dual_velocity(problem: StepProblem, program: ConicProgram, x: FloatArray, rows: FloatArray,
                  contact_x: FloatArray, dynamics: Dynamics | None = None,
                  v_free: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
    """``(v', mu)`` of a dual program: ``v' = v_free + M^{-1} (rows^T contact_x + H^T mu)``."""
    dynamics = problem.dynamics if dynamics is None else dynamics
    v_free = problem.v_free if v_free is None else v_free
    mu = program.variable(x, "bilateral") if program.metadata.get("bilateral") else np.zeros(0)
    generalized = rows.T @ contact_x + problem.bilateral.H.T @ mu
    return v_free + dynamics.solve_M(generalized), np.array(mu)


def require_finite_mu(active: ActiveContacts, formulation: str) -> None:
    if active.count and not np.all(np.isfinite(active.mu)):
        raise ContactoptError(f"formulation {formulation!r} needs finite friction coefficients "
                              "(mu = inf is the impulsive sticking model)")
