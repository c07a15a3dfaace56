"""Figures as a paper's (issue 27, "Plots"): the matplotlib Figure objects are inspected, not
the pixels: distinct (colour, line style) per series, a unit on every axis, quaternions and
angles apart from positions, time steps told apart, impacts drawn as jumps, metric bars on a
log scale from a tolerance, energy and constraint panels; videos with forces on every frame,
an arrow scale and slow motion for short runs. Runs are a few steps (the file takes ~3 s)."""

from __future__ import annotations

import dataclasses
import itertools
import re
import warnings
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.cbook import STEP_LOOKUP_MAP
from matplotlib.figure import Figure

import contactopt as co
from contactopt.analysis.figures import MAX_CURVES, METRIC_TOLERANCES, plot_metrics, plot_trajectories
from contactopt.analysis.plotting import plot_trajectory
from contactopt.analysis.quantities import MAX_SERIES
from contactopt.analysis.render import video_frames
from contactopt.analysis.render_frames import MIN_VIDEO, playback_speed
from contactopt.analysis.style import Styles, dt_text, series_style

matplotlib.use("Agg")
UNIT = re.compile(r"\[[^\]]+\]")


def _simulate(name: str, **kwargs: Any) -> tuple[co.Scene, co.Trajectory]:
    scene = co.load_scene(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return scene, co.simulate(scene, **kwargs)


def _pair(style: dict[str, Any]) -> tuple[str, str]:
    return str(style["color"]), repr(style["linestyle"])


def _axis(fig: Figure, label: str) -> Any:
    matches = [ax for ax in fig.axes if ax.get_ylabel().startswith(label)]
    assert len(matches) == 1, [ax.get_ylabel() for ax in fig.axes]
    return matches[0]


def test_every_series_has_its_own_colour_and_line_style() -> None:
    """series_style: 100 series, 100 pairs, consecutive series differ in colour and line style;
    a comparison of 12 formulations x 3 solvers (more than the palette's colours): 36 pairs."""
    pairs = [_pair(series_style(i)) for i in range(100)]
    assert len(set(pairs)) == 100
    assert all(a[0] != b[0] and a[1] != b[1] for a, b in itertools.pairwise(pairs))
    formulations, solvers = [f"f{i}" for i in range(12)], ["a", "b", "c"]
    styles = Styles(formulations, solvers)
    runs = {_pair(styles.line(f, s)) for f in formulations for s in solvers}
    assert len(runs) == 36


def test_seventeen_angles_become_small_multiples() -> None:
    """17 joint angles (the finding: 17 overlapping curves): panels of at most MAX_SERIES
    curves, each labelled "angle [rad]", each curve with its own pair within its panel, the
    velocities in rad/s on other panels."""
    n = 17
    t = np.linspace(0.0, 1.0, 11)
    traj = co.Trajectory(t=t, q=np.sin(np.outer(t, np.arange(1, n + 1))), v=np.cos(np.outer(t, np.arange(1, n + 1))),
                         info={"dt": 0.1, "q_names": [f"theta{i}" for i in range(n)],
                               "v_names": [f"theta{i}dot" for i in range(n)]})
    fig = plot_trajectory(traj)
    angles = [ax for ax in fig.axes if ax.get_ylabel() == "angle [rad]"]
    rates = [ax for ax in fig.axes if ax.get_ylabel() == "angular velocity [rad/s]"]
    assert len(angles) == len(rates) == -(-n // MAX_SERIES)
    for ax in angles + rates:
        lines = ax.get_lines()
        assert 1 <= len(lines) <= MAX_SERIES
        assert len({(line.get_color(), line.get_linestyle()) for line in lines}) == len(lines)
        assert ax.get_legend() is not None  # each panel names its curves
    assert sum(len(ax.get_lines()) for ax in angles) == n


def test_units_on_every_axis_and_quaternions_apart_from_positions() -> None:
    """A rigid3d box: positions [m], quaternion components [1], velocities [m/s] and angular
    velocities [rad/s] each on their own axes; the contact panel in newtons with the impulse
    axis in N·s; MJCF hinges read as rad and a slide as m from the joint types."""
    scene = co.load_scene("box_slide")
    scene = dataclasses.replace(scene, v0=np.zeros(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.01)
    fig = plot_trajectory(traj, system=scene.system)
    for ax in fig.axes:
        if ax.get_ylabel():
            assert UNIT.search(ax.get_ylabel()), ax.get_ylabel()
    where = {line.get_label(): ax for ax in fig.axes for line in ax.get_lines()}
    assert where["box.x"] is where["box.z"] and where["box.qw"] is where["box.qz"]
    assert where["box.x"] is not where["box.qw"] and where["box.vx"] is not where["box.wx"]
    assert where["box.x"].get_ylabel() == "position [m]"
    assert where["box.qw"].get_ylabel() == "quaternion component [1]"
    assert where["box.wx"].get_ylabel() == "angular velocity [rad/s]"
    contact = _axis(fig, "normal force")
    assert "[N]" in contact.get_ylabel() and "[N·s]" in contact.child_axes[0].get_ylabel()
    # the box at rest: the contacts' normal forces add up to its weight m g (1 kg)
    total = sum(np.asarray(line.get_ydata())[2] for line in contact.get_lines())
    assert total == pytest.approx(9.81, abs=1e-6)
    assert co.load_scene("dm_cartpole").system.coordinate_units() == (("m", "rad"), ("m/s", "rad/s"))


def test_several_time_steps_are_told_apart() -> None:
    """One run at three steps: same colour and line style, widths growing with dt, labels
    "dt = 1e-3 s"; the legend lists the runs and the steps once each. Twelve runs of three
    steps (36 curves) become columns of small multiples with at most MAX_CURVES curves."""
    assert (dt_text(1e-3), dt_text(2.5e-4), dt_text(0.02)) == ("dt = 1e-3 s", "dt = 2.5e-4 s", "dt = 2e-2 s")
    dts = [1e-3, 2e-3, 4e-3]
    t = np.linspace(0.0, 0.1, 5)

    def traces(formulations: int, solvers: int, steps: list[float]) -> pd.DataFrame:
        return pd.DataFrame([{"formulation": f"f{i}", "solver": f"s{j}", "dt": dt, "t": time, "q[0]": time * (1 + dt),
                              "energy": 1.0 - time}
                             for i in range(formulations) for j in range(solvers) for dt in steps for time in t])

    single = plot_trajectories(pd.DataFrame(), traces(1, 1, dts), names=["x"], units=["m"])
    lines = {line.get_label(): line for line in single.axes[0].get_lines()}
    finest, coarsest = lines["f0 / s0, dt = 1e-3 s"], lines["f0 / s0, dt = 4e-3 s"]
    assert finest.get_color() == coarsest.get_color() and finest.get_linestyle() == coarsest.get_linestyle()
    assert coarsest.get_linewidth() > lines["f0 / s0, dt = 2e-3 s"].get_linewidth() > finest.get_linewidth()
    labels = [text.get_text() for text in single.legends[0].get_texts()]
    assert labels == ["f0 / s0", "dt = 1e-3 s", "dt = 2e-3 s", "dt = 4e-3 s"]
    assert [ax.get_ylabel() for ax in single.axes] == ["x [m]", "energy [J]"]
    # 6 formulations x 2 solvers x 2 steps: 4 curves per formulation, two formulations per column
    many = plot_trajectories(pd.DataFrame(), traces(6, 2, dts[:2]), names=["x"], units=["m"])
    assert len(many.axes) == 2 * 3
    assert all(len(ax.get_lines()) == MAX_CURVES for ax in many.axes)
    assert [ax.get_title() for ax in many.axes[:3]] == ["f0, f1", "f2, f3", "f4, f5"]


def test_metric_bars_start_at_the_tolerance() -> None:
    """A 1e-9 cone violation is written "0 (below tol)" and draws no bar; the bars that are
    drawn run on a log axis from the tolerance to the value (so 0.5 is the longest); one dt:
    the impulse metric also reads in newtons."""
    table = pd.DataFrame({"formulation": ["a", "b", "c"], "solver": ["s"] * 3, "dt": [1e-3] * 3,
                          "status": ["completed"] * 3, "max_cone_violation": [1e-9, 1e-3, 0.5],
                          "time_per_step": [1e-4, 2e-4, 3e-4]})
    fig = plot_metrics(table)
    cone = next(ax for ax in fig.axes if ax.get_title().startswith("max cone violation"))
    tol = METRIC_TOLERANCES["max_cone_violation"]
    assert cone.get_xscale() == "log" and cone.get_xlim()[0] == pytest.approx(tol)
    bars = cone.patches
    assert len(bars) == 2
    assert [bar.get_x() for bar in bars] == pytest.approx([tol, tol])
    assert [bar.get_x() + bar.get_width() for bar in bars] == pytest.approx([1e-3, 0.5])
    assert [text.get_text() for text in cone.texts] == ["0 (below tol)"]
    assert "[N]" in cone.child_axes[0].get_xlabel()


def test_impacts_are_jumps_not_ramps() -> None:
    """The bouncing ball (1.1 m drop onto the ground). Event-driven hybrid: the velocity curve
    holds (t*, v-), a break and (t*, v+) at the recorded impact and no segment spans t*.
    Time-stepping (lcp): a staircase (steps-pre: v_{i+1} is held over step i), every drawn
    segment horizontal or vertical, the impact a riser the size of the largest velocity change."""
    _, hybrid = _simulate("bouncing_ball", duration=0.5, dt=0.01)
    (impact,) = hybrid.all_impacts()
    fig = plot_trajectory(hybrid)
    line = next(line for ax in fig.axes for line in ax.get_lines() if line.get_label() == "vz")
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    at = np.flatnonzero(x == impact.t)
    assert np.isnan(y[at]).sum() == 1
    assert y[at[0]] == impact.v_pre[1] and y[at[-1]] == impact.v_post[1] and impact.v_pre[1] < 0 < impact.v_post[1]
    finite = np.isfinite(y[:-1]) & np.isfinite(y[1:])
    assert not np.any(finite & (x[:-1] < impact.t) & (x[1:] > impact.t))

    _, stepped = _simulate("bouncing_ball", duration=0.5, dt=0.005, formulation="lcp", solver="lemke")
    fig = plot_trajectory(stepped)
    line = next(line for ax in fig.axes for line in ax.get_lines() if line.get_label() == "vz")
    assert line.get_drawstyle() == "steps-pre"
    xs, ys = STEP_LOOKUP_MAP["steps-pre"](np.asarray(line.get_xdata()), np.asarray(line.get_ydata()))
    dx, dy = np.diff(xs), np.diff(ys)
    assert np.all((dx == 0) | (dy == 0))
    assert np.max(np.abs(dy[dx == 0])) == pytest.approx(np.max(np.abs(np.diff(stepped.v[:, 1]))))
    # the impact stops the ball's sqrt(2 g 1.0 m) = 4.43 m/s within two steps: one riser is at least half
    assert np.max(np.abs(np.diff(stepped.v[:, 1]))) > 0.5 * np.sqrt(2 * 9.81 * 1.0)


def test_energy_panel_without_contact_and_constraint_panel() -> None:
    """The textbook pendulum (no contact): an energy panel whose total is kinetic + potential
    of the system at each state, no contact panel; the four-bar linkage (bilateral loop
    closure) adds a log-scale constraint-error panel."""
    scene, traj = _simulate("pendulum", duration=0.05, dt=0.005)
    fig = plot_trajectory(traj, system=scene.system)
    energy = _axis(fig, "energy [J]")
    lines = {line.get_label(): line for line in energy.get_lines()}
    expected = [sum(scene.system.energy(q, v)) for q, v in zip(traj.q, traj.v, strict=True)]
    np.testing.assert_allclose(lines["total"].get_ydata(), expected, rtol=1e-12)
    assert not any("force" in ax.get_ylabel() for ax in fig.axes)
    scene, traj = _simulate("four_bar", duration=0.02)
    constraint = _axis(plot_trajectory(traj, system=scene.system), "bilateral error")
    assert constraint.get_yscale() == "log" and UNIT.search(constraint.get_ylabel())


def test_video_frames_arrows_on_the_last_frame_scale_and_slow_motion() -> None:
    """The box of box_slide at rest on the ground (lcp/lemke, 0.01 s): the last frame (the
    final state, which starts no step) shows the last step's contact forces, which add up to
    the weight m g = 9.81 N up; the heading states the arrow scale and the speed, and the panel
    has the grey reference arrow with its force. Short runs play slower (0.47 s at x0.1, 1 s
    at x0.25, the fastest offered speed that lasts MIN_VIDEO s), 2.5 s in real time; the frame
    rate makes the stated speed exact."""
    assert (playback_speed(0.47), playback_speed(1.0), playback_speed(2.5)) == (0.1, 0.25, 1.0)
    scene = dataclasses.replace(co.load_scene("box_slide"), v0=np.zeros(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.01)
    frames = video_frames(traj, scene.system, size=(96, 72))
    assert frames.speed == playback_speed(0.01) and len(frames.times) / frames.fps >= MIN_VIDEO
    step = frames.times[1] - frames.times[0]
    assert step * frames.fps == pytest.approx(frames.speed)  # simulated seconds per video second
    frames = video_frames(traj, scene.system, size=(96, 72), stride=5)
    assert frames.speed == pytest.approx(5 * traj.dt * 30.0)
    painted = list(frames.paint())
    frames.close()
    last = painted[-1]
    assert last.time == pytest.approx(traj.t[-1]) and len(last.arrows[0]) >= 1
    total = sum((end - start) / frames.scale for start, end in last.arrows[0])
    np.testing.assert_allclose(total, [0.0, 0.0, 9.81], atol=1e-6)
    match = re.search(r"arrow (\d+(?:\.\d+)?) (cm|mm|m) = ([0-9.e+-]+) N", last.heading)
    assert match is not None and "speed x0.15" in last.heading
    metres = float(match.group(1)) * {"cm": 0.01, "mm": 0.001, "m": 1.0}[match.group(2)]
    assert float(match.group(3)) == pytest.approx(metres / frames.scale, rel=1e-2)
    texts = [text.get_text().strip() for ax in last.figure.axes for text in ax.texts]
    assert f"{match.group(3)} N" in texts
