"""Many steps of the step as arrays in one compiled call (:mod:`contactopt.integrators.native_run`).

The compiled run calls the same compiled pieces as the step-by-step path (the rows' values,
Newton, the verdict) on the same numbers read from MuJoCo, so the two must agree to the last
bit; they are compared here to 1e-12 (states, impulses, row impulses, residuals) with the same
statuses, messages and iteration counts, on models that cover what the loop reads: Euler
damping, elliptic and pyramidal cones, condim 1/3/4/6, equality, limit and dry-friction rows, a
sparse Jacobian (nv >= 60), a held control, a step handed back to the step-by-step path, its
columns grown mid-run and a failed step. The layout of MuJoCo's structs the loop reads is
checked on a probe, and a wrong offset is caught there.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")
pytest.importorskip("numba")

from contactopt.integrators import native_run  # noqa: E402
from contactopt.integrators.native_step import NativeStepping  # noqa: E402
from contactopt.systems.mjcf import clib  # noqa: E402
from tests.test_mjcf_rows import suite_model  # noqa: E402

MJCF = Path(__file__).resolve().parent.parent / "problems" / "mjcf"
METHODS = {"sap": {"rows": "model"}, "regularized": {"params": "model", "form": "primal"}}


def both_runs(monkeypatch: pytest.MonkeyPatch, scene: co.Scene, formulation: str, steps: int,
              **keywords: Any) -> tuple[co.Trajectory, co.Trajectory]:
    """``(compiled run, step-by-step run)`` of ``scene``; the compiled one is checked to be compiled."""
    options = METHODS[formulation]
    stepper = NativeStepping(scene.system, formulation, "newton", scene.dt, options)
    controlled = keywords.get("controller") is not None
    held = np.zeros(scene.system.control_size) if controlled else None
    assert native_run.unavailable(stepper, held, None) == ""
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for forced in (False, True):
            if forced:
                monkeypatch.setattr(native_run, "unavailable", lambda *_: "the step-by-step path")
            runs.append(co.simulate(scene, formulation=formulation, solver="newton", duration=steps * scene.dt,
                                    options=options, **keywords))
    monkeypatch.undo()
    return runs[0], runs[1]


def assert_same_runs(compiled: co.Trajectory, stepwise: co.Trajectory) -> None:
    assert len(compiled.steps) == len(stepwise.steps)
    assert compiled.message == stepwise.message
    np.testing.assert_allclose(compiled.t, stepwise.t, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled.q, stepwise.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled.v, stepwise.v, rtol=0, atol=1e-12)
    for a, b in zip(compiled.steps, stepwise.steps, strict=True):
        assert (a.status, a.message, a.iterations, a.mujoco_contacts) == (b.status, b.message, b.iterations,
                                                                           b.mujoco_contacts)
        for name in ("impulses", "phi", "bilateral", "limits", "friction_loss", "control"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(dataclasses.astuple(a.residuals), dataclasses.astuple(b.residuals),
                                   rtol=1e-12, atol=1e-300)
        assert a.build_time > 0 and a.solve_time > 0


@pytest.mark.parametrize("formulation", list(METHODS))
@pytest.mark.parametrize("name", ["limited_arm.xml", "box_stack.xml", "tendon_gripper.xml", "position_arm.xml"])
def test_the_compiled_run_is_the_step_by_step_run(monkeypatch: pytest.MonkeyPatch, formulation: str,
                                                   name: str) -> None:
    """Own models: equality, joint and tendon limits, dof and tendon frictionloss, condim 1, 3, 4
    and 6 (limited_arm), a box stack's many contacts, a held keyframe control (position_arm)."""
    scene = co.load_scene(str(MJCF / name))
    keyframe = scene.system.model.key_ctrl  # type: ignore[attr-defined]
    control = {"type": "constant", "u": keyframe[0].tolist()} if keyframe.size else None
    compiled, stepwise = both_runs(monkeypatch, scene, formulation, 150, controller=control)
    assert compiled.completed
    if control is not None:
        np.testing.assert_array_equal(compiled.steps[-1].control, keyframe[0])
    assert_same_runs(compiled, stepwise)


