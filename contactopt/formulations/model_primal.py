"""``regularized -o params=model,form=primal``: the system's own constraint problem (MuJoCo's)
as the unconstrained primal of :mod:`contactopt.programs.primal`, the program MuJoCo's own
Newton solver minimizes (Todorov 2014, "Convex and analytically-invertible dynamics with
contacts and constraints", sec. 4; MuJoCo documentation, "Computation: Constraint model" and
"Solver").

MuJoCo's dual over the impulses ``x = h f`` of its rows (:mod:`contactopt.model.native`)::

    minimize_{x in K}  1/2 x^T (J M^{-1} J^T + R) x + x^T (J v* - v_hat),
    v* = v + h a0,   v_hat = J v + h a_ref,

is the Lagrangian dual of SAP's primal (S1) with ``A = M``, the same ``J`` and ``R`` and
``F = K``; so the primal's optimum ``v`` and impulses ``gamma`` are the dual's ``x`` and
``v + M^{-1} J^T x``. Its rows, in the order (S6) wants them: equality rows (free), limit rows
and pyramid edges (``>= 0``), each elliptic contact's cone (row scale ``D = (1, mu_1, ..)``:
``y = D^{-1} gamma in SOC`` is MuJoCo's ``f_n >= ||(f_i / mu_i)_i||``), then the dry-friction
rows (box rows ``|gamma| <= h frictionloss``). The next velocity is MuJoCo's integrator's,
``v' = v + S^{-1} (h smooth_force + J^T x)``.

:func:`primal_rows` orders the rows once (a few array operations); the program object
(:func:`program`) is made from those arrays on request, and the compiled step
(:mod:`contactopt.integrators.native_step`) solves the same arrays without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.formulations.base import StepResult
from contactopt.model.native import CONE, EDGE, EQUALITY, FRICTION_LOSS, LIMIT, NativeArrays
from contactopt.model.step import StepProblem
from contactopt.programs import SOC, Block, Cone, Nonneg, Solution, Zero
from contactopt.programs.csc import to_csc, to_csr
from contactopt.programs.primal import PrimalConicProgram, PrimalProgram

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["PrimalRows", "frame_impulses", "next_velocity", "primal_rows", "program", "recover"]


@dataclass(frozen=True)
class PrimalRows:
    """The rows of the primal in (S6)'s order (module docstring).

    Attributes:
        order: (m,) the system's row of each primal row.
        R: (m,) regularization; v_hat: (m,) the rows' target velocities; scale: (m,) ``D``.
        free, nonneg, box: how many rows of each kind (in that order, box rows last).
        cone_start: (k,) first primal row of each elliptic contact's cone; cone_dim: (k,) its rows.
        box_bound: (box,) ``h frictionloss`` of the box rows.
    """

    order: IntArray
    R: FloatArray
    v_hat: FloatArray
    scale: FloatArray
    free: int
    nonneg: int
    box: int
    cone_start: IntArray
    cone_dim: IntArray
    box_bound: FloatArray


def row_order(kind: IntArray, contact: IntArray, contact_address: IntArray) -> Any:
    """``(order, free, nonneg, box, cone_start, cone_dim)``: the rows in (S6)'s order
    (equality, ``>= 0`` rows, cones, box rows; module docstring), each kind in the system's order."""
    m = kind.shape[0]
    order = np.empty(m, np.int64)
    counts = np.zeros(5, np.int64)
    for i in range(m):
        counts[kind[i]] += 1
    free, box = counts[EQUALITY], counts[FRICTION_LOSS]
    nonneg = counts[LIMIT] + counts[EDGE]
    position = np.array([0, free + nonneg + counts[CONE], free, free, free + nonneg], np.int64)  # by kind
    cones = 0
    for i in range(m):
        k = kind[i]
        if k == EDGE:
            k = LIMIT  # limits and edges share the nonneg block, in the system's order
        if kind[i] == CONE and contact_address[contact[i]] == i:
            cones += 1
        order[position[k]] = i
        position[k] += 1
    cone_start = np.empty(cones, np.int64)
    cone_dim = np.zeros(cones, np.int64)
    cone = -1
    for p in range(free + nonneg, free + nonneg + counts[CONE]):
        i = order[p]
        if contact_address[contact[i]] == i:
            cone += 1
            cone_start[cone] = p
        cone_dim[cone] += 1
    return order, free, nonneg, box, cone_start, cone_dim


