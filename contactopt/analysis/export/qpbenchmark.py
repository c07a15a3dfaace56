"""qpbenchmark export: the step QPs of a run as a qpbenchmark (``qpsolvers_benchmark``) test set.

``folder/qpbenchmark/contactopt_<scene>.py``: a qpbenchmark test set (a ``TestSet`` subclass
named by qpbenchmark's own rule for ``load_test_set``: the module name ``.title()`` without
underscores, e.g. ``ContactoptBoxSlide``) whose problems are the files
``folder/qpbenchmark/contactopt_<scene>/<problem>.npz``, one per step QP, each in the layout of
qpsolvers' ``Problem.save`` / ``Problem.load`` (arrays ``P, q, G, h, A, b, lb, ub``, an absent
one stored as ``None`` the way ``Problem.save`` stores it), so ``qpsolvers.Problem.load(path)``
(inherited by ``qpsolvers_benchmark.problem.Problem``) reads any of them alone. The module lists
the problem names with their ``optimal_cost`` and loads each file with ``Problem.load``. Run it
with ``qpsolvers_benchmark folder/qpbenchmark/contactopt_<scene>.py run``.

Each problem is one step's QP in qpsolvers' form ``min 1/2 x'Px + q'x  s.t.  G x <= h,
A x = b`` (Zero rows -> ``A, b``; Nonneg rows -> ``G, h``; no ``lb``/``ub``), with dense matrices
(contact QPs are small and mostly dense); its ``optimal_cost`` is the objective of a reference
solve (``clarabel`` by default; None where that solve fails), which qpbenchmark needs to count
a solve as a success. SOCPs and LCPs are skipped with a warning. Tolerances per settings are
those of :data:`contactopt.analysis.bench.PROFILES` (``default``, ``high_accuracy``,
``mid_accuracy``, ``low_accuracy``: the names qpbenchmark's ``TestSet`` defines settings for).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contactopt.core.errors import ContactoptError
from contactopt.core.outputs import atomic_path, write_text
from contactopt.formulations.base import Program
from contactopt.programs import ConicProgram
from contactopt.solvers.backends.qpsolvers import to_qpsolvers_arrays

__all__ = ["qpbenchmark_class_name", "slug", "write_qpbenchmark"]

def qpbenchmark_class_name(module_name: str) -> str:
    """The class name qpbenchmark's ``load_test_set`` looks up for a module file name."""
    return module_name.title().replace("_", "")


def slug(scene_name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", scene_name).strip("_").lower() or "scene"


def _module_name(scene_name: str) -> str:
    return f"contactopt_{slug(scene_name)}"


_MODULE_TEMPLATE = '''"""qpbenchmark test set: the step QPs of contactopt scene {scene!r}, written by
contactopt.analysis.export (formulation {formulation!r}).

Each problem is one time step's QP  min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b  (contactopt's
Nonneg rows -> G, h; Zero rows -> A, b), one file per problem in {folder!r} next to this file,
each readable alone with qpsolvers' Problem.load.
Run:  qpsolvers_benchmark {module}.py run
"""

from pathlib import Path

from qpsolvers_benchmark import TestSet
from qpsolvers_benchmark.problem import Problem
from qpsolvers_benchmark.tolerance import Tolerance

FOLDER = Path(__file__).resolve().with_name({folder!r})
TOLERANCES = {tolerances!r}
PROBLEMS = {problems!r}  # (name, optimal cost or None)


class {cls}(TestSet):
    """Step QPs of contactopt scene {scene!r}."""

    @property
    def description(self) -> str:
        return {description!r}

    @property
    def title(self) -> str:
        return {title!r}

    @property
    def sparse_only(self) -> bool:
        return False

    def define_tolerances(self) -> None:
        self.tolerances = {{
            name: Tolerance(cost=tol, primal=tol, dual=tol, gap=tol, runtime=runtime)
            for name, (tol, runtime) in TOLERANCES.items()
        }}

    def __iter__(self):
        for name, cost in PROBLEMS:
            qp = Problem.load(str(FOLDER / (name + ".npz")))
            yield Problem(qp.P, qp.q, qp.G, qp.h, qp.A, qp.b, qp.lb, qp.ub, name=name, optimal_cost=cost)
'''


def write_qpbenchmark(programs: Sequence[tuple[int, float, Program]], folder: Path, scene_name: str,
                      formulation: str, reference_solver: str | None = "clarabel", *,
                      resume: bool = False) -> Path | None:
    """The test-set module and its data (module docstring); None (with a warning) if no QP.
    ``resume``: the problem files already there are kept (complete, as every write is atomic)."""
    from contactopt.analysis.bench import PROFILES
    from contactopt.solvers import solve

    qps = [(i, t, p) for i, t, p in programs if isinstance(p, ConicProgram) and p.kind == "qp"]
    others = len(programs) - len(qps)
    if others:
        kinds = sorted({p.kind.upper() for _, _, p in programs if not (isinstance(p, ConicProgram)
                                                                        and p.kind == "qp")})
        warnings.warn(f"qpbenchmark export: {others} step program(s) skipped ({', '.join(kinds)}: "
                      "qpbenchmark takes QPs only)", stacklevel=3)
    if not qps:
        warnings.warn(f"qpbenchmark export skipped: formulation {formulation!r} built no QP", stacklevel=3)
        return None
    module = _module_name(scene_name)
    problem_folder = folder / module
    problem_folder.mkdir(parents=True, exist_ok=True)
    for old in [] if resume else problem_folder.glob("*.npz"):  # a previous export of another run
        old.unlink()
    problems: list[tuple[str, float | None]] = []
    for i, _, program in qps:
        assert isinstance(program, ConicProgram)
        qp = to_qpsolvers_arrays(program)
        name = f"{module}_step_{i:06d}"
        arrays: dict[str, Any] = {"P": qp["P"].toarray(), "q": qp["q"]}
        for key in ("G", "h", "A", "b"):
            value = qp[key]
            arrays[key] = value.toarray() if hasattr(value, "toarray") else value
        # qpsolvers' Problem.save stores an absent entry as np.array(None), which its load
        # (allow_pickle=False) reads back as None; the same here, lb and ub always absent
        arrays.update(lb=None, ub=None)
        stored: dict[str, Any] = {key: np.array(value) for key, value in arrays.items()}
        target = problem_folder / f"{name}.npz"
        if not (resume and target.is_file()):  # --resume: a complete file of the earlier export is kept
            with atomic_path(target, "qpbenchmark problem file") as temporary:
                np.savez(temporary, **stored)
        cost: float | None = None
        if reference_solver:
            try:
                reference = solve(program, reference_solver)
                if reference.status.usable:
                    cost = program.objective(reference.x)
            except ContactoptError:
                pass
        problems.append((name, cost))
    tolerances = {name: (profile.tolerance, profile.time_limit) for name, profile in PROFILES.items()}
    source = _MODULE_TEMPLATE.format(
        scene=scene_name, formulation=formulation, folder=module, module=module,
        cls=qpbenchmark_class_name(module), tolerances=tolerances, problems=problems,
        description=(f"Step QPs of contactopt scene {scene_name!r}, formulation {formulation!r} "
                     f"({len(qps)} problems)"),
        title=f"contactopt {scene_name} ({formulation})")
    path = folder / f"{module}.py"
    write_text(path, source, "qpbenchmark module")
    return path
