"""Re-solve MuJoCo's own constraint problem of a step with contactopt (issue: "MuJoCo
reproduction"): the program of :mod:`contactopt.systems.mjcf.program` (MuJoCo's ``efc_J``,
``efc_R``, ``efc_aref`` and ``qacc_smooth``, each row block in the cone its ``efc_type`` gives)
solved by any conic solver; ``efc_force = lambda / h`` at the solution is MuJoCo's
``efc_force``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError
from contactopt.programs import ConicProgram, Solution
from contactopt.solvers import solve
from contactopt.systems.mjcf.program import program_from_mujoco

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Reproduction:
    """MuJoCo's forces, contactopt's re-solve of the same problem, and their difference."""

    program: ConicProgram
    solution: Solution
    mujoco_force: FloatArray
    force: FloatArray

    @property
    def relative_error(self) -> float:
        scale = max(float(np.linalg.norm(self.mujoco_force)), 1e-300)
        return float(np.linalg.norm(self.force - self.mujoco_force) / scale)


def reproduce(model: Any, data: Any, solver: str = "clarabel", **options: Any) -> Reproduction:
    """Re-solve the constraint problem of ``data`` and compare with MuJoCo's ``efc_force``."""
    program = program_from_mujoco(model, data)
    solution = solve(program, solver, options)
    if not solution.status.usable:
        raise ContactoptError(f"re-solve of MuJoCo's constraint problem failed: {solution.status}")
    h = float(model.opt.timestep)
    return Reproduction(program=program, solution=solution, mujoco_force=np.array(data.efc_force),
                        force=solution.x / h)


