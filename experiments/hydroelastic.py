"""Hydroelastic contact surfaces against point contact and against Drake (issue 39).

Five scenes of a soft 1 kg cube (half size 0.05 m) or ball (radius 0.05 m), hydroelastic modulus
1e6 Pa, mu = 0.5, on the rigid ground (problems/hydroelastic_*.toml; docs/hydroelastic.md):

1. the box at rest (on the ground and on a rigid box table): how its weight is spread: over
   the 4 bottom corners under point contact
   (each formulation and solver picks its own split of the statically indeterminate forces)
   against the pressure field's surface (uniform E delta / c, its centre of pressure under the
   centre of mass), and the rest penetration against the field's closed form;
2. the box spinning at 10 rad/s on its face: point contact's friction acts at the corners
   (r = a sqrt 2), the surface's at r_eff = int |r| p dA / F = 0.7652 a;
3. the box sliding from 1 m/s: stop time and distance against Coulomb's v0 / (mu g), and its
   gliding under sap and regularized: the first step's normal force against the sliding branch of
   SAP's cone solved apart (and without the cone's normal-tangential coupling), the largest lift;
4. the ball rolling from 1 m/s, and its rest penetration and surface area;
5. two soft cubes stacked: the equal-pressure surface between two soft bodies, halfway through
   their overlap, whose rows have the fields' gradients in series (overlap and area).

With ``--drake PYTHON`` (a Python with pydrake, e.g. /work/drake-venv/bin/python) each scene is
also run by ``experiments/drake_hydroelastic.py`` in that interpreter (MultibodyPlant,
hydroelastic contact, SAP and its Hunt-Crossley "lagged" model), by subprocess: contactopt never
imports Drake. Writes experiments/out/hydroelastic/{summary.json, summary.csv, hydroelastic.png}.

    python experiments/hydroelastic.py [--drake /work/drake-venv/bin/python] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, ROOT, print_table, write_results
from scipy.optimize import brentq

import contactopt as co
from contactopt.systems.hydroelastic.records import surface_records
from contactopt.systems.rigid3d import Rigid3D, RigidBody

E, M, G, MU, A, R_BALL = 1e6, 1.0, 9.81, 0.5, 0.05, 0.05
INERTIA = M * 2 * A * A / 3.0


def box_force(delta: float) -> float:
    """The cube's field on its bottom face: ``(E / a) 4 (a^2 delta - a delta^2 + delta^3 / 3)``."""
    return E / A * 4.0 * (A * A * delta - A * delta**2 + delta**3 / 3.0)


def sphere_force(delta: float) -> float:
    """``2 pi E (a^2 / 2 - (R^3 - h^3) / (3 R))``, ``h = R - delta``, ``a^2 = R^2 - h^2``."""
    h = R_BALL - delta
    return 2 * math.pi * E * ((R_BALL**2 - h * h) / 2 - (R_BALL**3 - h**3) / (3 * R_BALL))


R_EFF = A * (math.sqrt(2) + math.log(1 + math.sqrt(2))) / 3.0  # uniform pressure on the square
R_EFF_4 = 2 * A / 3.0  # the face as 4 triangles (centre, corner, corner), one point at each centroid


def scene(name: str) -> co.Scene:
    return co.load_scene(ROOT / "problems" / f"{name}.toml")


def point_box(velocity: tuple[float, float, float] = (0, 0, 0), spin: float = 0.0, duration: float = 0.2) -> co.Scene:
    """The same cube as a rigid body with its 8 corner point contacts."""
    body = RigidBody(name="box", shape="box", size=np.full(3, A), mass=M, position=np.array([0, 0, A]),
                     orientation=np.array([1.0, 0, 0, 0]), velocity=np.array(velocity, dtype=float),
                     angular_velocity=np.array([0, 0, spin]))
    system = Rigid3D([body], {"mu": MU})
    q0, v0 = system.default_state()
    return co.Scene(system, q0, v0, 1e-3, duration, name="point_box")


def four_by_one(sc: co.Scene) -> co.Scene:
    """``sc`` with ``patch_resolution = (4, 1)``: the bottom face as Drake's 4 triangles."""
    system = sc.system
    assert isinstance(system, Rigid3D)
    coarse = Rigid3D(system.bodies, {"mu": system.mu}, contact_model="hydroelastic", patch_resolution=(4, 1))
    return dataclasses.replace(sc, system=coarse)


