"""Drake's SAP on the box slide (problems/box_slide.toml), for ``experiments/sap.py --drake``.

Runs in a separate virtual environment that has Drake (``pip install drake``; never a
dependency of contactopt): it imports only pydrake and numpy and prints one JSON object.
The scene: a 1 kg cube of half-size 0.1 m whose eight corners are point contacts (spheres of
radius 1e-4 m, bottoms at the corners) on a half space, mu = 0.5, launched at 1 m/s along x;
MultibodyPlant with ``discrete_contact_approximation = "sap"``, point contact, the given
stiffness and relaxation time (SAP's dissipation time scale ``tau_d``).

    /work/venv-drake/bin/python experiments/sap_drake.py [--dt 1e-3] [--duration 0.3]
        [--stiffness 1e8] [--tau 0] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from pydrake.all import (
    AddContactMaterial,
    AddMultibodyPlant,
    CoulombFriction,
    DiagramBuilder,
    HalfSpace,
    MultibodyPlantConfig,
    ProximityProperties,
    RigidTransform,
    Simulator,
    SpatialInertia,
    SpatialVelocity,
    Sphere,
)

HALF, RADIUS = 0.1, 1e-4


def build(dt: float, stiffness: float, tau: float) -> tuple[object, object, object]:
    builder = DiagramBuilder()
    config = MultibodyPlantConfig(time_step=dt, discrete_contact_approximation="sap", contact_model="point")
    plant, _ = AddMultibodyPlant(config, builder)
    box = plant.AddRigidBody("box", SpatialInertia.SolidBoxWithMass(1.0, 2 * HALF, 2 * HALF, 2 * HALF))
    properties = ProximityProperties()
    AddContactMaterial(point_stiffness=stiffness, friction=CoulombFriction(0.5, 0.5), properties=properties)
    properties.AddProperty("material", "relaxation_time", tau)
    for i, (sx, sy, sz) in enumerate(np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T):
        centre = [sx * HALF, sy * HALF, sz * HALF + (RADIUS if sz < 0 else -RADIUS)]
        plant.RegisterCollisionGeometry(box, RigidTransform(centre), Sphere(RADIUS), f"corner{i}", properties)
    plant.RegisterCollisionGeometry(plant.world_body(), HalfSpace.MakePose([0, 0, 1], [0, 0, 0]), HalfSpace(),
                                    "ground", properties)
    plant.Finalize()
    diagram = builder.Build()
    return plant, diagram, box


def run(dt: float, duration: float, stiffness: float, tau: float) -> tuple[float, float, float]:
    """(stop distance, seconds per step, final velocity along x)."""
    plant, diagram, box = build(dt, stiffness, tau)
    simulator = Simulator(diagram)
    context = plant.GetMyMutableContextFromRoot(simulator.get_mutable_context())
    plant.SetFreeBodyPose(context, box, RigidTransform([0.0, 0.0, HALF]))
    plant.SetFreeBodySpatialVelocity(context, box, SpatialVelocity(w=[0.0, 0.0, 0.0], v=[1.0, 0.0, 0.0]))
    simulator.Initialize()
    start = time.perf_counter()
    simulator.AdvanceTo(duration)
    per_step = (time.perf_counter() - start) / round(duration / dt)
    pose = plant.EvalBodyPoseInWorld(context, box)
    velocity = plant.EvalBodySpatialVelocityInWorld(context, box)
    return float(pose.translation()[0]), per_step, float(velocity.translational()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--duration", type=float, default=0.3)
    parser.add_argument("--stiffness", type=float, default=1e8)
    parser.add_argument("--tau", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = [run(args.dt, args.duration, args.stiffness, args.tau) for _ in range(args.rounds)]
    from importlib.metadata import version

    print(json.dumps({"drake_version": version("drake"),
                      "stop_distance_m": results[-1][0], "final_vx": results[-1][2],
                      "per_step_ms": 1e3 * float(np.median([r[1] for r in results])),
                      "stiffness": args.stiffness, "tau_d": args.tau, "dt": args.dt}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
