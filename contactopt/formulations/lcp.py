"""The Stewart-Trinkle / Anitescu-Potra time-stepping LCP with a polyhedral friction cone.

Reference 000, "Time-stepping LCP: Coulomb Friction" (after Stewart & Trinkle 1996 and
Anitescu & Potra 1997). Per active contact ``c`` with normal row ``n_c``, ``k`` friction
directions ``d_ci`` (rows ``D``), normal impulse ``lambda_c``, edge impulses ``beta_ci`` and
the slack ``gamma_c`` (the slip speed, the reference's ``v_abs``), with

    v' = v_free + M^{-1} (N^T lambda + D^T beta):

    0 <= phi_c / h + n_c v'                 ⟂  lambda_c >= 0   (non-penetration)
    0 <= d_ci v' + gamma_c                  ⟂  beta_ci  >= 0   (maximum dissipation)
    0 <= mu_c lambda_c - sum_i beta_ci      ⟂  gamma_c  >= 0   (friction cone)

i.e. ``LCP(M_lcp, q_lcp)`` with ``z = [lambda, beta, gamma]`` and

    M_lcp = [[N Mi N',  N Mi D',  0 ],      q_lcp = [phi/h + N v_free,
             [D Mi N',  D Mi D',  E ],               D v_free,
             [ U,       -E',      0 ]]               0]

(``Mi = M^{-1}``, ``E`` block-diagonal columns of ones, ``U = diag(mu)``). The reference's
1-D brick LCP in ``f+, f-, v_abs`` is the special case of one planar contact with ``k = 2``
(``d = +t, -t``), a resting normal impulse ``m g h``, ``f+- = beta+- / h`` and
``v_abs = gamma``. ``M_lcp`` is not symmetric (and has a zero diagonal block), so Lemke's
method is the solver for it. Impulses in the contact frame: normal ``lambda_c``, tangential
``sum_i beta_ci d_i``.

**Bilateral rows** ``H v' = r`` with free multipliers ``mu`` make a mixed LCP; eliminating
``mu = S^{-1} (r - H v_free - H M^{-1} f)`` (``f = N^T lambda + D^T beta``,
``S = H M^{-1} H^T``, the Schur complement) leaves the standard LCP above with ``M^{-1}``
replaced by the projected inverse inertia ``M^{-1} - M^{-1} H^T S^{-1} H M^{-1}`` and
``v_free`` by ``v_free + M^{-1} H^T S^{-1} (r - H v_free)`` (``S^+`` if rows are redundant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from contactopt.formulations.base import Formulation, Program, StepResult
from contactopt.formulations.common import (
    active_contacts,
    check_directions,
    polyhedral_frame_impulses,
    require_finite_mu,
    scatter_impulses,
    select_contacts,
)
from contactopt.model import StepProblem, to_dense
from contactopt.programs import LCP, Solution
from contactopt.programs.conic import blocks_from_sizes


class StewartTrinkleLCP(Formulation):
    name: ClassVar[str] = "lcp"
    description: ClassVar[str] = "Stewart-Trinkle LCP, polyhedral cone with k directions + max dissipation"
    defaults: ClassVar[Mapping[str, Any]] = {"k": None, "epsilon": float("inf")}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"])
        require_finite_mu(active, self.name)
        k = check_directions(options["k"], contacts.dim, self.name)
        na, h = active.count, problem.dt
        N = active.N
        D = active.directions(k)
        n_gamma = na if k else 0
        # Lemke pivots on a dense LCP matrix: the (small) rows are densified here.
        stacked = np.vstack([to_dense(N), to_dense(D)])
        constrained = Constrained(problem)
        W = stacked @ constrained.solve_M(stacked.T)  # Delassus blocks of [N; D]
        size = na + na * k + n_gamma
        M_lcp = np.zeros((size, size))
        M_lcp[: na + na * k, : na + na * k] = W
        if k:
            E = np.kron(np.eye(na), np.ones((k, 1)))
            M_lcp[na : na + na * k, na + na * k :] = E
            M_lcp[na + na * k :, :na] = np.diag(active.mu)
            M_lcp[na + na * k :, na : na + na * k] = -E.T
        v_free = constrained.v_free
        q_lcp = np.concatenate([active.phi / h + N @ v_free, D @ v_free, np.zeros(n_gamma)])
        variables = blocks_from_sizes([("impulse_normal", na, 1), ("impulse_directions", na * k, k),
                                       ("slip_speed", n_gamma, 1)])
        return LCP(M_lcp, q_lcp, variables=variables, metadata={
            "formulation": self.name, "dt": h, "t": problem.state.t, "k": k,
            "contacts": active.index.tolist(), "nv": problem.nv, "dim": contacts.dim})

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, LCP)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        k = int(program.metadata["k"])
        normal = program.variable(solution.x, "impulse_normal")
        beta = program.variable(solution.x, "impulse_directions")
        frame = polyhedral_frame_impulses(active, normal, beta, k)
        generalized = active.J.T @ frame.reshape(-1)
        constrained = Constrained(problem)
        v_next = constrained.v_free + constrained.solve_M(generalized)
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame),
                          bilateral=constrained.multipliers(generalized))


class Constrained:
    """The step's dynamics with the bilateral rows ``H v' = r`` eliminated (Schur complement)."""

    def __init__(self, problem: StepProblem) -> None:
        self.problem = problem
        H = problem.bilateral.H
        self.H = H
        if H.shape[0]:
            self.Mi_Ht = problem.dynamics.solve_M(H.T)
            self.S_pinv = np.linalg.pinv(H @ self.Mi_Ht)
            residual = problem.bilateral_target - H @ problem.v_free
            self.v_free = problem.v_free + self.Mi_Ht @ (self.S_pinv @ residual)
        else:
            self.v_free = problem.v_free

    def solve_M(self, rhs: np.ndarray) -> np.ndarray:
        """Projected inverse inertia applied to ``rhs`` (plain ``M^{-1}`` without rows)."""
        direct = self.problem.dynamics.solve_M(rhs)
        if not self.H.shape[0]:
            return direct
        return direct - self.Mi_Ht @ (self.S_pinv @ (self.H @ direct))

    def multipliers(self, generalized: np.ndarray) -> np.ndarray:
        """``mu = S^+ (r - H v_free - H M^{-1} f)`` for contact forces ``f``."""
        if not self.H.shape[0]:
            return np.zeros(0)
        problem = self.problem
        reached = problem.v_free + problem.dynamics.solve_M(generalized)
        return self.S_pinv @ (problem.bilateral_target - self.H @ reached)