def sliding_step(sc: co.Scene, coupled: bool) -> tuple[np.ndarray, float]:
    """``(v', normal force)`` of the first step of ``sc`` (a sliding soft body) on the sliding
    branch of SAP's cone, solved apart from SAP: each row's normal impulse is its spring,
    ``gamma_n = h k (h + tau) (v_hat - g . v')``, and its friction ``-mu gamma_n d`` along the
    slip direction ``d``, so ``M (v' - v_free) = (J_n - mu d J_t)^T gamma_n``. ``coupled``: the
    projection of the cone (in its ``R``-norm, with ``R_t`` neglected: ``mu^2 R_t / R_n`` is 1e-5
    here) puts ``g = J_n - mu d J_t`` (the gap rate seen is ``v_n - mu |v_t|``, the cone's
    dilation); uncoupled, ``g = J_n``: Coulomb friction beside a spring along the normal.
    A fixed point over the slip directions (they do not change here)."""
    system, q, v, h = sc.system, sc.q0, sc.v0, sc.dt
    contacts, dynamics = system.contacts(q), system.dynamics(q, v)
    assert contacts.stiffness is not None and contacts.dissipation is not None
    J = contacts.J.toarray() if hasattr(contacts.J, "toarray") else np.asarray(contacts.J)
    Jn, Jt = J[0::3], np.stack([J[1::3], J[2::3]], axis=1)
    x = -contacts.phi
    tau = contacts.dissipation * x
    gain = h * contacts.stiffness * (h + tau)
    v_hat = x / (h + tau)
    v_free = v + h * np.linalg.solve(dynamics.M, dynamics.tau)
    v_next = v_free.copy()
    for _ in range(50):
        slip = np.einsum("ikn,n->ik", Jt, v_next)
        d = slip / np.linalg.norm(slip, axis=1)[:, None]
        dilated = Jn - MU * np.einsum("ik,ikn->in", d, Jt)
        seen = dilated if coupled else Jn
        update = np.linalg.solve(dynamics.M + dilated.T @ (gain[:, None] * seen),
                                 dynamics.M @ v_free + dilated.T @ (gain * v_hat))
        if np.abs(update - v_next).max() < 1e-15:
            break
        v_next = update
    return v_next, float((gain * (v_hat - seen @ v_next)).sum() / h)


#: Drake's runs where its model and contactopt's coincide (a level face, a ball, the slide, the
#: stack), by name: the arguments of experiments/drake_hydroelastic.py. ``main`` runs them beside
#: contactopt's; experiments/hydroelastic_drake_record.py records their numbers for the tests.
DRAKE_RUNS: dict[str, tuple[str, ...]] = {
    "box_rest_sap": ("--scene", "box_rest", "--duration", "0.3", "--approximation", "sap"),
    "box_rest_lagged": ("--scene", "box_rest", "--duration", "0.3", "--approximation", "lagged"),
    "ball_rest_hint_0.005": ("--scene", "sphere_rest", "--duration", "0.3", "--approximation", "lagged",
                             "--dissipation", "5", "--resolution", "0.005"),
    "ball_rest_hint_0.0025": ("--scene", "sphere_rest", "--duration", "0.3", "--approximation", "lagged",
                              "--dissipation", "5", "--resolution", "0.0025"),
    "slide_sap": ("--scene", "slide", "--duration", "0.25", "--approximation", "sap", "--z0", "0.0499509"),
    "slide_lagged": ("--scene", "slide", "--duration", "0.25", "--approximation", "lagged", "--z0", "0.0499509"),
    "stack_sap": ("--scene", "stack", "--duration", "0.3", "--approximation", "sap", "--z0", "0.0499",
                  "--z-upper", "0.1498"),
    "stack_lagged": ("--scene", "stack", "--duration", "0.3", "--approximation", "lagged", "--z0", "0.0499",
                     "--z-upper", "0.1498"),
}


