"""The compiled kernels of ``soc_general`` and ``soc_scaled`` cones (newton_kernels_cones): the
same projection and Hessian blocks as cone_projection.project on every regime, and the same
Newton trajectories as the NumPy path on robots with condim 4/6 contacts and elliptic cones."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.programs.cone_projection import ConeLayout, Group, project
from contactopt.solvers.newton import kernels
from contactopt.solvers.newton import kernels_cones as cones
from contactopt.solvers.newton import solver as newton
from contactopt.solvers.newton import sparse as newton_sparse

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
REGIMES = ("stick", "no_contact", "boundary_up", "boundary_down", "pole")


def random_blocks(rng: np.random.Generator, d: int, scaled: bool) -> tuple[ConeLayout, np.ndarray, np.ndarray,
                                                                          list[str]]:
    """A layout of one group of (d)-blocks, one block per regime and per tangential spread of
    R (up to 1e6, MuJoCo's elliptic rows of very different mobility), with ``y`` placed in
    each regime by construction (in the scaled variables ``y' = y / S``, ``R' = S^2 R``)."""
    regimes = [regime for regime in REGIMES for _ in range(4)]
    nb = len(regimes)
    rows = np.arange(nb * d).reshape(nb, d)
    spread = rng.choice([1.0, 1e2, 1e6], size=(nb, 1)) ** rng.uniform(0, 1, size=(nb, d))  # tangential R's ratios
    spread[:, 0] = 1.0
    R = 10.0 ** rng.uniform(-3, 1, size=(nb, d)) * spread
    if scaled:  # (1, mu_i / mu_0): torsional and rolling coefficients far below the sliding one
        scale = np.concatenate([np.ones((nb, 1)), 10.0 ** rng.uniform(-3, 0.5, size=(nb, d - 1))], axis=1)
        mu = np.ones(nb)
        group = Group("soc_scaled", rows, mu, scale)
    else:
        scale = np.ones((nb, d))
        mu = rng.uniform(0.1, 1.5, size=nb)
        group = Group("soc_general", rows, mu)
    Y = np.empty((nb, d))
    for b, regime in enumerate(regimes):
        yt = rng.normal(size=d - 1) * 10.0 ** rng.uniform(-2, 2)
        r = np.linalg.norm(yt)
        rt = np.linalg.norm(R[b, 1:] * scale[b, 1:] ** 2 * yt)  # ||R'_t y'_t||
        Rn = R[b, 0]
        yn = {"stick": r / mu[b] * rng.uniform(1.01, 3.0),
              "no_contact": -mu[b] * rt / Rn * rng.uniform(1.01, 3.0),
              "boundary_up": r / mu[b] * rng.uniform(0.01, 0.99),  # y'_n > 0: root below lambda_0
              "boundary_down": -mu[b] * rt / Rn * rng.uniform(0.01, 0.99),  # y'_n < 0: above lambda_0
              "pole": 0.0}[regime]
        Y[b] = np.concatenate([[yn], yt]) * scale[b]
    return ConeLayout((group,), nb * d), Y.reshape(-1), R.reshape(-1), regimes


def compiled_projection(layout: ConeLayout, y: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    blocks = kernels.block_arrays(layout)
    assert blocks is not None and np.all(blocks[2] == kernels.GENERAL)
    kernels.ensure_compiled()  # without numba: the same kernels as plain Python
    d = layout.groups[0].dim
    gamma, G = np.full(layout.m, np.nan), np.full((blocks[0].shape[0], d, d), np.nan)
    kernels.project_blocks(y, R, *blocks, gamma, G, True)
    gamma_only = np.full(layout.m, np.nan)
    kernels.project_blocks(y, R, *blocks, gamma_only, G.copy(), False)
    assert np.array_equal(gamma, gamma_only)
    return gamma, G


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("d", [3, 4, 6])
def test_compiled_projection_equals_the_numpy_projection(d: int, scaled: bool) -> None:
    # Same operations per block as the vectorized projection: gamma and G to rounding, 1e-12
    # of each block's size (the multiplier is solved to rounding either way; the NumPy loop
    # may take a few more steps on a converged block while others finish, which moves tau by
    # ulps). The regimes are also checked against their definitions.
    rng = np.random.default_rng(10 * d + scaled)
    layout, y, R, regimes = random_blocks(rng, d, scaled)
    with np.errstate(invalid="ignore"):  # the NumPy loop computes its pole lanes' 0 / 0, then drops them
        expected, (G_expected,) = project(layout, y, R)
    gamma, G = compiled_projection(layout, y, R)
    group = layout.groups[0]
    scale = group.scale if scaled else np.ones((len(regimes), d))
    for b, regime in enumerate(regimes):
        rows = group.rows[b]
        size = max(float(np.linalg.norm(expected[rows])), 1e-300)
        assert np.linalg.norm(gamma[rows] - expected[rows]) <= 1e-12 * size, (regime, b)
        assert np.linalg.norm(G[b] - G_expected[b]) <= 1e-12 * max(float(np.linalg.norm(G_expected[b])), 1e-300)
        h = gamma[rows] / scale[b]
        on_boundary = abs(np.linalg.norm(h[1:]) - group.mu[b] * h[0]) <= 1e-12 * np.linalg.norm(h)
        assert {"stick": np.array_equal(gamma[rows], y[rows]) and np.allclose(G[b], np.diag(1 / R[rows])),
                "no_contact": not gamma[rows].any() and not G[b].any(),
                "pole": on_boundary and h[0] > 0 and not G[b].any()}.get(regime, on_boundary and h[0] > 0), regime
        separated = cones.general_no_contact(y[rows] * R[rows], np.zeros(d), np.zeros(d), R[rows], scale[b], 0, d,
                                             float(group.mu[b]), 0.0)
        assert separated == (regime == "no_contact")


def held_controller(scene: co.Scene) -> dict[str, Any] | None:
    model = scene.system.model  # type: ignore[attr-defined]
    return {"type": "constant", "u": np.array(model.key_ctrl[0]).tolist()} if model.nkey and model.nu else None


def run(scene: co.Scene, formulation: str, options: dict[str, Any], steps: int) -> co.Trajectory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the robots' keyframes penetrate on purpose (issue 23)
        traj = co.simulate(scene, formulation=formulation, solver="newton", options=options,
                           duration=steps * scene.dt, controller=held_controller(scene))
    assert traj.completed, traj.message
    return traj


@pytest.mark.parametrize(("problem", "formulation", "options", "path"), [
    ("servo_hand.xml", "sap", {}, "dense"),  # condim 4 and 6: soc_scaled
    ("servo_hand.xml", "sap", {}, "sparse"),
    ("position_arm.xml", "regularized", {"form": "primal", "cone": "elliptic"}, "dense"),  # soc_general
])
def test_robots_take_the_compiled_path_with_the_numpy_trajectory(
        problem: str, formulation: str, options: dict[str, Any], path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Same algorithm, same iterates: only rounding differs; 20 steps of a grasp (contacts
    # sticking and sliding) stay within 1e-9 of the NumPy path's velocities, and the compiled
    # path ran (the NumPy loop _minimize never called; the sparse path when forced).
    if not kernels.AVAILABLE:
        pytest.skip("numba is not installed: only the NumPy path exists")
    scene = co.load_scene(PROBLEMS / "mjcf" / problem)
    calls = {"numpy": 0, "sparse": 0, "layouts": set()}
    numpy_loop, sparse_loop, blocks_of = newton._minimize, newton_sparse.minimize, kernels.block_arrays

    def numpy_spy(*args: Any, **kwargs: Any) -> Any:
        calls["numpy"] += 1
        return numpy_loop(*args, **kwargs)

    def sparse_spy(*args: Any, **kwargs: Any) -> Any:
        calls["sparse"] += 1
        return sparse_loop(*args, **kwargs)

    def blocks_spy(layout: ConeLayout) -> Any:
        calls["layouts"] |= {group.kind for group in layout.groups}
        return blocks_of(layout)

    monkeypatch.setattr(newton, "_minimize", numpy_spy)
    monkeypatch.setattr(newton_sparse, "minimize", sparse_spy)
    monkeypatch.setattr(kernels, "block_arrays", blocks_spy)
    if path == "sparse":
        monkeypatch.setattr(newton, "DENSE_KERNEL_MAX", 0)
    compiled = run(scene, formulation, options, 20)
    assert calls["numpy"] == 0 and (calls["sparse"] > 0) == (path == "sparse")
    assert calls["layouts"] & {"soc_general", "soc_scaled"}
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    plain = run(scene, formulation, options, 20)
    assert calls["numpy"] > 0
    assert [r.iterations for r in compiled.steps] == [r.iterations for r in plain.steps]
    scale = max(1.0, float(np.abs(plain.v).max()))
    assert float(np.abs(compiled.v - plain.v).max()) <= 1e-9 * scale
    assert float(np.abs(compiled.q - plain.q).max()) <= 1e-9 * max(1.0, float(np.abs(plain.q).max()))
