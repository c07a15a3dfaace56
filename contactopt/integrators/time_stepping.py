"""The time-stepping driver: one explicit program per step (docs/architecture.md, "The data flow").

Semi-implicit Euler: the formulation's program gives ``v'`` (and the impulses), then
``q' = system.integrate(q, v', h)``. A step whose solve is not usable (infeasible, ray
termination, numerical error, ...) yields no next state; its record carries the status.
Bilateral constraints follow the ``drift`` option (:mod:`contactopt.integrators.drift`):
the velocity target of their rows (Baumgarte) and a projection after the step.
Actuator activations (``State.act``, MuJoCo's ``act``) are the system's during the step
(:meth:`System.set_activation`: the forces of step ``n`` use ``act_n``) and advance by
:meth:`System.next_activation` (:mod:`contactopt.systems.mjcf.activations`), whatever the contact solve.

**Stage programs.** Where the formulation declares a Runge-Kutta tableau for the system
(:meth:`Formulation.stage_tableau`: MuJoCo's RK4 under ``regularized -o params=model``) a step
is that many programs, one at each stage state, solved in turn
(:mod:`contactopt.integrators.runge_kutta`). Its record keeps the first stage's program,
solution and impulses (the state's own problem, the one re-formed from the record) with the
worst status and residuals of the stages and their summed times and iterations; a stage whose
solve is not usable fails the step, its record naming the stage.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contactopt import formulations, solvers
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.formulations.base import Formulation, Program
from contactopt.integrators import runge_kutta
from contactopt.integrators.capabilities import refuse_model_features
from contactopt.integrators.drift import DRIFT_DEFAULTS, Drift, project
from contactopt.integrators.runge_kutta import Tableau
from contactopt.model.step import State, StepProblem
from contactopt.programs import LCP, ConicProgram, Residuals, Solution, Status
from contactopt.programs.coulomb import CoulombProgram
from contactopt.records.trajectory import StepRecord
from contactopt.systems.base import System


def build_step_problem(system: System, q: ArrayLike, v: ArrayLike, dt: float, t: float = 0.0,
                       u: ArrayLike | None = None, drift: Drift | None = None,
                       native: Mapping[str, Any] | None = None, geometry: StepProblem | None = None) -> StepProblem:
    """Ask the system for everything one step needs, at ``(q, v)`` (with ``native``, also its
    own constraint problem: :meth:`System.native_rows` with these settings). With ``geometry``
    (a problem of the same system at the same ``q``), its contacts, limits and friction-loss
    rows are taken instead of asked for: they depend on ``q`` alone (the step derivative's
    columns along ``v`` and ``u``)."""
    state = State(np.asarray(q, dtype=np.float64), np.asarray(v, dtype=np.float64), t)
    if state.q.shape[0] != system.nq or state.v.shape[0] != system.nv:
        raise ContactoptError(f"state has nq={state.q.shape[0]}, nv={state.v.shape[0]}; system "
                              f"{system.type_name!r} has nq={system.nq}, nv={system.nv}")
    bilateral = system.constraints(state.q, state.v, t)
    target = (drift or Drift()).velocity_target(bilateral)
    if bilateral.velocity_rows.any():
        # H v' = b over the step: b at the midpoint t + h/2 integrates a prescribed motion by
        # the midpoint rule (error O(h^2)) instead of lagging by about h bdot.
        midpoint = system.constraints(state.q, state.v, t + 0.5 * dt).target
        target = np.where(bilateral.velocity_rows, midpoint, target)
    contacts = system.contacts(state.q) if geometry is None else geometry.contacts
    if native is None:  # the system's own rows (params=model) carry what the frames cannot
        system.check_contact_model()
    return StepProblem(state=state, dt=dt, dynamics=system.step_dynamics(system.dynamics(state.q, state.v, u), dt),
                       contacts=contacts, bilateral=bilateral, bilateral_target=target,
                       unilateral=system.limits(state.q) if geometry is None else geometry.unilateral,
                       friction_loss=system.friction_loss(state.q) if geometry is None else geometry.friction_loss,
                       native=None if native is None else system.native_rows(state.q, state.v, dt, **native),
                       max_recovery_speed=system.default_max_recovery_speed)


def split_drift_options(options: Mapping[str, Any] | None,
                        formulation: Formulation | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(drift options, the rest)``: drift keys are the driver's, not the formulation's.
    With ``formulation``, an unknown key is refused with every key the step accepts."""
    given = dict(options or {})
    if formulation is not None:
        unknown = sorted(set(given) - set(formulation.defaults) - set(DRIFT_DEFAULTS))
        if unknown:
            raise OptionError(f"formulation {formulation.name!r}: unknown option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join([*formulation.defaults, *DRIFT_DEFAULTS])}")
    drift = {key: given.pop(key) for key in list(given) if key in DRIFT_DEFAULTS}
    return {**DRIFT_DEFAULTS, **drift}, given


