"""Many steps of the step as arrays (:mod:`.native_step`) in one compiled call: MuJoCo's forward
stages, its rows read where ``mjData`` keeps them, the rows' values, Newton and the verdict
(:func:`.native_kernel.native_step`) and ``mj_integratePos``, with no Python between the steps
(issue "The step at MuJoCo's speed": a step was ~170 Python calls around its compiled kernel,
17x ``mj_step`` on dm-control's cheetah).

:func:`run_kernel` calls MuJoCo's C functions by address (:mod:`contactopt.systems.mjcf.clib`,
:mod:`contactopt.core.native_calls`) and writes each step into preallocated columns: its Newton
code, iterations, the verdict's six numbers, build and solve times (``clock_gettime``), and,
ragged over the steps, the contacts' frame impulses and distances and the rows' impulses and
kinds. The records are made from the columns after the call (:func:`run_steps`), by the same
functions as a single step's (:mod:`.native_records`): the status and message of every step,
and so the run, are those of the step-by-step path, which ``tests/test_native_run.py`` checks
step for step (states to 1e-12, the same statuses and messages).

The loop reads the rows as :func:`contactopt.systems.mjcf.native_arrays.read_arrays` reads
them through the bindings, and takes the step matrix of MuJoCo's ``Euler`` integrator (``M + h
diag(dof_damping)``, :func:`contactopt.systems.mjcf.derivatives.euler_damping`). It runs where
:func:`unavailable` finds nothing to refuse: numba, MuJoCo's library checked (:mod:`.clib`), the
``Euler`` integrator, at most :data:`.native_kernel.DENSE_MAX` dofs, and no controller or an
open-loop one (``constant``, ``sinusoid``: its inputs over the run are computed before it,
:class:`contactopt.scenes.control.OpenLoopControl`). Activations are advanced in the loop as
:class:`contactopt.systems.mjcf.activations.ActivationLaw` advances them. Otherwise every step
is one Python call, as before. A step the kernel does not take (a cone with a row scale <= 0, a
sap run's pyramid edges, an unknown row type) is handed back and taken by the step-by-step
path, and the loop goes on after it. It runs in chunks of at most :data:`CHUNK` steps, so that
the progress bar moves and Ctrl-C is heard between them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core import jit
from contactopt.formulations import model_primal, sap_rows
from contactopt.integrators import native_kernel, native_records
from contactopt.model.native import EDGE
from contactopt.model.step import State
from contactopt.records.columns import StepColumns
from contactopt.solvers.base import WRONG_LEVEL
from contactopt.solvers.newton import kernels
from contactopt.systems.mjcf import native_arrays

if jit.ENABLED:  # the module is imported where the run is compiled (numba's intrinsics load with it)
    import numba

    from contactopt.core import native_calls

FloatArray = NDArray[np.float64]

__all__ = ["CHUNK", "run_kernel", "run_steps", "unavailable"]

#: Steps per compiled call (the progress bar and Ctrl-C are served between calls).
CHUNK = 256

#: :func:`run_kernel`'s stop codes: every step done; the last recorded step failed; the step at
#: the returned index was not taken (the step-by-step path takes it); the ragged columns are full.
DONE, FAILED, REFUSED, FULL = 0, 1, 2, 3

def _seconds(clock: Any, timespec: Any) -> float:
    native_calls.call_int_pointer(clock[0], clock[1], timespec.ctypes.data)
    return timespec[0] + 1e-9 * timespec[1]


def run_kernel(functions: Any, pointers: Any, ints: Any, layout: Any, clock: Any, model: int, data: int, qpos: Any,
               qvel: Any, smooth_view: Any, acceleration_view: Any, damping: Any, sparse: bool, sap: bool,
               sap_numbers: Any, table: Any, pyramidal: bool, dt: float, max_iter: int, tol: float, tol_abs: float,
               cost_tol: float, alpha_max: float, ls_tol: float, ls_max_iter: int, confirm: float, wrong: float,
               ctrl: Any, controls: Any, act: Any, act_dot: Any, acts: Any, exact: Any, tau: Any, decay: Any,
               low: Any, high: Any, qs: Any, vs: Any, first: int, count: int, codes: Any, iterations: Any,
               numbers: Any, times: Any, contact_start: Any, row_start: Any, frames: Any, distances: Any, xs: Any,
               kinds: Any) -> tuple[int, int]:
    """Steps ``first .. first + count - 1`` from ``qs[first], vs[first]`` into ``qs``, ``vs`` and
    the columns (module docstring); ``(the index after the last recorded step, stop code)``.
    ``damping`` (nv,): Euler's implicit damping (zeros: none); ``sap``: SAP's values of the rows
    (:func:`contactopt.formulations.sap_rows.sap_row_values` with ``sap_numbers``), else
    MuJoCo's own (``efc_R``, ``J v + h a_ref``). ``controls`` (N, nu): each step's ``ctrl``
    (no rows: ``ctrl`` as set); ``acts`` (N + 1, na): the activations, advanced after each step
    from MuJoCo's ``act_dot`` as :class:`contactopt.systems.mjcf.activations.ActivationLaw` does
    (``exact``, ``tau``, ``decay = 1 - exp(-h / tau)``, the range ``low``, ``high``)."""
    nq, nv = qs.shape[1], vs.shape[1]
    words = numba.carray(native_calls.as_pointer(data), (pointers.max() + 1,), np.int64)
    int_words = numba.carray(native_calls.as_pointer(data), (ints.max() + 1,), np.int32)
    stride = layout[0]
    timespec = np.zeros(2, np.int64)
    damped = False
    for j in range(nv):
        damped = damped or damping[j] != 0.0
    for k in range(first, first + count):
        start = _seconds(clock, timespec)
        for j in range(nq):
            qpos[j] = qs[k, j]
        for j in range(nv):
            qvel[j] = vs[k, j]
        if controls.shape[0] > 0:
            for j in range(ctrl.shape[0]):
                ctrl[j] = controls[k, j]
        for j in range(act.shape[0]):
            act[j] = acts[k, j]
        for f in range(4):  # mj_fwdPosition, mj_fwdVelocity, mj_fwdActuation, mj_fwdAcceleration
            native_calls.call_pointers2(functions[f], model, data)
        nefc, ncon = int_words[ints[0]], int_words[ints[1]]
        c0, r0 = contact_start[k], row_start[k]
        if c0 + ncon > frames.shape[0] or r0 + nefc > xs.shape[0]:
            return k, FULL
        efc = np.empty(10, np.int64)
        for i in range(10):
            efc[i] = words[pointers[i]]
        efc_type = numba.carray(native_calls.as_pointer(efc[0]), (nefc,), np.int32)
        efc_id = numba.carray(native_calls.as_pointer(efc[1]), (nefc,), np.int32)
        frictionloss = numba.carray(native_calls.as_pointer(efc[2]), (nefc,), np.float64)
        address, dim = np.empty(ncon, np.int64), np.empty(ncon, np.int64)
        friction, distance = np.empty((ncon, 5)), np.empty(ncon)
        if ncon > 0:
            doubles = numba.carray(native_calls.as_pointer(words[pointers[10]]), (ncon * stride // 8,), np.float64)
            integers = numba.carray(native_calls.as_pointer(words[pointers[10]]), (ncon * stride // 4,), np.int32)
            for c in range(ncon):
                distance[c] = doubles[c * stride // 8 + layout[1]]
                for a in range(5):
                    friction[c, a] = doubles[c * stride // 8 + layout[2] + a]
                dim[c] = integers[c * stride // 4 + layout[3]]
                address[c] = integers[c * stride // 4 + layout[4]]
        kind, contact = np.empty(nefc, np.int64), np.empty(nefc, np.int64)
        bound, cone_scale = np.empty(nefc), np.empty(nefc)
        if native_arrays.derive_rows(efc_type, efc_id, frictionloss, address, friction, table, kind, contact, bound,
                                     cone_scale) >= 0:
            return k, REFUSED
        M = np.empty((nv, nv))
        native_calls.call_pointers3(functions[4], model, data, M.ctypes.data)  # mj_fullM
        J = np.zeros((nefc, nv))
        if sparse:
            rownnz = numba.carray(native_calls.as_pointer(efc[4]), (nefc,), np.int32)
            rowadr = numba.carray(native_calls.as_pointer(efc[5]), (nefc,), np.int32)
            nnz = 0
            for i in range(nefc):
                nnz = max(nnz, rowadr[i] + rownnz[i])
            colind = numba.carray(native_calls.as_pointer(efc[6]), (nnz,), np.int32)
            values = numba.carray(native_calls.as_pointer(efc[3]), (nnz,), np.float64)
            for i in range(nefc):
                for p in range(rowadr[i], rowadr[i] + rownnz[i]):
                    J[i, colind[p]] = values[p]
        elif nefc > 0:
            dense = numba.carray(native_calls.as_pointer(efc[3]), (nefc, nv), np.float64)
            for i in range(nefc):
                for j in range(nv):
                    J[i, j] = dense[i, j]
        S = M
        if damped:  # Euler's step matrix M + h diag(damping)
            S = M.copy()
            for j in range(nv):
                S[j, j] += dt * damping[j]
        v = vs[k].copy()
        smooth_force, acceleration_free = smooth_view.copy(), acceleration_view.copy()
        position = numba.carray(native_calls.as_pointer(efc[9]), (nefc,), np.float64)
        R, v_hat = np.empty(nefc), np.empty(nefc)
        if sap:
            for i in range(nefc):
                if pyramidal and kind[i] == EDGE and contact[i] >= 0 and dim[contact[i]] > 1:
                    return k, REFUSED  # pyramid edges: the step-by-step path says why
            if damped:  # A, the step matrix's symmetric part (sap_rows.sap_arrays)
                A, acceleration_free = sap_rows.symmetric_step(S, smooth_force)
                M, S = A, A
            sap_rows.sap_row_values(M, J, kind, contact, address, dim, position, distance, dt, sap_numbers[0],
                                    sap_numbers[1], sap_numbers[2], sap_numbers[3], sap_numbers[4], R, v_hat)
        else:
            R[:] = numba.carray(native_calls.as_pointer(efc[7]), (nefc,), np.float64)
            v_hat = model_primal.model_targets(J, numba.carray(native_calls.as_pointer(efc[8]), (nefc,), np.float64),
                                               v, dt)
        built = _seconds(clock, timespec)
        v_next, x, frame, verdict = np.empty(nv), np.empty(nefc), np.empty((ncon, 3)), np.empty(6)
        code, its = native_kernel.native_step(
            M, S, v, smooth_force, acceleration_free, J, R, v_hat, kind, bound, cone_scale, contact, address, dim,
            friction, pyramidal, dt, max_iter, tol, tol_abs, cost_tol, alpha_max, ls_tol, ls_max_iter, confirm,
            v_next, x, frame, verdict)
        solved = _seconds(clock, timespec)
        if code == native_kernel.ANISOTROPIC:
            return k, REFUSED
        codes[k], iterations[k] = code, its
        times[k, 0], times[k, 1] = built - start, solved - built
        for i in range(6):
            numbers[k, i] = verdict[i]
        for c in range(ncon):
            distances[c0 + c] = distance[c]
            for a in range(3):
                frames[c0 + c, a] = frame[c, a]
        for i in range(nefc):
            xs[r0 + i], kinds[r0 + i] = x[i], kind[i]
        contact_start[k + 1], row_start[k + 1] = c0 + ncon, r0 + nefc
        if not usable(code, verdict, wrong):
            return k + 1, FAILED
        for j in range(nq):
            qs[k + 1, j] = qs[k, j]
        for j in range(nv):
            vs[k + 1, j] = v_next[j]
        for j in range(act.shape[0]):  # ActivationLaw.advance, in its order of operations
            rise = act_dot[j] * tau[j] * decay[j] if exact[j] else act_dot[j] * dt
            acts[k + 1, j] = np.minimum(np.maximum(acts[k, j] + rise, low[j]), high[j])
        native_calls.call_pointers3_double(functions[5], model, qs.ctypes.data + 8 * (k + 1) * nq,
                                           vs.ctypes.data + 8 * (k + 1) * nv, dt)  # mj_integratePos
    return first + count, DONE


def usable(code: int, verdict: Any, wrong: float) -> bool:
    """Whether :func:`.native_step.verdict` gives a usable status to a step of Newton code
    ``code`` and verdict numbers ``verdict``: a converged code, a finite relative residual, a
    measurable gap and neither reading above ``wrong`` (:func:`contactopt.solvers.base.judge`'s
    contradiction, the only way it turns a usable status into an unusable one)."""
    converged = code == kernels.CRITERION or code == kernels.COST_FLOOR or code == kernels.NO_DESCENT
    relative, gap, data = verdict[4], verdict[2], verdict[5]
    return converged and math.isfinite(relative) and not math.isnan(gap) and not relative > wrong \
        and not data > wrong


_KERNELS = ("_seconds", "usable", "run_kernel")
#: Compiles the callees first (numba resolves a kernel's globals when it compiles it).
ensure_compiled = jit.in_place_once(globals(), _KERNELS, before=(
    native_kernel.ensure_compiled, model_primal.ensure_compiled, sap_rows.ensure_compiled, native_arrays.jit_kernels))


def unavailable(stepper: Any, controls: FloatArray | None, control: Callable[..., Any] | None) -> str:
    """Why ``stepper``'s run cannot go through :func:`run_kernel` ("" where it can)."""
    from contactopt.systems.mjcf import clib, derivatives

    system = stepper.system
    if not jit.ENABLED:
        return "numba is not installed"
    if stepper.tableau is not None:
        return "RK4's stages step through Python"
    if control is not None and controls is None:
        return "a controller is called between steps"
    model, _ = system.native_model_data()
    if int(model.nv) > native_kernel.DENSE_MAX or int(model.nv) == 0:
        return f"nv = {int(model.nv)}: the program object's sparse path"
    if derivatives.integrator_name(system.mujoco, model) != "Euler":
        return "only MuJoCo's Euler step matrix is compiled"
    return clib.library(system.mujoco)[1]


