"""Explicit Runge-Kutta tableaus: what a formulation declares when its step is several stage
programs (MuJoCo's RK4 under ``regularized -o params=model``); the stages are taken by
:mod:`contactopt.integrators.runge_kutta`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RK4", "Tableau"]


@dataclass(frozen=True)
class Tableau:
    """An explicit Runge-Kutta tableau: ``A[i - 1]`` the weights of stages ``0..i-1`` that give
    stage ``i``'s start, ``B`` the weights of the step."""

    name: str
    A: tuple[tuple[float, ...], ...]
    B: tuple[float, ...]

    @property
    def stages(self) -> int:
        return len(self.B)

    def node(self, stage: int) -> float:
        """``C_i = sum_j A_ij``: where in the step stage ``i`` sits (MuJoCo's stage time)."""
        return float(sum(self.A[stage - 1])) if stage else 0.0


#: MuJoCo's RK4 (``RK4_A``, ``RK4_B`` of ``engine_forward.c``).
RK4 = Tableau("RK4", A=((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)), B=(1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0))
