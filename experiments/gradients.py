"""Gradients through contact under lcp, anitescu, ccp, regularized and sap, against central
finite differences of the simulation and against closed forms.

* Box push: ``box_slide.toml``'s cube at rest, pushed along x by ``F`` for 0.2 s and then
  released; the gradient of its final position ``x_T`` with respect to ``F`` by the reverse
  mode (``co.gradient`` by the input ``u`` of every step, summed over the pushed steps).
  Closed form (Coulomb, continuous time, :func:`push_scenes.box_push_final`):
  ``dx/dF = T^2 / m (1/2 + a / (mu g))``, ``a = F / m - mu g``; 0 below ``F = mu m g``
  (the box sticks).
* Ball at a wall (``experiments/ball_wall.toml``): a sphere thrown horizontally at ``vx`` at a
  wall 0.9 m away, gravity along the wall; the gradient of its final ``x_T`` and ``z_T`` with
  respect to ``vx`` by forward sensitivities (``sensitivities=["v0"]``). Closed forms
  (plastic impact, :func:`push_scenes.ball_wall_final`): ``dx/dvx = T`` if it misses the wall,
  0 once it stops there; ``dz/dvx = mu T`` while the contact point slides on the wall at impact,
  ``2/7 g (s - t_h) (-d / vx^2)`` once it rolls.

Reading the table (measured, dt = 0.02 s): where a gradient is computed it equals the central
difference of the simulation to <= 1e-8 absolute on every formulation (it is the exact
derivative of the discrete map). It vanishes exactly on sticking under the hard formulations
(lcp, anitescu, ccp: 1e-13 or less below F = mu m g), where compliance gives a nonzero
one (regularized's creep 2.6e-3 m/N at F = 3 N, sap's 2.6e-6 m/N) and a smaller slope while
sliding (regularized 0.041 against 0.045 at 8 N). The closed forms hold to the scheme's O(h)
(box under lcp, anitescu, ccp, sap: 0.2 to 4 %) where the discrete map has the same pieces:
missing the wall, sliding on it (lcp: dz/dvx = mu T exactly); anitescu, ccp and sap push the
ball back off the wall (their relaxation's normal velocity mu |v_t|) and regularized lets it into the wall, so their
gradients are their own. Where the ball rolls on the wall the discrete final height is a
staircase in vx (the impact step is quantized), so the exact discrete gradient (0 under lcp)
is not the continuous slope. A step the solver ends 'inaccurate' is not differentiated (NaN).

Finite differences are central, ``(f(p + e) - f(p - e)) / 2e`` with ``e = 1e-4``. Writes
``experiments/out/gradients/{gradients.png, summary.json, summary.csv}``.

    python experiments/gradients.py [--quick] [--formulations lcp,ccp]
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
from common import OUT, print_table, write_results
from numpy.typing import NDArray
from push_scenes import (
    FORMULATIONS,
    ball_wall_final,
    ball_wall_scene,
    box_push_final,
    push_controller,
    pushed_box_scene,
    stick_threshold,
)

import contactopt as co

FloatArray = NDArray[np.float64]
PUSH_TIME = 0.2
MU = 0.5
WALL_DISTANCE = 0.9  # ball_wall.toml: centre at x = 0, radius 0.1, wall at x = 1
FD_STEP = 1e-4
#: Ours agrees with the finite difference within this (absolute) or relatively within it.
AGREE = 1e-4
#: The ball's (solver, options) where they differ from :data:`FORMULATIONS`: Clarabel stops
#: ccp's primal form and sap 'inaccurate' (primal residual ~5e-5) on the ball rolling off the
#: wall, and an inaccurate step is not differentiated; ccp's dual form and sap's Newton are not.
BALL_RUNS: dict[str, tuple[str, dict[str, Any]]] = {"ccp": ("clarabel", {"form": "dual"}), "sap": ("newton", {})}


@dataclass(frozen=True)
class Settings:
    """Step, horizon, the pushes and throws differentiated at, and points per plotted curve."""

    dt: float
    duration: float
    pushes: tuple[float, ...]
    throws: tuple[float, ...]
    curve_points: int


DEFAULT = Settings(0.02, 0.6, (3.0, 4.5, 6.0, 8.0, 10.0), (1.2, 1.7, 2.1, 3.1, 3.9), 13)
QUICK = Settings(0.05, 0.6, (3.0, 8.0), (1.2, 1.9), 0)


def final_x_loss(q: FloatArray, v: FloatArray) -> tuple[float, FloatArray, FloatArray]:
    """``L = x_T`` (the first body's final x) and its gradient, for ``co.gradient``."""
    gq = np.zeros_like(q)
    gq[-1, 0] = 1.0
    return float(q[-1, 0]), gq, np.zeros_like(v)


def run(scene: co.Scene, formulation: str, ball: bool = False, **kwargs: Any) -> co.Trajectory:
    """``scene`` under ``formulation`` with its solver and options (the ball's if ``ball``)."""
    solver, options = BALL_RUNS.get(formulation, FORMULATIONS[formulation]) if ball else FORMULATIONS[formulation]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.formulations.FrictionIgnoredWarning)
        return co.simulate(scene, formulation=formulation, solver=solver, options=options, on_failure="raise",
                           **kwargs)


