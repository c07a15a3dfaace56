"""The step as arrays (issue "The step at MuJoCo's speed"): ``regularized -o params=model,form=primal``
and ``sap -o rows=model`` with the ``newton`` solver, MuJoCo's own rows read as arrays, solved and
judged without program objects. The two differ only in the rows' regularization and target
velocities: MuJoCo's ``efc_R`` and ``J v + h a_ref``, or SAP's (S7)-(S9) over the same rows read with
elliptic cones (:mod:`contactopt.formulations.sap_rows`).

Each step: MuJoCo's forward stages up to its constraint rows and a handful of array copies
(:func:`contactopt.systems.mjcf.native_arrays.native_arrays`), then one compiled call
(:func:`.native_kernel.native_step`): the rows ordered for the primal, Newton's method of
:mod:`contactopt.solvers.newton`, contactopt's row-wise residuals of the primal's conic form
(S6) judged at :mod:`contactopt.solvers.base`'s levels, and MuJoCo's velocity update
``v' = v + S^{-1} (h smooth_force + J^T x)``. The program object
(:func:`contactopt.formulations.model_primal.program`) is made from the same arrays only on
request (``co.formulate``, ``last_program``): the compiled step and the object are one build.

**Records.** The contacts of a record are MuJoCo's own contacts of the step (``data.contact``,
the model as written: ``phi`` their ``dist``, ``impulses`` their frame impulses ``[n, t1, t2]``,
``candidates`` and ``mujoco_contacts`` their count); the equality, limit and dry-friction rows'
impulses are MuJoCo's rows of the step, in MuJoCo's order.

Programs with more unknowns than the dense kernel takes (:data:`DENSE_MAX`) are solved by the
``newton`` solver on the program object, with the same records.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt import solvers
from contactopt.core.errors import OptionError
from contactopt.formulations import model_primal, sap_rows
from contactopt.formulations.recovery import chosen_speed
from contactopt.integrators import native_run, runge_kutta
from contactopt.integrators.native_kernel import DENSE_MAX
from contactopt.integrators.native_records import record_of, verdict
from contactopt.integrators.time_stepping import TimeStepping, larger_residuals
from contactopt.model.native import NativeArrays
from contactopt.model.step import State
from contactopt.programs import Residuals, Status
from contactopt.records.columns import StepColumns
from contactopt.records.step import StepRecord
from contactopt.solvers.base import CONFIRM_LEVEL
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton.solver import DEFAULTS

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["DENSE_MAX", "NativeStepping", "takes"]



def takes(formulation: str, solver: str | None, options: Mapping[str, Any] | None, system: Any) -> bool:
    """Whether a run is this stepper's: ``regularized`` with ``params=model, form=primal`` or
    ``sap`` with ``rows=model``, the ``newton`` solver and a system that gives its own rows as
    arrays (MJCF)."""
    given = options or {}
    name = formulation.strip().lower()
    own_rows = ((name == "regularized" and given.get("params") == "model" and given.get("form") == "primal")
                or (name == "sap" and given.get("rows") == "model"))
    return own_rows and solver == "newton" and hasattr(system, "native_model_data")


class NativeStepping(TimeStepping):
    """:class:`TimeStepping` of ``regularized -o params=model,form=primal`` and ``sap -o rows=model``
    with ``newton`` on the arrays of :class:`~contactopt.model.native.NativeArrays` (module docstring)."""

    def __init__(self, system: Any, formulation: str, solver: str, dt: float,
                 options: Mapping[str, Any] | None = None, solver_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(system, formulation, solver, dt, options, solver_options)
        unknown = sorted(set(self.solver_options) - set(DEFAULTS))
        if unknown:
            raise OptionError(f"solver 'newton': unknown option(s) {', '.join(map(repr, unknown))}")
        self.newton = {**DEFAULTS, **self.solver_options}
        opts = self.newton
        self._kernel_options = (int(opts["max_iter"]), float(opts["tol"]), float(opts["tol_abs"]),
                                float(opts["cost_tol"]), float(opts["alpha_max"]), float(opts["ls_tol"]),
                                int(opts["ls_max_iter"]), CONFIRM_LEVEL)
        if self.newton["history"]:
            raise OptionError(f"{self.formulation.name} on the system's own rows: newton's history is recorded on "
                              "the program object only (co.solve(co.formulate(...), 'newton', {'history': True}))")
        request = self.formulation.native_request(self.formulation_options)
        assert request is not None  # params=model or rows=model (takes)
        self.cone: str | None = request["cone"]
        self.sap: sap_rows.SapParameters | None = None  # SAP's numbers (sap -o rows=model), else MuJoCo's rows
        if self.formulation.name == "sap":
            self.sap = sap_rows.parameters(self.formulation_options, self.dt,
                                           chosen_speed(self.formulation_options, system.default_max_recovery_speed))
        self.last_native: NativeArrays | None = None
        kernels.ensure_compiled()

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        self._prebuilt = None
        solved = self._solve_state(state)
        record = _record(state.t, solved)
        if not record.status.usable:
            return None, record
        v_next = solved[2]
        if self.tableau is not None:
            fields = {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
            next_state = self._stage_steps(state, v_next, fields)
            if next_state is None:
                return None, StepRecord(**{**fields, "impulses": np.full(record.impulses.shape, np.nan)})
            return next_state, StepRecord(**fields)
        act = state.act if not self.system.na else self.system.next_activation(state.q, state.v, self.dt)
        return State(self.system.integrate(state.q, v_next, self.dt), v_next, state.t + self.dt, act), record

    def run_steps(self, state: State, n_steps: int, times: list[float], qs: list[FloatArray], vs: list[FloatArray],
                  acts: list[FloatArray], steps: list[StepRecord] | StepColumns, bar: Any,
                  control: Callable[[State], FloatArray] | None = None, schedule: FloatArray | None = None) -> str:
        """Up to ``n_steps`` steps from ``state``, appended to the run's lists as ``simulate``'s
        loop would (a run without sensitivities or a fallback); the message of a failed step,
        else "". ``control`` (``simulate``'s controller) gives each step's ``u`` from its start
        state, set on the system and held over the step, and recorded in its record; ``schedule``
        (n_steps, nu): the inputs of an open-loop controller, computed before the run. The
        next state is MuJoCo's ``mj_integratePos`` of ``v'`` and a :meth:`State.checked` of the
        step's own finite arrays. Where it can, the run is many steps in one compiled call
        (:mod:`.native_run`)."""
        if isinstance(steps, StepColumns) and self.compiled_run(schedule, control):
            return native_run.run_steps(self, state, n_steps, times, qs, vs, acts, steps, bar, schedule)
        if self.tableau is not None or self.system.na:
            for _ in range(n_steps):
                u = control(state) if control is not None else None
                next_state, record = self.step(state)
                steps.append(record if u is None else dataclasses.replace(record, control=u))
                if next_state is None:
                    return f"step {len(steps) - 1} at t={state.t:.6g} failed: {record.status} ({record.message})"
                state = next_state
                times.append(state.t)
                qs.append(state.q)
                vs.append(state.v)
                acts.append(state.act)
                bar.update(1)
            return ""
        system: Any = self.system  # an mjcf system (takes)
        mujoco, model = system.mujoco, system.model
        dt, act = self.dt, state.act
        for _ in range(n_steps):
            u = control(state) if control is not None else None
            solved = self._solve_state(state)
            record = _record(state.t, solved, u)
            steps.append(record)
            if not record.status.usable:
                return f"step {len(steps) - 1} at t={state.t:.6g} failed: {record.status} ({record.message})"
            v_next = solved[2]
            q_next = np.array(state.q)
            mujoco.mj_integratePos(model, q_next, v_next, dt)
            state = State.checked(q_next, v_next, state.t + dt, act)
            times.append(state.t)
            qs.append(state.q)
            vs.append(state.v)
            acts.append(act)
            bar.update(1)
        return ""

    def compiled_run(self, schedule: FloatArray | None, control: Callable[[State], FloatArray] | None) -> bool:
        """Whether :meth:`run_steps` runs many steps in one compiled call (:mod:`.native_run`), its
        records kept as :class:`~contactopt.records.columns.StepColumns` (``simulate`` hands it one)."""
        return not native_run.unavailable(self, schedule, control)

    def _solve_state(self, state: State) -> tuple[Any, ...]:
        """The constraint solve at ``state``: ``(status, x, v', frame impulses, iterations, message,
        residuals, build time, solve time, arrays)``."""
        from contactopt.systems.mjcf.native_arrays import native_arrays

        if self.system.na:
            self.system.set_activation(state.act)
        start = time.perf_counter()
        native = native_arrays(self.system, state.q, state.v, self.dt, self.cone)
        if self.sap is not None:
            native = sap_rows.sap_arrays(native)  # A: the step matrix's symmetric part
        values = self._row_values(native)  # the rows' (R, v_hat): part of the build
        build_time = time.perf_counter() - start
        self.last_native = native
        solved = self._solve_arrays(native, values) if native.nv <= DENSE_MAX and kernels.AVAILABLE else None
        if solved is None:
            status, x, iterations, message, residuals, solve_time = self._solve_object(native, values)
            v_next, frame = model_primal.next_velocity(native, x), model_primal.frame_impulses(native, x)
        else:
            status, x, v_next, frame, iterations, message, residuals, solve_time = solved
        return status, x, v_next, frame, iterations, message, residuals, build_time, solve_time, native

    def _stage_steps(self, state: State, v_next: FloatArray, record: dict[str, Any]) -> State | None:
        """MuJoCo's RK4 (:mod:`.runge_kutta`): the stages after the first, each solved as a
        step's problem at its stage state; the record's times, iterations and worst residuals
        over every stage (its impulses are the first stage's). None when a stage fails (the
        record then names the stage)."""
        tableau = self.tableau
        assert tableau is not None
        rates = [runge_kutta.StageRate.at(self.system, runge_kutta.first_stage(state), v_next, self.dt)]
        for stage in range(1, tableau.stages):
            at = runge_kutta.stage_at(self.system, tableau, stage, state, rates, self.dt)
            status, _, v_stage, _, iterations, message, residuals, build, solve, _ = self._solve_state(at.state)
            record.update(build_time=record["build_time"] + build, solve_time=record["solve_time"] + solve,
                          iterations=record["iterations"] + iterations,
                          residuals=larger_residuals(record["residuals"], residuals))
            if not status.usable:
                where = f"{tableau.name} stage {stage + 1} of {tableau.stages} (t = {at.state.t:.6g})"
                record.update(status=status, message=f"{where}: {message}")
                return None
            if status is Status.INACCURATE:
                record["status"] = Status.INACCURATE
            rates.append(runge_kutta.StageRate.at(self.system, at, v_stage, self.dt))
        record["message"] = f"{tableau.name}: {tableau.stages} stage programs; {record['message']}"
        return runge_kutta.final_state(self.system, tableau, state, rates, self.dt)

    def _solve_arrays(self, native: NativeArrays, values: tuple[FloatArray, FloatArray]) -> Any:
        """The compiled step (:func:`.native_kernel.native_step`) and its verdict, or None
        where it does not take the rows (a cone with a row scale <= 0: the program object does)."""
        from contactopt.integrators import native_kernel

        native_kernel.ensure_compiled()
        opts = self.newton
        R_rows, v_hat_rows = values
        v_next, x = np.empty(native.nv), np.empty(native.m)
        frame, numbers = np.empty((native.contact_count, 3)), np.empty(6)
        start = time.perf_counter()
        code, iterations = native_kernel.native_step(
            native.M, native.step_matrix, native.v, native.smooth_force, native.acceleration_free, native.J, R_rows,
            v_hat_rows, native.kind, native.bound, native.cone_scale, native.contact, native.contact_address,
            native.contact_dim, native.contact_friction, native.pyramidal, native.dt, *self._kernel_options,
            v_next, x, frame, numbers)
        solve_time = time.perf_counter() - start
        if code == native_kernel.ANISOTROPIC:
            return None
        status, message, residuals = verdict(code, numbers, int(opts["max_iter"]))
        return status, x, v_next, frame, iterations, message, residuals, solve_time

    def _row_values(self, native: NativeArrays) -> tuple[FloatArray, FloatArray]:
        """The rows' ``(R, v_hat)`` in the system's order: SAP's (:mod:`contactopt.formulations.sap_rows`)
        or MuJoCo's own (:func:`contactopt.formulations.model_primal.row_values`)."""
        return model_primal.row_values(native, None if self.sap is None else sap_rows.sap_values(native, self.sap))

    def _solve_object(self, native: NativeArrays, values: tuple[FloatArray, FloatArray]
                      ) -> tuple[Status, FloatArray, int, str, Residuals, float]:
        """The ``newton`` solver on the program object of the same arrays (large programs, or a
        cone the kernel refuses): ``(status, row impulses x in the system's order, ...)``."""
        rows = model_primal.primal_rows(native, values)
        metadata = ({"formulation": "regularized", "params": "model"} if self.sap is None
                    else {"formulation": "sap", "rows": "model"})
        program = model_primal.program(native, rows, {**metadata, "dt": self.dt, "nv": native.nv})
        self.last_program = program
        solution = solvers.solve(program, "newton", self.solver_options)
        self.last_solution = solution
        x = np.zeros(native.m)
        x[rows.order] = program.variable(solution.x, "sigma")
        return (solution.status, x, solution.iterations, solution.message, solution.residuals,
                solution.setup_time + solution.solve_time)



def _record(t: float, solved: tuple[Any, ...], control: FloatArray | None = None) -> StepRecord:
    """The record of a solve at time ``t`` under ``control`` (:meth:`NativeStepping._solve_state`)."""
    status, x, _, frame, iterations, message, residuals, build_time, solve_time, native = solved
    return record_of(t, status, message, residuals, x, frame, native.kind, native.contact_distance, iterations,
                     build_time, solve_time, control)
