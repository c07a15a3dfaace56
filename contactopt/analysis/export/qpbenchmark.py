"""qpbenchmark export: the step QPs of a run as a qpbenchmark (``qpsolvers_benchmark``) test set.

``folder/qpbenchmark/contactopt_<scene>.py`` and ``contactopt_<scene>.npz``: a qpbenchmark
(``qpsolvers_benchmark``) test set whose class ``ContactoptScene`` (qpbenchmark's own
naming rule: module name ``.title()`` without underscores) loads its problems from the
``.npz`` next to it at run time. Run it with ``qpsolvers_benchmark
folder/qpbenchmark/contactopt_<scene>.py run``. Each problem is one step's QP in qpsolvers'
form ``min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b`` (Zero rows -> ``A, b``; Nonneg rows ->
``G, h``; no ``lb``/``ub``), with matrices dense (contact QPs are small and mostly dense);
its ``optimal_cost`` is the objective of a reference solve (``clarabel`` by default; None
where that solve fails), which qpbenchmark needs to count a solve as a success. SOCPs and
LCPs are skipped with a warning. Tolerances per settings are those of
:data:`contactopt.analysis.bench.PROFILES` (``default``, ``high_accuracy``, ``mid_accuracy``,
``low_accuracy``: the names qpbenchmark's ``TestSet`` defines solver settings for).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contactopt.errors import ContactoptError
from contactopt.formulations.base import Program
from contactopt.programs import ConicProgram
from contactopt.solvers.qpsolvers_ import to_qpsolvers_arrays

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
Nonneg rows -> G, h; Zero rows -> A, b). The data are loaded from {data!r} next to this file.
Run:  qpsolvers_benchmark {module}.py run
"""

from pathlib import Path

import numpy as np
from qpsolvers_benchmark import TestSet
from qpsolvers_benchmark.problem import Problem
from qpsolvers_benchmark.tolerance import Tolerance

DATA = Path(__file__).resolve().with_name({data!r})
TOLERANCES = {tolerances!r}


def _matrix(data, prefix):
    if prefix + "_dense" not in data:
        return None
    return np.array(data[prefix + "_dense"], dtype=float)


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
        with np.load(DATA, allow_pickle=False) as data:
            names = [str(name) for name in data["names"]]
            costs = np.array(data["optimal_cost"], dtype=float)
            for j, name in enumerate(names):
                prefix = "p%d" % j
                G, A = _matrix(data, prefix + "_G"), _matrix(data, prefix + "_A")
                yield Problem(
                    np.array(data[prefix + "_P_dense"], dtype=float), np.array(data[prefix + "_q"]),
                    G, np.array(data[prefix + "_h"]) if G is not None else None,
                    A, np.array(data[prefix + "_b"]) if A is not None else None,
                    None, None, name=name,
                    optimal_cost=float(costs[j]) if np.isfinite(costs[j]) else None,
                )
'''


def write_qpbenchmark(programs: Sequence[tuple[int, float, Program]], folder: Path, scene_name: str,
                      formulation: str, reference_solver: str | None = "clarabel") -> Path | None:
    """The test-set module and its data (module docstring); None (with a warning) if no QP."""
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
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {}
    names, costs = [], []
    for j, (i, _, program) in enumerate(qps):
        assert isinstance(program, ConicProgram)
        qp = to_qpsolvers_arrays(program)
        prefix = f"p{j}"
        arrays[f"{prefix}_P_dense"] = qp["P"].toarray()
        arrays[f"{prefix}_q"] = qp["q"]
        for key, vector in (("G", "h"), ("A", "b")):
            if qp[key] is not None:
                arrays[f"{prefix}_{key}_dense"] = qp[key].toarray()
                arrays[f"{prefix}_{vector}"] = qp[vector]
        names.append(f"{module}_step_{i:06d}")
        cost = math.nan
        if reference_solver:
            try:
                reference = solve(program, reference_solver)
                if reference.status.usable:
                    cost = program.objective(reference.x)
            except ContactoptError:
                pass
        costs.append(cost)
    arrays["names"] = np.array(names, dtype=str)
    arrays["optimal_cost"] = np.array(costs, dtype=np.float64)
    arrays["header"] = np.array(json.dumps({"format": "contactopt-qpbenchmark", "scene": scene_name,
                                            "formulation": formulation, "steps": [i for i, _, _ in qps],
                                            "reference_solver": reference_solver}))
    data_path = folder / f"{module}.npz"
    np.savez_compressed(data_path, **arrays)
    tolerances = {name: (profile.tolerance, profile.time_limit) for name, profile in PROFILES.items()}
    source = _MODULE_TEMPLATE.format(
        scene=scene_name, formulation=formulation, data=data_path.name, module=module,
        cls=qpbenchmark_class_name(module), tolerances=tolerances,
        description=(f"Step QPs of contactopt scene {scene_name!r}, formulation {formulation!r} "
                     f"({len(qps)} problems)"),
        title=f"contactopt {scene_name} ({formulation})")
    path = folder / f"{module}.py"
    path.write_text(source)
    return path
