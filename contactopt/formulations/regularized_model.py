"""``regularized -o params=model``: the system's own constraint problem as the step's program
and MuJoCo's velocity update from its answer (:mod:`contactopt.systems.mjcf.native` builds the rows;
Todorov 2014; MuJoCo documentation, "Computation: Constraint model" and "Numerical integration")."""

from __future__ import annotations

import dataclasses

import numpy as np

from contactopt.core.errors import OptionError
from contactopt.formulations.base import StepResult
from contactopt.model.step import StepProblem
from contactopt.programs import ConicProgram, Solution
from contactopt.programs.primal import PrimalConicProgram


def model_program(problem: StepProblem, name: str) -> ConicProgram:
    """``params = model``: the system's own constraint problem (MuJoCo's, on the model as
    written: :mod:`contactopt.systems.mjcf.native`), in impulses."""
    native = problem.native
    if native is None:
        raise OptionError(f"formulation {name!r}: params=model needs the system's own constraint problem "
                          "(an mjcf system, built through simulate/formulate)")
    program = native.program
    metadata = {**program.metadata, "formulation": name, "params": "model", "dt": problem.dt,
                "t": problem.state.t, "nv": problem.nv, "native": dict(native.info)}
    return dataclasses.replace(program, metadata=metadata)


def model_primal_program(problem: StepProblem, name: str) -> PrimalConicProgram:
    """``params = model, form = primal``: the same problem as MuJoCo's Newton solver's primal
    (:mod:`contactopt.formulations.model_primal`), built from the rows' arrays."""
    from contactopt.formulations import model_primal

    native = problem.native
    if native is None or native.arrays is None:
        raise OptionError(f"formulation {name!r}: params=model, form=primal needs the system's own constraint "
                          "problem as arrays (an mjcf system, built through simulate/formulate)")
    metadata = {"formulation": name, "params": "model", "dt": problem.dt, "t": problem.state.t, "nv": problem.nv,
                "native": dict(native.info)}
    return model_primal.program(native.arrays, model_primal.primal_rows(native.arrays), metadata)


def model_recover(problem: StepProblem, program: ConicProgram, solution: Solution) -> StepResult:
    """``v' = v + S^{-1} (h f_smooth + J^T x)`` (``S`` the system's step matrix) and the row
    impulses mapped onto the step's own contacts, bilateral, limit and friction rows."""
    native = problem.native
    assert native is not None
    x = np.asarray(solution.x, dtype=np.float64)
    v_next = problem.state.v + np.linalg.solve(native.step_matrix, problem.dt * native.smooth_force + native.J.T @ x)
    maps = native.maps
    impulses = np.asarray(maps["contacts"] @ x).reshape(problem.contacts.count, problem.contacts.dim)
    return StepResult(v_next=v_next, impulses=impulses, bilateral=np.asarray(maps["bilateral"] @ x),
                      limits=np.asarray(maps["limits"] @ x), friction_loss=np.asarray(maps["friction_loss"] @ x))
