"""``co.simulate_batch``: B worlds of one scene equal B single runs (the same programs, solver and
verdict per step: equal to the bit, checked at 1e-12 as the issue asks), per-world parameters
equal runs of the re-parametrized system, a failed world is recorded with its status while the
others complete, and wrong arguments are refused by name before any world runs."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import PartialTrajectoryWarning

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
TOL = 1e-12


@pytest.fixture(scope="module")
def box() -> co.Scene:
    return co.load_scene("box_slide")


def single(scene: co.Scene, **kwargs: object) -> co.Trajectory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartialTrajectoryWarning)
        return co.simulate(scene, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("formulation", "solver"), [("anitescu", "clarabel"), ("sap", "newton"), ("lcp", "lemke")])
def test_a_batch_equals_its_single_runs(box: co.Scene, formulation: str, solver: str) -> None:
    B = 3
    V0 = np.repeat(box.v0[None], B, axis=0)
    V0[:, 0] = [0.3, 1.2, 2.1]  # each world slides its own distance
    batch = co.simulate_batch(box, v0=V0, formulation=formulation, solver=solver, duration=0.06)
    steps = round(0.06 / box.dt)
    assert len(batch) == B and batch.q.shape == (B, steps + 1, box.system.nq)
    assert batch.v.shape == (B, steps + 1, box.system.nv) and batch.status.shape == (B, steps)
    assert batch.completed.all() and batch.t.shape == (steps + 1,)
    for i in range(B):
        alone = single(dataclasses.replace(box, v0=V0[i]), formulation=formulation, solver=solver, duration=0.06)
        np.testing.assert_allclose(batch.q[i], alone.q, rtol=0, atol=TOL)
        np.testing.assert_allclose(batch.v[i], alone.v, rtol=0, atol=TOL)
        assert list(batch.status[i]) == [record.status for record in alone.steps]
        assert isinstance(batch[i], co.Trajectory) and batch[i].info["world"] == i
    # the worlds differ (the test would pass on B copies of one run otherwise)
    assert np.abs(batch.q[0, -1] - batch.q[-1, -1]).max() > 0.05


def test_per_world_parameters_equal_the_reparametrized_runs(box: co.Scene) -> None:
    mus = np.array([0.2, 0.5, 0.8])
    batch = co.simulate_batch(box, parameters={"mu": mus}, formulation="ccp", solver="clarabel", duration=0.08)
    assert np.array_equal(batch.parameters["mu"], mus)
    for i, mu in enumerate(mus):
        scene = dataclasses.replace(box, system=box.system.with_parameters({"mu": float(mu)}))
        alone = single(scene, formulation="ccp", solver="clarabel", duration=0.08)
        np.testing.assert_allclose(batch.q[i], alone.q, rtol=0, atol=TOL)
    # Coulomb's deceleration mu g: the slower stop of the smaller mu shows in the distance covered
    assert batch.q[0, -1, 0] > batch.q[1, -1, 0] > batch.q[2, -1, 0]
    assert box.system.mu == co.load_scene("box_slide").system.mu  # the scene's own system untouched


def test_a_failed_world_is_recorded_and_the_others_complete(box: co.Scene) -> None:
    """World 0 falls through the air (no contact: every program is trivial), world 1 slides on the
    floor, where one PGS sweep cannot meet the tolerance: world 1 stops at step 0 with
    max_iterations in its record, world 0 runs to the end."""
    Q0 = np.repeat(box.q0[None], 2, axis=0)
    Q0[0, 2] += 0.5
    with pytest.warns(PartialTrajectoryWarning, match=r"1 of 2 worlds stopped early \(world 1: step 0"):
        batch = co.simulate_batch(box, q0=Q0, formulation="anitescu", solver="pgs",
                                  solver_options={"max_iter": 1}, duration=0.05)
    steps = round(0.05 / box.dt)
    assert list(batch.completed) == [True, False]
    assert (batch.status[0] == co.Status.OPTIMAL).all()
    assert batch.status[1, 0] == co.Status.MAX_ITERATIONS and (batch.status[1, 1:] == "").all()
    assert batch[1].steps[-1].status is co.Status.MAX_ITERATIONS
    assert np.isnan(batch.q[1, 1:]).all() and np.array_equal(batch.q[1, 0], Q0[1])
    assert np.isfinite(batch.q[0]).all() and batch.q.shape[1] == steps + 1
    # free fall of world 0 over the run: z drops by g t^2 / 2 (semi-implicit Euler: g h^2 N(N+1)/2)
    h = box.dt
    np.testing.assert_allclose(Q0[0, 2] - batch.q[0, -1, 2], 9.81 * h * h * steps * (steps + 1) / 2, rtol=1e-9)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"q0": np.zeros((2, 3))}, r"q0 must have shape \(B, 7\), got \(2, 3\)"),
    ({"q0": np.zeros((2, 7)), "v0": np.zeros((3, 6))}, r"disagree on the number of worlds: q0 2, v0 3"),
    ({"v0": np.full((2, 6), np.nan)}, r"v0\[0\] has a NaN"),
    ({"parameters": {"mu": [[0.1, 0.2]]}}, r"parameters\['mu'\] must be one value per world"),
    ({"parameters": {"friction": [0.1, 0.2]}}, r"unknown parameter 'friction'"),
    ({"parameters": {"mu": [0.1, -1.0]}}, r"mu"),
    ({}, r"give q0 \(B, nq\)"),
    ({"size": 0}, r"size must be an integer >= 1"),
    ({"q0": "zeros"}, r"q0 must be an array of numbers"),
    ({"size": 2, "workers": 0}, r"workers must be an integer >= 1"),
    ({"size": 2, "workers": 2, "controllers": lambda state: np.zeros(6)}, r"workers=2 needs controllers that can be "
                                                                         r"pickled; world 0's cannot"),
])
def test_wrong_arguments_are_refused_by_name(box: co.Scene, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises((co.errors.ContactoptError, ValueError, TypeError), match=match):
        co.simulate_batch(box, duration=0.01, **kwargs)  # type: ignore[arg-type]


def test_mjcf_worlds_do_not_share_evaluation_state() -> None:
    """MJCF systems keep MuJoCo's data between calls: each world runs on its own copy, so a batch
    of two worlds equals the two runs in either order."""
    pytest.importorskip("mujoco")
    scene = co.load_scene(PROBLEMS / "mjcf" / "user_arm.xml")
    V0 = np.zeros((2, scene.system.nv))
    V0[1, :2] = [1.0, -1.0]  # world 1 swings its hinges
    batch = co.simulate_batch(scene, v0=V0, formulation="sap", solver="newton", duration=10 * scene.dt)
    for i in (1, 0):
        alone = single(dataclasses.replace(scene, v0=V0[i]), formulation="sap", solver="newton",
                       duration=10 * scene.dt)
        np.testing.assert_allclose(batch.q[i], alone.q, rtol=0, atol=TOL)
    assert np.abs(batch.q[0, -1] - batch.q[1, -1]).max() > 1e-3


def test_worker_processes_give_the_same_worlds_and_the_same_failure(box: co.Scene) -> None:
    """workers=2: the same numbers as the worlds run here (each world is one simulate either way),
    in world order, and a failing world recorded and warned about as in this process."""
    Q0 = np.repeat(box.q0[None], 3, axis=0)
    Q0[0, 2] += 0.5  # world 0 falls through the air; worlds 1 and 2 slide, where one PGS sweep fails
    Q0[2, 0] = 0.3
    runs = {}
    for workers in (1, 2):
        with pytest.warns(PartialTrajectoryWarning, match=r"2 of 3 worlds stopped early \(world 1: step 0"):
            runs[workers] = co.simulate_batch(box, q0=Q0, formulation="anitescu", solver="pgs", workers=workers,
                                              solver_options={"max_iter": 1}, duration=0.03)
    one, two = runs[1], runs[2]
    np.testing.assert_array_equal(one.q, two.q)
    np.testing.assert_array_equal(one.status, two.status)
    assert list(two.completed) == [True, False, False] and [w.info["world"] for w in two] == [0, 1, 2]
    V0 = np.repeat(box.v0[None], 2, axis=0)
    V0[:, 0] = [0.3, 1.2]
    here = co.simulate_batch(box, v0=V0, formulation="sap", solver="newton", duration=0.03)
    there = co.simulate_batch(box, v0=V0, formulation="sap", solver="newton", duration=0.03, workers=2)
    np.testing.assert_array_equal(here.q, there.q)
    assert np.abs(there.q[0, -1] - there.q[1, -1]).max() > 1e-3


def test_system_copies_deep_evaluation_and_pickled() -> None:
    """An MJCF system's three copies: a deep copy owns its models (a change to one leaves the
    original alone), a batch world's evaluation copy shares them and owns its data, and a pickled
    one is loaded again from its file; each steps to the same state as the original."""
    import copy
    import pickle

    pytest.importorskip("mujoco")
    scene = co.load_scene(PROBLEMS / "mjcf" / "user_arm.xml")
    system = scene.system
    deep, world, loaded = copy.deepcopy(system), system.evaluation_copy(), pickle.loads(pickle.dumps(system))
    assert deep.model is not system.model and world.model is system.model and world.data is not system.data
    assert world.native_model_data()[0] is system.native_model_data()[0]
    assert world.native_model_data()[1] is not system.native_model_data()[1]
    deep.model.body_mass[1] += 1.0
    assert system.model.body_mass[1] == loaded.model.body_mass[1] != deep.model.body_mass[1]
    q, v = scene.q0, np.full(system.nv, 0.3)
    world.dynamics(q, v)  # evaluated at another state than the original's next call
    reference = system.dynamics(q, 0 * v).tau
    for twin in (world, loaded):
        np.testing.assert_array_equal(twin.dynamics(q, 0 * v).tau, reference)


def noisy_controller(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A module-level controller (picklable) that warns at every call."""
    warnings.warn("noisy controller", UserWarning, stacklevel=1)
    return np.zeros(1)


