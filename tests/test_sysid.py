"""The system-identification and gradient experiments (issue 26, item 4): the sysid of a hidden
``mu`` from a noise-free trajectory recovers it to 1e-3 relative, and ``gradients.py --quick``
runs and finds our gradients equal to central finite differences."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))

import sysid  # noqa: E402  (an experiment script, imported from its folder)


def test_sysid_recovers_a_hidden_mu_from_a_noise_free_trajectory() -> None:
    # the free box slide (ccp, dt 0.02 s, 8 steps, all sliding) recorded with mu = 0.5, fitted
    # from mu = 0.3: noise-free, so the residual vanishes at the truth and Gauss-Newton reaches it
    problem = sysid.problems()["slide"]()
    fit = sysid.identify(problem, "ccp")
    assert problem.truth == {"mu": 0.5} and problem.start == {"mu": 0.3}
    assert abs(fit.found["mu"] - 0.5) <= 1e-3 * 0.5
    assert fit.cost <= 1e-12  # the recorded trajectory is reproduced, not merely approached
    assert fit.njev >= 1  # the sensitivities' Jacobian was used


@pytest.mark.slow
def test_sysid_recovers_mu_and_mass_of_the_pushed_box() -> None:
    # a known push makes the mass observable (push_scenes.py): both recovered from mu 0.3, mass 1.5
    problem = sysid.problems(duration=0.3)["box"]()
    fit = sysid.identify(problem, "ccp")
    for name, true in problem.truth.items():
        assert abs(fit.found[name] - true) <= 1e-3 * true, (name, fit.found)


@pytest.mark.slow
def test_gradients_quick_run_agrees_with_finite_differences(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "gradients.py"), "--quick"], capture_output=True,
                          text=True, timeout=300, cwd=EXPERIMENTS.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((EXPERIMENTS / "out" / "gradients" / "summary.json").read_text())
    rows = summary["rows"]
    assert {row["formulation"] for row in rows} == {"lcp", "anitescu", "ccp", "regularized", "sap"}
    # our gradient is the derivative of the simulated map: central differences agree everywhere
    assert all(row["= fd"] for row in rows), [r for r in rows if not r["= fd"]]
    by = {(r["formulation"], r["input"], r["output"]): r for r in rows}
    for formulation in ("lcp", "anitescu", "ccp"):  # hard contact: the sticking box's gradient vanishes
        assert abs(by[(formulation, "F=3 N", "x_T")]["ours"]) <= 1e-9
    # lcp (Lemke, exact pivoting) reproduces the closed forms: dx_T/dvx = T when the ball misses the
    # wall, dz_T/dvx = mu T when it slides on it, dx_T/dF within the scheme's O(h) of the continuous one
    assert by[("lcp", "vx=1.2 m/s", "x_T")]["ours"] == pytest.approx(0.6, rel=1e-9)
    assert by[("lcp", "vx=1.9 m/s", "z_T")]["ours"] == pytest.approx(0.5 * 0.6, rel=1e-9)
    assert by[("lcp", "F=8 N", "x_T")]["ours"] == pytest.approx(by[("lcp", "F=8 N", "x_T")]["closed"], rel=0.02)
    assert (EXPERIMENTS / "out" / "gradients" / "gradients.png").stat().st_size > 0