@pytest.mark.parametrize("formulation", list(METHODS))
@pytest.mark.parametrize("name", ["cheetah", "manipulator", "humanoid_CMU", "quadruped"])
def test_on_dm_control_models(monkeypatch: pytest.MonkeyPatch, formulation: str, name: str) -> None:
    """cheetah: Euler's implicit damping (sap's A = M + h diag(d)); manipulator: elliptic cones;
    humanoid_CMU: nv = 62, MuJoCo's sparse Jacobian; quadruped: 12 filter activations driven by a
    sinusoid, advanced in the loop (each step's act equal too)."""
    scene = co.load_scene(suite_model(name))
    nu = scene.system.control_size
    law = {"type": "sinusoid", "amplitude": [0.5] * nu, "frequency": [3.0] * nu} if scene.system.na else None
    compiled, stepwise = both_runs(monkeypatch, scene, formulation, 80, controller=law)
    assert compiled.completed
    assert_same_runs(compiled, stepwise)
    np.testing.assert_allclose(compiled.act, stepwise.act, rtol=0, atol=1e-12)
    if scene.system.na:
        assert np.ptp(compiled.act, axis=0).max() > 0  # the activations moved


def test_a_step_the_kernel_hands_back_goes_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step the kernel does not take (its REFUSED code: a cone with a row scale <= 0 or an
    unknown row type, which MuJoCo's models do not produce: it floors friction at mjMINMU) is
    taken by the step-by-step path, and the run goes on in the kernel after it. Here the kernel
    is made to hand back steps 0, 7 and 8."""
    scene = co.load_scene(str(MJCF / "limited_arm.xml"))
    kernel = native_run.run_kernel
    handed: list[int] = []

    def handing_back(*arguments: Any) -> tuple[int, int]:
        first, count = arguments[-12], arguments[-11]
        for k in (0, 7, 8):
            if first <= k < first + count:
                if k == first:
                    handed.append(k)
                    return k, native_run.REFUSED
                return kernel(*arguments[:-12], first, k - first, *arguments[-10:])
        return kernel(*arguments)

    monkeypatch.setattr(native_run, "run_kernel", handing_back)
    compiled, stepwise = both_runs(monkeypatch, scene, "sap", 30)
    assert handed == [0, 7, 8] and compiled.completed
    assert_same_runs(compiled, stepwise)


def test_the_columns_grow_mid_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Room for one contact and one row a step at the start: the kernel stops, the columns double
    and the run goes on; nothing written before is lost."""
    scene = co.load_scene(str(MJCF / "box_stack.xml"))
    grown = []
    original = native_run._Columns.grow

    def counted(self: Any) -> None:
        grown.append(self.xs.shape[0])
        original(self)

    monkeypatch.setattr(native_run, "room", lambda data: (1, 1))
    monkeypatch.setattr(native_run._Columns, "grow", counted)
    compiled, stepwise = both_runs(monkeypatch, scene, "sap", 40)
    assert len(grown) >= 2
    assert_same_runs(compiled, stepwise)


def test_a_failed_step_is_recorded_and_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """One Newton iteration: the first step that needs more fails (max_iter reached), is recorded
    with its status and NaN impulses, and the run stops loud, as step by step."""
    scene = co.load_scene(str(MJCF / "box_stack.xml"))
    compiled, stepwise = both_runs(monkeypatch, scene, "sap", 20, solver_options={"max_iter": 1})
    last = len(compiled.steps) - 1
    assert not compiled.completed and len(compiled.q) == last + 1  # no state after the failed step
    assert [str(r.status) for r in compiled.steps] == ["optimal"] * last + ["max_iterations"]
    assert np.isnan(compiled.steps[-1].impulses).all()
    assert f"step {last} at t=" in compiled.message
    assert_same_runs(compiled, stepwise)


def test_what_the_kernel_does_not_run_is_said() -> None:
    """RK4, implicit integrators and a controller called between steps run step by step."""
    scene = co.load_scene(suite_model("acrobot"))
    stepper = NativeStepping(scene.system, "sap", "newton", scene.dt, {"rows": "model"})
    assert "Euler" in native_run.unavailable(stepper, None, None)
    scene = co.load_scene(str(MJCF / "servo_hand.xml"))
    stepper = NativeStepping(scene.system, "sap", "newton", scene.dt, {"rows": "model"})
    assert "Euler" in native_run.unavailable(stepper, None, None)
    scene = co.load_scene(str(MJCF / "position_arm.xml"))
    stepper = NativeStepping(scene.system, "sap", "newton", scene.dt, {"rows": "model"})
    assert "controller" in native_run.unavailable(stepper, None, lambda state: np.zeros(1))


def test_an_open_loop_controller_is_scheduled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``sinusoid`` controller's inputs are computed before the run and set in the loop: the
    same run as the step-by-step one, which calls the law at every step; each record keeps its u."""
    scene = co.load_scene(str(MJCF / "position_arm.xml"))
    nu = scene.system.control_size
    law = {"type": "sinusoid", "amplitude": [0.3] * nu, "frequency": [2.0] * nu, "offset": [0.1] * nu}
    compiled, stepwise = both_runs(monkeypatch, scene, "sap", 120, controller=law)
    assert compiled.completed
    assert_same_runs(compiled, stepwise)
    t = compiled.steps[37].t
    np.testing.assert_allclose(compiled.steps[37].control, 0.1 + 0.3 * np.sin(2 * np.pi * 2.0 * t), rtol=1e-14)


def test_a_python_controller_runs_step_by_step_with_the_same_numbers() -> None:
    """The same constant u as a Python function and as a ``constant`` table: the same run."""
    scene = co.load_scene(str(MJCF / "position_arm.xml"))
    u = np.array(scene.system.model.key_ctrl[0])  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = co.simulate(scene, formulation="sap", solver="newton", duration=50 * scene.dt,
                            options={"rows": "model"}, controller={"type": "constant", "u": u.tolist()})
        function = co.simulate(scene, formulation="sap", solver="newton", duration=50 * scene.dt,
                               options={"rows": "model"}, controller=lambda t, q, v: u)
    assert_same_runs(table, function)


def test_the_struct_layout_is_checked() -> None:
    """MuJoCo's layout reads every field the bindings give; one word off is caught and named."""
    found, why = clib.library(mujoco)
    assert found is not None, why
    data_type = clib._struct("mjData", *_introspect(), {})
    assert clib._check(mujoco, found, data_type) == ""
    shifted = dataclasses.replace(found, pointers=found.pointers + np.eye(1, found.pointers.size, 3, dtype=np.int64)[0])
    assert clib._check(mujoco, shifted, data_type) == "mjData.efc_J is not where the layout puts it"
    contact = found.contact.copy()
    contact[3] += 1
    assert clib._check(mujoco, dataclasses.replace(found, contact=contact), data_type) == \
        "mjContact.dim is not where the layout puts it"


def _introspect() -> tuple[Any, Any]:
    from mujoco.introspect import ast_nodes, structs

    return structs, ast_nodes



def test_the_plain_steps_are_those_the_verdict_leaves_alone() -> None:
    """:func:`native_records.plain` (the steps appended without a verdict call) against
    :func:`native_records.verdict` on every code and every side of each level: plain exactly
    where the verdict gives optimal with the kernel's own message."""
    from contactopt.integrators import native_records
    from contactopt.solvers.newton import kernels
    from contactopt.solvers.newton.solver import kernel_status

    codes, numbers = [], []
    for code in (kernels.CRITERION, kernels.COST_FLOOR, kernels.NO_DESCENT, kernels.MAX_ITER, kernels.NONFINITE,
                 kernels.NOT_PD):
        for relative in (0.0, 1e-7, 1e-6, 2e-6, 1e-2, 0.5, np.inf, np.nan):
            for gap in (0.0, np.nan):
                for data in (0.0, 1e-2, 0.5, np.nan):
                    codes.append(code)
                    numbers.append([1e-9, 1e-9, gap, 0.0, relative, data])
    codes_array, numbers_array = np.array(codes, dtype=np.int64), np.array(numbers)
    plain = native_records.plain(codes_array, numbers_array)
    for code, row, fine in zip(codes, numbers_array, plain, strict=True):
        status, message, _ = native_records.verdict(code, row, 100)
        untouched = str(status) == "optimal" and message == kernel_status(code, 100)[1]
        assert bool(fine) == untouched, (code, row)
    assert plain.any() and not plain.all()