def central(f: Callable[[float], FloatArray], p: float) -> FloatArray:
    return (f(p + FD_STEP) - f(p - FD_STEP)) / (2.0 * FD_STEP)


def row(scene: str, formulation: str, given: str, output: str, regime: str, value: float, ours: float,
        fd: float, closed: float, seconds: float, status: str) -> dict[str, Any]:
    gap = abs(ours - fd)
    return {"scene": scene, "formulation": formulation, "input": given, "output": output, "regime": regime,
            "value": value, "ours": ours, "fd": fd, "closed": closed, "|ours-fd|": gap,
            "|ours-closed|": abs(ours - closed), "= fd": bool(gap <= AGREE * max(1.0, abs(fd))),
            "time_s": round(seconds, 2), "status": status}


def box_rows(formulation: str, force: float, settings: Settings) -> list[dict[str, Any]]:
    """``dx_T/dF`` by ``co.gradient`` (reverse mode), finite differences and the closed form."""
    scene = pushed_box_scene(duration=settings.duration, dt=settings.dt)
    solver, options = FORMULATIONS[formulation]
    closed = box_push_final(force, PUSH_TIME, MU)[1]
    regime = "slides" if force > stick_threshold(MU) else "sticks"
    clock = time.perf_counter()
    try:
        result = co.gradient(scene, final_x_loss, ["u"], formulation=formulation, solver=solver, options=options,
                             controller=push_controller(force, PUSH_TIME, scene.dt))
    except co.errors.ContactoptError as exc:
        return [row("box push", formulation, f"F={force:g} N", "x_T", regime, float("nan"), float("nan"),
                    float("nan"), closed, time.perf_counter() - clock, str(exc).splitlines()[0][:90])]
    pushed = result.trajectory.t[:-1] < PUSH_TIME - 0.5 * scene.dt  # the steps u = F is held over
    ours = float(result.gradients["u"][pushed, 0].sum())
    seconds = time.perf_counter() - clock
    fd = float(central(lambda f: run(scene, formulation, controller=push_controller(f, PUSH_TIME, scene.dt)
                                     ).q[-1, :1], force)[0])
    return [row("box push", formulation, f"F={force:g} N", "x_T", regime, result.value, ours, fd, closed, seconds,
                "ok")]


def ball_rows(formulation: str, vx: float, settings: Settings) -> list[dict[str, Any]]:
    """``dx_T/dvx`` and ``dz_T/dvx`` by forward sensitivities, finite differences and closed forms."""
    base = ball_wall_scene(duration=settings.duration, dt=settings.dt)

    def thrown(speed: float) -> co.Scene:
        v0 = base.v0.copy()
        v0[0] = speed
        return dataclasses.replace(base, v0=v0)

    closed = ball_wall_final(vx, WALL_DISTANCE, settings.duration, MU)
    clock = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", co.derivatives.NondifferentiableWarning)
        traj = run(thrown(vx), formulation, ball=True, sensitivities=["v0"])
    seconds = time.perf_counter() - clock
    status = next((str(w.message).splitlines()[0][:90] for w in caught
                   if issubclass(w.category, co.derivatives.NondifferentiableWarning)), "ok")
    ours = traj.sensitivities["v0"][-1][:, 0]
    fd = central(lambda s: run(thrown(s), formulation, ball=True).q[-1, :3], vx)
    z0 = float(base.q0[2])
    return [row("ball at wall", formulation, f"vx={vx:g} m/s", "x_T", closed["regime"], float(traj.q[-1, 0]),
                float(ours[0]), float(fd[0]), closed["dx_dvx"], seconds, status),
            row("ball at wall", formulation, f"vx={vx:g} m/s", "z_T", closed["regime"], float(traj.q[-1, 2]) - z0,
                float(ours[2]), float(fd[2]), closed["dz_dvx"], seconds, status)]


def curves(formulations: Sequence[str], settings: Settings) -> dict[str, dict[str, FloatArray]]:
    """Final x of the box against F, final z of the ball against vx, per formulation."""
    if settings.curve_points == 0:
        return {}
    pushes = np.linspace(2.0, 11.0, settings.curve_points)
    throws = np.linspace(1.0, 4.2, settings.curve_points)
    box = pushed_box_scene(duration=settings.duration, dt=settings.dt)
    ball = ball_wall_scene(duration=settings.duration, dt=settings.dt)
    out: dict[str, dict[str, FloatArray]] = {"grid": {"F": pushes, "vx": throws}}
    for formulation in formulations:
        box_x = [run(box, formulation, controller=push_controller(f, PUSH_TIME, box.dt)).q[-1, 0] for f in pushes]
        ball_z = []
        for speed in throws:
            v0 = ball.v0.copy()
            v0[0] = speed
            traj = run(dataclasses.replace(ball, v0=v0), formulation, ball=True)
            ball_z.append(traj.q[-1, 2] - ball.q0[2])
        out[formulation] = {"F": np.array(box_x), "vx": np.array(ball_z)}
    return out