class TimeStepping:
    """Advance a system by solving a formulation's program with a solver at each step."""

    def __init__(self, system: System, formulation: str, solver: str, dt: float,
                 options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None) -> None:
        self.system = system
        self.formulation: Formulation = formulations.get(formulation)
        drift_options, formulation_options = split_drift_options(options, self.formulation)
        self.drift = Drift.from_options(drift_options, f"formulation {formulation!r}")
        self.options = {**self.formulation.resolve_options(formulation_options), **drift_options}
        self.formulation_options = self.formulation.resolve_options(formulation_options)
        self.solver = solver
        solvers.parse_name(solver)
        spec = solvers.spec(solver)
        if not spec.is_available():
            from contactopt.core.errors import SolverUnavailableError

            raise SolverUnavailableError(f"solver {spec.name!r} is not installed: {spec.install_hint}")
        self.solver_options = dict(solver_options or {})
        self.dt = float(dt)
        self.last_program: Program | None = None
        self.last_solution: Solution | None = None
        self.last_problem: StepProblem | None = None
        self.warm_start_option = spec.warm_start if spec.warm_start not in self.solver_options else None
        self._prebuilt: tuple[State, StepProblem, Program, float] | None = None
        #: The stages of a step (None: one program, semi-implicit Euler).
        self.tableau: Tableau | None = self.formulation.stage_tableau(system, self.formulation_options)

    def program(self, state: State) -> tuple[StepProblem, Program]:
        self.system.set_activation(state.act)  # the forces of this step use its activations
        problem = build_step_problem(self.system, state.q, state.v, self.dt, state.t, drift=self.drift,
                                     native=self.formulation.native_request(self.formulation_options))
        return problem, self.formulation.build(problem, self.formulation_options)

    def check_state(self, state: State) -> None:
        """Before step 0: the rows the formulation cannot hold that the system declares are
        refused by name (:func:`~contactopt.integrators.capabilities.refuse_model_features`)."""
        refuse_model_features(self.system, self.formulation.name, self.formulation.refuses)
        self.system.check_activations(self.dt)

    def first_program(self, state: State) -> Program:
        """The program of ``state`` (:meth:`program`), kept for a :meth:`step` from this same
        ``state`` object: ``simulate`` checks the solver against step 0's program before the
        first step, which then need not build it again. Only valid while nothing the program
        depends on changes in between (``simulate`` keeps it only without a controller)."""
        start = time.perf_counter()
        problem, program = self.program(state)
        self._prebuilt = (state, problem, program, time.perf_counter() - start)
        return program

    def forget_first_program(self) -> None:
        self._prebuilt = None

    def _options_for(self, program: Program) -> dict[str, Any]:
        """Solver options, plus the previous step's solution as warm start when the solver
        takes one and the program has the same layout (same active contacts, same blocks).
        Never across a conversion: the backend saw the converted program."""
        options = self.solver_options
        last, last_program = self.last_solution, self.last_program
        if (self.warm_start_option is None or last is None or last_program is None
                or not last.status.usable or last.conversion is not None
                or not _same_layout(last_program, program)):
            return options
        return {**options, self.warm_start_option: last.x}

    def _solve(self, program: Program) -> Solution | str:
        """The formulation's chosen solution of ``program``, or why the solver could not take it
        (a program this solver cannot take mid-run, e.g. P singular for qp->lcp, is a failed
        step, recorded, not a lost trajectory)."""
        try:
            solution = solvers.solve(program, self.solver, self._options_for(program))
        except ContactoptError as exc:
            return str(exc)
        return self.formulation.choose_solution(program, solution, self.formulation_options, solvers.solve)

    def step(self, state: State) -> tuple[State | None, StepRecord]:
        prebuilt, self._prebuilt = self._prebuilt, None
        if prebuilt is not None and prebuilt[0] is state:
            _, problem, program, build_time = prebuilt
            self.system.set_activation(state.act)
        else:
            start = time.perf_counter()
            problem, program = self.program(state)
            build_time = time.perf_counter() - start
        contacts = problem.contacts
        nan_impulses = np.full((contacts.count, contacts.dim), np.nan)
        reference = self.system.reference_contact_count(state.q)  # MuJoCo's ncon beside the candidates
        counts: dict[str, Any] = {"candidates": contacts.count,
                                  "mujoco_contacts": -1 if reference is None else reference}
        solution = self._solve(program)
        if isinstance(solution, str):
            return None, StepRecord(t=state.t, impulses=nan_impulses, phi=contacts.phi.copy(),
                                    status=Status.NUMERICAL_ERROR, build_time=build_time,
                                    setup_time=0.0, solve_time=0.0, iterations=0,
                                    residuals=Residuals(np.inf, np.inf, np.inf, np.inf),
                                    solver=self.solver, message=solution, **counts)
        record_args: dict[str, Any] = dict(t=state.t, phi=contacts.phi.copy(), status=solution.status,
                           constraint_error=problem.bilateral.violation(state.v),
                           build_time=build_time, setup_time=solution.setup_time,
                           solve_time=solution.solve_time, iterations=solution.iterations,
                           residuals=solution.residuals, solver=solution.solver,
                           conversion=solution.conversion, message=solution.message,
                           refined=solution.refined, **counts)
        self.last_program, self.last_solution, self.last_problem = program, solution, problem
        if not solution.status.usable:
            return None, StepRecord(impulses=nan_impulses, **record_args)
        result = self.formulation.recover(problem, program, solution)
        if self.tableau is not None:
            next_state, record_args = self._stages(state, result.v_next, record_args)
            if next_state is None:
                return None, StepRecord(impulses=nan_impulses, **record_args)
        else:
            next_state = State(self.system.integrate(state.q, result.v_next, self.dt), result.v_next,
                               state.t + self.dt, self.system.next_activation(state.q, state.v, self.dt))
        if self.drift.mode == "projection":
            q_next, v_next = project(self.system, next_state.q, next_state.v, state.t + self.dt)
            next_state = State(q_next, v_next, next_state.t, next_state.act)
        return next_state, StepRecord(impulses=result.impulses, bilateral=result.bilateral,
                                      limits=result.limits, friction_loss=result.friction_loss,
                                      angular_friction=_angular_impulses(problem, result.angular_friction),
                                      **record_args)

    def _stages(self, state: State, v_next: np.ndarray,
                record_args: dict[str, Any]) -> tuple[State | None, dict[str, Any]]:
        """The stages after the first (solved: its velocity step ``v_next``) and the next state
        (:mod:`.runge_kutta`), with the record's fields over every stage; None when a stage fails."""
        tableau = self.tableau
        assert tableau is not None
        rates = [runge_kutta.StageRate.at(self.system, runge_kutta.first_stage(state), v_next, self.dt)]
        args = dict(record_args)
        for stage in range(1, tableau.stages):
            at = runge_kutta.stage_at(self.system, tableau, stage, state, rates, self.dt)
            start = time.perf_counter()
            problem, program = self.program(at.state)
            args["build_time"] += time.perf_counter() - start
            solution = self._solve(program)
            where = f"{tableau.name} stage {stage + 1} of {tableau.stages} (t = {at.state.t:.6g})"
            if isinstance(solution, str):
                return None, {**args, "status": Status.NUMERICAL_ERROR, "message": f"{where}: {solution}"}
            # each stage warm-starts the next (the step's derivative is refused: runge_kutta)
            self.last_program, self.last_solution, self.last_problem = program, solution, problem
            args.update(setup_time=args["setup_time"] + solution.setup_time,
                        solve_time=args["solve_time"] + solution.solve_time,
                        iterations=args["iterations"] + solution.iterations,
                        residuals=larger_residuals(args["residuals"], solution.residuals),
                        refined=args["refined"] or solution.refined)
            if not solution.status.usable:
                return None, {**args, "status": solution.status, "message": f"{where}: {solution.message}"}
            if solution.status is Status.INACCURATE:
                args["status"] = Status.INACCURATE
            v_stage = self.formulation.recover(problem, program, solution).v_next
            rates.append(runge_kutta.StageRate.at(self.system, at, v_stage, self.dt))
        args["message"] = f"{tableau.name}: {tableau.stages} stage programs" + (
            f"; {record_args['message']}" if record_args["message"] else "")
        return runge_kutta.final_state(self.system, tableau, state, rates, self.dt), args


def larger_residuals(a: Residuals, b: Residuals) -> Residuals:
    """Each residual's larger value of ``a`` and ``b`` (NaN only where both are)."""
    return Residuals(*(float(np.fmax(x, y)) for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b),
                                                             strict=True)))


def _angular_impulses(problem: StepProblem, recovered: np.ndarray) -> np.ndarray:
    """One impulse per torsional/rolling row of the step's candidates (0 when none entered)."""
    angular = problem.contacts.angular
    if angular is None or recovered.shape[0] == angular.count:
        return recovered
    return np.zeros(angular.count)


def _same_layout(a: Program, b: Program) -> bool:
    if type(a) is not type(b) or a.n != b.n or a.variables != b.variables:
        return False
    if a.metadata.get("contacts") != b.metadata.get("contacts"):
        return False
    if isinstance(a, ConicProgram) and isinstance(b, ConicProgram):
        return a.cones == b.cones
    return isinstance(a, LCP | CoulombProgram)
