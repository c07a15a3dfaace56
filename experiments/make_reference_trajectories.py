"""Reference trajectories of every formulation, saved once from the dense pipeline so that
the sparse, vectorized pipeline (issue 10) can be checked against them to 1e-9.

Scenes: the rigid3d box (``box_slide``, first 100 steps), the MJCF sphere pile
(``sphere_pile_mjcf``, first 20 steps) and two textbook systems (the brick of
``brick_push`` with friction, the ``cartesian_pendulum_floor`` with a bilateral constraint and
a floor). Only deterministic direct solvers (Clarabel's interior point, Lemke's pivoting)
are recorded: iterative first-order solvers (OSQP, PGS) stop at a tolerance and warm starts
legitimately move their answers by more than 1e-9.

The pile's arrays were re-recorded when the MJCF contact Jacobian became sparse (issue 10):
the first steps' programs equal the dense pipeline's to 1e-16 relative, and the trajectories
moved by at most 1e-5 (ccp dual), as much as a one-ulp change of the first program moves
Clarabel's answer on this degenerate pile (the dense pile moved by up to 5e-3 between two
OpenBLAS kernels). They were recorded once more (session 20) when the contact Jacobian's
frame products stopped going through a batched matrix product: BLAS had computed them with
or without FMA depending on the CPU (the recorded pile matched the Haswell kernel only; under
the Prescott kernel it moved by up to 1.5e-5). Now the pile is the same bit for bit under the
Haswell, SkylakeX and Prescott kernels with 1 or 2 threads, and equal to what the previous
code gave under Prescott (the non-FMA products). The dense cases (box, textbook systems) were
recorded with OpenBLAS's Haswell kernels: ``OPENBLAS_CORETYPE=Haswell`` reproduces them within
1e-9 (they were recorded by the dense pipeline; the sparse one sums in another order).

    # replaces the arrays of the given scenes (all scenes without --only)
    OPENBLAS_CORETYPE=Haswell python experiments/make_reference_trajectories.py --only sphere_pile_mjcf
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

# the OpenBLAS kernels and threads the tests replay under (see tests/conftest.py)
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's contactopt, not an installed one
import contactopt as co  # noqa: E402

TARGET = ROOT / "tests" / "data" / "reference_trajectories.npz"

#: (scene, steps, formulation, solver, options): the cases the test replays.
CASES: list[tuple[str, int, str, str, dict[str, Any]]] = [
    ("box_slide", 100, "gauss", "clarabel", {}),
    ("box_slide", 100, "gauss", "clarabel", {"form": "dual"}),
    ("box_slide", 100, "lcp", "lemke", {}),
    ("box_slide", 100, "anitescu", "clarabel", {}),
    ("box_slide", 100, "anitescu", "clarabel", {"form": "dual"}),
    ("box_slide", 100, "ccp", "clarabel", {}),
    ("box_slide", 100, "ccp", "clarabel", {"form": "dual"}),
    ("box_slide", 100, "regularized", "clarabel", {}),
    ("box_slide", 100, "regularized", "clarabel", {"cone": "elliptic"}),
    ("sphere_pile_mjcf", 20, "regularized", "clarabel", {}),
    ("sphere_pile_mjcf", 20, "regularized", "clarabel", {"cone": "elliptic"}),
    # recorded with the exact phi / h, before MJCF models got a default cap on the penetration
    # recovery speed (contactopt.formulations.recovery): asked for explicitly
    ("sphere_pile_mjcf", 20, "anitescu", "clarabel", {"max_recovery_speed": math.inf}),
    ("sphere_pile_mjcf", 20, "ccp", "clarabel", {"form": "dual", "max_recovery_speed": math.inf}),
    ("brick_push", 50, "lcp", "lemke", {}),
    ("brick_push", 50, "anitescu", "clarabel", {"form": "dual"}),
    ("brick_push", 50, "ccp", "clarabel", {}),
    ("cartesian_pendulum_floor", 50, "gauss", "clarabel", {}),
    ("cartesian_pendulum_floor", 50, "anitescu", "clarabel", {"form": "dual"}),
    ("cartesian_pendulum_floor", 50, "regularized", "clarabel", {}),
]


def key(index: int) -> str:
    return f"case{index:02d}"


def run_case(scene_name: str, steps: int, formulation: str, solver: str,
             options: dict[str, Any]) -> co.Trajectory:
    scene = co.load_scene(ROOT / "problems" / f"{scene_name}.toml")
    # The references compare build pipelines, so the solver's raw answers are replayed: the
    # active-set refinement of interior-point answers (issue 12, on by default for clarabel)
    # came after the references were recorded and would move them by the IPM's ~1e-9 error;
    # so would the rescaling of programs far from unit size (issue 24, on by default). A raw
    # answer that contactopt's row-wise judgement (issue 24) rejects ends the replay there
    # (the pile's regularized run at step 7: an edge whose impulse and velocity are both
    # about 1 % of their own scales); the pipelines are compared on the steps before it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return co.simulate(scene, formulation=formulation, solver=solver, options=options,
                           solver_options={"refine": False, "normalize": False}, duration=steps * scene.dt,
                           on_failure="stop")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated scenes whose arrays are replaced; the "
                        "others are kept as recorded (default: every scene)")
    args = parser.parse_args(argv)
    only = {name for name in args.only.split(",") if name}
    unknown = only - {case[0] for case in CASES}
    if unknown:
        parser.error(f"--only: no cases for {', '.join(sorted(unknown))}")
    arrays: dict[str, np.ndarray] = dict(np.load(TARGET)) if only and TARGET.exists() else {}
    for index, case in enumerate(CASES):
        if only and case[0] not in only:
            continue
        traj = run_case(*case)
        arrays[f"{key(index)}_q"] = traj.q
        arrays[f"{key(index)}_v"] = traj.v
        print(f"{key(index)} {case[0]} {case[2]}/{case[3]} {case[4]}: {len(traj.steps)} steps")
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(TARGET, **arrays)
    print(f"wrote {TARGET} ({TARGET.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
