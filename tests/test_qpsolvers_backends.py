"""Every installed qpsolvers backend on the README scenes' first programs (issue 40 item 1).

``contactopt compare quadruped_trot`` stopped the cell anitescu/``qpsolvers:clarabel`` at step 0
with "problem is unbounded below": the quadruped's first step has no contact, so its QP has no
rows, and qpsolvers hands a QP without constraints to SciPy's LSQR instead of clarabel (or
scs, ...), then refuses LSQR's answer (``|P x + q| = 2e-7 > 1e-8``, P positive definite). The
bridge hands such a QP to the backend itself with one redundant row. Here each backend solves the
gauss, anitescu and ccp programs of ``box_slide``, ``cart_wall`` and ``quadruped_trot`` at step 0;
a program with second-order cone rows is refused before any solve, naming why.

Tolerance on ``x`` against native clarabel's: both answers are judged optimal by contactopt's
residuals (relative 1e-6 of their rows' terms); on the active set the answer solves a linear
system with P, whose perturbation bound gives ``|x - x*| <= cond(P) * 1e-6 * |x*|``; a factor 10
covers the gap between the row-wise relative measure and the vector norm (ecos on cart_wall:
error 1.9e-6 of |x| at a relative residual of 6.3e-7, cond(P) = 1).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import UnsupportedProgramError
from contactopt.programs import Status

qpsolvers = pytest.importorskip("qpsolvers")

BACKENDS = list(qpsolvers.available_solvers)
SCENES = ("box_slide", "cart_wall", "quadruped_trot")
FORMULATIONS = ("gauss", "anitescu", "ccp")
#: contactopt's verdict: optimal up to this relative residual (programs/relative.py).
OPTIMAL_RELATIVE = 1e-6


@pytest.fixture(scope="module")
def programs() -> dict[tuple[str, str], co.ConicProgram]:
    out: dict[tuple[str, str], co.ConicProgram] = {}
    for name in SCENES:
        try:
            scene = co.load_scene(name)
        except co.errors.ContactoptError as exc:  # quadruped_trot needs mujoco
            pytest.skip(f"{name}: {exc}")
        for formulation in FORMULATIONS:
            program = co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation)
            assert isinstance(program, co.ConicProgram)
            out[name, formulation] = program
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_solves_or_refuses_every_first_step(backend: str,
                                                         programs: dict[tuple[str, str], co.ConicProgram]) -> None:
    solver = f"qpsolvers:{backend}"
    for (scene, formulation), program in programs.items():
        where = f"{scene}/{formulation} with {solver}"
        if program.kind != "qp":  # ccp with contacts: second-order cone rows
            with pytest.raises(UnsupportedProgramError, match=r"cannot take a SOCP program"):
                co.solve(program, solver)
            continue
        reference = co.solve(program, "clarabel")
        assert reference.status is Status.OPTIMAL, where
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="QP is unconstrained")  # qpsolvers' LSQR path
            solution = co.solve(program, solver)
        assert solution.status is Status.OPTIMAL, f"{where}: {solution.status} ({solution.message})"
        assert solution.residuals.relative <= OPTIMAL_RELATIVE, where
        assert solution.y is not None and solution.y.shape == (program.m,), where
        bound = 10 * OPTIMAL_RELATIVE * np.linalg.cond(program.P.toarray()) * max(1.0, np.abs(reference.x).max())
        error = np.abs(solution.x - reference.x).max()
        assert error <= bound, f"{where}: |x - x_clarabel| = {error:.2g} > {bound:.2g}"


def test_the_quadruped_first_step_is_a_qp_without_rows(programs: dict[tuple[str, str], co.ConicProgram]) -> None:
    """The case the bridge's redundant row is for (else this test file checks nothing new)."""
    program = programs["quadruped_trot", "anitescu"]
    assert program.kind == "qp" and program.m == 0 and program.n > 0
    assert np.linalg.eigvalsh(program.P.toarray()).min() > 0  # P positive definite: not unbounded


def test_a_socp_scene_is_refused_before_step_0_naming_the_cone() -> None:
    scene = co.load_scene("box_slide")
    backend = BACKENDS[0]
    with pytest.raises(UnsupportedProgramError, match=rf"qpsolvers:{backend}.*(SOCP|second-order cone)"):
        co.simulate(scene, formulation="ccp", solver=f"qpsolvers:{backend}", duration=scene.dt)


@pytest.mark.parametrize("backend", [name for name in ("clarabel", "scs") if name in BACKENDS])
def test_the_quadruped_cell_that_stopped_at_step_0_completes(backend: str) -> None:
    """The cell of ``contactopt compare quadruped_trot`` that stopped at step 0 ("unbounded
    below"), over its first steps: every step optimal by contactopt's residuals."""
    try:
        scene = co.load_scene("quadruped_trot")
    except co.errors.ContactoptError as exc:
        pytest.skip(str(exc))
    traj = co.simulate(scene, formulation="anitescu", solver=f"qpsolvers:{backend}", duration=3 * scene.dt)
    assert traj.completed, traj.message
    assert all(step.status is Status.OPTIMAL for step in traj.steps)
