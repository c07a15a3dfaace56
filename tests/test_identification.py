"""contactopt.identification: lumped parameters, regressors, identifiable sets and estimates
(Tedrake 2020, "Parameter Estimation").

Tolerances: the regressor identities are exact algebra, so they hold to rounding (1e-12
relative for the hand-derived textbook regressors; 1e-10 absolute against ``mj_inverse``,
whose columns are exact differences of an affine function taken with small steps, ~1e-12
observed). Noise-free estimates from the scheme's own discrete equation are exact up to the
least-squares solve (~1e-13 observed), checked at 1e-8 as the issue asks.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest

import contactopt as co
from contactopt.identification import (
    IdentificationError,
    energy_regressor,
    estimate,
    identifiable,
    lumped_parameters,
    regressor,
)
from contactopt.scenes.loading import Scene
from contactopt.systems import CartesianPendulum, CartPole, DoublePendulum, FourBar, MjcfSystem, Pendulum

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "problems" / "mjcf" / "two_link_arm.xml"

TEXTBOOK = [
    (Pendulum, {"m": 1.3, "l": 0.7}),
    (DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3}),
    (CartPole, {"mc": 2.0, "mp": 0.4, "l": 0.6}),
    (CartesianPendulum, {"m": 0.8, "l": 1.0}),
    (FourBar, {"a": 0.2, "b": 0.6, "c": 0.5, "d": 0.5, "m1": 1.2, "m2": 0.9, "m3": 1.4}),
]


def _system(cls: type, params: dict[str, float]) -> object:
    return cls.from_config({"parameters": params}, {})


@pytest.mark.parametrize(("cls", "params"), TEXTBOOK, ids=[c.__name__ for c, _ in TEXTBOOK])
def test_textbook_regressor_is_the_manipulator_equation(cls: type, params: dict[str, float]) -> None:
    """``Y alpha = M vdot + C v - tau_g`` and ``h alpha = T + U`` at random states (Tedrake 2020,
    "Lumped parameters"): the system's own M, C, tau_g and energy, not the regressor's algebra."""
    system = _system(cls, params)
    lumped = lumped_parameters(system)
    assert len(lumped.names) == lumped.values.size == regressor(system, np.zeros(system.nq), np.zeros(system.nv),
                                                                  np.zeros(system.nv)).shape[1]
    rng = np.random.default_rng(7)
    for _ in range(25):
        q, v, a = rng.normal(scale=2.0, size=(3, system.nv))
        expected = system.M(q) @ a + system.C(q, v) @ v - system.tau_g(q)
        got = regressor(system, q, v, a) @ lumped.values
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
        kinetic, potential = system.energy(q, v)
        assert energy_regressor(system, q, v) @ lumped.values == pytest.approx(kinetic + potential, rel=1e-12,
                                                                                abs=1e-12)


def test_double_pendulum_lumped_names_and_values() -> None:
    """Tedrake 2022's point-mass double pendulum: five lumped parameters, by name and value."""
    lumped = lumped_parameters(_system(DoublePendulum, {"m1": 1.0, "m2": 2.0, "l1": 3.0, "l2": 5.0}))
    assert lumped.as_dict() == {"(m1+m2)*l1^2": 27.0, "m2*l2^2": 50.0, "m2*l1*l2": 30.0, "(m1+m2)*l1": 9.0,
                                "m2*l2": 10.0}


def _arm_with_armature(tmp_path: Path) -> MjcfSystem:
    """The two-link arm with an off-centre, rotated inertia and armature on the elbow: every
    conversion of :mod:`contactopt.identification.mjcf` is exercised."""
    xml = ARM.read_text().replace(
        '<joint name="elbow" type="hinge" axis="0 1 0"/>',
        '<joint name="elbow" type="hinge" axis="0 1 0" armature="0.02"/>'
        '<inertial pos="0.2 0.01 -0.02" quat="0.9 0.1 0.3 0.2" mass="0.7" diaginertia="0.01 0.02 0.025"/>')
    path = tmp_path / "arm.xml"
    path.write_text(xml)
    return MjcfSystem(path)


def test_mjcf_regressor_equals_mj_inverse(tmp_path: Path) -> None:
    """``Y phi`` equals MuJoCo's ``qfrc_inverse`` (constraints off: no contact at these states
    matters, the model's own M, bias, damping and armature) at random states, and ``h phi`` its
    energy; the ten standard parameters per body plus damping and armature."""
    system = _arm_with_armature(tmp_path)
    lumped = lumped_parameters(system)
    assert len(lumped.names) == 2 * 10 + 2 + 1  # two bodies, damping on both joints, armature on one
    assert "forearm.m*cx" in lumped.names and "elbow.armature" in lumped.names
    model = system.model
    data = mujoco.MjData(model)
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, v, a = rng.normal(size=(3, system.nv))
        data.qpos[:], data.qvel[:], data.qacc[:] = q, v, a
        mujoco.mj_inverse(model, data)
        np.testing.assert_allclose(regressor(system, q, v, a) @ lumped.values, data.qfrc_inverse, rtol=0, atol=1e-10)
        mujoco.mj_fwdPosition(model, data)
        mujoco.mj_energyPos(model, data)
        mujoco.mj_energyVel(model, data)
        assert energy_regressor(system, q, v) @ lumped.values == pytest.approx(float(data.energy.sum()), abs=1e-10)


def test_mjcf_regressor_of_a_floating_robot_equals_mj_inverse() -> None:
    """The bundled quadruped (a free joint, twelve hinges, armature; bodies whose inertial frame
    MuJoCo marks as the body's own, ``body_sameframe``): ``Y phi`` equals ``mj_inverse`` at random
    states to 1e-10 of its size, every one of the 98 columns set through MuJoCo's body arrays."""
    system = MjcfSystem(ROOT / "problems" / "mjcf" / "quadruped.xml")
    lumped = lumped_parameters(system)
    assert len(lumped.names) == 9 * 10 + 8  # nine moving bodies; armature on the eight leg hinges
    model = system.model
    assert np.any(np.asarray(model.body_sameframe) != 0)
    data = mujoco.MjData(model)
    model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    rng = np.random.default_rng(5)
    q0, _ = system.default_state()
    for _ in range(3):
        q = q0.copy()
        mujoco.mj_integratePos(model, q, rng.normal(size=system.nv), 0.3)  # a valid configuration
        v, a = rng.normal(size=(2, system.nv))
        data.qpos[:], data.qvel[:], data.qacc[:] = q, v, a
        mujoco.mj_inverse(model, data)
        expected = np.array(data.qfrc_inverse)
        got = regressor(system, q, v, a) @ lumped.values
        assert np.max(np.abs(got - expected)) <= 1e-10 * np.max(np.abs(expected))


