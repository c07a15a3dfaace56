"""The one-contact Coulomb problem of :mod:`contactopt.solvers.coulomb.nsgs.solver`: ``u = A r + q'`` with
``A = W_cc``, find ``C*_mu ∋ û ⟂ r ∈ C_mu`` (De Saxcé & Feng 1991); loops that numba compiles
(:func:`contactopt.solvers.coulomb.nsgs.kernel.ensure_compiled`) and the Python interpreter runs alike.

**The local problem, exactly.** Its solutions are of three kinds (Acary & Brogliato 2008,
section 13.3; Alart & Curnier, "A mixed formulation for frictional contact problems prone to
Newton like solution methods", CMAME 92, 1991, the same three cases of the law):

- *take-off* ``r = 0``: then ``û = q' + [mu ||q'_T||, 0]`` lies in ``C*_mu = {mu ||u_T|| <= u_N}``
  exactly when ``q'_N >= 0`` (the De Saxcé term cancels the tangential part);
- *sticking* ``u = 0``: ``r = -W_cc^-1 q'`` when that lies in ``C_mu``;
- *sliding* ``r`` on the cone's surface: ``û`` orthogonal to ``r`` on the surface of ``C*_mu``
  gives ``u_N = 0`` and ``u_T = -s r_T`` for some ``s >= 0`` (the slip opposes the friction
  impulse; ``||r_T|| = mu r_N``). For a given ``s`` the rows ``u_N = 0``,
  ``u_T = -s r_T`` are linear: ``(W_cc + s diag(0, 1, 1)) r = -q'``, solved by the Schur
  complement of the tangential block, and what is left is one scalar equation
  ``g(s) = ||r_T(s)|| - mu r_N(s) = 0``. ``g(0) > 0`` (sticking failed), and
  ``g(s) -> -mu q'_N / W_NN < 0`` as ``s -> inf`` (take-off failed), so a root exists; it is
  found by Newton's method on ``g`` (derivative ``r'(s) = -(W_cc + s E)^-1 E r``) safeguarded
  by a bracket (bisection, geometric when the bracket spans decades), started from the
  contact's ``s`` of the previous sweep. This needs no isotropy of ``W_cc``. ``mu = 0``
  (frictionless, ``r_T = 0``) is the scalar ``r_N = max(0, -q'_N / W_NN)``; planar contacts
  (``dim = 2``) run the same formulas with one tangent.

If the root search fails (non-finite values, a ``W_cc`` whose Schur complement is not
positive: not a Delassus matrix of positive definite masses), the local problem falls back to
the projected fixed point ``r <- P_C(r - rho û(r))``, ``rho = 1 / max diag W_cc``, from the
previous ``r_c`` (Acary, Brémond & Huber 2018, the projection local solver).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from contactopt.programs.coulomb_cone import project_cone

#: Outcomes of :func:`local_solve`, counted per sweep for the solver's report.
TAKE_OFF, STICK, SLIDE, FRICTIONLESS, FALLBACK = 0, 1, 2, 3, 4
OUTCOMES = ("take_off", "stick", "slide", "frictionless", "fallback")
ROOT_ITERATIONS = 100  # a bracketed Newton search halves its bracket at worst: 100 is past double precision
ROOT_TOL = 1e-14  # |g| relative to ||r_T|| + mu r_N: a few roundings of the 3x3 solve
FALLBACK_ITERATIONS = 200


def _solve_tangent(A: Any, k: int, s: float, rhs0: float, rhs1: float) -> tuple[float, float]:
    """``(A_TT + s I)^-1 rhs`` for the ``k`` (1 or 2) tangent rows of ``A`` (dim = k + 1)."""
    if k == 1:
        return rhs0 / (A[1, 1] + s), 0.0
    b00, b01, b10, b11 = A[1, 1] + s, A[1, 2], A[2, 1], A[2, 2] + s
    det = b00 * b11 - b01 * b10
    return (b11 * rhs0 - b01 * rhs1) / det, (b00 * rhs1 - b10 * rhs0) / det


def _slide_at(A: Any, k: int, qp: Any, mu: float, s: float) -> tuple[float, float, float, float, float]:
    """``(r_N, r_T1, r_T2, g, g')`` of the sliding system at slip ratio ``s`` (module docstring)."""
    a = A[0, 0]
    tn0 = A[1, 0]
    tn1 = A[2, 0] if k == 2 else 0.0
    nt0 = A[0, 1]
    nt1 = A[0, 2] if k == 2 else 0.0
    q1 = qp[1]
    q2 = qp[2] if k == 2 else 0.0
    y10, y11 = _solve_tangent(A, k, s, tn0, tn1)  # B^-1 A_TN
    y20, y21 = _solve_tangent(A, k, s, q1, q2)  # B^-1 q'_T
    schur = a - (nt0 * y10 + nt1 * y11)
    lam = (nt0 * y20 + nt1 * y21 - qp[0]) / schur
    t0 = -(y20 + lam * y10)
    t1 = -(y21 + lam * y11)
    norm_t = math.sqrt(t0 * t0 + t1 * t1)
    g = norm_t - mu * lam
    # derivative: r' = -z with (A + s E) z = (0, r_T), by the same Schur complement
    w0, w1 = _solve_tangent(A, k, s, t0, t1)
    z_n = -(nt0 * w0 + nt1 * w1) / schur
    z0 = w0 - y10 * z_n
    z1 = w1 - y11 * z_n
    dg = mu * z_n - ((t0 * z0 + t1 * z1) / norm_t if norm_t > 0.0 else 0.0)
    if not schur > 0.0:
        g = math.nan  # not a Delassus block: leave it to the fallback
    return lam, t0, t1, g, dg


def _stick(A: Any, dim: int, qp: Any, out: Any) -> bool:
    """``out = -A^-1 q'`` (Cramer's rule on the 2x2 or 3x3 block); False if ``A`` is singular
    relative to its entries (a padded row with zero tangential entries)."""
    if dim == 2:
        det = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
        size = abs(A[0, 0] * A[1, 1]) + abs(A[0, 1] * A[1, 0])
        if not abs(det) > 1e-13 * size:
            return False
        out[0] = -(A[1, 1] * qp[0] - A[0, 1] * qp[1]) / det
        out[1] = -(A[0, 0] * qp[1] - A[1, 0] * qp[0]) / det
        return True
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    size = abs(A[0, 0] * c00) + abs(A[0, 1] * c01) + abs(A[0, 2] * c02)
    if not abs(det) > 1e-13 * size:
        return False
    c10 = A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]
    c11 = A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]
    c12 = A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]
    c20 = A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]
    c21 = A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]
    c22 = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    # inverse = adjugate / det, the adjugate being the transposed cofactors
    out[0] = -(c00 * qp[0] + c10 * qp[1] + c20 * qp[2]) / det
    out[1] = -(c01 * qp[0] + c11 * qp[1] + c21 * qp[2]) / det
    out[2] = -(c02 * qp[0] + c12 * qp[1] + c22 * qp[2]) / det
    return True



