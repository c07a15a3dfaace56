"""System identification by gradient-based least squares: recover a hidden friction
coefficient and mass from a recorded trajectory.

A trajectory is recorded with the true parameters; starting from wrong guesses (mu 0.3 for
0.5, mass x1.5), ``scipy.optimize.least_squares`` (trust region reflective, a Gauss-Newton
method with bounds) minimizes ``1/2 ||r(theta)||^2`` with the residual ``r`` = simulated minus
recorded ``(q, v)`` at every step (a rigid3d box's x and vx) and its Jacobian ``dr/dtheta`` from the forward
sensitivities ``co.simulate(..., sensitivities=[...])`` (Nocedal & Wright, *Numerical
Optimization*, 2nd ed., ch. 10: nonlinear least squares, Gauss-Newton and trust regions).

Cases (``push_scenes.py`` says why a push is needed for the mass to be observable):

* ``box``: ``problems/box_slide.toml``'s cube (rigid3d) at rest, pushed along x by 8 N for
  0.2 s and then released: ``mu`` and ``box.mass``;
* ``mjcf``: ``problems/pushed_box_mjcf.toml`` (the motor pushes with its capped 8 N) for 0.2 s
  and then released: ``mu`` and ``box.mass``;
* ``slide`` (``--cases slide``): the free box slide itself, ``mu`` alone (its motion does not
  depend on the mass).

Writes ``experiments/out/sysid/{sysid.png, summary.json, summary.csv}``.

    python experiments/sysid.py [--formulation ccp|lcp|anitescu|regularized|sap|all] [--cases box,mjcf]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from common import OUT, load, print_table, write_results
from numpy.typing import NDArray
from push_scenes import FORMULATIONS, push_controller, pushed_box_scene
from scipy.optimize import least_squares

import contactopt as co

FloatArray = NDArray[np.float64]
Controller = Callable[[float, FloatArray, FloatArray], FloatArray]
#: The recorded coordinates of a rigid3d box: its position and velocity along the push (x).
#: Its height, orientation and spin are left out: under regularized's soft contact the pushed
#: box lifts by up to 1.2 cm and pitches, and that chatter (spin 2 rad/s apart between mu = 0.31
#: and 0.5) would dominate the residual with a cost that is not monotone in the parameters
#: (measured: least_squares then stalls at mu 0.46, mass 1.06).
ALONG_PUSH = (0,)


@dataclass(frozen=True)
class Problem:
    """A scene with its true parameters, the wrong guesses the fit starts from, the
    controller of the recorded run (None: the scene's own), and the recorded coordinates: the
    columns of ``q`` and of ``v`` (None: all)."""

    name: str
    scene: co.Scene
    truth: Mapping[str, float]
    start: Mapping[str, float]
    controller: Controller | None = None
    observed: tuple[int, ...] | None = None

    def record(self, q: FloatArray, v: FloatArray) -> FloatArray:
        """The recorded part of a trajectory's ``(q, v)`` (or of its sensitivity's rows),
        steps 1..N, flattened."""
        columns = slice(None) if self.observed is None else list(self.observed)
        return np.concatenate([q[1:, columns], v[1:, columns]], axis=1).ravel()


@dataclass(frozen=True)
class Fit:
    """What :func:`identify` found: the parameters, the least-squares counters and time."""

    found: dict[str, float]
    nfev: int
    njev: int
    seconds: float
    cost: float
    message: str
    recorded: co.Trajectory
    fitted: co.Trajectory


def problems(duration: float | None = None) -> dict[str, Callable[[], Problem]]:
    """The cases by name (built on demand: the MJCF one needs ``mujoco``)."""
    def box() -> Problem:
        scene = pushed_box_scene(duration=duration or 0.6, dt=0.02)
        return Problem("box (rigid3d)", scene, {"mu": 0.5, "box.mass": 1.0},
                       {"mu": 0.3, "box.mass": 1.5}, push_controller(8.0, 0.2, scene.dt), ALONG_PUSH)

    def mjcf() -> Problem:
        scene = load("pushed_box_mjcf")
        # candidates within 1 cm (the scene's 0, for MuJoCo's own problem, would let the box's
        # contacts at rest, phi = 0, appear and leave within the derivative's difference step)
        system = type(scene.system)(scene.system.path, detection_margin=0.01)
        scene = dataclasses.replace(scene, system=system, dt=0.01, duration=duration or 0.5)
        return Problem("pushed box (MJCF)", scene, {"mu": 0.5, "box.mass": 1.0},
                       {"mu": 0.3, "box.mass": 1.5}, push_controller(10.0, 0.2, scene.dt))

    def slide() -> Problem:
        scene = dataclasses.replace(load("box_slide"), dt=0.02, duration=duration or 0.16)
        return Problem("free slide (rigid3d)", scene, {"mu": 0.5}, {"mu": 0.3}, observed=ALONG_PUSH)

    return {"box": box, "mjcf": mjcf, "slide": slide}


def simulate(problem: Problem, values: Mapping[str, float], formulation: str,
             sensitivities: Sequence[str] | None = None) -> co.Trajectory:
    """The problem's scene with ``values`` for its parameters, under ``formulation``."""
    solver, options = FORMULATIONS[formulation]
    scene = dataclasses.replace(problem.scene, system=problem.scene.system.with_parameters(dict(values)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
        warnings.simplefilter("always", co.derivatives.NondifferentiableWarning)
        traj = co.simulate(scene, formulation=formulation, solver=solver, options=options,
                           controller=problem.controller, sensitivities=sensitivities, on_failure="raise")
    stopped = [str(w.message) for w in caught if issubclass(w.category, co.derivatives.NondifferentiableWarning)]
    if sensitivities and stopped:  # NaN from that step on: no Jacobian to fit with
        raise co.errors.ContactoptError(stopped[0])
    return traj


def identify(problem: Problem, formulation: str, recorded: co.Trajectory | None = None,
             xtol: float = 1e-10) -> Fit:
    """Fit the problem's parameters to ``recorded`` (default: a run with the true ones) from
    its start values by ``least_squares`` with the sensitivities' Jacobian."""
    names = list(problem.truth)
    if recorded is None:
        recorded = simulate(problem, problem.truth, formulation)
    target = problem.record(recorded.q, recorded.v)
    cache: dict[bytes, tuple[FloatArray, FloatArray, co.Trajectory]] = {}

    def evaluate(theta: FloatArray) -> tuple[FloatArray, FloatArray, co.Trajectory]:
        key = theta.tobytes()
        if key not in cache:
            traj = simulate(problem, dict(zip(names, map(float, theta), strict=True)), formulation, names)
            state = problem.record(traj.q, traj.v)
            nq = problem.scene.system.nq
            columns = [problem.record(traj.sensitivities[name][:, :nq], traj.sensitivities[name][:, nq:])
                       for name in names]
            cache.clear()  # least_squares asks for the Jacobian at the point it just evaluated
            cache[key] = (state - target, np.stack(columns, axis=1), traj)
        return cache[key]

    start = np.array([problem.start[name] for name in names])
    clock = time.perf_counter()
    def residual(theta: FloatArray) -> FloatArray:
        return evaluate(theta)[0]

    def jacobian(theta: FloatArray) -> FloatArray:
        return evaluate(theta)[1]

    result = least_squares(residual, start, jac=jacobian, bounds=(1e-3, np.inf), method="trf", x_scale="jac",
                           xtol=xtol, ftol=1e-14, gtol=1e-14)
    seconds = time.perf_counter() - clock
    fitted = evaluate(result.x)[2]
    return Fit(dict(zip(names, map(float, result.x), strict=True)), int(result.nfev), int(result.njev or 0),
               seconds, float(result.cost), str(result.message), recorded, fitted)


def rows_of(problem: Problem, formulation: str, fit: Fit | None, error: str = "") -> list[dict[str, Any]]:
    """One table row per parameter."""
    rows = []
    for name, true in problem.truth.items():
        found = fit.found[name] if fit else float("nan")
        rows.append({"case": problem.name, "formulation": formulation, "parameter": name, "true": true,
                     "start": problem.start[name], "found": found, "rel_error": abs(found - true) / abs(true),
                     "nfev": fit.nfev if fit else 0, "njev": fit.njev if fit else 0,
                     "time_s": round(fit.seconds, 2) if fit else float("nan"),
                     "status": error or ("ok" if abs(found - true) <= 1e-3 * abs(true) else "not recovered")})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formulation", default="ccp", choices=[*FORMULATIONS, "all"],
                        help="formulation of the recording and the fit (default ccp; all: each in turn)")
    parser.add_argument("--cases", default="box,mjcf", help="comma-separated: box, mjcf, slide (default box,mjcf)")
    parser.add_argument("--duration", type=float, default=None, help="simulated time (default: per case)")
    args = parser.parse_args()
    builders = problems(args.duration)
    cases = [name.strip() for name in args.cases.split(",") if name.strip()]
    unknown = [name for name in cases if name not in builders]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; known: {', '.join(builders)}")
    formulations = list(FORMULATIONS) if args.formulation == "all" else [args.formulation]
    rows: list[dict[str, Any]] = []
    fits: dict[str, tuple[Problem, Fit]] = {}
    for case in cases:
        problem = builders[case]()
        for formulation in formulations:
            try:
                fit = identify(problem, formulation)
            except (co.errors.ContactoptError, np.linalg.LinAlgError, ValueError) as exc:
                rows += rows_of(problem, formulation, None, f"failed: {str(exc).splitlines()[0][:110]}")
                continue
            rows += rows_of(problem, formulation, fit)
            fits.setdefault(case, (problem, fit))
    print("system identification: least_squares (trf) on simulated - recorded (q, v), Jacobian from "
          "co.simulate(..., sensitivities=[...])")
    print_table(rows)
    folder = OUT / "sysid"
    write_results(folder, rows, {"formulations": formulations, "cases": cases})
    plot(fits, folder)
    print(f"wrote {folder}/sysid.png, summary.json, summary.csv")
    return 0


def plot(fits: Mapping[str, tuple[Problem, Fit]], folder: Any) -> None:
    """x(t) recorded, at the start guesses and fitted, per case."""
    if not fits:
        return
    fig, axes = plt.subplots(1, len(fits), figsize=(5.5 * len(fits), 4), squeeze=False, constrained_layout=True)
    for ax, (problem, fit) in zip(axes[0], fits.values(), strict=True):
        formulation = str(fit.recorded.info.get("formulation", ""))
        start = simulate(problem, problem.start, formulation or "ccp")
        ax.plot(fit.recorded.t, fit.recorded.q[:, 0], "k-", lw=3, alpha=0.4, label="recorded (true)")
        ax.plot(start.t, start.q[:, 0], "r--", label="start guess")
        ax.plot(fit.fitted.t, fit.fitted.q[:, 0], "b:", lw=2, label="fitted")
        ax.set_title(problem.name, fontsize="small")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("x [m]")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.savefig(folder / "sysid.png", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
