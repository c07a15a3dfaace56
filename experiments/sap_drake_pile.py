"""Drake's SAP on the 100-sphere MJCF pile (problems/sphere_pile_mjcf.toml), for issue 11 and
``experiments/sap.py --drake-pile``: seconds per step of ``Simulator.AdvanceTo`` against
MuJoCo's ``mj_step`` on the same pile in the same process, Drake's SAP Newton iterations per
step, and the largest penetration and speed reached.

Runs in a separate virtual environment that has Drake (``pip install drake mujoco numpy``;
Drake is never a dependency of contactopt): it imports only pydrake, mujoco and numpy (plus
the standard library) and prints one JSON object.

**The scene**, read from the MJCF file with mujoco (``problems/mjcf/sphere_pile.xml``):

* every body with a free joint becomes a Drake free body with the MJCF body's mass, centre
  of mass (``body_ipos``) and principal inertia (``body_inertia``, ``body_iquat``): here 100
  spheres, r = 0.05 m, 0.1 kg, I = 2/5 m r^2;
* every geom becomes a Drake collision geometry on its body (world geoms welded to the world):
  ``plane`` -> ``HalfSpace`` (MuJoCo's planes collide as infinite), ``box`` -> ``Box`` of twice
  the MJCF half sizes, ``sphere`` -> ``Sphere``, at the geom's ``pos``/``quat``: the floor and
  the four walls of the box;
* friction: each geom's sliding friction ``geom_friction[0]`` (0.5 for all), Drake combines
  ``2 mu_a mu_b / (mu_a + mu_b)`` and MuJoCo ``max(mu_a, mu_b)``, equal when all are equal
  (checked); MuJoCo's torsional/rolling coefficients have no counterpart (contactopt also
  keeps only the sliding friction); MuJoCo's pyramidal cone: Drake, like contactopt's ``sap``,
  uses Coulomb's circular cone;
* gravity ``opt.gravity``, time step ``opt.timestep`` (2 ms), initial state keyframe 0
  (the settled pile, what ``co.load_scene`` uses; ``qvel = 0``), MuJoCo quaternions ``(w, x,
  y, z)`` as Drake's.

**The contact model**: ``MultibodyPlantConfig(discrete_contact_approximation="sap",
contact_model="point", sap_near_rigid_threshold=1.0)``. Parameter mapping to the defaults of
``contactopt.formulations.sap`` (stiffness = inf, dissipation_time_scale = 0,
near_rigid_threshold = 1, sigma = 1e-3, epsilon = inf):

* stiffness: Drake refuses an infinite stiffness on both geoms of a pair, so every geom gets
  ``point_stiffness = --stiffness`` (1e20 N/m; a pair combines in series, ``k/2``). Any
  ``k`` above about 1e6 N/m is clamped to the same near-rigid ``R_n = beta^2/(4 pi^2) w`` on
  this scene (``1/(h^2 k)`` falls below ``w/(4 pi^2)``, ``w`` ~ 17 for a sphere on the floor),
  so this is exactly contactopt's ``k = inf``;
* dissipation time scale: Drake's ``relaxation_time`` per geom, summed over a pair: every geom
  gets ``--tau / 2`` (default 0, contactopt's ``tau_d = 0``);
* beta = 1 (``sap_near_rigid_threshold``), sigma = 1e-3 (hard-coded in Drake's SapDriver,
  contactopt's default);
* contact set: Drake's point contact reports only overlapping pairs (contactopt's
  ``epsilon = 0``); contactopt's default ``epsilon = inf`` also keeps MuJoCo's candidates up to
  its 0.01 m detection margin (about 485 rows-of-3 on the pile against ~250 touching pairs);
* solver: Drake's defaults (exact line search, relative tolerance 1e-6 on the momentum
  residual, warm start = previous velocities); contactopt's newton uses tol = 1e-10.

**Newton iterations**: pydrake binds no SAP statistics (``SapSolver::get_statistics`` lives in
the C++ ``internal`` namespace and the solver is a local of ``SapDriver``; Drake's debug log
lines are compiled out of release wheels). ``--iterations N`` therefore runs N steps again in a
child process under ``gdb`` (if installed): a breakpoint on
``SapSolver<double>::SolveWithGuess`` that reads, when the call returns, the solver's
``stats_.num_iters`` and ``num_line_search_iters`` (``stats_`` at ``this + 0x70``, the offset
read from the disassembly of ``get_statistics`` at start-up, layout of Drake 1.51's
``SapStatistics``: two ints, then two bools, then ``std::vector<double> cost`` whose length
``num_iters + 1`` is checked). The run under gdb is not timed.

Timing: per round (``--rounds``), for each N in ``--steps``: a fresh Simulator from the keyframe,
``AdvanceTo(N h)`` timed as a whole, then N ``mj_step`` on the unmodified MJCF model from the
same state (after 3 warm-up steps, as ``experiments/bench_step.py``); reported as min and median
over rounds, with the ratio of the medians. Behaviour (a separate, untimed run of
``max(--steps)`` steps advanced one step at a time): largest penetration
(``ComputePointPairPenetration``) and largest linear/angular speed, and MuJoCo's for the same
steps.

    /work/venv-drake/bin/python experiments/sap_drake_pile.py [--steps 20,200] [--rounds 5]
        [--stiffness 1e20] [--tau 0] [--iterations 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from pydrake.all import (
    AddContactMaterial,
    AddMultibodyPlant,
    Box,
    CoulombFriction,
    DiagramBuilder,
    HalfSpace,
    MultibodyPlantConfig,
    ProximityProperties,
    Quaternion,
    RigidTransform,
    RotationalInertia,
    RotationMatrix,
    Simulator,
    SpatialInertia,
    Sphere,
)

ROOT = Path(__file__).resolve().parent.parent
XML = ROOT / "problems" / "mjcf" / "sphere_pile.xml"
SAP = "drake::multibody::contact_solvers::internal::SapSolver<double>"


def rotation(quat: np.ndarray) -> RotationMatrix:
    return RotationMatrix(Quaternion(np.asarray(quat, dtype=float) / np.linalg.norm(quat)))


class Pile:
    """The MJCF model in Drake: the plant, its diagram and the free bodies (MuJoCo body order)."""

    def __init__(self, xml: Path, stiffness: float, tau: float) -> None:
        self.mj = mujoco.MjModel.from_xml_path(str(xml))
        m = self.mj
        self.dt = float(m.opt.timestep)
        frictions = {float(f) for f in m.geom_friction[:, 0]}
        if len(frictions) != 1:
            raise SystemExit(f"{xml}: geoms with different friction {sorted(frictions)} (Drake and MuJoCo "
                             "combine them differently)")
        builder = DiagramBuilder()
        config = MultibodyPlantConfig(time_step=self.dt, discrete_contact_approximation="sap", contact_model="point",
                                      sap_near_rigid_threshold=1.0)
        self.plant, self.scene_graph = AddMultibodyPlant(config, builder)
        plant = self.plant
        plant.mutable_gravity_field().set_gravity_vector(np.array(m.opt.gravity))
        self.bodies: list[Any] = []
        drake_body: dict[int, Any] = {0: plant.world_body()}
        for b in range(1, m.nbody):
            joints = [j for j in range(m.njnt) if m.jnt_bodyid[j] == b]
            if m.body_parentid[b] != 0 or len(joints) != 1 or m.jnt_type[joints[0]] != mujoco.mjtJoint.mjJNT_FREE:
                raise SystemExit(f"{xml}: body {b} is not a free body of the world (only those are mapped)")
            R = rotation(m.body_iquat[b]).matrix()
            inertia = R @ np.diag(m.body_inertia[b]) @ R.T
            spatial = SpatialInertia.MakeFromCentralInertia(
                float(m.body_mass[b]), np.array(m.body_ipos[b]),
                RotationalInertia(inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
                                  inertia[1, 2]))
            drake_body[b] = plant.AddRigidBody(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}",
                                               spatial)
            self.bodies.append(drake_body[b])
        for g in range(m.ngeom):
            properties = ProximityProperties()
            mu = float(m.geom_friction[g, 0])
            AddContactMaterial(point_stiffness=stiffness, friction=CoulombFriction(mu, mu), properties=properties)
            properties.AddProperty("material", "relaxation_time", tau / 2)
            size, kind = m.geom_size[g], m.geom_type[g]
            pose = RigidTransform(rotation(m.geom_quat[g]), np.array(m.geom_pos[g]))
            if kind == mujoco.mjtGeom.mjGEOM_PLANE:
                shape = HalfSpace()  # Drake's half space: the z <= 0 side of its frame, as MuJoCo's plane
            elif kind == mujoco.mjtGeom.mjGEOM_BOX:
                shape = Box(*(2 * size))
            elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
                shape = Sphere(float(size[0]))
            else:
                raise SystemExit(f"{xml}: geom {g} of type {kind} is not mapped")
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
            plant.RegisterCollisionGeometry(drake_body[int(m.geom_bodyid[g])], pose, shape, name, properties)
        plant.Finalize()
        self.diagram = builder.Build()
        self.q0 = np.array(m.key_qpos[0]) if m.nkey else np.array(m.qpos0)
        self.v0 = np.array(m.key_qvel[0]) if m.nkey else np.zeros(m.nv)
        if np.any(self.v0):
            raise SystemExit(f"{xml}: a nonzero initial velocity is not mapped")

    def simulator(self) -> tuple[Simulator, Any]:
        """A fresh Simulator at keyframe 0 (initialized) and the plant's context."""
        simulator = Simulator(self.diagram)
        context = self.plant.GetMyMutableContextFromRoot(simulator.get_mutable_context())
        for i, body in enumerate(self.bodies):
            qpos = self.q0[7 * i:7 * i + 7]  # bodies in MuJoCo order, one free joint each
            self.plant.SetFreeBodyPose(context, body, RigidTransform(rotation(qpos[3:]), qpos[:3]))
        simulator.Initialize()
        return simulator, context

    def penetration(self, simulator: Simulator) -> tuple[float, int]:
        """Largest depth over the overlapping pairs and their number."""
        sg_context = self.scene_graph.GetMyContextFromRoot(simulator.get_context())
        pairs = self.scene_graph.get_query_output_port().Eval(sg_context).ComputePointPairPenetration()
        return max((p.depth for p in pairs), default=0.0), len(pairs)

    def speeds(self, context: Any) -> tuple[float, float]:
        """Largest linear and angular speed over the bodies."""
        velocities = [self.plant.EvalBodySpatialVelocityInWorld(context, body) for body in self.bodies]
        return (max(float(np.linalg.norm(v.translational())) for v in velocities),
                max(float(np.linalg.norm(v.rotational())) for v in velocities))

    def mj_data(self) -> mujoco.MjData:
        data = mujoco.MjData(self.mj)
        data.qpos[:], data.qvel[:] = self.q0, self.v0
        return data


