"""The frictionless velocity-level LCP (Tedrake 2022, "Time-stepping LCP: Normal force").

With normal Jacobian rows ``N`` of the contact candidates, gaps ``phi`` and
``v' = v_free + M^{-1} N^T lambda``, non-penetration at the end of the step reads

    0 <= phi / h + N v'   ⟂   lambda >= 0,

i.e. ``LCP(N M^{-1} N^T, phi / h + N v_free)`` in the normal impulses ``lambda``. Friction
is ignored (this is the Stewart-Trinkle LCP with no friction directions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from contactopt import LCP, Block, ConicProgram, ContactoptError, Solution, StepProblem
from contactopt.formulations import Formulation, StepResult


class NormalLCP(Formulation):
    name: ClassVar[str] = "normal_lcp"
    description: ClassVar[str] = "frictionless LCP in the normal impulses (demo plugin)"
    defaults: ClassVar[Mapping[str, Any]] = {}

    def build(self, problem: StepProblem, options: Mapping[str, Any]) -> LCP:
        if problem.bilateral.count:
            raise ContactoptError(f"formulation {self.name!r} does not take bilateral constraints")
        N = problem.contacts.J_normal
        W = N @ problem.dynamics.solve_M(N.T)  # the Delassus matrix of the normal rows
        q = problem.contacts.phi / problem.dt + N @ problem.v_free
        n = q.shape[0]
        return LCP(W, q, variables=(Block("impulse_normal", 0, n, 1),),
                   metadata={"formulation": self.name, "dt": problem.dt})

    def recover(self, problem: StepProblem, program: ConicProgram | LCP, solution: Solution) -> StepResult:
        contacts = problem.contacts
        normal = solution.x
        v_next = problem.v_free + problem.dynamics.solve_M(contacts.J_normal.T @ normal)
        impulses = np.zeros((contacts.count, contacts.dim))
        impulses[:, 0] = normal
        return StepResult(v_next=v_next, impulses=impulses)
