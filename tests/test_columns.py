"""Columnar step records (issue 34, item 5): :class:`~contactopt.records.columns.StepColumns`
holds the records of real runs exactly (every field, arrays and floats bit for bit), stands in
for the list in :class:`~contactopt.Trajectory` (save/load, summary, impulses, status counts),
and grows by doubling (a logarithmic number of reallocations, so appends stay linear)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import ContactoptError, PartialTrajectoryWarning
from contactopt.records.columns import STATUSES, StepColumns, records_equal
from contactopt.records.step import StepRecord

ROOT = Path(__file__).resolve().parent.parent / "problems"


def _box_slide(formulation: str, solver: str) -> co.Trajectory:
    return co.simulate(co.load_scene(ROOT / "box_slide.toml"), formulation, solver, duration=0.05)


def _mjcf_limits_and_friction_loss() -> co.Trajectory:
    pytest.importorskip("mujoco")
    from contactopt.systems.mjcf.system import MjcfSystem

    path = ROOT / "mjcf" / "limited_arm.xml"
    scene = dataclasses.replace(co.load_scene(path), system=MjcfSystem(path, extra_friction="sliding"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the condim 4/6 contacts keep their sliding friction only
        return co.simulate(scene, formulation="anitescu", solver="clarabel", duration=0.02)


def _failed() -> co.Trajectory:
    """One interior-point iteration cannot solve the first step, whose contact is active."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartialTrajectoryWarning)
        return co.simulate(co.load_scene("point_mass_drop"), solver="clarabel", solver_options={"max_iter": 1})


def _controlled() -> co.Trajectory:
    scene = co.load_scene(ROOT / "cartesian_pendulum_floor.toml")
    size = scene.system.control_size
    return co.simulate(scene, formulation="anitescu", solver="clarabel", duration=0.02,
                       controller=lambda t, q, v: np.full(size, 0.5 * math.sin(20 * t)))


RUNS = {"ccp/clarabel": lambda: _box_slide("ccp", "clarabel"), "lcp/lemke": lambda: _box_slide("lcp", "lemke"),
        "rigid3d box_drop": lambda: co.simulate(co.load_scene(ROOT / "box_drop.toml"), duration=0.3),
        "hybrid impacts": lambda: co.simulate(co.load_scene(ROOT / "spinning_ball_hybrid.toml"), duration=0.3),
        "mjcf limits": _mjcf_limits_and_friction_loss, "failed": _failed, "controlled": _controlled}


@pytest.fixture(scope="module", params=list(RUNS))
def run(request: pytest.FixtureRequest) -> tuple[str, co.Trajectory]:
    return request.param, RUNS[request.param]()


def _same(a: list[StepRecord], b: list[StepRecord]) -> bool:
    """Lists of records, elementwise (StepRecord's own ``==`` cannot compare arrays)."""
    return len(a) == len(b) and all(records_equal(x, y) for x, y in zip(a, b, strict=True))


def _fields_identical(a: StepRecord, b: StepRecord) -> None:
    """Every field of StepRecord, arrays and floats exactly (NaN where the other has NaN)."""
    for item in dataclasses.fields(StepRecord):
        x, y = getattr(a, item.name), getattr(b, item.name)
        if isinstance(y, np.ndarray):
            assert x.shape == y.shape, item.name
            np.testing.assert_array_equal(x, y, err_msg=item.name, strict=True)
        elif isinstance(y, float):
            assert x == y or (math.isnan(x) and math.isnan(y)), item.name
        elif item.name == "residuals":
            np.testing.assert_array_equal(dataclasses.astuple(x), dataclasses.astuple(y), err_msg=item.name)
        elif item.name == "impacts":
            assert len(x) == len(y), item.name
            for p, r in zip(x, y, strict=True):
                for got, want in zip(dataclasses.astuple(p), dataclasses.astuple(r), strict=True):
                    np.testing.assert_array_equal(got, want, err_msg="impacts", strict=True)
        else:
            assert x == y and type(x) is type(y), item.name


