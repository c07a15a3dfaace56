"""The robot set of ``experiments/robots.py``: MJCF models as the package registry ships them.

* dm-control's control suite (``dm_control/suite/*.xml``) and the standalone walkers and props
  of its other packages (``locomotion``, ``third_party``) that load without Python-side assembly;
* gymnasium's MuJoCo environments (``gymnasium/envs/mujoco/assets/*.xml``; ``pip install
  gymnasium``, in the ``robots`` extra), when installed;
* four small models of this repository with the features real robots have
  (``problems/mjcf/tendon_gripper.xml``, ``position_arm.xml``: position actuators with kv, a
  tendon-driven gripper, condim 3 contacts, joint frictionloss, a keyframe with ctrl;
  ``servo_hand.xml`` (integrator ``implicitfast``) and ``wheel_legs.xml`` (``implicit``): stiff
  position servos with kv, velocity actuators, a damped tendon actuator spanning two joints,
  condim 4 and 6 contacts with torsional and rolling friction, joint frictionloss, and a keyframe
  with ctrl that starts a few mm in penetration with a limit slightly violated).

Models are located without importing their packages (``importlib.util.find_spec``). A model
that cannot be run at all is listed in :data:`LEFT_OUT` with the reason.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: dm-control models outside the suite that load standalone (checked with mujoco 3.x/4.0).
DM_CONTROL_OTHERS = {
    "rodent": "locomotion/walkers/assets/rodent.xml",
    "humanoid_CMU_V2020": "locomotion/walkers/assets/humanoid_CMU_V2020.xml",
    "jumping_ball": "locomotion/walkers/assets/jumping_ball/jumping_ball_with_head.xml",
    "ant": "third_party/ant/ant.xml",
}
#: gymnasium's environments (the latest version of each where two are shipped).
GYMNASIUM = ["ant", "half_cheetah", "hopper", "humanoid", "humanoidstandup", "inverted_double_pendulum",
             "inverted_pendulum", "pusher_v5", "reacher", "swimmer", "walker2d_v5"]
OWN = ["tendon_gripper", "position_arm", "servo_hand", "wheel_legs"]
#: Models not run, and why.
LEFT_OUT = {
    "suite/lqr": "no degrees of freedom until dm-control's task sizes it (nv = 0)",
    "dm/fruitfly": "timestep 1e-4 s with 108 dofs: 250 steps are 25 ms of motion at ~100 ms a step",
}
#: Runs that move faster than 2x MuJoCo's largest speed + 0.1 (``spins``) by the formulation's own
#: definition, not by a defect: the ``reason`` column of ``experiments/robots.py`` (measured with
#: ``--steps 100``; how: ``experiments/robots.py --models NAME``).
_STIFF_CMU = ("regularized's default solref (2 h, 1) is 5x stiffer than MuJoCo's (0.02, 1) the model is written "
              "for, on 11 g links whose pelvis and thighs overlap by 8.7 cm (standalone the root is welded: "
              "dm-control adds the free joint); mj_step itself diverges with solref 0.01 (8e5 rad/s), and "
              "-o solref=0.02,1 stays at 217 rad/s (MuJoCo 188)")
#: servo_hand's box starts 3 mm in the floor between the fingertips: rigid rows lift it at
#: max_recovery_speed, sliding up past the tips, and the relaxed cone of ccp and anitescu
#: (Anitescu 2006; the separation mu |v_t| of a sliding contact, here mu = 1 and 0.1 m/s) opens
#: the fingers; -o max_recovery_speed=0.01 keeps them at 0.31 rad/s (MuJoCo 0.34, lcp 0.31).
_RELAXED_GRASP = ("the relaxed cone's separation mu |v_t| while the box, lifted out of the floor at "
                  "max_recovery_speed (0.1 m/s), slides up between the fingertips (mu = 1) opens the fingers "
                  "at 0.93 rad/s; -o max_recovery_speed=0.01 gives 0.31 (MuJoCo 0.34)")
#: sap -o rows=model takes MuJoCo's contacts as MuJoCo makes them (within the geoms' margin), so
#: the rows that sap's own candidates hold before a touch enter only once a body is in: the
#: recovery at max_recovery_speed then does the rest (measured with --steps 200).
_MODEL_ROWS_CMU = ("MuJoCo's rows of the overlapping welded root and 11 g links (4-8.7 cm, see the stops below) "
                   "recovered at max_recovery_speed (0.1 m/s) spin the links (1088 rad/s); "
                   "-o max_recovery_speed=0.001 gives 9.8 (MuJoCo 188)")
_MODEL_ROWS_GRASP = ("the box, 3 mm in the floor, is lifted at max_recovery_speed (0.1 m/s) before MuJoCo's "
                     "fingertip contacts are rows, and spins (4.1 rad/s); -o max_recovery_speed=0.01 gives 0.45 "
                     "(sap's own rows 0.45, MuJoCo 0.34)")
KNOWN_LAUNCHES = {
    ("dm/humanoid_CMU_V2020", "sap -o rows=model/newton"): _MODEL_ROWS_CMU,
    ("own/servo_hand", "sap -o rows=model/newton"): _MODEL_ROWS_GRASP,
    ("dm/humanoid_CMU_V2020", "regularized"): _STIFF_CMU,
    ("dm/humanoid_CMU_V2020", "regularized -o form=primal/newton"): _STIFF_CMU,
    ("own/servo_hand", "ccp/clarabel"): _RELAXED_GRASP,
    ("own/servo_hand", "anitescu/osqp"): _RELAXED_GRASP,
}
#: Runs that stop early by the formulation's own definition, not by a defect (the ``reason``
#: column). Standalone, the CMU humanoid's root is welded to the world, and its geom overlaps
#: its children's by 4-8.7 cm (both femurs and the lower back, measured at keyframe 0): MuJoCo
#: keeps those contacts (11 of 11 candidates are MuJoCo's) and its soft rows hold the overlap,
#: while a rigid step must open every one at the recovery speed, which the hip and spine limits
#: forbid once the legs are against them. With ``-o max_recovery_speed=0.001`` anitescu and lcp
#: complete 50 steps (largest speed 2.9).
_CMU_OVERLAP = ("infeasible by definition: the welded root overlaps both femurs and the lower back by 4-8.7 cm, "
                "and a rigid step must open each contact at max_recovery_speed (0.1 m/s), which the joint "
                "limits forbid from step 10; -o max_recovery_speed=0.001 completes under anitescu and lcp")
KNOWN_STOPS = {("dm/humanoid_CMU_V2020", method): _CMU_OVERLAP
               for method in ("ccp/clarabel", "anitescu/osqp", "lcp/lemke")}
#: ``params=model`` steps that differ from a converged ``mj_step`` by what the model asks of
#: MuJoCo beyond its convex program (the ``one-step`` list of ``experiments/robots.py``).
KNOWN_ONE_STEP = {
    "suite/dog": "noslip_iterations = 4: MuJoCo's noslip pass, not part of the program "
                 "(NoslipNotReproducedWarning); with noslip_iterations = 0, 2e-15 over 30 steps",
    "gym/hopper": "at step 44 the thigh and leg joints sit on their upper bound 0 (|q| ~ 1e-20), where "
                  "whether an RK4 stage activates the limit rows turns on the sign of rounding: mj_step is "
                  "discontinuous there; every other step <= 1e-12",
}
#: A few models of every source with contact, for ``--quick``.
QUICK = ["suite/hopper", "suite/humanoid", "own/tendon_gripper", "gym/ant"]


@dataclass(frozen=True)
class RobotModel:
    """One MJCF file: ``name`` is ``source/model`` (``suite/walker``, ``gym/ant``, ``own/...``)."""

    name: str
    path: Path


def _package_dir(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def dm_control_models() -> list[RobotModel]:
    folder = _package_dir("dm_control")
    if folder is None:
        return []
    suite = [RobotModel(f"suite/{path.stem}", path) for path in sorted((folder / "suite").glob("*.xml"))]
    others = [RobotModel(f"dm/{name}", folder / relative) for name, relative in DM_CONTROL_OTHERS.items()]
    return [model for model in suite + others if model.path.is_file() and model.name not in LEFT_OUT]


def gymnasium_models() -> list[RobotModel]:
    folder = _package_dir("gymnasium")
    if folder is None:
        return []
    assets = folder / "envs" / "mujoco" / "assets"
    models = [RobotModel(f"gym/{name.removesuffix('_v5')}", assets / f"{name}.xml") for name in GYMNASIUM]
    return [model for model in models if model.path.is_file()]


def own_models() -> list[RobotModel]:
    return [RobotModel(f"own/{name}", ROOT / "problems" / "mjcf" / f"{name}.xml") for name in OWN]


def robot_models() -> list[RobotModel]:
    """Every model of the set that is installed."""
    return dm_control_models() + gymnasium_models() + own_models()


def select(names: list[str] | None, quick: bool) -> list[RobotModel]:
    """The models named (``source/model`` or just ``model`` when unambiguous), the quick set, or
    all; an unknown name is an error naming the known ones."""
    models = robot_models()
    if names is None:
        names = QUICK if quick else None
    if names is None:
        return models
    by_name = {model.name: model for model in models}
    chosen: list[RobotModel] = []
    for name in names:
        matches = [by_name[name]] if name in by_name else [m for m in models if m.name.split("/", 1)[1] == name]
        if len(matches) != 1:
            known = ", ".join(sorted(by_name))
            raise SystemExit(f"robots: model {name!r} is {'ambiguous' if matches else 'unknown'}; known: {known}")
        chosen.append(matches[0])
    return chosen
