"""The Stewart-Trinkle / Anitescu-Potra time-stepping LCP with a polyhedral friction cone.

Tedrake 2022, "Time-stepping LCP: Coulomb Friction" (after Stewart & Trinkle 1996 and
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

**Limit rows** ``phi_j + h G_j v' >= 0`` (:mod:`contactopt.formulations.constraint_rows`) are
normal rows without friction: ``0 <= phi_j / h + G_j v'  _|_  lambda_j >= 0``. **Dry-friction
rows** (box ``|sigma_i| <= h bound_i``) take the standard split ``sigma = sigma+ - sigma-`` with
a slip variable ``zeta_i``, the friction rows above with ``mu lambda`` replaced by the constant
``h bound_i``::

    0 <=  F_i v' + zeta_i             _|_  sigma+_i >= 0
    0 <= -F_i v' + zeta_i             _|_  sigma-_i >= 0
    0 <= h bound_i - sigma+_i - sigma-_i  _|_  zeta_i >= 0

with ``v' = v_free + M^{-1} (... + G^T lambda + F^T (sigma+ - sigma-))``.
**Torsional and rolling rows** ``e_r`` (MJCF condim 4 and 6, coefficient ``mu_r``;
:mod:`contactopt.formulations.angular_friction`) add the directions ``+-e_r`` to their
contact's cone, each weighing ``mu_c / mu_r`` (the edge ``n + mu_r e_r`` lies on the cone's
boundary, as in ``anitescu``)::

    0 <= +-e_r v' + (mu_c / mu_r) gamma_c                                  _|_  beta_r+- >= 0
    0 <= mu_c lambda_c - sum_i beta_ci - (mu_c / mu_r) sum_r (beta_r+ + beta_r-)  _|_  gamma_c >= 0

``phi / h`` of a penetrating contact or a violated limit is capped at ``-max_recovery_speed``
(:mod:`contactopt.formulations.recovery`: off by default except on MJCF models).

**Impulses** (option ``impulses``): a statically indeterminate contact set (a grasp, a table on
four legs) gives the LCP many solutions, and Lemke's method ends at a vertex of them that
loads as few rows as it can. ``min_norm`` (the default) steps with the least-norm solution on
the complementarity face of the solver's answer, still an exact solution of this LCP
(:mod:`contactopt.formulations.lcp_selection`), and changes nothing where that face is a
single point; ``vertex`` steps with the solver's answer as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from contactopt.core.budgets import check_allocation
from contactopt.formulations.angular_friction import scatter_angular, vstack_rows
from contactopt.formulations.base import Formulation, Program, SolveFunction, StepResult
from contactopt.formulations.common import (
    active_contacts,
    check_directions,
    limit_index,
    polyhedral_frame_impulses,
    require_finite_mu,
    scatter_impulses,
    select_contacts,
)
from contactopt.formulations.lcp_selection import least_norm_on_face
from contactopt.formulations.recovery import limit_target, normal_target, recovery_speed
from contactopt.model.step import StepProblem, to_dense
from contactopt.programs import LCP, Solution
from contactopt.programs.conic import blocks_from_sizes


class StewartTrinkleLCP(Formulation):
    name: ClassVar[str] = "lcp"
    description: ClassVar[str] = "Stewart-Trinkle LCP, polyhedral cone with k directions + max dissipation"
    defaults: ClassVar[Mapping[str, Any]] = {"k": None, "epsilon": float("inf"), "max_recovery_speed": None,
                                             "impulses": "min_norm"}
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {"impulses": ("min_norm", "vertex")}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> Program:
        contacts = problem.contacts
        active = active_contacts(contacts, options["epsilon"], rigid=True)
        require_finite_mu(active, self.name)
        k = check_directions(options["k"], contacts.dim, self.name)
        na, h = active.count, problem.dt
        limits = limit_index(problem, options["epsilon"])
        G = problem.unilateral.G[limits]
        F, bound = problem.friction_loss.F, problem.friction_loss.bound
        nu, nf = limits.shape[0], bound.shape[0]
        planned = na * (k + 1 + (k > 0)) + nu + 3 * nf  # before the dense matrix is made
        check_allocation(float(planned) ** 2, f"a dense {planned} x {planned} LCP matrix ({na} contacts)",
                         "k", options["k"], f"formulation {self.name!r}")
        N = active.N
        D = active.directions(k)
        angular = active.angular if k else None
        if angular is not None:  # torsional/rolling directions +-e_r after the sliding ones
            E_rows = to_dense(angular.J)
            D = np.vstack([to_dense(D), np.stack([E_rows, -E_rows], axis=1).reshape(-1, problem.nv)])
        n_angular = 0 if angular is None else 2 * angular.count
        n_gamma = na if k else 0
        # Lemke pivots on a dense LCP matrix: the (small) rows are densified here. Velocity
        # rows in the order of z: [N; D; gamma (none); G; F; -F; zeta (none)].
        velocity_rows = np.vstack([to_dense(N), to_dense(D), G, F, -F])
        # A direction that moves no degree of freedom (the out-of-plane tangent of a planar
        # model) is a zero row up to rounding (|row| ~ 1e-17): exactly zero here, so that its
        # q entry is exactly 0 instead of -1e-16 (which sent Lemke onto a secondary ray).
        norms = np.linalg.norm(velocity_rows, axis=1)
        void = norms <= 1e-12 * max(float(norms.max(initial=0.0)), 1e-300)
        velocity_rows[void] = 0.0
        constrained = Constrained(problem)
        W = velocity_rows @ constrained.solve_M(velocity_rows.T)  # Delassus blocks
        n_contact = na + na * k + n_angular
        size = n_contact + n_gamma + nu + 3 * nf
        moving = np.r_[np.arange(n_contact), n_contact + n_gamma + np.arange(nu + 2 * nf)]
        M_lcp = np.zeros((size, size))
        M_lcp[np.ix_(moving, moving)] = W
        if k:
            E = np.kron(np.eye(na), np.ones((k, 1)))
            if angular is not None:  # each +-e_r weighs mu_c / mu_r in its contact's cone
                weights = np.zeros((n_angular, na))
                weights[np.arange(n_angular), np.repeat(angular.contact, 2)] = np.repeat(
                    active.mu[angular.contact] / angular.mu, 2)
                E = np.vstack([E, weights])
            M_lcp[na:n_contact, n_contact:n_contact + n_gamma] = E
            M_lcp[n_contact:n_contact + n_gamma, :na] = np.diag(active.mu)
            M_lcp[n_contact:n_contact + n_gamma, na:n_contact] = -E.T
        if nf:  # box rows: 0 <= +-F v' + zeta  _|_  sigma+- >= 0,  0 <= h bound - sigma+ - sigma-  _|_  zeta >= 0
            start = n_contact + n_gamma + nu
            sigma, zeta = np.arange(start, start + 2 * nf), np.arange(start + 2 * nf, size)
            M_lcp[sigma, np.tile(zeta, 2)] = 1.0
            M_lcp[np.tile(zeta, 2), sigma] = -1.0
        v_free = constrained.v_free
        speeds = velocity_rows @ v_free
        v_max = recovery_speed(problem, options)
        target = normal_target(active.phi, h, v_max)  # phi / h
        q_lcp = np.concatenate([target + speeds[:na], speeds[na:n_contact], np.zeros(n_gamma),
                                limit_target(problem, limits, v_max) + speeds[n_contact:n_contact + nu],
                                speeds[n_contact + nu:], h * bound])
        variables = blocks_from_sizes([("impulse_normal", na, 1), ("impulse_directions", na * k, k),
                                       *((("impulse_angular_directions", n_angular, 2),) if n_angular else ()),
                                       ("slip_speed", n_gamma, 1), ("limits", nu, 1),
                                       ("friction_loss_positive", nf, 1), ("friction_loss_negative", nf, 1),
                                       ("friction_loss_slip", nf, 1)])
        return LCP(M_lcp, q_lcp, variables=variables, metadata={
            "formulation": self.name, "dt": h, "t": problem.state.t, "k": k,
            "contacts": active.index.tolist(), "nv": problem.nv, "dim": contacts.dim,
            "limits": limits.tolist(), "friction_loss": nf})

    def choose_solution(self, program: Program, solution: Solution, options: Mapping[str, Any],
                        solve: SolveFunction) -> Solution:
        """``impulses=min_norm``: the least-norm solution on the complementarity face of the
        solver's answer (:mod:`contactopt.formulations.lcp_selection`); ``vertex``: the answer."""
        if options["impulses"] == "vertex" or not isinstance(program, LCP):
            return solution
        return least_norm_on_face(program, solution, solve)

    def recover(self, problem: StepProblem, program: Program, solution: Solution) -> StepResult:
        assert isinstance(program, LCP)
        contacts = problem.contacts
        active = select_contacts(contacts, program.metadata["contacts"])
        k = int(program.metadata["k"])
        normal = program.variable(solution.x, "impulse_normal")
        beta = program.variable(solution.x, "impulse_directions")
        frame = polyhedral_frame_impulses(active, normal, beta, k)
        angular = np.zeros(0)
        rows, stacked = active.J, frame.reshape(-1)
        if any(block.name == "impulse_angular_directions" for block in program.variables):
            assert active.angular is not None
            pairs = program.variable(solution.x, "impulse_angular_directions").reshape(-1, 2)
            angular = pairs[:, 0] - pairs[:, 1]
            rows, stacked = vstack_rows([active.J, active.angular.J]), np.concatenate([stacked, angular])
        limits = np.zeros(problem.unilateral.count)
        index = np.asarray(program.metadata.get("limits", []), dtype=np.int_)
        limits[index] = program.variable(solution.x, "limits")
        friction = (program.variable(solution.x, "friction_loss_positive")
                    - program.variable(solution.x, "friction_loss_negative"))
        generalized = (rows.T @ stacked + problem.unilateral.G.T @ limits
                       + problem.friction_loss.F.T @ friction)
        constrained = Constrained(problem)
        v_next = constrained.v_free + constrained.solve_M(generalized)
        return StepResult(v_next=v_next, impulses=scatter_impulses(contacts, active, frame),
                          bilateral=constrained.multipliers(generalized), limits=limits,
                          friction_loss=np.array(friction), angular_friction=scatter_angular(contacts, active, angular))


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