def drake(python: str | None, *arguments: str) -> dict[str, Any] | None:
    if python is None:
        return None
    script = Path(__file__).resolve().parent / "drake_hydroelastic.py"
    try:
        done = subprocess.run([python, str(script), *arguments], capture_output=True, text=True, timeout=900,
                              check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"drake run {' '.join(arguments)} failed: {exc}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def stop(t: np.ndarray, speed: np.ndarray, threshold: float) -> float:
    """The first time ``|speed| < threshold`` (a soft box rocks about its rest after it stops)."""
    still = np.flatnonzero(np.abs(speed) < threshold)
    return float(t[still[0]]) if still.shape[0] else math.nan


def row(quantity: str, closed: float, method: str, value: float, note: str = "") -> dict[str, Any]:
    return {"quantity": quantity, "closed form": closed, "method": method, "value": value,
            "rel. to closed form": (value / closed - 1.0) if closed and math.isfinite(closed) else math.nan,
            "note": note}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drake", default=None, help="a Python interpreter that has pydrake")
    parser.add_argument("--quick", action="store_true", help="skip the compliant ODE runs (about a minute)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
    rows: list[dict[str, Any]] = []
    curves: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {"spin": {}, "slide": {}, "roll": {}}
    extra: dict[str, Any] = {}

    # 1. at rest ---------------------------------------------------------------------------
    delta = brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)
    box = scene("hydroelastic_box")
    traj = co.simulate(box)
    record = surface_records(box.system, traj)[-1][0]
    rows.append(row("box rest penetration [m]", delta, "contactopt sap", A - traj.q[-1, 2]))
    rows.append(row("box rest force [N]", M * G, "contactopt sap", record.force[2]))
    rows.append(row("box surface area [m^2]", 4 * A * A, "contactopt", record.area))
    extra["box_centre_of_pressure"] = record.centre_of_pressure.tolist()
    table = scene("hydroelastic_table")
    on_table = co.simulate(table)
    table_record = surface_records(table.system, on_table)[-1][0]
    rows.append(row("box on table: rest penetration [m]", delta, "contactopt sap",
                    on_table.q[-1, 2] + 0.05 - (on_table.q[-1, 9] - A), "into the rigid table's top face"))
    rows.append(row("box on table: surface area [m^2]", 4 * A * A, "contactopt", table_record.area))
    extra["table_centre_of_pressure_minus_com"] = (table_record.centre_of_pressure[:2] - on_table.q[-1, 7:9]).tolist()
    assert isinstance(box.system, Rigid3D)
    surface = box.system.contact_surfaces(traj.q[-1])[0]
    impulses = traj.steps[-1].impulses[-record.rows:, 0] / box.dt
    kept = surface.gradients > 0
    pressure = impulses / surface.areas[kept]
    corners: dict[str, list[float]] = {}
    for formulation, solver in (("anitescu", "clarabel"), ("lcp", "lemke"), ("sap", "newton")):
        point = co.simulate(point_box(), formulation=formulation, solver=solver, duration=0.05)
        forces = point.steps[-1].impulses[:, 0] / point.dt
        bottom = [forces[k] for k in range(8) if k % 2 == 0]  # corners with sign(z) = -1
        corners[f"{formulation}/{solver}"] = bottom
    extra["point_corner_forces"] = corners
    for python_approx in (("sap",), ("lagged",)):
        result = drake(args.drake, *DRAKE_RUNS[f"box_rest_{python_approx[0]}"])
        if result:
            rows.append(row("box rest penetration [m]", delta, f"drake {python_approx[0]}", A - result["z"][-1]))
            rows.append(row("box surface area [m^2]", 4 * A * A, f"drake {python_approx[0]}", result["area"][-1]))
    ball = scene("hydroelastic_sphere")
    ball_rest = co.Scene(ball.system, ball.q0, np.zeros(6), ball.dt, 0.3, formulation="sap", solver="newton",
                         name="ball_rest")
    traj = co.simulate(ball_rest)
    ball_delta = brentq(lambda d: sphere_force(d) - M * G, 0.0, 1e-2)
    ball_record = surface_records(ball.system, traj)[-1][0]
    rows.append(row("ball rest penetration [m]", ball_delta, "contactopt sap", R_BALL - traj.q[-1, 2]))
    area = math.pi * (R_BALL**2 - (R_BALL - ball_delta) ** 2)
    rows.append(row("ball surface area [m^2]", area, "contactopt", ball_record.area, "inscribed 44-gon"))
    for resolution in ("0.005", "0.0025"):
        result = drake(args.drake, *DRAKE_RUNS[f"ball_rest_hint_{resolution}"])
        if result:
            rows.append(row("ball rest penetration [m]", ball_delta, f"drake lagged, hint {resolution}",
                            R_BALL - result["z"][-1]))
            rows.append(row("ball surface area [m^2]", area, f"drake lagged, hint {resolution}", result["area"][-1]))

    # 2. spinning ----------------------------------------------------------------------------
    w0 = 10.0
    decel = MU * M * G * R_EFF / INERTIA
    for label, sc, formulation, solver, options in (
            ("point coulomb", point_box(spin=w0, duration=0.12), "coulomb", "nsgs", {}),
            ("patch sap", dataclasses.replace(scene("hydroelastic_spin"), options={}), "sap", "newton", {}),
            *(() if args.quick else (("patch compliant", scene("hydroelastic_spin"), "compliant", "newton",
                                      {"method": "Radau", "slip_velocity": 1e-3}),
                                     ("patch compliant 4x1", four_by_one(scene("hydroelastic_spin")), "compliant",
                                      "newton", {"method": "Radau", "slip_velocity": 1e-3})))):
        traj = co.simulate(sc, formulation=formulation, solver=solver, options=options, duration=0.12)
        curves["spin"][label] = (traj.t, traj.v[:, 5])
        window = (traj.t > 0.005) & (traj.t < 0.05)
        slope = -float(np.polyfit(traj.t[window], traj.v[window, 5], 1)[0])
        note = {"patch compliant 4x1": f"Drake's 4-triangle face: {MU * M * G * R_EFF_4 / INERTIA:.4g}",
                "point coulomb": f"corners: mu m g a sqrt2 / I = {MU * M * G * A * math.sqrt(2) / INERTIA:.4g}",
                "patch sap": f"lifts {1e3 * (traj.q[:, 2].max() - traj.q[0, 2]):.3g} mm (gliding)"}.get(label, "")
        rows.append(row("spin deceleration [rad/s^2]", decel, f"contactopt {label}", slope, note))
        rows.append(row("spin stop time [s]", w0 / decel, f"contactopt {label}", stop(traj.t, traj.v[:, 5], 1e-2)))
    for approximation in ("sap", "lagged"):
        result = drake(args.drake, "--scene", "spin", "--duration", "0.12", "--approximation", approximation,
                       "--z0", "0.0499509")
        if result:
            t, w = np.array(result["t"]), np.array(result["wz"])
            curves["spin"][f"drake {approximation}"] = (t, w)
            window = (t > 0.005) & (t < 0.05)
            slope = -float(np.polyfit(t[window], w[window], 1)[0])
            lift = 1e3 * (max(result["z"]) - 0.0499509)
            rows.append(row("spin deceleration [rad/s^2]", decel, f"drake {approximation}", slope,
                            f"4-point face: {MU * M * G * R_EFF_4 / INERTIA:.4g}; lifts {lift:.3g} mm"))
            rows.append(row("spin stop time [s]", w0 / decel, f"drake {approximation}", stop(t, w, 1e-2)))

    # 2b. a ball spinning about the vertical: no torsional friction from its single point
    ball_delta = brentq(lambda d: sphere_force(d) - M * G, 0.0, 1e-2)
    h = R_BALL - ball_delta
    rho = np.linspace(0.0, math.sqrt(R_BALL**2 - h * h), 20001)
    p = E * (1.0 - np.sqrt(rho**2 + h * h) / R_BALL)
    r_eff_ball = float(np.trapezoid(rho * p * rho, rho) / np.trapezoid(p * rho, rho))
    ball_decel = MU * M * G * r_eff_ball / (0.4 * M * R_BALL**2)
    spin_ball = dataclasses.replace(ball, v0=np.array([0.0, 0.0, 0.0, 0.0, 0.0, w0]), options={})
    assert isinstance(ball.system, Rigid3D)
    point_ball = Rigid3D([dataclasses.replace(ball.system.bodies[0], compliance="rigid", hydroelastic_modulus=None,
                                              hunt_crossley_dissipation=0.0)], {"mu": MU})
    point_scene = co.Scene(point_ball, np.array([0, 0, R_BALL, 1, 0, 0, 0.0]), spin_ball.v0, 1e-3, 0.02)
    for label, sc, formulation, options in (
            ("point anitescu", point_scene, "anitescu", {}),
            *(() if args.quick else (("patch compliant", spin_ball, "compliant",
                                      {"method": "Radau", "slip_velocity": 1e-3}),))):
        traj = co.simulate(sc, formulation=formulation, solver="clarabel" if formulation == "anitescu" else "newton",
                           options=options, duration=0.02)
        window = traj.t > 0.002
        slope = -float(np.polyfit(traj.t[window], traj.v[window, 5], 1)[0])
        rows.append(row("ball spin deceleration [rad/s^2]", ball_decel, f"contactopt {label}", slope,
                        f"r_eff = {1e3 * r_eff_ball:.3g} mm of the disk's field" if "patch" in label
                        else "one point: no torsional friction"))

    # 3. sliding -----------------------------------------------------------------------------
    # and its gliding: the first step's normal force against the sliding branch of SAP's cone
    v0 = 1.0
    sc = scene("hydroelastic_slide")
    coupled, uncoupled = sliding_step(sc, coupled=True), sliding_step(sc, coupled=False)
    extra["slide_first_step_uncoupled"] = {"normal_force": uncoupled[1], "vz": uncoupled[0][2]}
    cone_note = f"Coulomb with the spring along n: {uncoupled[1]:.4g} N"
    for label, formulation, solver, options in (
            ("patch sap", "sap", "newton", {}), ("patch regularized", "regularized", "clarabel", {"cone": "elliptic"}),
            *(() if args.quick else (("patch compliant", "compliant", "newton",
                                      {"method": "Radau", "slip_velocity": 1e-3}),))):
        traj = co.simulate(sc, formulation=formulation, solver=solver, options=options, duration=0.25)
        lift = 1e3 * float(traj.q[:, 2].max() - traj.q[0, 2])
        if formulation != "regularized":  # the regularized run's landings fail to solve after a few hops
            curves["slide"][label] = (traj.t, traj.q[:, 0])
            t_stop = stop(traj.t, traj.v[:, 0], 1e-3)
            rows.append(row("slide stop time [s]", v0 / (MU * G), f"contactopt {label}", t_stop))
            rows.append(row("slide stop distance [m]", v0**2 / (2 * MU * G), f"contactopt {label}",
                            float(traj.q[-1, 0])))
        if formulation != "compliant":
            rows.append(row("slide: first step's normal force [N]", coupled[1], f"contactopt {label}",
                            float(traj.steps[0].impulses[:, 0].sum() / sc.dt), cone_note))
            rows.append(row("slide: first step's v_z [m/s]", coupled[0][2], f"contactopt {label}",
                            float(traj.v[1, 2])))
        rows.append(row("slide: largest lift [mm]", math.nan, f"contactopt {label}", lift,
                        "" if traj.completed else f"first {len(traj.steps)} steps"))
    for approximation in ("sap", "lagged"):
        result = drake(args.drake, *DRAKE_RUNS[f"slide_{approximation}"])
        if result:
            t, x = np.array(result["t"]), np.array(result["x"])
            curves["slide"][f"drake {approximation}"] = (t, x)
            rows.append(row("slide stop time [s]", v0 / (MU * G), f"drake {approximation}",
                            stop(t, np.array(result["vx"]), 1e-3)))
            rows.append(row("slide stop distance [m]", v0**2 / (2 * MU * G), f"drake {approximation}", float(x[-1])))
            rows.append(row("slide: first step's normal force [N]", coupled[1], f"drake {approximation}",
                            float(result["fz"][1]), "Drake's 4-point face, tau = relaxation_time"))
            rows.append(row("slide: first step's v_z [m/s]", coupled[0][2], f"drake {approximation}",
                            float(result["vz"][1])))
            rows.append(row("slide: largest lift [mm]", math.nan, f"drake {approximation}",
                            1e3 * float(max(result["z"]) - result["z"][0])))

    # 4. rolling -----------------------------------------------------------------------------
    traj = co.simulate(ball)
    curves["roll"]["patch sap"] = (traj.t, traj.v[:, 0])
    rows.append(row("roll speed at 0.5 s [m/s]", math.nan, "contactopt sap", float(traj.v[-1, 0]),
                    "Hunt-Crossley d = 5 s/m; point contact keeps 1 m/s"))
    result = drake(args.drake, "--scene", "roll", "--duration", "0.5", "--approximation", "lagged",
                   "--dissipation", "5", "--z0", "0.04822", "--resolution", "0.0025")
    if result:
        curves["roll"]["drake lagged"] = (np.array(result["t"]), np.array(result["vx"]))
        rows.append(row("roll speed at 0.5 s [m/s]", math.nan, "drake lagged", float(result["vx"][-1])))

    # 5. two soft cubes stacked: the equal-pressure surface between two soft bodies -------------
    ground_delta = brentq(lambda d: box_force(d) - 2 * M * G, 0.0, 1e-3)
    overlap = 2 * brentq(lambda d: box_force(d) - M * G, 0.0, 1e-3)  # F(overlap / 2) = m g: halfway
    stack = scene("hydroelastic_stack")
    traj = co.simulate(stack)
    between = surface_records(stack.system, traj)[-1][1]
    q = traj.q[-1]
    rows.append(row("stack: lower cube's penetration [m]", ground_delta, "contactopt sap", A - q[2]))
    rows.append(row("stack: overlap of the cubes [m]", overlap, "contactopt sap", q[2] + 2 * A - q[9],
                    "equal-pressure surface halfway"))
    rows.append(row("stack: area between the cubes [m^2]", 4 * A * A, "contactopt", between.area))
    rows.append(row("stack: force between the cubes [N]", M * G, "contactopt sap", -between.force[2]))
    for approximation in ("sap", "lagged"):
        result = drake(args.drake, *DRAKE_RUNS[f"stack_{approximation}"])
        if result:
            rows.append(row("stack: lower cube's penetration [m]", ground_delta, f"drake {approximation}",
                            A - result["z"][-1]))
            rows.append(row("stack: overlap of the cubes [m]", overlap, f"drake {approximation}",
                            result["z"][-1] + 2 * A - result["z_upper"][-1]))
            rows.append(row("stack: area between the cubes [m^2]", 4 * A * A, f"drake {approximation}",
                            result["area_between"][-1]))
            rows.append(row("stack: force between the cubes [N]", M * G, f"drake {approximation}",
                            result["fz_between"][-1]))

    print_table(rows)
    print("point contact, bottom corner forces [N]:", {k: [round(f, 4) for f in v] for k, v in corners.items()})
    folder = OUT / "hydroelastic"
    write_results(folder, rows, {**extra, "args": vars(args)})
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5), constrained_layout=True)
    x_cent = surface.centroids[kept]
    sc_plot = axes[0].scatter(x_cent[:, 0], x_cent[:, 1], c=pressure / 1e3, s=12, cmap="viridis")
    fig.colorbar(sc_plot, ax=axes[0], label="row pressure [kPa]")
    axes[0].set_title("box at rest: the surface's quadrature points\n"
                      + "; ".join(f"{k}: corners {np.round(v, 2).tolist()} N" for k, v in list(corners.items())[:2]),
                      fontsize=8)
    axes[0].set_aspect("equal")
    for ax, key, ylabel, reference in ((axes[1], "spin", "w_z [rad/s]", None), (axes[2], "slide", "x [m]",
                                                                             v0**2 / (2 * MU * G)),
                                       (axes[3], "roll", "v_x [m/s]", None)):
        for label, (t, y) in curves[key].items():
            ax.plot(t, y, label=label)
        if key == "spin":
            ax.plot([0, w0 / decel], [w0, 0], "k--", lw=0.8, label="mu m g r_eff / I")
        if reference is not None:
            ax.axhline(reference, color="k", ls="--", lw=0.8, label="v0^2 / (2 mu g)")
        ax.set_xlabel("t [s]")
        ax.set_ylabel(ylabel)
        ax.set_title(key)
        ax.legend(fontsize=7)
    fig.savefig(folder / "hydroelastic.png", dpi=110)
    print(f"wrote {folder}")


if __name__ == "__main__":
    main()
