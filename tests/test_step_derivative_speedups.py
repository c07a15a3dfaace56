"""The step derivative's shortcuts (contactopt.derivatives.step: the base problem's contacts
reused along v and u, perturbed programs built under convexity.vouched, the programs' matrix
differences taken on their data arrays) change no number: its Jacobian equals the columns of
the plain pipeline (every quantity asked of the system again, every program checked, scipy's
sparse differences), built here independently, to 1e-8 relative."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from contactopt.core.errors import NonconvexProgramError
from contactopt.derivatives.step import RELATIVE_STEP, StepDerivative
from contactopt.integrators.time_stepping import TimeStepping, build_step_problem
from contactopt.model.step import State
from contactopt.programs import ConicProgram
from contactopt.programs.convexity import vouched
from contactopt.systems.rigid3d import Rigid3D

FloatArray = np.ndarray


def _box() -> tuple[Rigid3D, State]:
    """The box slide's cube (problems/box_slide.toml), slightly rotated about z so that the
    rotation block of its Jacobian is not trivially sparse."""
    body = {"name": "box", "shape": "box", "size": [0.1, 0.1, 0.1], "mass": 1.0, "position": [0.0, 0.0, 0.1],
            "velocity": [1.0, 0.0, 0.0]}
    system = Rigid3D.from_config({"gravity": [0.0, 0.0, -9.81], "bodies": [body]}, {"mu": 0.5})
    q, v = system.default_state()
    q[3:7] = [np.cos(0.05), 0.0, 0.0, np.sin(0.05)]
    return system, State(q, v)


def _spheres() -> tuple[Rigid3D, State]:
    """Three 0.1 m spheres resting on the ground, two of them touching, moving apart."""
    bodies = [{"name": f"ball{k}", "shape": "sphere", "radius": 0.1, "mass": 1.0 + 0.5 * k,
               "position": [0.2 * k, 0.0, 0.1], "velocity": [0.3 * (k - 1), 0.1 * k, 0.0]} for k in range(3)]
    system = Rigid3D.from_config({"gravity": [0.0, 0.0, -9.81], "bodies": bodies}, {"mu": 0.4})
    q, v = system.default_state()
    return system, State(q, v)


def _plain_column(derivative: StepDerivative, stepper: TimeStepping, block: str, index: int) -> FloatArray:
    """One column by the plain central difference: the whole problem rebuilt at each side."""
    base = {"q": derivative.point.q, "v": derivative.point.v, "dt": np.array([stepper.dt])}[block]
    t = RELATIVE_STEP * (float(np.abs(base).max()) or 1.0)
    sides = []
    for sign in (1.0, -1.0):
        moved = {"q": derivative.point.q.copy(), "v": derivative.point.v.copy(), "dt": np.array([stepper.dt])}
        moved[block][index] += sign * t
        dt = float(moved["dt"][0])
        problem = build_step_problem(stepper.system, moved["q"], moved["v"], dt, drift=stepper.drift)
        sides.append((problem, stepper.formulation.build(problem, stepper.formulation_options), moved, dt))
    (_, plus, *_), (_, minus, *_) = sides
    assert isinstance(plus, ConicProgram) and isinstance(minus, ConicProgram)
    width = 2.0 * t
    tangent = derivative.program_derivative.jvp(  # type: ignore[call-arg]
        dP=sp.csc_matrix(plus.P - minus.P) / width, dc=(plus.c - minus.c) / width,
        dA=sp.csc_matrix(plus.A - minus.A) / width, db=(plus.b - minus.b) / width)
    states = []
    for sign, (problem, program, moved, dt) in zip((1.0, -1.0), sides, strict=True):
        solution = derivative.solution
        shifted = type(solution)(**{**solution.__dict__, "x": solution.x + sign * t * tangent.x,
                                    "y": solution.y + sign * t * tangent.y, "s": solution.s + sign * t * tangent.s})
        v_next = stepper.formulation.recover(problem, program, shifted).v_next
        states.append(np.concatenate([stepper.system.integrate(moved["q"], v_next, dt), v_next]))
    return (states[0] - states[1]) / width


@pytest.mark.parametrize(("scene", "formulation"), [(_box, "ccp"), (_spheres, "anitescu")])
def test_jacobian_equals_plain_columns(scene, formulation) -> None:
    system, state = scene()
    stepper = TimeStepping(system, formulation, "clarabel", 1e-3)
    stepper.step(state)
    derivative = StepDerivative(stepper, state, None, stepper.last_problem, stepper.last_program,  # type: ignore[arg-type]
                                stepper.last_solution, parameters=("dt",))  # type: ignore[arg-type]
    jacobian = derivative.jacobian()
    for block, key, size in (("q", "q", system.nq), ("v", "v", system.nv), ("dt", "params", 1)):
        for index in range(size):
            plain = _plain_column(derivative, stepper, block, index)
            column = jacobian[key][:, index]
            # both are the same central difference in exact arithmetic; they differ by the
            # round-off of the data differences, amplified by 1/t ~ 1e5: 1e-8 of the column's scale
            scale = max(float(np.abs(plain).max()), 1.0)
            assert np.abs(column - plain).max() <= 1e-8 * scale, (block, index)


def test_vouched_skips_only_the_convexity_check() -> None:
    nonconvex = {"P": sp.csc_matrix(-np.eye(2)), "c": np.zeros(2), "A": sp.csc_matrix((0, 2)), "b": np.zeros(0),
                 "cones": ()}
    with pytest.raises(NonconvexProgramError):
        ConicProgram(**nonconvex)
    with vouched():
        assert ConicProgram(**nonconvex).n == 2
    with pytest.raises(NonconvexProgramError):  # the context ends with its block
        ConicProgram(**nonconvex)