def run_steps(stepper: Any, state: State, n_steps: int, times: list[float], qs: list[FloatArray],
              vs: list[FloatArray], acts: list[FloatArray], steps: StepColumns, bar: Any,
              controls: FloatArray | None) -> str:
    """:meth:`.native_step.NativeStepping.run_steps` through :func:`run_kernel` (module
    docstring; :func:`unavailable` says it can); ``controls`` (n_steps, nu): each step's input
    (an open-loop controller's schedule), None without a controller. The
    records go to ``steps``, the run's :class:`~contactopt.records.columns.StepColumns`, from the
    columns at once (:func:`.native_records.extend_columns`)."""
    from contactopt.systems.mjcf import clib, compat, derivatives
    from contactopt.systems.mjcf.native import set_inputs

    ensure_compiled()
    system = stepper.system
    mujoco = system.mujoco
    model, data = system.native_model_data()
    lib, _ = clib.library(mujoco)
    assert lib is not None  # unavailable() said so
    nq, nv, dt = int(model.nq), int(model.nv), stepper.dt
    Q, V = np.empty((n_steps + 1, nq)), np.empty((n_steps + 1, nv))
    Q[0], V[0] = state.q, state.v
    A = np.empty((n_steps + 1, int(model.na)))
    A[0] = state.act
    law = system._activation_law
    with np.errstate(over="ignore"):
        decay = 1.0 - np.exp(-dt / law.tau)  # ActivationLaw.advance's factor of filterexact actuators
    schedule = np.zeros((0, int(model.nu))) if controls is None else np.ascontiguousarray(controls, dtype=np.float64)
    columns = _Columns(n_steps, *room(data))
    damping = derivatives.euler_damping(mujoco, model)
    damping = np.zeros(nv) if damping is None else damping
    sap = stepper.sap is not None
    sap_numbers = np.array(stepper.sap if sap else (0.0,) * 5, dtype=np.float64)
    options: tuple[int, float, float, float, float, float, int, float] = stepper._kernel_options
    max_iter = int(stepper.newton["max_iter"])
    table = native_arrays.kind_table(mujoco)
    t = state.t
    k = 0
    while k < n_steps:
        set_inputs(system, model, data, dt, stepper.cone)
        pyramidal = int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
        done, stop = run_kernel(
            lib.functions, lib.pointers, lib.ints, lib.contact, lib.clock, model._address, data._address,
            data.qpos, data.qvel, data.qfrc_smooth, data.qacc_smooth, damping, compat._is_sparse(model, data), sap,
            sap_numbers, table, pyramidal, dt, *options, WRONG_LEVEL, data.ctrl, schedule, data.act, data.act_dot, A,
            law.exact, law.tau, decay, law.low, law.high, Q, V, k, min(CHUNK, n_steps - k), *columns.arrays())
        if done > k:
            stamps = np.add.accumulate(np.concatenate([[t], np.full(done - k, dt)]))  # t += dt, step by step
            failed = native_records.extend_columns(
                steps, stamps[:-1], columns.codes[k:done], columns.iterations[k:done], columns.numbers[k:done],
                columns.times[k:done], columns.contact_start[k:done + 1], columns.row_start[k:done + 1], columns.frames,
                columns.distances, columns.xs, columns.kinds, None if controls is None else schedule[k:done], max_iter)
            kept = done - k if failed < 0 else failed  # the steps with a state after them
            times.extend(stamps[1:kept + 1].tolist())
            t = times[-1]
            qs.extend(_frozen(Q[k + 1:k + kept + 1]))
            vs.extend(_frozen(V[k + 1:k + kept + 1]))
            acts.extend(_frozen(A[k + 1:k + kept + 1]))
            if failed >= 0:
                record = steps[-1]
                return f"step {len(steps) - 1} at t={record.t:.6g} failed: {record.status} ({record.message})"
        bar.update(done - k)
        k = done
        if stop == FULL:
            columns.grow()
        elif stop == REFUSED:  # one step by the step-by-step path, then the loop again
            at = State.checked(Q[k].copy(), V[k].copy(), t, A[k].copy())
            if controls is not None:
                system.set_control(schedule[k])
            next_state, record = stepper.step(at)
            steps.append(record if controls is None else dataclasses.replace(record, control=schedule[k]))
            if next_state is None:
                return f"step {len(steps) - 1} at t={t:.6g} failed: {record.status} ({record.message})"
            t = next_state.t
            Q[k + 1], V[k + 1], A[k + 1] = next_state.q, next_state.v, next_state.act
            times.append(t)
            qs.append(next_state.q)
            vs.append(next_state.v)
            acts.append(next_state.act)
            columns.skip(k)
            bar.update(1)
            k += 1
    return ""