def time_drake(pile: Pile, steps: int) -> float:
    simulator, _ = pile.simulator()
    start = time.perf_counter()
    simulator.AdvanceTo(steps * pile.dt)
    return (time.perf_counter() - start) / steps


def time_mj_step(pile: Pile, steps: int) -> float:
    data = pile.mj_data()
    for _ in range(3):
        mujoco.mj_step(pile.mj, data)
    data = pile.mj_data()
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(pile.mj, data)
    return (time.perf_counter() - start) / steps


def behaviour(pile: Pile, steps: int) -> dict[str, Any]:
    """Largest penetration and speeds over ``steps`` steps, Drake and mj_step, and contact counts."""
    simulator, context = pile.simulator()
    depth0, _ = pile.penetration(simulator)
    depth, contacts, linear, angular = depth0, [], 0.0, 0.0
    for k in range(1, steps + 1):
        simulator.AdvanceTo(k * pile.dt)
        d, n = pile.penetration(simulator)
        lin, ang = pile.speeds(context)
        depth, linear, angular = max(depth, d), max(linear, lin), max(angular, ang)
        contacts.append(n)
    data = pile.mj_data()
    mujoco.mj_forward(pile.mj, data)
    mj_depth, mj_linear, mj_angular, mj_contacts = 0.0, 0.0, 0.0, []
    for _ in range(steps):
        mujoco.mj_step(pile.mj, data)
        dist = data.contact.dist[:data.ncon]
        mj_depth = max(mj_depth, float(-dist.min()) if data.ncon else 0.0)
        qvel = data.qvel.reshape(-1, 6)
        mj_linear = max(mj_linear, float(np.linalg.norm(qvel[:, :3], axis=1).max()))
        mj_angular = max(mj_angular, float(np.linalg.norm(qvel[:, 3:], axis=1).max()))
        mj_contacts.append(int(data.ncon))
    return {"initial_penetration_mm": 1e3 * depth0, "max_penetration_mm": 1e3 * depth,
            "max_speed_m_s": linear, "max_spin_rad_s": angular, "mean_contacts": float(np.mean(contacts)),
            "mj_step_max_penetration_mm": 1e3 * mj_depth, "mj_step_max_speed_m_s": mj_linear,
            "mj_step_max_spin_rad_s": mj_angular, "mj_step_mean_contacts": float(np.mean(mj_contacts))}


