"""Extending contactopt without editing it: ``register`` and the entry-point groups.

The plugin package under ``tests/plugin_pkg`` (a frictionless LCP formulation, an LCP solver
by enumeration, a spring cart) is installed with pip into a temporary folder, never into the
environment, and used through ``python -m contactopt`` with that folder on PYTHONPATH.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import warnings
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import contactopt as co
from contactopt.core import plugins
from contactopt.core.errors import RegistrationError
from contactopt.formulations.lcp import StewartTrinkleLCP
from contactopt.systems.cart import Cart

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = Path(__file__).parent / "plugin_pkg"


def _pip_install(source: Path, target: Path) -> None:
    # setuptools < 70.1 builds wheels only with the `wheel` package; without it pip must build
    # in an isolated environment (fetching setuptools from the configured index), never in ours.
    can_build_here = importlib.util.find_spec("wheel") is not None
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
               *(["--no-build-isolation"] if can_build_here else []), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.skip(f"could not build the plugin package here: {done.stderr.strip()[-300:]}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed demo plugin and a broken plugin's metadata."""
    work = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(PLUGIN, work / "src")  # pip builds in the source tree: use a copy
    target = work / "site"
    _pip_install(source, target)
    broken = target / "broken_demo-0.0.dist-info"  # declares a solver whose module does not exist
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-demo\nVersion: 0.0\n")
    (broken / "entry_points.txt").write_text("[contactopt.solvers]\nbroken = contactopt_no_such_module:SPEC\n")
    return target