def _fallback(A: Any, dim: int, qp: Any, mu: float, out: Any) -> None:
    """The projected fixed point ``r <- P_C(r - rho û)`` from ``out`` (the previous ``r_c``)."""
    big = 0.0
    for k in range(dim):
        big = max(big, abs(A[k, k]))
    rho = 1.0 / big if big > 0.0 else 1.0
    u = np.empty(dim)
    for _ in range(FALLBACK_ITERATIONS):
        for i in range(dim):
            acc = qp[i]
            for j in range(dim):
                acc += A[i, j] * out[j]
            u[i] = acc
        u[0] += mu * math.sqrt(u[1] * u[1] + (u[2] * u[2] if dim == 3 else 0.0))
        for i in range(dim):
            out[i] -= rho * u[i]
        project_cone(out, dim, mu)


def local_solve(A: Any, dim: int, qp: Any, mu: float, s0: float, out: Any, work: Any) -> tuple[int, float]:
    """The one-contact Coulomb problem ``u = A r + q'`` (module docstring), written into ``out``
    (which holds the previous ``r_c`` on entry, the fallback's start; ``work``: scratch of
    ``dim`` entries). Returns the outcome
    (:data:`OUTCOMES`) and the slip ratio ``s`` of a sliding answer (the next search's start;
    ``s0 <= 0`` means none known)."""
    if qp[0] >= 0.0:  # take-off
        for k in range(dim):
            out[k] = 0.0
        return TAKE_OFF, s0
    a = A[0, 0]
    if mu == 0.0:
        for k in range(dim):
            out[k] = 0.0
        if a > 0.0:
            out[0] = -qp[0] / a
            return FRICTIONLESS, s0
        _fallback(A, dim, qp, mu, out)
        return FALLBACK, s0
    stick = work
    if _stick(A, dim, qp, stick):
        norm_t = math.sqrt(stick[1] * stick[1] + (stick[2] * stick[2] if dim == 3 else 0.0))
        if stick[0] > 0.0 and norm_t <= mu * stick[0]:
            for k in range(dim):
                out[k] = stick[k]
            return STICK, s0
    k = dim - 1
    scale = 0.0
    for i in range(dim):
        scale = max(scale, abs(A[i, i]))
    s = s0 if s0 > 0.0 else scale
    lo, hi = 0.0, math.inf
    found = limit = False
    lam, t0, t1 = 0.0, 0.0, 0.0
    if s > 0.0 and a > 0.0:
        for _ in range(ROOT_ITERATIONS):
            lam, t0, t1, g, dg = _slide_at(A, k, qp, mu, s)
            if not (math.isfinite(g) and math.isfinite(dg)):
                break
            if abs(g) <= ROOT_TOL * (math.sqrt(t0 * t0 + t1 * t1) + mu * abs(lam)):
                found = True
                break
            if g > 0.0:
                lo = s
            else:
                hi = s
            if hi < math.inf and hi - lo <= 4e-16 * hi:
                found = True  # a root to rounding
                break
            if lo == 0.0 and hi <= 1e-13 * scale:
                found = limit = True  # g < 0 down to s -> 0: sticking (W_TT singular), u_T = -s r_T -> 0
                break
            step = s - g / dg if dg != 0.0 else math.nan
            if lo < step < hi:
                s = step
            elif hi == math.inf:
                s = 4.0 * s
            elif lo == 0.0:
                s = 0.25 * hi
            elif hi > 16.0 * lo:
                s = math.sqrt(lo * hi)
            else:
                s = 0.5 * (lo + hi)
    if found and lam > 0.0:
        norm_t = math.sqrt(t0 * t0 + t1 * t1)
        ratio = 1.0 if limit else mu * lam / norm_t  # a root: exactly onto the cone's surface
        out[0] = lam
        out[1] = ratio * t0
        if dim == 3:
            out[2] = ratio * t1
        return (STICK, s0) if limit else (SLIDE, s)
    _fallback(A, dim, qp, mu, out)
    return FALLBACK, s0


#: The loop functions numba compiles (cache=True), each against the others' dispatchers.
KERNELS = ("_solve_tangent", "_slide_at", "_stick", "project_cone", "_fallback", "local_solve")
