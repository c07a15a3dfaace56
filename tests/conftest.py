"""Shared fixtures: the repository's problems folder and a headless matplotlib."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

# Pin OpenBLAS's kernel family and thread count before NumPy loads it: the saved reference
# trajectories (tests/test_reference_trajectories.py) replay the dense pipeline's box and
# textbook steps at 1e-9, and OpenBLAS picks its dgemm kernel by CPU at load time (AVX-512
# machines take the SkylakeX kernels) and splits work by thread count, both of which change
# summation order. The references were recorded with the AVX2 (Haswell) kernels and 2 threads,
# which every x86-64 machine since 2013 can run; they also pass under other kernels today,
# and the pin keeps the margin from depending on the machine CI draws.
if "numpy" not in sys.modules and platform.machine() in ("x86_64", "AMD64"):
    with open("/proc/cpuinfo") if os.path.exists("/proc/cpuinfo") else open(os.devnull) as cpuinfo:
        avx2 = " avx2" in cpuinfo.read()
    if avx2:
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import matplotlib
import pytest
from hypothesis import HealthCheck, settings

import contactopt as co

matplotlib.use("Agg")

# Property-based tests (tests/test_fuzz.py): a bounded budget by default (the fuzz file in a
# few seconds on 2 cores), the same examples on every run (derandomized: CI never meets a new
# example by chance); HYPOTHESIS_PROFILE=slow runs 10^4 random cases per property.
settings.register_profile("default", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("slow", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = ROOT / "problems"


@pytest.fixture(autouse=True)
def _problems_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTOPT_PROBLEMS", os.fspath(PROBLEMS))


#: Steps of the :func:`box_run` fixture.
BOX_RUN_STEPS = 10


@pytest.fixture(scope="module")
def box_run() -> tuple[co.Scene, co.Trajectory]:
    """The first ten steps of the box slide under anitescu/clarabel (the exports' input)."""
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    traj = co.simulate(scene, formulation="anitescu", solver="clarabel", duration=BOX_RUN_STEPS * scene.dt)
    assert traj.completed and len(traj.steps) == BOX_RUN_STEPS
    return scene, traj