GDB_SCRIPT = r"""
import json, gdb
OUT, OFFSET = {out!r}, {offset}
records = []

class Done(gdb.FinishBreakpoint):
    def __init__(self, this):
        super().__init__(gdb.newest_frame(), internal=True)
        self.this = this
    def stop(self):
        inferior = gdb.selected_inferior()
        ints = inferior.read_memory(self.this + OFFSET, 8).tobytes()
        begin, end = (int.from_bytes(inferior.read_memory(self.this + OFFSET + 0x10 + 8 * i, 8).tobytes(), "little")
                      for i in range(2))
        records.append([int.from_bytes(ints[:4], "little", signed=True),
                        int.from_bytes(ints[4:], "little", signed=True), (end - begin) // 8])
        return False

class Solve(gdb.Breakpoint):
    def stop(self):
        if (gdb.newest_frame().name() or "").endswith("@plt"):
            return False  # the PLT stub: the function's own entry follows
        Done(int(gdb.parse_and_eval("$rdi")))
        return False

def write(event):
    json.dump(records, open(OUT, "w"))

gdb.events.exited.connect(write)
Solve("{sap}::SolveWithGuess")
"""


def stats_offset() -> int | None:
    """``stats_``'s offset in SapSolver<double>: ``get_statistics`` is ``lea OFFSET(%rdi),%rax; ret``."""
    import pydrake

    library = Path(pydrake.__file__).parent / "lib" / "libdrake.so"
    try:
        symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                                 check=True).stdout
        mangled = "_ZNK5drake9multibody15contact_solvers8internal9SapSolverIdE14get_statisticsEv"
        address = int(next(line.split()[0] for line in symbols.splitlines() if line.endswith(mangled)), 16)
        code = subprocess.run(["objdump", "-d", f"--start-address={address}", f"--stop-address={address + 8}",
                               str(library)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.SubprocessError, StopIteration):
        return None
    match = re.search(r"lea\s+0x([0-9a-f]+)\(%rdi\),%rax", code)
    return int(match.group(1), 16) if match else None


def iterations(args: argparse.Namespace, steps: int) -> dict[str, Any]:
    """SAP's Newton and line-search iterations per step over ``steps`` steps, read under gdb."""
    offset = stats_offset()
    if shutil.which("gdb") is None or offset is None:
        return {"iterations_note": "not measured: needs gdb, nm and objdump (pydrake binds no SAP statistics)"}
    with tempfile.TemporaryDirectory() as folder:
        out, script = Path(folder) / "stats.json", Path(folder) / "count.py"
        script.write_text(GDB_SCRIPT.format(out=str(out), offset=offset, sap=SAP))
        command = ["gdb", "-batch", "-nx", "-ex", "set breakpoint pending on", "-ex", "set pagination off",
                   "-x", str(script), "-ex", "run", "--args", sys.executable, __file__, "--xml", str(args.xml),
                   "--stiffness", str(args.stiffness), "--tau", str(args.tau), "--only-simulate", str(steps)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        if not out.exists():
            return {"iterations_note": f"gdb run failed: {done.stdout[-300:]} {done.stderr[-300:]}"}
        records = json.loads(out.read_text())
    newton = [r[0] for r in records]
    consistent = all(r[2] == r[0] + 1 for r in records)
    return {"iterations_steps": steps, "solves": len(records), "mean_iterations": float(np.mean(newton)),
            "max_iterations": int(np.max(newton)), "min_iterations": int(np.min(newton)),
            "iterations_per_step": newton,
            "mean_line_search_iterations_per_newton": float(sum(r[1] for r in records) / max(1, sum(newton))),
            "stats_layout_checked": consistent,
            "iterations_note": "SapSolver stats_.num_iters per SolveWithGuess, read under gdb (untimed run)"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--xml", type=Path, default=XML)
    parser.add_argument("--steps", default="20,200", help="comma-separated step counts to time")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stiffness", type=float, default=1e20, help="point_stiffness of every geom [N/m]")
    parser.add_argument("--tau", type=float, default=0.0, help="dissipation time scale tau_d of a pair [s]")
    parser.add_argument("--iterations", type=int, default=20, help="steps whose SAP iterations are counted (0: no)")
    parser.add_argument("--only-simulate", type=int, default=0, help=argparse.SUPPRESS)  # the child run under gdb
    args = parser.parse_args()
    pile = Pile(args.xml, args.stiffness, args.tau)
    if args.only_simulate:
        simulator, _ = pile.simulator()
        simulator.AdvanceTo(args.only_simulate * pile.dt)
        return 0
    step_counts = [int(s) for s in args.steps.split(",") if s]
    drake: dict[int, list[float]] = {n: [] for n in step_counts}
    mj: dict[int, list[float]] = {n: [] for n in step_counts}
    for _ in range(args.rounds):
        for n in step_counts:
            drake[n].append(time_drake(pile, n))
            mj[n].append(time_mj_step(pile, n))
    timing = {}
    for n in step_counts:
        d, j = np.array(drake[n]) * 1e3, np.array(mj[n]) * 1e3
        timing[str(n)] = {"drake_ms_min": float(d.min()), "drake_ms_median": float(np.median(d)),
                          "drake_ms_max": float(d.max()), "mj_step_ms_min": float(j.min()),
                          "mj_step_ms_median": float(np.median(j)), "mj_step_ms_max": float(j.max()),
                          "ratio_median": float(np.median(d) / np.median(j)), "ratio_min": float(d.min() / j.min())}
    from importlib.metadata import version

    result = {"drake_version": version("drake"), "mujoco_version": mujoco.__version__, "xml": str(args.xml),
              "dt": pile.dt, "bodies": len(pile.bodies), "stiffness_per_geom": args.stiffness,
              "tau_d": args.tau, "near_rigid_threshold": 1.0, "sigma": 1e-3, "rounds": args.rounds,
              "threads": os.cpu_count(), "timing": timing,
              "per_step_ms": timing[str(step_counts[0])]["drake_ms_median"],
              "mj_step_ms": timing[str(step_counts[0])]["mj_step_ms_median"],
              **behaviour(pile, max(step_counts))}
    if args.iterations:
        result.update(iterations(args, args.iterations))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
