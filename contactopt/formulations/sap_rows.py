"""``sap -o rows=model``: SAP's regularization and bias (:mod:`.sap`, (S7)-(S9); Castro, Permenter &
Han 2022, sec. V) over the system's own constraint rows as arrays
(:class:`~contactopt.model.native.NativeArrays`: MuJoCo's rows of the model as written, with
elliptic cones, so that a contact's rows are its frame ``[n, t1, t2]`` and its torsional and
rolling rows).

The primal's ``A`` is the symmetric part of the system's step matrix (:func:`sap_arrays`), and
``W = J A^{-1} J^T``. One function (:func:`sap_row_values`) gives each row its ``R`` and ``v_hat``; both the program
object (:func:`contactopt.formulations.model_primal.program`) and the compiled step
(:mod:`contactopt.integrators.native_step`) take its arrays, so the two are one build. With
``W = J M^{-1} J^T`` (rows of ``J``), ``near_rigid = beta^2 / (4 pi^2)``, ``compliant =
1 / (h k (h + tau_d))`` (0 for ``k = inf``) and the cap ``v_max``
(:mod:`contactopt.formulations.recovery`)::

    contact c, rows [n, t1, t2, ...]:  w_c = ||W_cc||_F / d_c over its frame rows (d_c <= 3; (S9)),
        n:        R = max(near_rigid w_c, compliant),  v_hat = min(-phi_c / (h + tau_d), v_max)   (S7)-(S8)
        t1, t2:   R = sigma w_c,                        v_hat = 0
        angular:  R = sigma W_ii (sigma w_c where W_ii = 0), v_hat = 0   (as sap's torsional/rolling rows)
    limit row:    R = max(near_rigid W_ii, compliant),  v_hat = min(-pos_i / (h + tau_d), v_max)
    equality row: R = near_rigid W_ii,                  v_hat = clip(-pos_i / (h + tau_d), -v_max, v_max)
    dry friction: R = sigma W_ii,                       v_hat = 0      (box rows |gamma| <= h frictionloss)

``phi_c`` is the contact's distance and ``pos_i`` MuJoCo's ``efc_pos`` of the row (a limit's distance
to its bound, an equality's violation). The equality row's bias is SAP's holonomic constraint
(Castro et al. 2022, sec. V; Drake's ``SapHolonomicConstraint``): the violation removed over
``h + tau_d``, at most ``v_max`` either way. Where these rows differ from ``sap``'s own
(:mod:`.sap`, which builds its rows from the system's contact candidates): a frictionless contact
(condim 1) has its normal row alone, so ``w_c = W_nn``; a limit enters only where MuJoCo makes it
a row (within its margin) and an inactive one gives no impulse under either; equality rows take
the bias above in place of the driver's velocity target. MuJoCo also makes rows for a contact
that no degree of freedom moves (``w_c = 0``: geoms of bodies welded to each other or to the
world), which sap's own build leaves out: its rows are inert, ``R = 1`` and ``v_hat = 0``, so that
``y = 0`` and their impulse is 0 (any ``R > 0`` would do; ``R = 0`` is no program).

**Size.** The arrays are dense (``M``, ``J``, ``M^{-1} J^T``): the compiled step takes up to
:data:`contactopt.integrators.native_step.DENSE_MAX` unknowns, and a larger model is solved by
``newton`` on the program object of the same dense arrays, which costs more than sap's own sparse
rows there (the 100-sphere pile, nv = 600: 159 ms a step against 72 ms, ``experiments/bench_step.py
--scenes pile --only sap/``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.model.native import CONE, EDGE, EQUALITY, FRICTION_LOSS, LIMIT, NativeArrays

FloatArray = NDArray[np.float64]

__all__ = ["SapParameters", "ensure_compiled", "sap_arrays", "sap_row_values", "sap_values", "symmetric_step"]

#: ``(near_rigid, compliant, sigma, tau_d, v_max)``: the numbers of (S7)-(S8) for one step.
SapParameters = tuple[float, float, float, float, float]


def sap_row_values(M: Any, J: Any, kind: Any, contact: Any, contact_address: Any, contact_dim: Any, position: Any,
                   distance: Any, dt: float, near_rigid: float, compliant: float, sigma: float, tau_d: float,
                   v_max: float, R: Any, v_hat: Any) -> None:
    """Each row's ``R`` (m,) and ``v_hat`` (m,) into ``R`` and ``v_hat`` (module docstring)."""
    m = J.shape[0]
    if m == 0:
        return
    X = np.linalg.solve(M, np.ascontiguousarray(J.T))  # (nv, m): M^{-1} J^T
    horizon = dt + tau_d
    for i in range(m):
        k = kind[i]
        W_ii = 0.0
        for j in range(J.shape[1]):
            W_ii += J[i, j] * X[j, i]
        if k == EQUALITY:
            R[i] = near_rigid * W_ii
            v_hat[i] = min(max(-position[i] / horizon, -v_max), v_max)
        elif k == LIMIT:
            R[i] = max(near_rigid * W_ii, compliant)
            v_hat[i] = min(-position[i] / horizon, v_max)
        elif k == FRICTION_LOSS:
            R[i] = sigma * W_ii
            v_hat[i] = 0.0
        else:  # EDGE or CONE: a contact's row
            c = contact[i]
            first = contact_address[c]
            j = i - first
            frame = min(contact_dim[c], 3) if k == CONE else 1
            total = 0.0
            for a in range(first, first + frame):
                for b in range(first, first + frame):
                    W_ab = 0.0
                    for col in range(J.shape[1]):
                        W_ab += J[a, col] * X[col, b]
                    total += W_ab * W_ab
            w = math.sqrt(total) / frame  # (S9)
            if w == 0.0:  # a contact no dof moves (module docstring): inert, no impulse
                R[i] = 1.0
                v_hat[i] = 0.0
            elif j >= 3 or (k == EDGE and contact_dim[c] > 1):
                # an angular row (a pyramid's edges are not SAP's rows: sap_values refuses them);
                # one that moves no dof (W_ii = 0) takes the contact's w (module docstring)
                R[i] = sigma * (W_ii if W_ii > 0.0 else w)
                v_hat[i] = 0.0
            elif j == 0:
                R[i] = max(near_rigid * w, compliant)
                v_hat[i] = min(-distance[c] / horizon, v_max)
            else:
                R[i] = sigma * w
                v_hat[i] = 0.0


