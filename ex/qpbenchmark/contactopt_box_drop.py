"""qpbenchmark test set: the step QPs of contactopt scene 'box_drop', written by
contactopt.analysis.export (formulation 'anitescu').

Each problem is one time step's QP  min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b  (contactopt's
Nonneg rows -> G, h; Zero rows -> A, b), one file per problem in 'contactopt_box_drop' next to this file,
each readable alone with qpsolvers' Problem.load.
Run:  qpsolvers_benchmark contactopt_box_drop.py run
"""

from pathlib import Path

from qpsolvers_benchmark import TestSet
from qpsolvers_benchmark.problem import Problem
from qpsolvers_benchmark.tolerance import Tolerance

FOLDER = Path(__file__).resolve().with_name('contactopt_box_drop')
TOLERANCES = {'default': (1e-06, 10.0), 'high_accuracy': (1e-09, 10.0), 'mid_accuracy': (1e-06, 10.0), 'low_accuracy': (0.001, 10.0)}
PROBLEMS = [('contactopt_box_drop_step_000000', -0.12838145138333332), ('contactopt_box_drop_step_000001', -0.12852580553333331), ('contactopt_box_drop_step_000002', -0.12876639578333332), ('contactopt_box_drop_step_000003', -0.12910322213333333), ('contactopt_box_drop_step_000004', -0.12953628458333333), ('contactopt_box_drop_step_000005', -0.13006558313333333), ('contactopt_box_drop_step_000006', -0.13069111778333334), ('contactopt_box_drop_step_000007', -0.13141288853333333), ('contactopt_box_drop_step_000008', -0.13223089538333332), ('contactopt_box_drop_step_000009', -0.13314513833333333), ('contactopt_box_drop_step_000010', -0.13415561738333331), ('contactopt_box_drop_step_000011', -0.13526233253333333), ('contactopt_box_drop_step_000012', -0.13646528378333334), ('contactopt_box_drop_step_000013', -0.13776447113333332), ('contactopt_box_drop_step_000014', -0.13915989458333333), ('contactopt_box_drop_step_000015', -0.14065155413333333), ('contactopt_box_drop_step_000016', -0.14223944978333333), ('contactopt_box_drop_step_000017', -0.14392358153333334), ('contactopt_box_drop_step_000018', -0.14570394938333334), ('contactopt_box_drop_step_000019', -0.14758055333333334)]  # (name, optimal cost or None)


class ContactoptBoxDrop(TestSet):
    """Step QPs of contactopt scene 'box_drop'."""

    @property
    def description(self) -> str:
        return "Step QPs of contactopt scene 'box_drop', formulation 'anitescu' (20 problems)"

    @property
    def title(self) -> str:
        return 'contactopt box_drop (anitescu)'

    @property
    def sparse_only(self) -> bool:
        return False

    def define_tolerances(self) -> None:
        self.tolerances = {
            name: Tolerance(cost=tol, primal=tol, dual=tol, gap=tol, runtime=runtime)
            for name, (tol, runtime) in TOLERANCES.items()
        }

    def __iter__(self):
        for name, cost in PROBLEMS:
            qp = Problem.load(str(FOLDER / (name + ".npz")))
            yield Problem(qp.P, qp.q, qp.G, qp.h, qp.A, qp.b, qp.lb, qp.ub, name=name, optimal_cost=cost)