@pytest.mark.parametrize("workers", [1, 2])
def test_world_warnings_follow_the_callers_filters(workers: int) -> None:
    """A world's warning is raised again as it was (its category and origin: this file), and one the
    caller's filters ignore stays ignored."""
    pytest.importorskip("mujoco")
    scene = co.load_scene("dm_cartpole")  # one actuator
    scene = dataclasses.replace(scene, duration=3 * scene.dt)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        co.simulate_batch(scene, size=2, controllers=noisy_controller, workers=workers)
    noisy = [w for w in shown if str(w.message) == "noisy controller"]
    assert noisy and all(w.category is UserWarning and w.filename == __file__ for w in noisy)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="noisy controller")
        co.simulate_batch(scene, size=2, controllers=noisy_controller, workers=workers)
    assert not [w for w in shown if str(w.message) == "noisy controller"]


def test_mjcf_worlds_in_worker_processes_equal_the_worlds_here() -> None:
    """Evaluation copies under fork: box_plane worlds on the step as arrays (sap -o rows=model),
    in two processes and here, are the same numbers."""
    pytest.importorskip("mujoco")
    scene = co.load_scene(PROBLEMS / "mjcf" / "box_plane.xml")
    V0 = np.zeros((3, scene.system.nv))
    V0[:, 0] = [0.0, 0.5, 1.0]
    run = dict(formulation="sap", solver="newton", options={"rows": "model"}, duration=0.05)
    here = co.simulate_batch(scene, v0=V0, **run)  # type: ignore[arg-type]
    there = co.simulate_batch(scene, v0=V0, workers=2, **run)  # type: ignore[arg-type]
    np.testing.assert_array_equal(here.q, there.q)
    assert there.completed.all() and there.q[2, -1, 0] - there.q[0, -1, 0] > 1e-3
