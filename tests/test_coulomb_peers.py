"""experiments/coulomb_peers.py: Siconos's fc3d solvers through the peer runner (Debian's
python3-siconos under /usr/bin/python3; skipped without it) on one contact whose Coulomb answer is a
closed form, and the harness's rows on the same problem.

One contact, ``W = a I`` (a point of mass 1/a), ``q = [-g, v, 0]`` (approaching at ``g``, slipping
at ``v``): with ``mu g < v`` it slides (Coulomb: ``u_N = 0``, ``r_N = g / a``, ``r_T = -mu r_N``
along the slip, the slip left ``v - mu g``), with ``v < mu g`` it sticks (``u = 0``, ``r = -q / a``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))

from coulomb_peers import peer_pairs, solve_problem  # noqa: E402
from peers_ours import FAMILY  # noqa: E402
from peers_problems import load_problem  # noqa: E402
from peers_report import family_summary, fclib_error, ratio_rows  # noqa: E402
from peers_siconos import SiconosPeer, siconos_tolerance, siconos_version  # noqa: E402

from contactopt.programs.fclib import FclibLocal, write_fclib_problem  # noqa: E402

needs_siconos = pytest.mark.skipif(siconos_version() is None, reason="no siconos for /usr/bin/python3 "
                                "(apt-get install python3-siconos python3-h5py python3-scipy)")

A, G, MU = 2.0, 0.5, 0.4  # W = a I; approach g; mu


def one_contact(v: float) -> FclibLocal:
    return FclibLocal(W=sp.csc_matrix(A * np.eye(3)), q=np.array([-G, v, 0.0]), mu=np.array([MU]), spacedim=3)


def closed_form(v: float) -> np.ndarray:
    if v > MU * G:  # sliding: on the cone's edge, opposing the slip
        return np.array([G / A, -MU * G / A, 0.0])
    return np.array([G / A, -v / A, 0.0])  # sticking: the impulse that stops the point


@pytest.fixture(scope="module")
def peer() -> Iterator[SiconosPeer]:
    with SiconosPeer(timeout=60.0) as running:
        yield running


@needs_siconos
@pytest.mark.parametrize("v", [0.5, 0.1])  # mu g = 0.2: slides at 0.5, sticks at 0.1
def test_siconos_answers_the_closed_form(peer: SiconosPeer, v: float) -> None:
    problem = one_contact(v)
    runs = peer.solve(problem.W, problem.q, problem.mu, ["NSGS", "NSN-AC"], [1e-12], rounds=1)
    assert [run.solver for run in runs] == ["NSGS", "NSN-AC"]
    for run in runs:
        assert run.error == "" and run.info == 0 and run.r is not None
        # asked for 1e-12: the answer (impulses of order 0.1) to 1e-10
        np.testing.assert_allclose(run.r, closed_form(v), atol=1e-10)


@needs_siconos
def test_harness_rows(peer: SiconosPeer, tmp_path: Path) -> None:
    import h5py

    path = tmp_path / "one_contact.hdf5"
    with h5py.File(path, "w") as handle:
        write_fclib_problem(handle, one_contact(0.5))
    item = load_problem(path, "closed_form")
    assert item.error == "" and item.problem is not None
    tols = [1e-6, 1e-8]
    # ours through both paths: solve_coulomb (legacy) and co.solve on load_program(form="coulomb")
    rows = solve_problem(item, ["legacy_fixed_point", "nsn"], ["NSGS", "NSN-AC"], tols, peer, {}, rounds=2)
    assert [(r["side"], r["solver"], r["tol"]) for r in rows] == [
        ("ours", "legacy_fixed_point", 1e-6), ("ours", "legacy_fixed_point", 1e-8), ("ours", "nsn", 1e-6),
        ("ours", "nsn", 1e-8), ("siconos", "NSGS", 1e-6), ("siconos", "NSGS", 1e-8), ("siconos", "NSN-AC", 1e-6),
        ("siconos", "NSN-AC", 1e-8)]
    for row in rows:
        assert set(row) >= {"problem", "group", "contacts", "fclib_error", "success", "iterations", "us", "rounds"}
        assert row["problem"] == "closed_form/one_contact" and row["contacts"] == 1, row
        # FCLIB's error computed by the harness: both sides reach what they were asked
        assert row["success"] and row["fclib_error"] <= row["tol"] and row["us"] > 0 and row["rounds"] >= 1, row
    ratios = ratio_rows(rows, peer_pairs(["legacy_fixed_point", "nsn"], ["NSGS", "NSN-AC"]), FAMILY)
    assert len(ratios) == 8 and all(r["time_ratio"] == r["ours_us"] / r["siconos_us"] for r in ratios)
    summary = family_summary(ratios)
    same = [(s["ours"], s["siconos"], s["tol"]) for s in summary if s["same_family"]]
    assert same == [("nsn", "NSN-AC", 1e-6), ("nsn", "NSN-AC", 1e-8)]
    assert all((s["problems"], s["ours_success"], s["siconos_success"]) == (1, 1, 1) for s in summary)


def test_unreadable_file_is_a_row(tmp_path: Path) -> None:
    path = tmp_path / "broken.hdf5"
    path.write_bytes(b"not an HDF5 file")
    item = load_problem(path, "broken")
    assert item.problem is None and item.error
    rows = solve_problem(item, ["legacy_fixed_point"], ["NSGS"], [1e-8], None, {})
    assert len(rows) == 2 and all(not r["success"] and r["status"] == "not run" and r["message"] for r in rows)


@needs_siconos
def test_siconos_error_measure(peer: SiconosPeer) -> None:
    """The premise of ``siconos_tolerance``: Siconos's own error is ``||e|| / max(||q||, ||r||)``
    and FCLIB's ``||e|| / (1 + sqrt ||q||)`` of the same natural map ``e``; each solver stopped
    early (tol 1e-3) on a random 6-contact problem whose impulses outgrow ``q``, so that ``e`` is
    far from zero and the max is ``||r||``."""
    rng = np.random.default_rng(7)
    J = rng.normal(size=(18, 12))
    W = sp.csc_matrix(J @ J.T / 12 + 0.1 * np.eye(18))  # a Delassus-like SPD matrix
    q = rng.normal(size=18)
    q[::3] -= 2.0  # mostly approaching contacts
    problem = FclibLocal(W=W, q=q, mu=np.full(6, 0.5), spacedim=3)
    norm_q = np.linalg.norm(q)
    for run in peer.solve(problem.W, problem.q, problem.mu, ["NSGS", "NSN-AC"], [1e-3], rounds=1):
        assert run.r is not None
        error, norm_r = fclib_error(problem, run.r), np.linalg.norm(run.r)
        assert error > 1e-6 and norm_r > norm_q  # stopped before convergence; the max is ||r||
        # both rebuild e from r in floating point: equal to 1e-8 relative
        assert run.own_error * max(norm_q, norm_r) == pytest.approx(error * (1 + np.sqrt(norm_q)), rel=1e-8)
    assert siconos_tolerance(1e-8, q, "fclib") == pytest.approx(1e-8 * (1 + np.sqrt(norm_q)) / norm_q)
    assert siconos_tolerance(1e-8, q, "target") == 1e-8


def test_fixed_point_is_opt_in_and_runs_under_its_iteration_budget(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 40 item 4: fixed_point (150 s a pile problem, not converging in 100 iterations) is run
    only when named, then under ``--fixed-point-iterations``; the expected time is printed first."""
    import json

    from coulomb_peers import main
    from peers_ours import default_ours

    assert "fixed_point" not in default_ours()[0]
    out = tmp_path / "peers"
    assert main(["--scenes", "box_slide:0.003", "--problems", "--siconos", "", "--ours", "nsgs,fixed_point",
                 "--fixed-point-iterations", "2", "--tol", "1e-12", "--rounds", "1", "--out", str(out),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "coulomb_peers: 3 problems, ours nsgs, fixed_point at 1 tolerances: expected at most ~" in printed
    assert printed.index("expected at most") < printed.index("group")  # before the results
    rows = json.loads((out / "summary.json").read_text())["rows"]
    fixed = [row for row in rows if row["solver"] == "fixed_point"]
    assert len(fixed) == 3 and all(0 < row["iterations"] <= 2 for row in fixed)
