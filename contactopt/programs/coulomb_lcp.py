"""Coulomb's problem to its pyramidal LCP (Stewart & Trinkle 1996), so that ``lemke`` takes it.

``CoulombToLCP(k)`` replaces each friction cone ``{||r_T|| <= mu r_N}`` of a
:class:`~contactopt.programs.coulomb.CoulombProgram` ``(W, q, mu)`` by the pyramid spanned by
``k`` unit tangent directions ``d_i`` (the ``lcp`` formulation's,
:func:`contactopt.formulations.common.tangent_directions`: ``d_i = cos(2 pi i / k) t1 +
sin(2 pi i / k) t2`` in 3-D, ``+t, -t`` in 2-D), written from ``W`` and ``q`` directly (Tedrake
2022, "Time-stepping LCP: Coulomb Friction"; the ``lcp`` formulation builds the same LCP from
the step). Per contact ``c`` with ``mu_c > 0`` the unknowns are the normal impulse ``r_cN``,
edge impulses ``beta_ci >= 0`` and the slack ``gamma_c`` (the slip speed); with
``r = B [r_N; beta]`` (``r_cT = sum_i beta_ci d_i``) and ``u = W r + q``::

    0 <= u_cN                          ⟂  r_cN    >= 0   (Signorini)
    0 <= d_i . u_cT + gamma_c          ⟂  beta_ci >= 0   (maximum dissipation)
    0 <= mu_c r_cN - sum_i beta_ci     ⟂  gamma_c >= 0   (the pyramid)

i.e. ``LCP(M, q_lcp)`` with ``z = [r_N, beta, gamma]``::

    M = [[B' W B,  E],      q_lcp = [B' q, 0]
         [U - E'', 0]]

(``E`` the columns of ones joining each contact's ``beta`` to its ``gamma``, ``U - E''`` the
rows ``mu_c r_cN - sum_i beta_ci``). A contact with ``mu_c = 0`` (a joint limit) has no
directions and no slack: its row is Signorini's alone. ``M`` is not symmetric and has a zero
diagonal block: Lemke's method is the solver for it. ``invert`` maps ``z`` back to
``r = B [r_N; beta]`` and the answer is judged **on the Coulomb program itself**: the pyramid is
not the cone, so a contact sliding between two directions gets a friction impulse on an edge
of the pyramid (within ``pi / k`` of the slip's opposite) instead of against the slip, and the
judgement says ``inaccurate`` (or ``numerical_error`` when the natural map is off by more than
1 % of its terms, as for a slide midway between the four directions of ``k = 4``). Sticking
contacts and slides along a direction are exact. The answer tends to Coulomb's as ``k`` grows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.core.errors import ConversionError
from contactopt.programs.conic import blocks_from_sizes
from contactopt.programs.coulomb import CoulombProgram, coulomb_residuals
from contactopt.programs.lcp import LCP
from contactopt.programs.solution import Solution

FloatArray = NDArray[np.float64]

__all__ = ["CoulombToLCP"]


@dataclass(frozen=True)
class CoulombToLCP:
    """Reduction from Coulomb's problem to its pyramidal LCP with ``k`` directions (module
    docstring); ``k = None``: the ``lcp`` formulation's default (4 in 3-D, 2 in 2-D)."""

    k: int | None = None
    name: str = "coulomb->lcp"
    #: The registry routes a Coulomb program here only for backends that take the LCP made
    #: (its zero diagonal block leaves projected Gauss-Seidel out).
    check_target: bool = True

    def directions(self, program: CoulombProgram) -> int:
        from contactopt.programs.friction_directions import check_directions

        return check_directions(self.k, program.dim, "coulomb->lcp")

    def accepts(self, program: object) -> str | None:
        """None if the conversion applies, else the reason it does not."""
        if not isinstance(program, CoulombProgram):
            return "it is not a Coulomb program"
        if program.dim == 2 and self.k not in (None, 2):
            return f"planar contacts have k = 2 directions (+t, -t), not {self.k}"
        return None

    def apply(self, program: CoulombProgram) -> tuple[LCP, tuple[sp.csr_matrix, CoulombProgram]]:
        reason = self.accepts(program)
        if reason is not None:
            raise ConversionError(f"cannot convert the Coulomb problem to an LCP: {reason}")
        from contactopt.core.budgets import check_allocation
        from contactopt.programs.friction_directions import tangent_directions

        k, dim, nc = self.directions(program), program.dim, program.contacts
        frictional = np.flatnonzero(program.mu > 0)
        nf = frictional.shape[0]
        impulses = nc + nf * k
        size = impulses + nf
        check_allocation(float(size) ** 2, f"a dense {size} x {size} LCP matrix ({nc} contacts)", "k", self.k,
                         "conversion 'coulomb->lcp'")
        # B: columns r_cN (the normal rows), then beta_ci (tangent rows of contact c times d_i)
        coefficients = tangent_directions(dim, k)  # (k, dim - 1)
        tangent_rows = (frictional[:, None, None] * dim + 1 + np.arange(dim - 1)[None, None, :])
        tangent_rows = np.broadcast_to(tangent_rows, (nf, k, dim - 1))
        beta_columns = np.broadcast_to((nc + np.arange(nf * k)).reshape(nf, k, 1), (nf, k, dim - 1))
        rows = np.concatenate([np.arange(nc) * dim, tangent_rows.reshape(-1)])
        cols = np.concatenate([np.arange(nc), beta_columns.reshape(-1)])
        values = np.concatenate([np.ones(nc), np.broadcast_to(coefficients, (nf, k, dim - 1)).reshape(-1)])
        B = sp.csr_matrix((values, (rows, cols)), shape=(program.m, impulses))
        M = np.zeros((size, size))
        M[:impulses, :impulses] = (B.T @ (program.W @ B)).toarray()
        slack = impulses + np.arange(nf)
        edges = nc + np.arange(nf * k)
        M[edges, np.repeat(slack, k)] = 1.0  # + gamma_c in each direction's row
        M[slack, frictional] = program.mu[frictional]  # mu_c r_cN
        M[np.repeat(slack, k), edges] = -1.0  # - sum_i beta_ci
        q = np.concatenate([B.T @ program.q, np.zeros(nf)])
        variables = blocks_from_sizes([("impulse_normal", nc, 1), ("impulse_directions", nf * k, k),
                                       ("slip_speed", nf, 1)])
        lcp = LCP(M, q, variables=variables,
                  metadata={**program.metadata, "converted_from": "coulomb", "k": k,
                            "frictional": frictional.tolist()})
        return lcp, (B, program)

    def invert(self, solution: Solution, data: tuple[sp.csr_matrix, CoulombProgram]) -> Solution:
        """``r = B [r_N; beta]``, ``s = u = W r + q``; residuals on the Coulomb program."""
        B, program = data
        z = np.asarray(solution.x, dtype=np.float64)
        r = np.asarray(B @ z[: B.shape[1]], dtype=np.float64)
        finite = bool(np.all(np.isfinite(r)))
        return replace(solution, x=r, y=np.zeros(0), s=program.velocity(r) if finite else np.full(program.m, np.nan),
                       residuals=coulomb_residuals(program, r), conversion=self.name)