def plot(rows: Sequence[Mapping[str, Any]], lines: Mapping[str, Mapping[str, FloatArray]],
         formulations: Sequence[str], settings: Settings, path: Any) -> None:
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), constrained_layout=True)
    colors = dict(zip(formulations, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    fine_f = np.linspace(2.0, 11.0, 200)
    fine_v = np.linspace(1.0, 4.2, 200)
    axes[0, 0].plot(fine_f, [box_push_final(f, PUSH_TIME, MU)[0] for f in fine_f], "k--", lw=1, label="closed form")
    axes[0, 1].plot(fine_f, [box_push_final(f, PUSH_TIME, MU)[1] for f in fine_f], "k--", lw=1, label="closed form")
    ball_closed = [ball_wall_final(v, WALL_DISTANCE, settings.duration, MU) for v in fine_v]
    axes[1, 0].plot(fine_v, [c["dz"] for c in ball_closed], "k--", lw=1, label="closed form")
    axes[1, 1].plot(fine_v, [c["dz_dvx"] for c in ball_closed], "k--", lw=1, label="closed form")
    for formulation in formulations:
        color = colors[formulation]
        if formulation in lines:
            axes[0, 0].plot(lines["grid"]["F"], lines[formulation]["F"], "-", color=color, alpha=0.5)
            axes[1, 0].plot(lines["grid"]["vx"], lines[formulation]["vx"], "-", color=color, alpha=0.5)
        for panel, scene, output, scale in ((0, "box push", "x_T", 0.8), (1, "ball at wall", "z_T", 0.25)):
            mine = [r for r in rows if (r["formulation"], r["scene"], r["output"]) == (formulation, scene, output)]
            points = np.array([float(r["input"].split("=")[1].split()[0]) for r in mine])
            ours = np.array([r["ours"] for r in mine])
            values = np.array([r["value"] for r in mine])
            for p, value, slope in zip(points, values, ours, strict=True):  # the gradient as a tangent line
                axes[panel, 0].plot([p - scale, p + scale], [value - scale * slope, value + scale * slope], "-",
                                    color=color, lw=2)
            axes[panel, 0].plot(points, values, "o", color=color, label=formulation)
            axes[panel, 1].plot(points, ours, "o", color=color, label=f"{formulation} (ours)")
            axes[panel, 1].plot(points, [r["fd"] for r in mine], "x", color=color, ms=9)
    axes[0, 0].set(xlabel="push F [N]", ylabel="final x_T [m]", title="box push: x_T(F), gradients as tangents")
    axes[0, 1].set(xlabel="push F [N]", ylabel="dx_T/dF [m/N]", title="box push: gradient (o ours, x FD)")
    axes[1, 0].set(xlabel="throw vx [m/s]", ylabel="z_T - z_0 [m]", title="ball at wall: z_T(vx), tangents")
    axes[1, 1].set(xlabel="throw vx [m/s]", ylabel="dz_T/dvx [s]", title="ball at wall: gradient (o ours, x FD)")
    for ax in axes.ravel():
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run: dt 0.05, two pushes, two throws, no curves")
    parser.add_argument("--formulations", default=",".join(FORMULATIONS),
                        help=f"comma-separated subset of {','.join(FORMULATIONS)} (default: all)")
    args = parser.parse_args()
    formulations = [name.strip() for name in args.formulations.split(",") if name.strip()]
    unknown = [name for name in formulations if name not in FORMULATIONS]
    if unknown:
        parser.error(f"--formulations: unknown {', '.join(unknown)}; known: {', '.join(FORMULATIONS)}")
    settings = QUICK if args.quick else DEFAULT
    clock = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for formulation in formulations:
        for force in settings.pushes:
            rows += box_rows(formulation, force, settings)
        for vx in settings.throws:
            rows += ball_rows(formulation, vx, settings)
    print(f"gradients of final positions, dt = {settings.dt:g}, T = {settings.duration:g} s, mu = {MU:g}; "
          f"box sticks below F = mu m g = {stick_threshold(MU):.3f} N; FD step {FD_STEP:g}")
    print_table(rows)
    agree = {f: f"{sum(r['= fd'] for r in rows if r['formulation'] == f)}/"
                f"{sum(1 for r in rows if r['formulation'] == f)}" for f in formulations}
    print("ours = central FD (|ours - fd| <= 1e-4 max(1, |fd|)): " + ", ".join(f"{f} {n}" for f, n in agree.items()))
    folder = OUT / "gradients"
    write_results(folder, rows, {"dt": settings.dt, "duration": settings.duration, "mu": MU, "push_time": PUSH_TIME,
                                 "fd_step": FD_STEP, "formulations": {f: FORMULATIONS[f] for f in formulations},
                                 "ball_runs": BALL_RUNS,
                                 "agree_with_fd": agree})
    plot(rows, curves(formulations, settings), formulations, settings, folder / "gradients.png")
    print(f"wrote {folder}/gradients.png, summary.json, summary.csv ({time.perf_counter() - clock:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