def test_columns_hold_the_records_of_real_runs(run: tuple[str, co.Trajectory]) -> None:
    name, traj = run
    steps = traj.steps
    assert steps, name
    if name == "failed":
        assert not traj.completed and np.isnan(steps[-1].impulses).all()
    if name == "controlled":
        assert all(r.control.size for r in steps)
    if name == "hybrid impacts":
        assert len(traj.all_impacts()) >= 1  # the first impact at t = 0.2856 s
    if name == "mjcf limits":
        assert steps[-1].friction_loss.shape == (5,) and steps[-1].limits.size
    columns = StepColumns(steps)
    assert len(columns) == len(steps) and columns == steps and StepColumns(list(columns)) == steps
    for a, b in zip(columns, steps, strict=True):
        _fields_identical(a, b)
    _fields_identical(columns[-1], steps[-1])
    assert _same(columns[1:4], steps[1:4]) and _same(columns[::-2], steps[::-2])
    assert _same(columns + steps[:1], steps + steps[:1]) and _same(steps[:1] + columns, steps[:1] + steps)
    np.testing.assert_array_equal(columns.column("iterations"), [r.iterations for r in steps])
    np.testing.assert_array_equal(columns.column("solve_time"), [r.solve_time for r in steps])
    np.testing.assert_array_equal(columns.column("dual"), [r.residuals.dual for r in steps])
    assert [STATUSES[c] for c in columns.column("status")] == [r.status for r in steps] == columns.statuses()
    fast = StepColumns()
    for r in steps:
        fast.append_step(**{f.name: getattr(r, f.name) for f in dataclasses.fields(StepRecord)})
    assert fast == columns


def test_trajectory_with_columns_saves_loads_and_summarises_as_with_a_list(
        run: tuple[str, co.Trajectory], tmp_path: Path) -> None:
    _, traj = run
    columnar = dataclasses.replace(traj, steps=StepColumns(traj.steps))
    listed, stored = traj.save(tmp_path / "list.npz"), columnar.save(tmp_path / "columns.npz")
    with np.load(listed) as a, np.load(stored) as b:
        assert a.files == b.files
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key, strict=True)
    loaded = co.Trajectory.load(stored)
    assert _same(loaded.steps, traj.steps) and columnar.steps == loaded.steps
    summary, expected = columnar.summary(), traj.summary()
    assert summary.keys() == expected.keys()
    for key, value in expected.items():
        assert summary[key] == value or (math.isnan(value) and math.isnan(summary[key])), key
    assert columnar.status_counts() == traj.status_counts()
    try:
        impulses = traj.impulses()
    except ContactoptError as error:  # the contact count varies: the same refusal
        with pytest.raises(ContactoptError, match="varies"):
            columnar.impulses()
        assert "varies" in str(error)
    else:
        np.testing.assert_array_equal(columnar.impulses(), impulses, strict=True)
    np.testing.assert_array_equal(columnar.controls(), traj.controls(), strict=True)
    assert repr(columnar) == repr(traj)


def test_appends_grow_by_doubling() -> None:
    """1e5 small records: each buffer reallocates about log2(1e5 / 16) ~ 13 times (doubling),
    so the copying is O(n) in total; a fixed-increment growth would reallocate ~1e5/16 times."""
    n = 100_000
    columns = StepColumns()
    residuals = co.Residuals(0.0, 0.0, 0.0, 0.0)
    impulses, phi = np.ones((2, 3)), np.zeros(2)
    for i in range(n):
        columns.append_step(t=i * 1e-3, impulses=impulses, phi=phi, status=co.Status.OPTIMAL, build_time=0.0,
                            setup_time=0.0, solve_time=1e-6, iterations=i % 7, residuals=residuals)
    assert len(columns) == n
    buffers = 2 + 1 + 7  # the reals, the integers, the ragged end offsets; the flat buffers of the 7 ragged fields
    per_buffer = math.ceil(math.log2(6 * n / 16))  # the largest (impulse values: 6 a step)
    assert columns.growths <= buffers * per_buffer
    assert columns._ragged.values["impulses"].data.shape[0] < 2 * 6 * n  # capacity at most double the content
    np.testing.assert_array_equal(columns.column("iterations"), np.arange(n) % 7)
    assert columns[-1].impulses.shape == (2, 3) and columns[-1].t == (n - 1) * 1e-3


def test_views_are_read_only_and_bad_input_is_refused() -> None:
    columns = StepColumns()
    columns.append_step(t=0.0, impulses=np.ones((1, 3)), phi=[0.1], status=co.Status.OPTIMAL, build_time=0.0,
                        setup_time=0.0, solve_time=0.0, iterations=1, residuals=co.Residuals(0, 0, 0, 0))
    record = columns[0]
    with pytest.raises(ValueError):
        record.impulses[0, 0] = 2.0
    assert records_equal(record, columns[-1]) and columns != [record, record]
    with pytest.raises(IndexError):
        columns[1]
    with pytest.raises(ContactoptError, match="unknown column"):
        columns.column("impulses")
    with pytest.raises(ContactoptError, match="impulses must be"):
        columns.append_step(t=0.0, impulses=np.ones((1, 1, 3)), phi=[0.1], status=co.Status.OPTIMAL,
                            build_time=0.0, setup_time=0.0, solve_time=0.0, iterations=1,
                            residuals=co.Residuals(0, 0, 0, 0))