def frame_kernel(impulses: FloatArray, contact_address: IntArray, contact_dim: IntArray, friction: FloatArray,
                 pyramidal: bool, out: FloatArray) -> None:
    """:func:`frame_impulses` into ``out`` (nc, 3)."""
    for c in range(contact_address.shape[0]):
        out[c, 0] = out[c, 1] = out[c, 2] = 0.0
        first, dim = contact_address[c], contact_dim[c]
        if first < 0:
            continue
        if pyramidal and dim > 1:
            for e in range(2 * (dim - 1)):
                out[c, 0] += impulses[first + e]
            for axis in range(min(dim - 1, 2)):
                out[c, 1 + axis] = friction[c, axis] * (impulses[first + 2 * axis] - impulses[first + 2 * axis + 1])
        else:
            for j in range(min(dim, 3)):
                out[c, j] = impulses[first + j]


_KERNELS = ("row_order", "model_targets", "ordered_rows", "frame_kernel")
ensure_compiled = jit.in_place_once(globals(), _KERNELS)


def model_targets(J_rows: FloatArray, a_ref: FloatArray, v: FloatArray, dt: float) -> FloatArray:
    """``v_hat = J v + h a_ref`` (m,): the rows' target velocities of MuJoCo's own program
    (module docstring), in the system's row order."""
    m, nv = J_rows.shape[0], v.shape[0]
    v_hat = np.empty(m)
    for i in range(m):
        total = dt * a_ref[i]
        for j in range(nv):
            total += J_rows[i, j] * v[j]
        v_hat[i] = total
    return v_hat


def ordered_rows(kind: IntArray, contact: IntArray, contact_address: IntArray, J_rows: FloatArray,
                 R_rows: FloatArray, v_hat_rows: FloatArray, cone_scale: FloatArray, bound_rows: FloatArray,
                 dt: float) -> Any:
    """The primal's rows in (S6)'s order (:func:`row_order`): ``(order, free, nonneg, box,
    cone_start, cone_dim, J, R, v_hat, scale, box_bound)`` from the rows' regularization ``R_rows``
    and target velocities ``v_hat_rows`` (system order: :func:`model_targets` for MuJoCo's own
    program, :func:`contactopt.formulations.sap_rows.sap_values` for SAP's) and the box rows'
    bounds ``h frictionloss`` (module docstring); the one build of both the program object and
    the compiled step (:mod:`contactopt.integrators.native_kernel`)."""
    order, free, nonneg, box, cone_start, cone_dim = row_order(kind, contact, contact_address)
    m, nv = order.shape[0], J_rows.shape[1]
    J = np.empty((m, nv))
    R, v_hat, scale = np.empty(m), np.empty(m), np.empty(m)
    for p in range(m):
        i = order[p]
        R[p], scale[p], v_hat[p] = R_rows[i], cone_scale[i], v_hat_rows[i]
        for j in range(nv):
            J[p, j] = J_rows[i, j]
    box_bound = np.empty(box)
    for r in range(box):
        box_bound[r] = dt * bound_rows[order[m - box + r]]
    return order, free, nonneg, box, cone_start, cone_dim, J, R, v_hat, scale, box_bound


def row_values(native: NativeArrays,
               values: tuple[FloatArray, FloatArray] | None = None) -> tuple[FloatArray, FloatArray]:
    """``(R, v_hat)`` of the rows in the system's order: ``values`` where given (SAP's), else
    MuJoCo's own ``efc_R`` and ``J v + h a_ref``."""
    if values is not None:
        return values
    ensure_compiled()
    return native.R, model_targets(native.J, native.a_ref, native.v, native.dt)