def test_mjcf_body_parameters_are_the_parallel_axis_theorem(tmp_path: Path) -> None:
    """The forearm's mass, first moment and inertia about its frame's origin from the MJCF's
    ``<inertial>``: ``I_O = R diag(I) R^T + m (|c|^2 1 - c c^T)``, written out independently."""
    system = _arm_with_armature(tmp_path)
    values = lumped_parameters(system).as_dict()
    m, c = 0.7, np.array([0.2, 0.01, -0.02])
    quat = np.array([0.9, 0.1, 0.3, 0.2]) / np.linalg.norm([0.9, 0.1, 0.3, 0.2])
    w, x, y, z = quat
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    inertia = R @ np.diag([0.01, 0.02, 0.025]) @ R.T + m * (c @ c * np.eye(3) - np.outer(c, c))
    assert values["forearm.m"] == pytest.approx(m, rel=1e-12)
    assert [values[f"forearm.m*c{k}"] for k in "xyz"] == pytest.approx(m * c, rel=1e-12)
    assert values["forearm.Ixy"] == pytest.approx(inertia[0, 1], rel=1e-12)
    assert values["forearm.Iyy"] == pytest.approx(inertia[1, 1], rel=1e-12)


def _random_data(system: object, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    nv = system.nv  # type: ignore[attr-defined]
    return {"t": np.arange(n) * 0.01, "q": rng.normal(size=(n, system.nq)),  # type: ignore[attr-defined]
            "v": rng.normal(size=(n, nv)), "vdot": rng.normal(size=(n, nv)),
            "u": np.zeros((n, system.control_size))}  # type: ignore[attr-defined]


def test_double_pendulum_all_five_identifiable() -> None:
    """Tedrake 2022's point-mass double pendulum: 5 lumped parameters and all 5 identifiable."""
    system = _system(DoublePendulum, {"m1": 1.0, "m2": 1.0, "l1": 1.0, "l2": 1.0})
    basis = identifiable(system, _random_data(system, 30, 0))
    assert basis.rank == 5 and len(basis.lumped) == 5 and basis.dependent == ()
    assert sorted(basis.names) == sorted(basis.lumped.names)
    assert basis.null.shape == (5, 0) and np.isfinite(basis.condition)


def _planar_chain(tmp_path: Path, links: int, gravity: str) -> MjcfSystem:
    """``links`` hinges about parallel ``y`` axes, each link a capsule of length 0.3 with an
    off-axis centre (so that no first moment vanishes by symmetry)."""
    body = ""
    for i in reversed(range(links)):
        pos = "0 0 0" if i == 0 else "0.3 0 0"
        body = (f'<body name="link{i}" pos="{pos}"><joint name="j{i}" type="hinge" axis="0 1 0"/>'
                f'<geom type="capsule" fromto="0 0 0.01 0.3 0 0.02" size="0.02" mass="{1.0 + 0.2 * i}"/>'
                f"{body}</body>")
    path = tmp_path / f"chain{links}.xml"
    path.write_text(f'<mujoco><option gravity="{gravity}"/><worldbody>{body}</worldbody></mujoco>')
    return MjcfSystem(path)


@pytest.mark.parametrize("links", [2, 3])
def test_planar_chain_base_count(tmp_path: Path, links: int) -> None:
    """A planar chain of revolute joints (Gautier and Khalil's base parameters): of a link's ten
    standard parameters only ``m, m c_x, m c_z, I_yy`` act in the plane, each link's mass
    regroups onto its parent (``I_yy,j-1 += L^2 m_j``, ``m c_x,j-1 += L m_j``), leaving ``3n``
    base parameters with gravity in the plane and ``3n - 2`` without gravity (the first link's
    first moments never act)."""
    vertical = _planar_chain(tmp_path, links, "0 0 -9.81")
    basis = identifiable(vertical, _random_data(vertical, 20 * links, 1))
    assert basis.rank == 3 * links
    names = basis.lumped.names
    regroup = np.zeros(len(names))  # one more kg on link 1, less L^2 = 0.09 on link 0's I_yy, less L = 0.3 on m c_x
    regroup[[names.index("link1.m"), names.index("link0.Iyy"), names.index("link0.m*cx")]] = [1.0, -0.09, -0.3]
    in_null, *_ = np.linalg.lstsq(basis.null, regroup, rcond=None)
    assert np.linalg.norm(basis.null @ in_null - regroup) < 1e-9  # an unidentifiable direction
    assert np.linalg.norm(basis.combination @ regroup) < 1e-9  # no base parameter sees it
    outer = "".join(f" + 0.09*link{j}.m" for j in range(1, links))  # every outer link's mass at L = 0.3
    assert f"link0.Iyy{outer}" in basis.names  # Gautier and Khalil's ZZ_1R = ZZ_1 + L^2 (M_2 + ... + M_n)
    assert f"link0.m*cx{outer.replace('0.09', '0.3')}" in basis.names
    horizontal = _planar_chain(tmp_path, links, "0 0 0")
    assert identifiable(horizontal, _random_data(horizontal, 20 * links, 2)).rank == 3 * links - 2


def _simulate(system: object, controller: object, q0: np.ndarray, dt: float = 0.01, duration: float = 1.0,
              v0: np.ndarray | None = None) -> co.Trajectory:
    nv = system.nv  # type: ignore[attr-defined]
    scene = Scene(system=system, q0=q0, v0=np.zeros(nv) if v0 is None else v0, dt=dt, duration=duration,
                  formulation="gauss", solver="clarabel")
    traj = co.simulate(scene, controller=controller)
    assert traj.completed
    return traj


def _drive(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.array([3.0 * np.sin(2.0 * t) + np.cos(5.0 * t), 2.0 * np.sin(3.3 * t) - 0.5])


def test_equation_error_recovers_double_pendulum_exactly() -> None:
    """Noise-free simulated data with the scheme's discrete equation: every base parameter to
    1e-8 relative, and the predicted torques on a fresh trajectory (another drive, another
    start) to 1e-8 of their size."""
    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    traj = _simulate(system, _drive, np.array([0.3, -0.2]))
    est = estimate(system, traj)
    truth = est.identifiable.values
    assert est.identifiable.rank == 5
    np.testing.assert_allclose(est.values, truth, rtol=1e-8)
    fresh = _simulate(system, lambda t, q, v: np.array([np.cos(1.7 * t), -np.sin(4.1 * t)]),
                      np.array([-0.6, 0.9]), duration=0.5)
    h = fresh.dt
    vdot = np.diff(fresh.v, axis=0) / h
    predicted = est.predict(fresh.q[:-1], fresh.v[:-1], vdot)
    measured = fresh.controls() @ system.B.T
    assert np.max(np.abs(predicted - measured)) <= 1e-8 * np.max(np.abs(measured))
    assert all(est.consistent.values()) and len(est.consistent) == 5


def test_equation_error_cartpole_underactuated() -> None:
    """The cart-pole with a force on the cart only: the unactuated row still holds (``F = 0``),
    and its three lumped parameters are recovered to 1e-8."""
    system = _system(CartPole, {"mc": 2.0, "mp": 0.4, "l": 0.6})
    traj = _simulate(system, lambda t, q, v: np.array([5.0 * np.sin(3.0 * t)]), np.array([0.0, 0.4]))
    est = estimate(system, traj)
    assert est.identifiable.rank == 3
    np.testing.assert_allclose(est.values, est.identifiable.values, rtol=1e-8)


def test_equation_error_with_bilateral_impulses() -> None:
    """The Cartesian pendulum: the rod's recorded bilateral impulses enter ``F`` through
    ``H^T Lambda / h``, and the mass comes back to 1e-8."""
    system = _system(CartesianPendulum, {"m": 0.8, "l": 1.0})
    traj = _simulate(system, lambda t, q, v: np.array([np.sin(2.0 * t), 0.0]), np.array([np.sin(0.5), -np.cos(0.5)]))
    est = estimate(system, traj)
    assert est.values == pytest.approx([0.8], rel=1e-8)


CHAIN = Path(__file__).resolve().parents[1] / "problems" / "mjcf" / "identification_chain.xml"


def test_equation_error_mjcf_chain_with_damping_and_armature(tmp_path: Path) -> None:
    """An MJCF two-link chain with motors (one geared), joint damping and armature, simulated
    (MuJoCo's Euler: damping at ``v_{k+1}``): 3 n + 2 = 8 base parameters (the base joint's
    armature regroups with the first link's ``I_yy``, which alone it shares a row with), each
    recovered to 1e-8."""
    system = MjcfSystem(CHAIN)
    traj = _simulate(system, lambda t, q, v: np.array([np.sin(3.0 * t), np.cos(5.0 * t)]), np.array([0.3, -0.2]))
    est = estimate(system, traj)
    assert est.identifiable.rank == 8
    names, combination = est.identifiable.lumped.names, est.identifiable.combination
    armature, inertia = combination[:, names.index("j0.armature")], combination[:, names.index("link0.Iyy")]
    np.testing.assert_allclose(armature, inertia, atol=1e-9)  # they enter only as their sum
    assert np.any(armature != 0.0)
    np.testing.assert_allclose(est.values, est.identifiable.values, rtol=1e-8)


def test_applied_force_closes_the_step_equation() -> None:
    """``regressor @ values`` at a step's ``(q_k, v_k, (v_{k+1} - v_k) / h)`` equals
    ``applied_force`` of its control and bilateral impulses (the Cartesian pendulum's rod), to
    rounding of the step's own solve."""
    from contactopt.identification import applied_force

    system = _system(CartesianPendulum, {"m": 0.8, "l": 1.0})
    traj = _simulate(system, lambda t, q, v: np.array([np.sin(2.0 * t), 0.0]), np.array([np.sin(0.5), -np.cos(0.5)]),
                     duration=0.2)
    values = lumped_parameters(system).values
    for k, record in enumerate(traj.steps):
        h = traj.t[k + 1] - traj.t[k]
        needed = regressor(system, traj.q[k], traj.v[k], (traj.v[k + 1] - traj.v[k]) / h) @ values
        given = applied_force(system, traj.q[k], traj.v[k], u=record.control, bilateral=record.bilateral, dt=h)
        np.testing.assert_allclose(needed, given, rtol=1e-9, atol=1e-9)
    with pytest.raises(IdentificationError, match="dt > 0"):
        applied_force(system, traj.q[0], traj.v[0], bilateral=traj.steps[0].bilateral)


def test_equation_error_four_bar_with_loop_closure_impulses() -> None:
    """The four-bar (one degree of freedom, three coordinates): with its two loop-closure rows'
    recorded impulses in ``F``, all seven lumped parameters of the tree are identifiable and come
    back to 1e-8."""
    system = _system(FourBar, {"m1": 1.2, "m2": 0.9, "m3": 1.4, "crank_speed": 2.0})
    q0, v0 = system.default_state()
    traj = _simulate(system, lambda t, q, v: np.array([2.0 * np.sin(3.0 * t) + 1.0]), q0, v0=v0, duration=2.0)
    est = estimate(system, traj)
    assert est.identifiable.rank == 7
    np.testing.assert_allclose(est.values, est.identifiable.values, rtol=1e-8)


def _prescribed(system: DoublePendulum, n: int = 2001, duration: float = 4.0) -> dict[str, np.ndarray]:
    """Recorded data of a prescribed smooth motion (sums of sines) with the exact torques
    ``u = M qdd + C qd - tau_g`` of the system: a mapping ``t, q, v, u`` as from a robot log."""
    t = np.linspace(0.0, duration, n)
    w = np.array([[1.3, 2.1], [0.7, 3.4]])
    amp = np.array([[0.8, 0.3], [0.6, 0.4]])
    q = np.stack([amp[i] @ np.sin(np.outer(w[i], t)) for i in range(2)], axis=1)
    v = np.stack([(amp[i] * w[i]) @ np.cos(np.outer(w[i], t)) for i in range(2)], axis=1)
    a = np.stack([-(amp[i] * w[i] ** 2) @ np.sin(np.outer(w[i], t)) for i in range(2)], axis=1)
    u = np.array([system.M(q[k]) @ a[k] + system.C(q[k], v[k]) @ v[k] - system.tau_g(q[k]) for k in range(n)])
    return {"t": t, "q": q, "v": v, "u": u, "vdot": a}


def test_energy_method_recovers_the_same_values_without_accelerations() -> None:
    """The power form (Tedrake 2020, "Parameter Estimation": power formulations): ``Delta H =
    int u . v dt`` over windows, no accelerations, recovers the base parameters that the
    equation error recovers. Simpson's rule on h = 2 ms is O(h^4): 1e-8 relative."""
    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    data = _prescribed(system)
    truth = lumped_parameters(system).values
    energy = estimate(system, {k: data[k] for k in ("t", "q", "v", "u")}, method="energy")
    assert energy.identifiable.rank == 5
    order = list(energy.identifiable.independent)
    np.testing.assert_allclose(energy.values, truth[order], rtol=1e-8)
    equation = estimate(system, data)  # the exact accelerations given as vdot
    np.testing.assert_allclose(equation.values, truth[list(equation.identifiable.independent)], rtol=1e-10)


def test_recorded_data_without_accelerations_use_the_stated_filter() -> None:
    """A log ``t, q, v, u`` without ``vdot``: accelerations by ``numpy.gradient`` (second-order
    central differences), so the estimate's error is O(h^2): a step four times smaller divides
    it by about 16 (between 10 and 20), and at h = 2 ms it is below 2e-5 (measured 9.3e-6)."""
    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    errors = []
    for n in (501, 2001):
        log = {k: v for k, v in _prescribed(system, n=n).items() if k != "vdot"}
        est = estimate(system, log)
        errors.append(np.max(np.abs(est.values / est.identifiable.values - 1.0)))
    assert 10.0 < errors[0] / errors[1] < 20.0
    assert errors[1] < 2e-5


def test_covariance_is_calibrated_over_50_seeds() -> None:
    """Gaussian noise on the measured torques (equation error, known regressor): the error of
    each base parameter divided by its reported standard error is standard normal, so over 50
    seeds x 5 parameters nearly all are within 3 (P(|z| > 3) = 0.27 %: at most 3 of 250
    allowed) and their mean square is 1 within its sampling spread (chi-square, 250 dof:
    1 +- 0.27 at three standard deviations)."""
    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    data = _prescribed(system, n=401)
    truth = lumped_parameters(system).values
    sigma = 0.05
    z = []
    for seed in range(50):
        noisy = dict(data)
        noisy["u"] = data["u"] + np.random.default_rng(seed).normal(scale=sigma, size=data["u"].shape)
        est = estimate(system, noisy)
        z.extend((est.values - truth[list(est.identifiable.independent)]) / est.standard_errors)
    z_arr = np.array(z)
    assert np.sum(np.abs(z_arr) > 3.0) <= 3
    assert abs(np.mean(z_arr**2) - 1.0) < 0.27
    stated = estimate(system, noisy, noise=sigma)
    assert stated.sigma == sigma and est.sigma == pytest.approx(sigma, rel=0.1)


@pytest.mark.slow
def test_energy_covariance_is_calibrated_over_50_seeds() -> None:
    """The energy method with Gaussian noise on the measured torques: the window integrals'
    errors are correlated and of unequal variance (``S = C diag(|B^T v_k|^2) C^T``), which the
    generalized least squares whitens, so the error over the reported standard error is
    standard normal with the stated noise (50 seeds x 5 parameters: at most 3 of 250 beyond 3,
    mean square 1 +- 0.27 as in the equation error's test), and Student's t with 35 degrees of
    freedom with the noise estimated from the residuals (40 windows, 5 parameters: mean square
    35/33 = 1.06, same band; measured 1.05 and 1.10; ordinary least squares gave 1.41, with
    1.8 on the worst parameter). 3 to 10 s (100 estimates): slow."""
    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    data = {k: v for k, v in _prescribed(system, n=401).items() if k != "vdot"}
    truth = lumped_parameters(system).values
    sigma = 0.05
    for stated in (sigma, None):
        z = []
        for seed in range(50):
            noisy = {**data, "u": data["u"] + np.random.default_rng(seed).normal(scale=sigma, size=data["u"].shape)}
            est = estimate(system, noisy, method="energy", noise=stated, window=10)
            z.extend((est.values - truth[list(est.identifiable.independent)]) / est.standard_errors)
        z_arr = np.array(z)
        assert np.sum(np.abs(z_arr) > 3.0) <= 3
        assert abs(np.mean(z_arr**2) - (1.0 if stated else 35.0 / 33.0)) < 0.27


def test_bad_arguments_are_refused() -> None:
    system = _system(Pendulum, {"m": 1.0, "l": 1.0})
    data = _random_data(system, 10, 0)
    with pytest.raises(IdentificationError, match="method must be one of"):
        estimate(system, data, method="simulation")
    with pytest.raises(IdentificationError, match="noise must be"):
        estimate(system, data, noise=-1.0)
    with pytest.raises(IdentificationError, match="no lumped parameters for a 'point_mass'"):
        lumped_parameters(co.systems.get("point_mass").from_config({"parameters": {"m": 1.0}}, {}))
    with pytest.raises(IdentificationError, match="data has no 'q'"):
        identifiable(system, {"t": [0.0, 1.0], "v": [[0.0], [1.0]]})
    with pytest.raises(IdentificationError, match="shape"):
        identifiable(system, {**data, "q": np.zeros((3, 1))})
    with pytest.raises(IdentificationError, match="takes recorded data"):
        estimate(system, _simulate(system, lambda t, q, v: np.array([np.sin(t)]), np.zeros(1), duration=0.1),
                 method="energy")
    with pytest.raises(IdentificationError, match="tolerance"):
        identifiable(system, data, tolerance=2.0)
    arm = MjcfSystem(ARM)  # damped joints: the energy rows would miss the dissipated power
    with pytest.raises(IdentificationError, match="dissipate"):
        estimate(arm, _random_data(arm, 30, 0), method="energy")


def test_facade_exposes_the_module() -> None:
    assert co.identification.estimate is estimate and "identification" in dir(co)


# slow: the default suite's excitation check is the cart-pole's (the same Must-show line)
@pytest.mark.slow
def test_excitation_lowers_the_condition_number_and_drives_simulate() -> None:
    """Swevers et al. 1997 (Tedrake 2020, "Trajectory design"): the optimized Fourier series has
    a lower condition number of the stacked base regressor than its random start and than one
    sine per joint of the same amplitudes and base frequency; it keeps its limits at the design
    samples; as a controller it tracks its reference in ``simulate`` and the run's data give the
    base parameters to 1e-8."""
    from contactopt.identification import excitation, stacked_condition

    system = _system(DoublePendulum, {"m1": 1.1, "m2": 0.7, "l1": 0.9, "l2": 1.3})
    limits = {"q": 1.0, "v": 4.0, "u": 40.0}
    ex = excitation(system, 2.0, harmonics=3, limits=limits, samples=30, max_iterations=30)
    times = np.linspace(0.0, 2.0, 30, endpoint=False)
    q, v, a = ex.reference(times)
    assert np.all(np.abs(q - ex.q0) <= 1.0 + 1e-6) and np.all(np.abs(v) <= 4.0 + 1e-6)
    u = np.array([regressor(system, q[k], v[k], a[k]) @ lumped_parameters(system).values for k in range(30)])
    assert np.all(np.abs(u) <= 40.0 + 1e-6)
    amplitude = np.max(np.abs(q - ex.q0), axis=0)
    w = 2.0 * np.pi / 2.0
    single = stacked_condition(system, ex.q0 + np.outer(np.sin(w * times), amplitude),
                               np.outer(w * np.cos(w * times), amplitude),
                               np.outer(-w * w * np.sin(w * times), amplitude), ex.columns)
    assert ex.condition < 0.5 * ex.initial
    assert ex.condition < 0.01 * single
    assert ex.condition == pytest.approx(stacked_condition(system, q, v, a, ex.columns), rel=1e-12)
    q0, v0 = ex.initial_state()
    traj = _simulate(system, ex, q0, duration=2.0, v0=v0)
    assert np.max(np.abs(traj.q - ex.reference(traj.t)[0])) < 0.05  # PD tracking of the reference
    est = estimate(system, traj)
    np.testing.assert_allclose(est.values, est.identifiable.values, rtol=1e-8)


def test_excitation_of_the_underactuated_cartpole() -> None:
    """The cart-pole (a force on the cart only): the input's Fourier series, the motion by
    simulating the system (Swevers et al. 1997's criterion, the inputs parametrized). The design
    lowers the stacked condition number below that of one sine of the same amplitude (both
    measured on the ``co.simulate`` runs' own data, as ``estimate`` sees them); the limits
    hold at every step of the simulated run (the design's steps are ``co.simulate``'s contact-free
    steps: they agree to rounding, 1e-12); the run's data give the three lumped parameters to
    1e-8. ``dt = 40 ms`` and two harmonics keep the design short (50 steps per objective
    evaluation, 5 coefficients with the constant)."""
    from contactopt.identification import excitation

    system = _system(CartPole, {"mc": 1.0, "mp": 0.3, "l": 0.5})
    limits = {"q": [0.5, np.inf], "v": [2.0, 8.0], "u": 10.0}  # cart within 0.5 m, pole angle free
    ex = excitation(system, 2.0, harmonics=2, limits=limits, samples=30, dt=0.04, max_iterations=30)
    assert ex.parametrize == "input" and ex.coefficients.shape == (1, 2, 2) and ex.u0 is not None
    q0, v0 = ex.initial_state()
    run = _simulate(system, ex, q0, dt=0.04, duration=2.0, v0=v0)
    _, q, v = ex.motion()
    np.testing.assert_allclose(run.q, q, atol=1e-12)  # the design's motion is the simulated one
    np.testing.assert_allclose(run.v, v, atol=1e-12)
    u = run.controls()
    assert np.all(np.abs(run.q[:, 0] - q0[0]) <= 0.5 + 1e-6)  # SLSQP keeps its constraints to ~1e-9
    assert np.all(np.abs(run.v) <= np.array([2.0, 8.0]) + 1e-6) and np.all(np.abs(u) <= 10.0 + 1e-6)
    amplitude = float(np.max(np.abs(u)))
    single = _simulate(system, lambda t, q, v: np.array([amplitude * np.sin(np.pi * t)]), q0, dt=0.04,
                       duration=2.0, v0=v0)
    designed, sine = identifiable(system, run).condition, identifiable(system, single).condition
    assert ex.feasible and ex.u0 is not None
    assert designed < 0.5 * sine  # measured 1.84 against 4.58
    assert designed < 0.5 * ex.initial  # and against its random start (6.0)
    est = estimate(system, run)
    np.testing.assert_allclose(est.values, lumped_parameters(system).values[list(est.identifiable.independent)],
                               rtol=1e-8)


@pytest.mark.slow
def test_excitation_of_a_free_body_holds_it_against_gravity() -> None:
    """A free joint (the free body of ``identification_free_body.xml``, its six motors on the
    six dofs): the input series' constants can hold the body against gravity, so the velocity
    limit that free fall alone breaks within 0.51 s (|v| <= 5 m/s) is met at every step (the
    start breaks it: SLSQP starts outside). The stacked condition number falls by more than 100
    (measured 4.0e3 to 1.8); ``co.simulate`` of the design, quaternions included, is its motion
    to 1e-12. 5 to 15 s (40 SLSQP iterations over 25 coefficients): slow."""
    from contactopt.identification import excitation

    system = MjcfSystem(FREE_BODY)
    ex = excitation(system, 1.0, harmonics=2, limits={"v": 5.0, "u": 30.0}, samples=20, dt=0.05, max_iterations=40)
    assert ex.feasible and ex.u0 is not None and ex.u0[2] > 0.0  # an upward force against gravity
    assert ex.condition < 0.01 * ex.initial
    q0, v0 = ex.initial_state()
    run = _simulate(system, ex, q0, dt=0.05, duration=1.0, v0=v0)
    np.testing.assert_allclose(run.q, ex.motion()[1], atol=1e-12)
    assert np.all(np.abs(run.v) <= 5.0 + 1e-6) and np.all(np.abs(run.controls()) <= 30.0 + 1e-6)
    assert identifiable(system, run).rank == 10


def test_excitation_refuses_bad_arguments() -> None:
    from contactopt.identification import excitation

    cartpole = _system(CartPole, {"mc": 1.0, "mp": 0.2, "l": 0.5})
    with pytest.raises(IdentificationError, match="fully actuated"):
        excitation(cartpole, 2.0, parametrize="reference")
    with pytest.raises(IdentificationError, match="parametrize must be one of"):
        excitation(cartpole, 2.0, parametrize="torque")
    with pytest.raises(IdentificationError, match=r"limits\['u'\] must be a number or 1 numbers"):
        excitation(cartpole, 2.0, limits={"u": [1.0, 2.0]})
    with pytest.raises(IdentificationError, match="whole number of steps"):
        excitation(cartpole, 2.0, dt=0.03)
    with pytest.raises(IdentificationError, match="q0 must be 2 finite numbers"):
        excitation(cartpole, 2.0, q0=[0.0, 0.0, 1.0])
    with pytest.raises(IdentificationError, match="seed must be an integer"):
        excitation(cartpole, 2.0, seed=-1)
    with pytest.raises(IdentificationError, match="v0 applies to parametrize='input'"):
        excitation(_system(Pendulum, {"m": 1.0, "l": 1.0}), 2.0, v0=[0.0])
    with pytest.raises(IdentificationError, match="unknown limit"):
        excitation(_system(Pendulum, {"m": 1.0, "l": 1.0}), 2.0, limits={"torque": 1.0})
    with pytest.raises(IdentificationError, match="positive"):
        excitation(_system(Pendulum, {"m": 1.0, "l": 1.0}), 2.0, limits={"q": -1.0})


def test_mu_and_mass_of_a_pushed_box_from_recorded_impulses() -> None:
    """The MJCF pushed box (slide joints), dropped from 3 cm and pushed back and forth by its
    motor: in the air, then sliding, sticking and sliding back. From the recorded normal
    impulses alone (the tangential ones are what mu sets), with the friction at the next
    velocity's direction (the LCP's maximum dissipation), mass and mu come back to 1e-6; the
    sticking steps are left out, the free-flight ones kept."""
    from contactopt.identification import estimate_friction

    system = MjcfSystem(ROOT / "problems" / "mjcf" / "pushed_box.xml", detection_margin=0.0)
    system = system.with_parameters({"box.mass": 1.7, "mu": 0.35})
    scene = Scene(system=system, q0=np.array([0.0, 0.0, 0.03]), v0=np.zeros(3), dt=0.002, duration=0.6,
                  formulation="lcp", solver="lemke")
    traj = co.simulate(scene, controller=lambda t, q, v: np.array([7.0 * np.sin(8.0 * t)]))
    assert traj.completed
    est = estimate_friction(system, traj)
    assert est.names == ("box.m", "mu")  # slide joints: the mass alone of the ten, and mu
    assert est.sliding > 50 and est.free > 20 and est.dropped > 20  # makes, breaks, sticks
    np.testing.assert_allclose(est.values, [1.7, 0.35], rtol=1e-6)
    assert est.mu == pytest.approx(0.35, rel=1e-6)


def test_rigid3d_regressor_is_its_newton_euler_equation() -> None:
    """``rigid3d`` bodies (a box and a sphere of ``problems/box_stack.toml``-like scenes): the ten
    standard parameters per body, ``Y phi = M vdot - tau`` of the system's own dynamics and
    ``h phi = T + U`` at random states (random orientations) to 1e-12; a free body's wrench
    identifies all ten (Atkeson, An and Hollerbach 1986: a rigid body's full wrench determines
    its ten inertial parameters)."""
    from contactopt.core.arrays import to_dense

    system = co.systems.get("rigid3d").from_config({
        "gravity": [0.0, 0.0, -9.81],
        "bodies": [{"name": "box", "shape": "box", "size": [0.1, 0.2, 0.3], "mass": 1.3, "position": [0, 0, 1]},
                   {"name": "ball", "shape": "sphere", "size": [0.2], "mass": 0.7, "position": [1, 0, 1]}]}, {})
    lumped = lumped_parameters(system)
    assert len(lumped.names) == 20 and lumped.names[:2] == ("box.m", "box.m*cx")
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = rng.normal(size=system.nq)
        for b in range(2):
            q[7 * b + 3 : 7 * b + 7] /= np.linalg.norm(q[7 * b + 3 : 7 * b + 7])
        v, a = rng.normal(size=(2, system.nv))
        dyn = system.dynamics(q, v)
        expected = to_dense(dyn.M) @ a - dyn.tau
        np.testing.assert_allclose(regressor(system, q, v, a) @ lumped.values, expected, rtol=1e-12,
                                   atol=1e-12 * np.abs(expected).max())
        kinetic, potential = system.energy(q, v)
        assert energy_regressor(system, q, v) @ lumped.values == pytest.approx(kinetic + potential, rel=1e-12,
                                                                                abs=1e-12)
    n = 20
    states = rng.normal(size=(n, system.nq))
    for b in range(2):
        states[:, 7 * b + 3 : 7 * b + 7] /= np.linalg.norm(states[:, 7 * b + 3 : 7 * b + 7], axis=1, keepdims=True)
    data = {"t": np.arange(n) * 0.01, "q": states, "v": rng.normal(size=(n, system.nv)),
            "vdot": rng.normal(size=(n, system.nv)), "u": np.zeros((n, 0))}
    assert identifiable(system, data).rank == 20


def test_rigid3d_regressor_equals_mj_inverse_of_the_same_body(tmp_path: Path) -> None:
    """A rigid3d box against MuJoCo's ``mj_inverse`` of an MJCF free body with the same mass
    and principal inertia at its frame's origin (the peer): with ``w_world = R w_body`` (and
    ``wd_world = R wd_body``, since ``w_body x w_body = 0``), every one of the ten columns equals
    MuJoCo's, the torque rows rotated, ``Y_rigid3d = diag(1, R) Y_mjcf``, to 1e-10 (the MJCF
    columns are exact differences, ~1e-12)."""
    from contactopt.core.arrays import to_dense
    from contactopt.systems.geometry import quat_to_matrix

    system = co.systems.get("rigid3d").from_config({
        "gravity": [0.0, 0.0, -9.81],
        "bodies": [{"name": "box", "shape": "box", "size": [0.1, 0.2, 0.3], "mass": 1.3, "position": [0, 0, 1]}]}, {})
    inertia = system.bodies[0].inertia
    path = tmp_path / "box.xml"
    path.write_text('<mujoco><option gravity="0 0 -9.81"/><worldbody><body name="box"><freejoint/>'
                    f'<inertial pos="0 0 0" mass="1.3" diaginertia="{inertia[0]} {inertia[1]} {inertia[2]}"/>'
                    "</body></worldbody></mujoco>")
    peer = MjcfSystem(path)
    assert lumped_parameters(peer).names == lumped_parameters(system).names
    np.testing.assert_allclose(lumped_parameters(peer).values, lumped_parameters(system).values, rtol=1e-12)
    model = peer.model
    data = mujoco.MjData(model)
    rng = np.random.default_rng(12)
    for _ in range(5):
        q = rng.normal(size=7)
        q[3:] /= np.linalg.norm(q[3:])
        R = quat_to_matrix(q[3:])
        v_body, a_body = rng.normal(size=(2, 6))
        rotate = np.eye(6)
        rotate[3:, 3:] = R
        Y = regressor(system, q, rotate @ v_body, rotate @ a_body)
        np.testing.assert_allclose(Y, rotate @ regressor(peer, q, v_body, a_body), rtol=0, atol=1e-10)
        data.qpos[:], data.qvel[:], data.qacc[:] = q, v_body, a_body
        mujoco.mj_inverse(model, data)
        np.testing.assert_allclose(Y @ lumped_parameters(system).values, rotate @ data.qfrc_inverse, rtol=0,
                                   atol=1e-10)
        dyn = system.dynamics(q, rotate @ v_body)
        np.testing.assert_allclose(to_dense(dyn.M) @ (rotate @ a_body) - dyn.tau, rotate @ data.qfrc_inverse,
                                   rtol=0, atol=1e-10)


# slow: the default suite's mu-and-mass check is the MJCF pushed box's (the same Must-show line)
@pytest.mark.slow
def test_mu_and_mass_of_a_sliding_rigid3d_box() -> None:
    """``problems/box_slide.toml`` (a rigid3d cube launched at 1 m/s on its four bottom corners,
    mu = 0.5, 1 kg) under the LCP: the recorded normal impulses carry the weight, so the mass is
    observable without a push; mass and mu come back to 1e-6 from the sliding steps (the
    sticking ones after it stops are left out), and the first moments it sees are zero (the
    frame is at the centre of mass)."""
    from contactopt.identification import estimate_friction

    scene = co.load_scene(ROOT / "problems" / "box_slide.toml")
    traj = co.simulate(scene, formulation="lcp", solver="lemke", duration=0.3)
    est = estimate_friction(scene.system, traj)
    values = dict(zip(est.names, est.values, strict=True))
    assert values["box.m"] == pytest.approx(1.0, rel=1e-6) and est.mu == pytest.approx(0.5, rel=1e-6)
    assert est.sliding > 150 and est.dropped > 50
    assert all(abs(value) < 1e-9 for name, value in values.items() if "m*c" in name)


FREE_BODY = ROOT / "problems" / "mjcf" / "identification_free_body.xml"


def _plate(tmp_path: Path) -> MjcfSystem:
    """The free body of ``identification_free_body.xml`` made a thin plate (0.2 x 0.1 x 0.002 m,
    1 kg) off the body origin: its inertia about the centre nearly meets the triangle
    inequality ``I_zz <= I_xx + I_yy`` (flat), so noise easily takes an estimate outside."""
    xml = FREE_BODY.read_text().replace('size="0.1 0.1 0.1" mass="2"', 'size="0.1 0.05 0.001" mass="1" '
                                        'pos="0.02 -0.01 0.005"')
    path = tmp_path / "plate.xml"
    path.write_text(xml)
    return MjcfSystem(path)


def test_mjcf_regressor_is_linear_for_a_lone_free_body(tmp_path: Path) -> None:
    """``Y`` of the nominal free body (a 2 kg cube, which MuJoCo marks as a "simple" body whose
    mass matrix it takes from compile-time constants) times the plate's parameters equals
    ``mj_inverse`` of the plate's own model to 1e-10: the regressor is the inverse dynamics'
    linear map, not the nominal model's; likewise for the pushed box's slide joints (mass 1 -> 1.7).
    Random data of a free body identify all ten parameters (Atkeson, An and Hollerbach 1986)."""
    cases = [(MjcfSystem(FREE_BODY), _plate(tmp_path))]
    box = MjcfSystem(ROOT / "problems" / "mjcf" / "pushed_box.xml", detection_margin=0.0)
    cases.append((box, box.with_parameters({"box.mass": 1.7})))
    rng = np.random.default_rng(4)
    for nominal, truth in cases:
        assert np.any(np.asarray(nominal.model.body_simple) != 0)  # the shortcut is there to be defeated
        values = lumped_parameters(truth).values
        model = truth.model
        data = mujoco.MjData(model)
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
        q0, _ = nominal.default_state()
        for _ in range(5):
            q = nominal.integrate(q0, rng.normal(size=nominal.nv), 1.0)
            v, a = rng.normal(size=(2, nominal.nv))
            data.qpos[:], data.qvel[:], data.qacc[:] = q, v, a
            mujoco.mj_inverse(model, data)
            np.testing.assert_allclose(regressor(nominal, q, v, a) @ values, data.qfrc_inverse, rtol=0, atol=1e-10)
    free = cases[0][0]
    assert identifiable(free, _free_body_data(free, lumped_parameters(free).values, 20, 0, 1.0, 0.0)).rank == 10


def _free_body_data(system: MjcfSystem, truth: np.ndarray, n: int, seed: int, spin: float,
                    noise: float) -> dict[str, np.ndarray]:
    """A log of ``n`` random states of the free body, angular velocities and accelerations
    scaled by ``spin`` (small: poorly excited inertia), with the exact wrench of the parameters
    ``truth`` (its six motors act on the six dofs, ``qfrc_actuator = u``) plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    q0, _ = system.default_state()
    q = np.array([system.integrate(q0, rng.normal(size=6), 1.0) for _ in range(n)])
    v, a = rng.normal(size=(2, n, 6))
    v[:, 3:] *= spin
    a[:, 3:] *= spin
    u = np.array([regressor(system, q[k], v[k], a[k]) @ truth for k in range(n)])
    return {"t": np.arange(n) * 0.01, "q": q, "v": v, "vdot": a, "u": u + noise * rng.normal(size=u.shape)}


def _prediction_error(est: object, data: dict[str, np.ndarray]) -> float:
    predicted = est.predict(data["q"], data["v"], data["vdot"])  # type: ignore[attr-defined]
    return float(np.sqrt(np.mean((predicted.reshape(data["u"].shape) - data["u"]) ** 2)))


def test_enforced_consistency_keeps_the_pseudo_inertia_psd(tmp_path: Path) -> None:
    """``consistency="enforce"`` (Wensing, Kim and Slotine 2017; the log-Cholesky fit of Rucker
    and Wensing 2022) on the free body, estimated with the nominal cube's model (2 kg), the data
    from the plate (1 kg). Noise-free: the truth both ways, to 1e-8 (measured 1e-15). Twenty
    samples with little rotation and torque noise 0.02 (seed 4): the unconstrained pseudo-inertia
    has a negative eigenvalue (a triangle inequality fails; so it does for each of seeds 0-7);
    the enforced one is positive semidefinite, its lumped parameters give its base parameters,
    its residual is at most 2 % above the unconstrained one (the least-squares optimum; measured
    0.4 %), and on fresh noise-free data its prediction error is no larger (measured 0.023
    against 0.027)."""
    nominal = MjcfSystem(FREE_BODY)
    truth = lumped_parameters(_plate(tmp_path)).values
    clean = _free_body_data(nominal, truth, 30, 0, 1.0, 0.0)
    for consistency in ("report", "enforce"):
        est = estimate(nominal, clean, consistency=consistency)
        assert est.consistency == consistency and est.identifiable.rank == 10
        np.testing.assert_allclose(est.values, truth[list(est.identifiable.independent)], rtol=1e-8, atol=1e-12)
        assert all(est.consistent.values())
    noisy = _free_body_data(nominal, truth, 20, 4, 0.3, 0.02)
    free, enforced = estimate(nominal, noisy), estimate(nominal, noisy, consistency="enforce")
    key = "body: pseudo-inertia positive semidefinite"
    assert free.consistent[key] is False and free.lumped is None
    assert all(enforced.consistent.values()) and enforced.consistent[key] is True
    assert enforced.lumped is not None
    np.testing.assert_allclose(enforced.identifiable.combination @ enforced.lumped, enforced.values, rtol=1e-12)
    assert free.residual <= enforced.residual <= 1.02 * free.residual
    fresh = _free_body_data(nominal, truth, 100, 99, 1.0, 0.0)
    assert _prediction_error(enforced, fresh) <= _prediction_error(free, fresh)


def test_enforced_consistency_keeps_textbook_lumped_parameters_positive() -> None:
    """The pendulum's ``m l^2`` and ``m l`` (estimated with a nominal m = l = 1, the data from
    m = 1.3, l = 0.7). Noise-free: the truth both ways, to 1e-8. A small swing at one
    frequency (``thetadd = -w^2 theta`` nearly parallel to ``g sin(theta)``: poorly excited)
    with torque noise 0.05, seed 8: the unconstrained fit has both negative; the enforced one
    has both positive, a residual within 1 % of the unconstrained one (measured 0.3 %) and a
    prediction error on a fresh, larger swing 100 times smaller (3.9 against 387)."""
    nominal = _system(Pendulum, {"m": 1.0, "l": 1.0})
    truth = np.array([1.3 * 0.7**2, 1.3 * 0.7])

    def swing(amplitude: float, w: float, noise: float, seed: int, n: int) -> dict[str, np.ndarray]:
        t = np.linspace(0.0, 2.0, n)
        q, v, a = amplitude * np.sin(w * t), amplitude * w * np.cos(w * t), -amplitude * w * w * np.sin(w * t)
        u = np.array([regressor(nominal, [q[k]], [v[k]], [a[k]]) @ truth for k in range(n)])
        u += noise * np.random.default_rng(seed).normal(size=u.shape)
        return {"t": t, "q": q[:, None], "v": v[:, None], "vdot": a[:, None], "u": u}

    for consistency in ("report", "enforce"):
        np.testing.assert_allclose(estimate(nominal, swing(1.0, 3.0, 0.0, 0, 50), consistency=consistency).values,
                                   truth, rtol=1e-8)
    noisy = swing(0.05, 4.0, 0.05, 8, 20)
    free, enforced = estimate(nominal, noisy), estimate(nominal, noisy, consistency="enforce")
    assert not any(free.consistent.values()) and np.all(free.values < 0)
    assert all(enforced.consistent.values()) and len(enforced.consistent) == 2 and np.all(enforced.values > 0)
    assert free.residual <= enforced.residual <= 1.01 * free.residual
    fresh = swing(1.0, 2.0, 0.0, 0, 200)
    assert _prediction_error(enforced, fresh) < 0.02 * _prediction_error(free, fresh)  # measured 0.010


def test_consistency_argument_is_checked() -> None:
    system = _system(Pendulum, {"m": 1.0, "l": 1.0})
    data = _random_data(system, 10, 0)
    with pytest.raises(IdentificationError, match="consistency must be one of 'report', 'enforce'"):
        estimate(system, data, consistency="strict")
    with pytest.raises(IdentificationError, match="consistency='enforce' applies to"):
        estimate(system, data, method="simulation_error", consistency="enforce")
