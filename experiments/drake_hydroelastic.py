"""Drake's hydroelastic contact on the scenes of ``experiments/hydroelastic.py`` (``--drake``).

Runs in a separate virtual environment that has Drake (``python3 -m venv /work/drake-venv &&
/work/drake-venv/bin/pip install drake``; never a dependency of contactopt): it imports only
pydrake and numpy and prints one JSON object. MultibodyPlant, ``contact_model = "hydroelastic"``,
one soft body (compliant-hydroelastic box or sphere: ``hydroelastic_modulus``,
``hunt_crossley_dissipation``, ``resolution_hint``) on a rigid-hydroelastic half space, both with
Coulomb friction ``mu`` (``stack``: a second equal soft box on the first, a compliant-compliant
pair, Drake's equal-pressure surface between their tetrahedral fields); the discrete
approximation ``--approximation`` (``sap``: SAP's linear dissipation with ``relaxation_time``;
``lagged`` or ``similar``: the Hunt-Crossley models that Drake solves with SAP too).

    /work/drake-venv/bin/python experiments/drake_hydroelastic.py --scene box_rest|spin|slide|sphere_rest|roll|stack
        [--dt 1e-3] [--duration 0.2] [--approximation sap] [--modulus 1e6] [--dissipation 90]
        [--relaxation 0.0045] [--mu 0.5] [--z0 0.04994] [--z-upper 0.1498] [--resolution 0.01]

Output: per recorded step ``t``, ``z``, ``vx``, ``x``, ``wz``, ``wy`` and the hydroelastic
contact surface's ``area`` and normal force ``fz`` (ContactResults; ``stack``: also the upper box's
``z_upper`` and the surface between the boxes' ``area_between`` and ``fz_between``), plus seconds
per step.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from pydrake.all import (  # type: ignore[import-not-found]
    AddCompliantHydroelasticProperties,
    AddContactMaterial,
    AddMultibodyPlant,
    AddRigidHydroelasticProperties,
    Box,
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

HALF, RADIUS, MASS = 0.05, 0.05, 1.0


def build(args: argparse.Namespace) -> tuple[Any, Any, Any, bool]:
    builder = DiagramBuilder()
    config = MultibodyPlantConfig(time_step=args.dt, discrete_contact_approximation=args.approximation,
                                  contact_model="hydroelastic")
    plant, _ = AddMultibodyPlant(config, builder)
    sphere = args.scene in ("sphere_rest", "roll")
    inertia = (SpatialInertia.SolidSphereWithMass(MASS, RADIUS) if sphere
               else SpatialInertia.SolidBoxWithMass(MASS, 2 * HALF, 2 * HALF, 2 * HALF))
    body = plant.AddRigidBody("body", inertia)
    soft = ProximityProperties()
    AddContactMaterial(dissipation=args.dissipation, friction=CoulombFriction(args.mu, args.mu), properties=soft)
    soft.AddProperty("material", "relaxation_time", args.relaxation)
    AddCompliantHydroelasticProperties(resolution_hint=args.resolution, hydroelastic_modulus=args.modulus,
                                       properties=soft)
    shape = Sphere(RADIUS) if sphere else Box(2 * HALF, 2 * HALF, 2 * HALF)
    plant.RegisterCollisionGeometry(body, RigidTransform(), shape, "soft", soft)
    if args.scene == "stack":
        upper = plant.AddRigidBody("upper", inertia)
        plant.RegisterCollisionGeometry(upper, RigidTransform(), Box(2 * HALF, 2 * HALF, 2 * HALF), "soft_upper", soft)
    rigid = ProximityProperties()
    AddContactMaterial(dissipation=args.dissipation, friction=CoulombFriction(args.mu, args.mu), properties=rigid)
    rigid.AddProperty("material", "relaxation_time", args.relaxation)
    AddRigidHydroelasticProperties(properties=rigid)
    plant.RegisterCollisionGeometry(plant.world_body(), HalfSpace.MakePose([0, 0, 1], [0, 0, 0]), HalfSpace(),
                                    "ground", rigid)
    plant.Finalize()
    diagram = builder.Build()
    return plant, diagram, body, sphere


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", required=True, choices=["box_rest", "spin", "slide", "sphere_rest", "roll", "stack"])
    parser.add_argument("--dt", type=float, default=1e-3)
    parser.add_argument("--duration", type=float, default=0.2)
    parser.add_argument("--approximation", default="sap", choices=["sap", "lagged", "similar", "tamsi"])
    parser.add_argument("--modulus", type=float, default=1e6)
    parser.add_argument("--dissipation", type=float, default=90.0)
    parser.add_argument("--relaxation", type=float, default=0.0045)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--z0", type=float, default=None)
    parser.add_argument("--z-upper", type=float, default=0.1498, help="stack: the upper box's start height")
    parser.add_argument("--v0", type=float, default=1.0)
    parser.add_argument("--w0", type=float, default=10.0)
    parser.add_argument("--resolution", type=float, default=0.01)
    args = parser.parse_args()
    plant, diagram, body, sphere = build(args)
    simulator = Simulator(diagram)
    context = simulator.get_mutable_context()
    plant_context = plant.GetMyMutableContextFromRoot(context)
    z0 = args.z0 if args.z0 is not None else (RADIUS if sphere else HALF)
    plant.SetFreeBodyPose(plant_context, body, RigidTransform([0.0, 0.0, z0]))
    upper = plant.GetBodyByName("upper") if args.scene == "stack" else None
    if upper is not None:
        plant.SetFreeBodyPose(plant_context, upper, RigidTransform([0.0, 0.0, args.z_upper]))
    w, v = np.zeros(3), np.zeros(3)
    if args.scene == "spin":
        w[2] = args.w0
    elif args.scene == "slide":
        v[0] = args.v0
    elif args.scene == "roll":
        v[0], w[1] = args.v0, args.v0 / RADIUS
    plant.SetFreeBodySpatialVelocity(body, SpatialVelocity(w=w, v=v), plant_context)
    simulator.Initialize()
    steps = round(args.duration / args.dt)
    keys = ("t", "x", "z", "vx", "vz", "wy", "wz", "area", "fz") + (
        ("z_upper", "area_between", "fz_between") if upper is not None else ())
    rows: dict[str, list[float]] = {key: [] for key in keys}
    port = plant.get_contact_results_output_port()
    inspector = plant.EvalSceneGraphInspector(plant_context)
    start = time.perf_counter()
    for k in range(steps + 1):
        if k:
            simulator.AdvanceTo(k * args.dt)
        pose = plant.EvalBodyPoseInWorld(plant_context, body)
        velocity = plant.EvalBodySpatialVelocityInWorld(plant_context, body)
        results = port.Eval(plant_context)
        area = fz = area_between = fz_between = 0.0
        for i in range(results.num_hydroelastic_contacts()):
            info = results.hydroelastic_contact_info(i)
            surface = info.contact_surface()
            force = abs(float(info.F_Ac_W().translational()[2]))
            if upper is not None and inspector.GetName(surface.id_M()).startswith("soft") and \
                    inspector.GetName(surface.id_N()).startswith("soft"):
                area_between += surface.total_area()
                fz_between += force
            else:
                area += surface.total_area()
                fz += force
        if upper is not None:
            rows["z_upper"].append(float(plant.EvalBodyPoseInWorld(plant_context, upper).translation()[2]))
            rows["area_between"].append(area_between)
            rows["fz_between"].append(fz_between)
        rows["t"].append(k * args.dt)
        rows["x"].append(float(pose.translation()[0]))
        rows["z"].append(float(pose.translation()[2]))
        rows["vx"].append(float(velocity.translational()[0]))
        rows["vz"].append(float(velocity.translational()[2]))
        rows["wy"].append(float(velocity.rotational()[1]))
        rows["wz"].append(float(velocity.rotational()[2]))
        rows["area"].append(area)
        rows["fz"].append(fz)
    elapsed = time.perf_counter() - start
    print(json.dumps({"scene": args.scene, "approximation": args.approximation, "dt": args.dt,
                      "seconds_per_step": elapsed / max(steps, 1), **rows}))


if __name__ == "__main__":
    main()
