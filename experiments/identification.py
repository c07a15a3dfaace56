"""Parameter estimation along the topics of Tedrake 2020, "Parameter Estimation", on four systems:
lumped parameters, the identifiable set, least-squares estimates against the truth under torque
noise, equation error against the energy (power) form, and the condition number before and
after excitation design (Swevers et al. 1997), with :mod:`contactopt.identification`.

Cases:

* ``double_pendulum``: Tedrake 2022's point-mass double pendulum, torques at both joints,
  driven by sums of sines and then by an optimized excitation;
* ``cartpole``: the cart-pole, a force on the cart only (the pole's row has ``F = 0``);
* ``mjcf_chain``: an MJCF two-link chain with motors, joint damping and armature (base
  parameters by Gautier and Khalil's regrouping, from MuJoCo's ``mj_inverse``);
* ``pushed_box``: ``problems/mjcf/pushed_box.xml`` dropped and pushed back and forth, ``mu``
  and the mass from the recorded normal impulses (LCP, Lemke).

Noise: Gaussian, added to the measured input ``u`` with standard deviation ``level`` times the
RMS of the force the motion needs (levels 0, 1e-4, 1e-3); 20 seeds per level, the table gives
the worst relative error of any base parameter and the mean over seeds of the reported
standard error against the truth (``z``: error over standard error, RMS over seeds and
parameters, 1 when the covariance is calibrated). The energy method is run on the same samples
read as a log ``t, q, v, u`` (Simpson on the step-held input): its error at noise 0 is the
discretization of the power balance (semi-implicit Euler has no exact discrete energy
balance), which the equation error with the scheme's own step equation does not have.

Writes ``experiments/out/identification/{identification.png, summary.json, summary.csv}``.

    python experiments/identification.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, ROOT, print_table, write_results
from numpy.typing import NDArray

import contactopt as co
from contactopt.identification import (
    estimate,
    estimate_friction,
    excitation,
    identifiable,
    lumped_parameters,
)
from contactopt.scenes.loading import Scene
from contactopt.systems import CartPole, DoublePendulum, MjcfSystem

FloatArray = NDArray[np.float64]
LEVELS = (0.0, 1e-4, 1e-3)
FOLDER = OUT / "identification"

CHAIN = """<mujoco><option gravity="0 0 -9.81"/><worldbody>
<body name="link0"><joint name="j0" type="hinge" axis="0 1 0" damping="0.1" armature="0.01"/>
<geom type="capsule" fromto="0 0 0.01 0.3 0 0.02" size="0.02" mass="1" contype="0" conaffinity="0"/>
<body name="link1" pos="0.3 0 0"><joint name="j1" type="hinge" axis="0 1 0" damping="0.05"/>
<geom type="capsule" fromto="0 0 0.01 0.3 0 0.02" size="0.02" mass="0.6" contype="0" conaffinity="0"/>
</body></body></worldbody><actuator><motor joint="j0" gear="2"/><motor joint="j1"/></actuator></mujoco>"""


def simulate(system: Any, controller: Callable[..., FloatArray], q0: FloatArray, v0: FloatArray | None = None,
             dt: float = 0.01, duration: float = 2.0, formulation: str = "gauss", solver: str = "clarabel"
             ) -> co.Trajectory:
    scene = Scene(system=system, q0=q0, v0=np.zeros(system.nv) if v0 is None else v0, dt=dt, duration=duration,
                  formulation=formulation, solver=solver)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return co.simulate(scene, controller=controller)


def noisy(traj: co.Trajectory, sigma: float, seed: int) -> co.Trajectory:
    """A copy of ``traj`` whose recorded controls carry Gaussian noise of std ``sigma``."""
    rng = np.random.default_rng(seed)
    steps = [dataclasses.replace(r, control=r.control + rng.normal(scale=sigma, size=r.control.shape))
             for r in traj.steps]
    return dataclasses.replace(traj, steps=steps)


def as_log(traj: co.Trajectory) -> dict[str, FloatArray]:
    n = len(traj.steps)
    return {"t": traj.t[:n], "q": traj.q[:n], "v": traj.v[:n], "u": traj.controls()}


def force_rms(system: Any, traj: co.Trajectory) -> float:
    u = traj.controls()
    B = getattr(system, "B", None)
    return float(np.sqrt(np.mean((u @ B.T if B is not None else u) ** 2)))


def sweep(name: str, system: Any, traj: co.Trajectory, seeds: int, label: str, energy: bool) -> list[dict[str, Any]]:
    truth_basis = identifiable(system, traj)
    truth = truth_basis.values
    scale = force_rms(system, traj)
    rows = []
    for method in ("equation_error", "energy") if energy else ("equation_error",):
        for level in LEVELS:
            errors, z = [], []
            for seed in range(seeds if level > 0 else 1):
                data = noisy(traj, level * scale, seed) if level > 0 else traj
                est = estimate(system, as_log(data) if method == "energy" else data, method=method)
                order = [truth_basis.independent.index(i) for i in est.identifiable.independent]
                err = est.values - truth[order]
                errors.append(np.max(np.abs(err) / np.abs(truth[order])))
                z.extend(err / est.standard_errors)
            rows.append({"case": name, "data": label, "method": method, "noise": level,
                         "lumped": len(lumped_parameters(system)), "identifiable": truth_basis.rank,
                         "condition": f"{est.condition:.3g}", "max_rel_error": f"{max(errors):.2e}",
                         "rms_z": f"{np.sqrt(np.mean(np.square(z))):.2f}" if level > 0 else "-"})
    return rows


def box_rows(seeds: int) -> list[dict[str, Any]]:
    system = MjcfSystem(ROOT / "problems" / "mjcf" / "pushed_box.xml", detection_margin=0.0)
    system = system.with_parameters({"box.mass": 1.7, "mu": 0.35})
    traj = simulate(system, lambda t, q, v: np.array([7.0 * np.sin(8.0 * t)]), np.array([0.0, 0.0, 0.03]),
                    dt=0.002, duration=0.6, formulation="lcp", solver="lemke")
    truth = np.array([1.7, 0.35])
    scale = float(np.sqrt(np.mean(traj.controls() ** 2)))
    rows = []
    for level in LEVELS:
        errors = []
        for seed in range(seeds if level > 0 else 1):
            est = estimate_friction(system, noisy(traj, level * scale, seed) if level > 0 else traj)
            errors.append(np.max(np.abs(est.values - truth) / truth))
        rows.append({"case": "pushed_box", "data": "sines", "method": "equation_error+mu", "noise": level,
                     "lumped": len(lumped_parameters(system)) + 1, "identifiable": est.identifiable.rank,
                     "condition": f"{est.condition:.3g}", "max_rel_error": f"{max(errors):.2e}", "rms_z": "-"})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []

    pendulum = DoublePendulum.from_config({"parameters": {"m1": 1.0, "m2": 1.0, "l1": 1.0, "l2": 1.0}}, {})
    sines = simulate(pendulum, lambda t, q, v: np.array([3.0 * np.sin(2.0 * t), 2.0 * np.sin(2.0 * t)]),
                     np.array([0.3, -0.2]))
    rows += sweep("double_pendulum", pendulum, sines, args.seeds, "one sine", energy=True)
    design = excitation(pendulum, 2.0, harmonics=3, limits={"q": 1.0, "v": 4.0, "u": 40.0}, samples=30,
                        max_iterations=40)
    q0, v0 = design.initial_state()
    excited = simulate(pendulum, design, q0, v0)
    rows += sweep("double_pendulum", pendulum, excited, args.seeds, "excitation", energy=True)

    cartpole = CartPole.from_config({"parameters": {"mc": 1.0, "mp": 0.3, "l": 0.5}}, {})
    rows += sweep("cartpole", cartpole, simulate(cartpole, lambda t, q, v: np.array([4.0 * np.sin(3.0 * t)]),
                                                 np.array([0.0, 0.4])), args.seeds, "one sine", energy=True)

    FOLDER.mkdir(parents=True, exist_ok=True)
    path = FOLDER / "chain.xml"
    path.write_text(CHAIN)
    chain = MjcfSystem(path)
    rows += sweep("mjcf_chain", chain, simulate(chain, lambda t, q, v: np.array([np.sin(3.0 * t), np.cos(5.0 * t)]),
                                                np.array([0.3, -0.2])), args.seeds, "two sines", energy=False)
    rows += box_rows(args.seeds)
    print_table(rows)
    write_results(FOLDER, rows, {"levels": LEVELS, "seeds": args.seeds,
                                 "excitation_condition": {"start": design.initial, "optimum": design.condition}})

    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({(r["case"], r["data"], r["method"]) for r in rows}):
        chosen = [r for r in rows if (r["case"], r["data"], r["method"]) == key]
        levels = [max(r["noise"], 1e-6) for r in chosen]
        ax.loglog(levels, [max(float(r["max_rel_error"]), 1e-16) for r in chosen], "o-", label=" / ".join(key))
    ax.set_xlabel("noise level (relative to the force RMS; 0 drawn at 1e-6)")
    ax.set_ylabel("worst relative error of a base parameter")
    ax.set_title("Least-squares identification (Tedrake 2020)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FOLDER / "identification.png", dpi=120)
    print(f"wrote {FOLDER}")


if __name__ == "__main__":
    main()
