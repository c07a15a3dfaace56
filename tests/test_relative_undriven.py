"""A variable no force drives should be read in its neighbours' unit, not in its iterate's round-off
(:mod:`contactopt.programs.relative`). MuJoCo's frictionloss rows, ``|v_j| <= t_j`` with cost
``f h t_j`` (the epigraph every convex formulation poses them in), on a dof no force drives (a
braked wheel at rest: ``c_j = 0``) are exactly at ``v_j = t_j = 0``; an interior-point answer
leaves them at ~1e-9, and a row scale made of that iterate alone read the slack ``s ~ 1e-9`` as
100 % of its row: ``ccp`` refused ``problems/mjcf/wheel_legs.xml`` at step 0 with "numerical
error, residuals 1.0 relative to their rows". Reading those rows against the driven dof's unit
fixes it, but the fix tried changed the unit grid's verdicts, so this is pinned as a known limit
(strict xfail: a fix that keeps the verdict unit-free will show here).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import contactopt as co
from contactopt.programs import Nonneg
from contactopt.programs.residuals import residuals

#: Why the test below fails (pinned: strict, so a fix shows).
UNDRIVEN_LIMIT = ("known limit: the verdict reads the rows of a dof no force drives in its own round-off; "
                  "filling its data reach from the driven dofs first fixed this but made the verdict of the "
                  "1e-9 kg box differ from the 1 kg one (tests/test_units.py -m slow, anitescu/clarabel): reverted")

#: f h: the frictionloss impulse bound of the undriven dof.
BOUND = 4e-6


def _program() -> co.ConicProgram:
    """``min 1/2 (v1^2 + v2^2) - v1 + BOUND t`` s.t. ``v2 - t <= 0``, ``-v2 - t <= 0``:
    v1 driven (its optimum 1), v2 undriven, t the epigraph of ``|v2|``."""
    P = sp.csc_matrix(np.diag([1.0, 1.0, 0.0]))
    A = sp.csc_matrix(np.array([[0.0, 1.0, -1.0], [0.0, -1.0, -1.0]]))
    return co.ConicProgram(P=P, c=np.array([-1.0, 0.0, BOUND]), A=A, b=np.zeros(2), cones=(Nonneg(2),))


@pytest.mark.xfail(strict=True, reason=UNDRIVEN_LIMIT)
def test_round_off_on_an_undriven_dof_is_not_read_as_its_own_unit() -> None:
    program = _program()
    exact_x, exact_y = np.array([1.0, 0.0, 0.0]), np.array([BOUND / 2, BOUND / 2])
    assert residuals(program, exact_x, exact_y).relative < 1e-15  # the KKT point: stationarity, s = 0
    # an interior-point answer: v2 and t at round-off, both rows' slacks ~1e-9
    rounded = np.array([1.0, 5e-10, 7e-10])
    assert residuals(program, rounded, exact_y).relative < 1e-8  # was 1.0 (s2 = 1.2e-9 against itself)
    # a real violation on the same rows is still caught: |v2| > t by 1e-3 of the driven unit
    violated = np.array([1.0, 1e-3, 0.0])
    assert residuals(program, violated, exact_y).relative > 1e-4
    solution = co.solve(program, "clarabel")
    assert solution.status == co.Status.OPTIMAL, solution.message
    np.testing.assert_allclose(solution.x, exact_x, atol=1e-8)