def _contactopt(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "contactopt", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_installed_plugin_is_listed_and_a_broken_one_only_warns(site: Path) -> None:
    done = _contactopt(site, "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.split()[:1] == ["normal_lcp"] for line in lines)
    assert any(line.split()[:1] == ["enumlcp"] and "installed" in line for line in lines)
    assert any(line.split()[:1] == ["spring_cart"] and "k" in line for line in lines)
    assert "'broken' = 'contactopt_no_such_module:SPEC'" in done.stderr  # the warning names it
    assert "Traceback" not in done.stderr


def test_plugin_runs_through_compare(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    done = _contactopt(site, "compare", str(PLUGIN / "spring_cart.toml"), "--formulations", "normal_lcp,lcp",
                       "--solvers", "enumlcp,lemke", "--executor", "serial", "--no-plot", "--no-progress",
                       "--out", str(out))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "table.csv")
    assert sorted(zip(table["formulation"], table["solver"], strict=True)) == [
        ("lcp", "enumlcp"), ("lcp", "lemke"), ("normal_lcp", "enumlcp"), ("normal_lcp", "lemke")]
    assert (table["status"] == "completed").all()
    traces = pd.read_parquet(out / "traces.parquet")
    reference = traces[(traces["formulation"] == "lcp") & (traces["solver"] == "lemke")]["q[0]"].to_numpy()
    for (_, _), group in traces.groupby(["formulation", "solver"]):
        # Same one-variable LCP every step (the cart has a normal-only contact, so the
        # Stewart-Trinkle LCP has no friction rows); both solvers solve it exactly up to rounding.
        np.testing.assert_allclose(group["q[0]"].to_numpy(), reference, rtol=0, atol=1e-12)
    # The spring (rest position 5 cm behind the wall) pulls the cart onto the wall, where the
    # perfectly inelastic scheme stops it: it ends at x = 0 up to rounding.
    assert abs(reference[-1]) < 1e-12
    assert reference.min() > -1e-12


def test_plugin_runs_and_rests_with_the_spring_force(site: Path, tmp_path: Path) -> None:
    done = _contactopt(site, "run", str(PLUGIN / "spring_cart.toml"), "--no-plot", "--no-progress",
                       "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    traj = co.Trajectory.load(tmp_path / "trajectory.npz")
    assert traj.info["formulation"] == "normal_lcp" and traj.info["solver"] == "enumlcp"
    # At rest against the wall the contact balances the spring: impulse h k |a| per step.
    h, k, a = 0.01, 100.0, -0.05
    np.testing.assert_allclose(traj.steps[-1].impulses[0, 0], h * k * abs(a), rtol=1e-9)
    assert abs(traj.v[-1, 0]) < 1e-12


def test_enumeration_solver_agrees_with_lemke(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN))
    from contactopt_demo_plugin.enumeration import enumerate_lcp

    rng = np.random.default_rng(15)
    for n in (1, 3, 6, 9):
        A = rng.standard_normal((n, n))
        M = A @ A.T + 0.1 * np.eye(n)  # positive definite: the LCP has exactly one solution
        q = rng.standard_normal(n)
        z, _ = enumerate_lcp(M, q)
        reference = co.solve(co.LCP(M, q), "lemke")
        assert z is not None and reference.status is co.Status.OPTIMAL
        np.testing.assert_allclose(z, reference.x, atol=1e-9)  # unique solution, both exact methods


def _fresh(module: object, monkeypatch: pytest.MonkeyPatch, attribute: str) -> plugins.Registry:
    """Give ``module`` a copy of its registry for one test (register() changes it)."""
    original = getattr(module, attribute)
    copy = plugins.Registry(original.kind, original.group, dict(original.items()), original._adapt)
    monkeypatch.setattr(module, attribute, copy)
    return copy


def test_register_adds_and_refuses_duplicates(monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(co.formulations, monkeypatch, "_REGISTRY")
    _fresh(co.systems, monkeypatch, "_REGISTRY")

    class Sticky(StewartTrinkleLCP):
        name = "sticky_lcp"
        description = "the LCP under another name"

    assert co.formulations.register(Sticky) is Sticky
    assert "sticky_lcp" in co.formulations.names()
    from contactopt import integrators

    assert "sticky_lcp" in integrators.names()
    with pytest.raises(RegistrationError, match="'sticky_lcp' is already registered"):
        co.formulations.register(Sticky)
    with pytest.raises(RegistrationError, match="taken by a built-in method"):
        co.formulations.register(type("Ode", (StewartTrinkleLCP,), {"name": "ode"}))
    with pytest.raises(RegistrationError, match="expected a Formulation"):
        co.formulations.register(Cart)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="'cart' is already registered"):
        co.systems.register(Cart)
    with pytest.raises(RegistrationError, match="not usable"):
        co.systems.register(type("Bad", (Cart,), {"type_name": "Two Words"}))
    with pytest.raises(RegistrationError, match="already registered"):
        co.solvers.register(co.solvers.spec("lemke"))


def test_registered_formulation_simulates_like_the_original(monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(co.formulations, monkeypatch, "_REGISTRY")

    @co.formulations.register
    class Renamed(StewartTrinkleLCP):
        name = "renamed_lcp"
        description = "the LCP under another name"

    scene = co.load_scene("cart_wall")
    ours = co.simulate(scene, formulation="renamed_lcp", solver="lemke")
    theirs = co.simulate(scene, formulation="lcp", solver="lemke")
    np.testing.assert_array_equal(ours.q, theirs.q)  # the same code on the same input


def test_broken_and_duplicate_entry_points_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    group = "contactopt.formulations"
    points = [EntryPoint("missing", "contactopt_no_such_module:X", group),
              EntryPoint("twice", "contactopt.formulations.lcp:StewartTrinkleLCP", group),
              EntryPoint("wrong", "contactopt.systems.cart:Cart", group)]
    monkeypatch.setattr(plugins, "entry_points", lambda group: points)
    original = co.formulations._REGISTRY
    registry = plugins.Registry("formulation", group, dict(original.items()), original._adapt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(registry) == list(original)  # nothing added, nothing lost
    messages = [str(w.message) for w in caught if issubclass(w.category, plugins.PluginWarning)]
    assert len(messages) == 3
    assert "'missing' = 'contactopt_no_such_module:X'" in messages[0] and "ModuleNotFoundError" in messages[0]
    assert "'twice'" in messages[1] and "'lcp' is already registered (built in)" in messages[1]
    assert "'wrong'" in messages[2] and "expected a Formulation" in messages[2]


def test_the_worked_example_of_docs_extending_md_runs(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "extending.md").read_text()
    python = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    toml = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    (tmp_path / "spring_cart.toml").write_text(toml[0])
    # Closed form at rest: x = 0 and the contact force balances the spring, k |a| = 5 N.
    checks = "assert abs(traj.q[-1, 0]) < 1e-12\nassert abs(traj.steps[-1].impulses[0, 0] / scene.dt - 5.0) < 1e-9\n"
    (tmp_path / "example.py").write_text("\n".join([*python[:2], checks]))
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