def primal_rows(native: NativeArrays, values: tuple[FloatArray, FloatArray] | None = None) -> PrimalRows:
    """Order ``native``'s rows for (S6): equality, then ``>= 0`` rows, cones, box rows, with the
    rows' ``(R, v_hat)`` of :func:`row_values`."""
    ensure_compiled()
    R_rows, v_hat_rows = row_values(native, values)
    order, free, nonneg, box, cone_start, cone_dim, _, R, v_hat, scale, box_bound = ordered_rows(
        native.kind, native.contact, native.contact_address, native.J, R_rows, v_hat_rows, native.cone_scale,
        native.bound, native.dt)
    return PrimalRows(order=order, R=R, v_hat=v_hat, scale=scale, free=int(free), nonneg=int(nonneg), box=int(box),
                      cone_start=cone_start, cone_dim=cone_dim, box_bound=box_bound)


def cones(rows: PrimalRows) -> tuple[Cone, ...]:
    """``K`` of the conic form for every row but the box rows."""
    out: list[Cone] = [Zero(rows.free)] if rows.free else []
    if rows.nonneg:
        out.append(Nonneg(rows.nonneg))
    out += [SOC(int(d)) for d in rows.cone_dim]
    return tuple(out)


def constraint_blocks(rows: PrimalRows) -> tuple[Block, ...]:
    """The named row blocks of the conic form before its box rows."""
    m = rows.order.shape[0]
    return tuple(Block(name, start, stop) for name, start, stop in (
        ("bilateral", 0, rows.free), ("limits_and_contacts", rows.free, m - rows.box)) if stop > start)


def program(native: NativeArrays, rows: PrimalRows, metadata: Mapping[str, Any]) -> PrimalConicProgram:
    """The conic form (S6) of the primal over ``native``'s rows, as a program object."""
    primal = PrimalProgram(A=to_csc(native.M), v_star=native.v_star(), J=to_csr(native.J[rows.order]), R=rows.R,
                           v_hat=rows.v_hat, scale=rows.scale, cones=cones(rows), constraints=constraint_blocks(rows),
                           metadata={**metadata, "form": "primal", "order": rows.order.tolist()},
                           v_guess=native.v, box=rows.box_bound)
    return primal.to_conic()


def next_velocity(native: NativeArrays, impulses: FloatArray) -> FloatArray:
    """``v' = v + S^{-1} (h smooth_force + J^T x)`` for the row impulses ``x`` (system order)."""
    return native.v + np.linalg.solve(native.step_matrix, native.dt * native.smooth_force + native.J.T @ impulses)


def frame_impulses(native: NativeArrays, impulses: FloatArray) -> FloatArray:
    """(nc, 3) each contact's impulse in its frame ``[n, t1, t2]`` from its rows' impulses: a
    pyramid's edges ``(n + mu_i t_i, n - mu_i t_i)`` sum to ``n`` and differ by ``t_i / mu_i``;
    a cone's rows are the frame's (torsional and rolling rows have no place in it)."""
    ensure_compiled()
    out = np.empty((native.contact_count, 3))
    frame_kernel(impulses, native.contact_address, native.contact_dim, native.contact_friction, native.pyramidal, out)
    return out


def recover(problem: StepProblem, program: PrimalConicProgram, solution: Solution,
            arrays: NativeArrays | None = None) -> StepResult:
    """``v'`` and the impulses of the step's own rows (the native rows' maps) from a solution;
    ``v'`` by :func:`next_velocity` of ``arrays`` (default: the step's own)."""
    native = problem.native
    assert native is not None and native.arrays is not None
    gamma = np.asarray(program.variable(solution.x, "sigma"), dtype=np.float64)
    x = np.zeros(gamma.shape[0])
    x[np.asarray(program.metadata["order"], dtype=np.int64)] = gamma
    maps = native.maps
    impulses = np.asarray(maps["contacts"] @ x).reshape(problem.contacts.count, problem.contacts.dim)
    return StepResult(v_next=next_velocity(native.arrays if arrays is None else arrays, x), impulses=impulses,
                      bilateral=np.asarray(maps["bilateral"] @ x), limits=np.asarray(maps["limits"] @ x),
                      friction_loss=np.asarray(maps["friction_loss"] @ x))