def room(data: Any) -> tuple[int, int]:
    """The ragged columns' first room a step: ``(contacts, rows)``, twice the state's own (they
    grow when a step needs more: :meth:`_Columns.grow`)."""
    return max(4, 2 * int(data.ncon)), max(8, 2 * int(data.nefc))


def _frozen(rows: FloatArray) -> FloatArray:
    rows.setflags(write=False)
    return rows


class _Columns:
    """:func:`run_kernel`'s columns for ``n`` steps: per step, and ragged over the steps (contacts
    and rows, grown by :meth:`grow` when the kernel says they are full)."""

    def __init__(self, n: int, contacts: int, rows: int) -> None:
        self.codes, self.iterations = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.numbers, self.times = np.zeros((n, 6)), np.zeros((n, 2))
        self.contact_start, self.row_start = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
        self.frames, self.distances = np.zeros((n * contacts, 3)), np.zeros(n * contacts)
        self.xs, self.kinds = np.zeros(n * rows), np.zeros(n * rows, np.int64)

    def arrays(self) -> tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any, Any]:
        return (self.codes, self.iterations, self.numbers, self.times, self.contact_start, self.row_start,
                self.frames, self.distances, self.xs, self.kinds)

    def grow(self) -> None:
        """Twice the ragged columns' room (what is written is kept)."""
        self.frames = np.concatenate([self.frames, np.zeros_like(self.frames)])
        self.distances = np.concatenate([self.distances, np.zeros_like(self.distances)])
        self.xs = np.concatenate([self.xs, np.zeros_like(self.xs)])
        self.kinds = np.concatenate([self.kinds, np.zeros_like(self.kinds)])

    def skip(self, k: int) -> None:
        """Step ``k`` was taken outside the kernel: it holds no ragged entries."""
        self.contact_start[k + 1], self.row_start[k + 1] = self.contact_start[k], self.row_start[k]