_KERNELS = ("sap_row_values", "symmetric_step")
ensure_compiled = jit.in_place_once(globals(), _KERNELS)


def parameters(options: Any, dt: float, v_max: float) -> SapParameters:
    """``(near_rigid, compliant, sigma, tau_d, v_max)`` of resolved ``sap`` options at step ``dt``."""
    k, tau_d = float(options["stiffness"]), float(options["dissipation_time_scale"])
    compliant = 0.0 if math.isinf(k) else 1.0 / (dt * k * (dt + tau_d))
    return (float(options["near_rigid_threshold"]) ** 2 / (4.0 * math.pi**2), compliant, float(options["sigma"]),
            tau_d, float(v_max))


def sap_arrays(native: NativeArrays) -> NativeArrays:
    """The arrays of SAP's primal over ``native``'s rows: ``A`` the symmetric part of the step
    matrix ``S`` (``M - h D`` of the system's integrator, as ``sap``'s own build takes
    ``step_dynamics``), so that the impulses are solved for the dynamics that apply them: the
    copy's ``M`` and ``step_matrix`` are ``A`` and its ``acceleration_free`` is ``A^{-1}
    smooth_force`` (MuJoCo solves its rows with ``M`` and applies them through ``S``, which its
    soft rows bear; near-rigid rows solved with ``M`` and applied through a stiff servo's ``S`` are
    not the step's contact problem). ``native`` itself where ``S = M``."""
    S = native.step_matrix
    if S is native.M:
        return native
    ensure_compiled()
    A, acceleration_free = symmetric_step(S, native.smooth_force)
    return dataclasses.replace(native, M=A, step_matrix=A, acceleration_free=acceleration_free)


def symmetric_step(S: Any, smooth_force: Any) -> tuple[Any, Any]:
    """``(A, A^{-1} smooth_force)`` with ``A = (S + S^T) / 2`` (:func:`sap_arrays`); the one
    implementation of both the program object's build and the compiled run
    (:mod:`contactopt.integrators.native_run`), so that the two agree to the last bit."""
    A = 0.5 * (S + S.T)
    return A, np.linalg.solve(A, smooth_force)


def sap_values(native: NativeArrays, numbers: SapParameters) -> tuple[FloatArray, FloatArray]:
    """``(R, v_hat)`` (m,) of ``native``'s rows in the system's order (module docstring)."""
    if native.pyramidal and bool(np.any((native.kind == EDGE) & (native.contact >= 0)
                                        & (native.contact_dim[np.maximum(native.contact, 0)] > 1))):
        raise ValueError("sap -o rows=model: the rows are pyramid edges; SAP's rows are the contact frame's "
                         "(the system's rows are read with elliptic cones)")
    ensure_compiled()
    R, v_hat = np.empty(native.m), np.empty(native.m)
    sap_row_values(native.M, native.J, native.kind, native.contact, native.contact_address, native.contact_dim,
                   native.position, native.contact_distance, native.dt, *numbers, R, v_hat)
    return R, v_hat
