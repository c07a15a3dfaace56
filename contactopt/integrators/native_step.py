"""The step as arrays (issue "The step at MuJoCo's speed"): ``regularized -o params=model,form=primal``
with the ``newton`` solver, MuJoCo's own rows read as arrays, solved and judged without program objects.

Each step: one ``mj_forward`` and a handful of array copies
(:func:`contactopt.systems.mjcf.native_arrays.native_arrays`), the rows ordered for the primal
(:func:`contactopt.formulations.model_primal.primal_rows`), then Newton's method of
:mod:`contactopt.solvers.newton` on those arrays in one compiled call
(:func:`contactopt.solvers.newton.kernels.dense_newton`), its answer judged by contactopt's
row-wise residuals of the primal's conic form (S6) (:mod:`contactopt.solvers.base`'s levels),
and MuJoCo's velocity update ``v' = v + S^{-1} (h smooth_force + J^T x)``. The program object
(:func:`contactopt.formulations.model_primal.program`) is made from the same arrays only on
request (``co.formulate``, ``last_program``): the compiled step and the object are one build.

**Records.** The contacts of a record are MuJoCo's own contacts of the step (``data.contact``,
the model as written: ``phi`` their ``dist``, ``impulses`` their frame impulses ``[n, t1, t2]``,
``candidates`` and ``mujoco_contacts`` their count); the equality, limit and dry-friction rows'
impulses are MuJoCo's rows of the step, in MuJoCo's order.

Programs with more unknowns than the dense kernel takes (``DENSE_KERNEL_MAX``) are solved by the
``newton`` solver on the program object, with the same records.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt import solvers
from contactopt.core.errors import OptionError
from contactopt.formulations import model_primal
from contactopt.integrators.time_stepping import TimeStepping
from contactopt.model.native import EQUALITY, FRICTION_LOSS, LIMIT, NativeArrays
from contactopt.model.step import State
from contactopt.programs import Residuals, Status
from contactopt.records.step import StepRecord
from contactopt.solvers.base import CONFIRM_LEVEL, judge
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton.solver import _MESSAGES, DEFAULTS, DENSE_KERNEL_MAX

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["NativeStepping", "takes"]


def takes(formulation: str, solver: str | None, options: Mapping[str, Any] | None, system: Any) -> bool:
    """Whether a run is this stepper's: ``regularized`` with ``params=model, form=primal``, the
    ``newton`` solver and a system that gives its own rows as arrays (MJCF)."""
    given = options or {}
    return (formulation.strip().lower() == "regularized" and solver == "newton" and given.get("params") == "model"
            and given.get("form") == "primal" and hasattr(system, "native_model_data"))


def blocks(rows: model_primal.PrimalRows) -> kernels.Blocks:
    """The Newton kernels' blocks ``(start, dim, kind, mu, scale)`` of the primal rows, in the
    order the solver's layout gives them (free, nonneg, box, cones); a cone whose tangential row
    scales differ (MuJoCo's anisotropic elliptic cone) has no block here (None: the program
    object's layout takes it)."""
    m = rows.order.shape[0]
    cones_m = m - rows.box
    scalar = np.arange(rows.free + rows.nonneg, dtype=np.int64)
    box = np.arange(cones_m, m, dtype=np.int64)
    start = np.concatenate([scalar, box, rows.cone_start])
    dim = np.concatenate([np.ones(scalar.shape[0] + box.shape[0], np.int64), rows.cone_dim])
    kind = np.concatenate([np.full(rows.free, kernels.FREE, np.int64), np.full(rows.nonneg, kernels.NONNEG, np.int64),
                           np.full(rows.box, kernels.BOX, np.int64), np.full(rows.cone_start.shape[0], kernels.SOC,
                                                                               np.int64)])
    mu = np.concatenate([np.zeros(scalar.shape[0]), rows.box_bound, rows.scale[rows.cone_start + 1 if
                                                                                    rows.cone_start.size else []]
                         / rows.scale[rows.cone_start]])
    return start, dim, kind, mu, np.ones(m)


def isotropic(rows: model_primal.PrimalRows) -> bool:
    """Whether every cone has equal tangential row scales and regularization (an isotropic friction cone)."""
    for s, d in zip(rows.cone_start.tolist(), rows.cone_dim.tolist(), strict=True):
        if d > 1 and (np.ptp(rows.scale[s + 1:s + d]) > 0.0 or np.ptp(rows.R[s + 1:s + d]) > 0.0):
            return False
    return True


class NativeStepping(TimeStepping):
    """:class:`TimeStepping` of ``regularized -o params=model,form=primal`` / ``newton`` on the
    arrays of :class:`~contactopt.model.native.NativeArrays` (module docstring)."""

    def __init__(self, system: Any, formulation: str, solver: str, dt: float,
                 options: Mapping[str, Any] | None = None, solver_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(system, formulation, solver, dt, options, solver_options)
        if self.tableau is not None:
            raise OptionError(f"regularized -o params=model,form=primal: {self.tableau.name} stage programs are "
                              "not taken by the array step; use form=dual for this model")
        unknown = sorted(set(self.solver_options) - set(DEFAULTS))
        if unknown:
            raise OptionError(f"solver 'newton': unknown option(s) {', '.join(map(repr, unknown))}")
        self.newton = {**DEFAULTS, **self.solver_options}
        if self.newton["history"]:
            raise OptionError("regularized -o params=model,form=primal: newton's history is recorded on the program "
                              "object only (co.solve(co.formulate(...), 'newton', {'history': True}))")
        request = self.formulation.native_request(self.formulation_options)
        assert request is not None  # params=model (takes)
        self.cone: str | None = request["cone"]
        self.last_native: NativeArrays | None = None
        self._previous_v: FloatArray | None = None
        kernels.ensure_compiled()

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        from contactopt.systems.mjcf.native_arrays import native_arrays

        self._prebuilt = None
        self.system.set_activation(state.act)
        start = time.perf_counter()
        native = native_arrays(self.system, state.q, state.v, self.dt, self.cone)
        rows = model_primal.primal_rows(native)
        build_time = time.perf_counter() - start
        self.last_native = native
        if native.nv > DENSE_KERNEL_MAX or not kernels.AVAILABLE or not isotropic(rows):
            status, gamma, iterations, message, residuals, solve_time = self._solve_object(native, rows)
        else:
            status, gamma, iterations, message, residuals, solve_time = self._solve_arrays(native, rows)
        x = np.zeros(native.m)
        x[rows.order] = gamma
        counts = {"candidates": native.contact_count, "mujoco_contacts": native.contact_count}
        record: dict[str, Any] = dict(t=state.t, phi=native.contact_distance, status=status, build_time=build_time,
                                      setup_time=0.0, solve_time=solve_time, iterations=iterations,
                                      residuals=residuals, solver="newton", message=message, **counts)
        if not status.usable:
            return None, StepRecord(impulses=np.full((native.contact_count, 3), np.nan), **record)
        v_next = model_primal.next_velocity(native, x)
        self._previous_v = None
        next_state = State(self.system.integrate(state.q, v_next, self.dt), v_next, state.t + self.dt,
                           self.system.next_activation(state.q, state.v, self.dt))
        kind = native.kind
        return next_state, StepRecord(impulses=model_primal.frame_impulses(native, x), bilateral=x[kind == EQUALITY],
                                      limits=x[kind == LIMIT], friction_loss=x[kind == FRICTION_LOSS], **record)

    def _solve_arrays(self, native: NativeArrays, rows: model_primal.PrimalRows
                      ) -> tuple[Status, FloatArray, int, str, Residuals, float]:
        """Newton's compiled loop on the arrays, continued to its rounding floor where the
        row-wise residuals ask (as :func:`contactopt.solvers.newton.solver.solve` does)."""
        from contactopt.integrators.native_verdict import verdict

        opts = self.newton
        A, J = native.M, np.ascontiguousarray(native.J[rows.order])
        v_star = native.v_star()
        c = -(A @ v_star)
        d_inv = 1.0 / np.sqrt(np.diagonal(A))
        block = blocks(rows)
        v = np.array(native.v if opts["warm_start"] is None else opts["warm_start"], dtype=np.float64)
        gamma = np.empty(rows.R.shape[0])
        start = time.perf_counter()
        code, iterations = kernels.dense_newton(A, J, rows.R, rows.v_hat, c, d_inv, *block, v, gamma,
                                                int(opts["max_iter"]), float(opts["tol"]), float(opts["tol_abs"]),
                                                float(opts["cost_tol"]), float(opts["alpha_max"]),
                                                float(opts["ls_tol"]), int(opts["ls_max_iter"]))
        status, message = _status(code, opts)
        residuals, data = verdict(A, J, rows, c, v, gamma)
        if status is Status.OPTIMAL and np.all(np.isfinite(v)) and residuals.relative > CONFIRM_LEVEL:
            more, extra = kernels.dense_newton(A, J, rows.R, rows.v_hat, c, d_inv, *block, v, gamma,
                                               int(opts["max_iter"]), 0.0, 0.0, float(opts["cost_tol"]),
                                               float(opts["alpha_max"]), float(opts["ls_tol"]),
                                               int(opts["ls_max_iter"]))
            iterations += extra
            if more != kernels.MAX_ITER:
                status, message = _status(more, opts)
            residuals, data = verdict(A, J, rows, c, v, gamma)
        solve_time = time.perf_counter() - start
        if status.usable and not (np.all(np.isfinite(v)) and np.all(np.isfinite(gamma))):
            status, message = Status.NUMERICAL_ERROR, f"{message}; solver returned a non-finite iterate"
        elif status.usable:
            status, message = judge_arrays(residuals, data, status, message)
        return status, gamma, iterations, message, residuals, solve_time

    def _solve_object(self, native: NativeArrays, rows: model_primal.PrimalRows
                      ) -> tuple[Status, FloatArray, int, str, Residuals, float]:
        """The ``newton`` solver on the program object of the same arrays (large or anisotropic programs)."""
        program = model_primal.program(native, rows, {"formulation": "regularized", "params": "model",
                                                      "dt": self.dt, "nv": native.nv})
        self.last_program = program
        solution = solvers.solve(program, "newton", self.solver_options)
        self.last_solution = solution
        gamma = np.asarray(program.variable(solution.x, "sigma"), dtype=np.float64)
        return (solution.status, gamma, solution.iterations, solution.message, solution.residuals,
                solution.setup_time + solution.solve_time)

    def program(self, state: State) -> Any:
        """The step's problem and program object (made from the same arrays: module docstring)."""
        return super().program(state)


def _status(code: int, opts: Mapping[str, Any]) -> tuple[Status, str]:
    if code == kernels.MAX_ITER:
        return Status.MAX_ITERATIONS, f"{opts['max_iter']} Newton iterations"
    return _MESSAGES[code]


def judge_arrays(residuals: Residuals, data: float, status: Status, message: str) -> tuple[Status, str]:
    """:func:`contactopt.solvers.base.judge` on residuals already computed (no program object)."""
    return judge(None, np.zeros(0), np.zeros(0), residuals, status, message, None, data_violation=data)
