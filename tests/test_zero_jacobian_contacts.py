"""Contact candidates whose Jacobian block is zero are skipped by every formulation
(:func:`contactopt.formulations.common.active_contacts`), not refused: in
``tests/data/welded_overlap.xml`` two spheres welded to one sliding crate overlap by 6 cm, so
their rigid row would read ``0 >= -phi/h`` (infeasible). The crate's motion must equal the same
model's with the pair disabled, since an impulse acts only through ``J^T lambda = 0``; the
tolerance 1e-9 is the solvers' own convergence on the floor contacts, the same in both runs."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

MODEL = Path(__file__).resolve().parent / "data" / "welded_overlap.xml"
STEPS = 5

CASES = [("gauss", "clarabel", {}), ("lcp", "lemke", {}), ("anitescu", "clarabel", {}), ("ccp", "clarabel", {}),
         ("regularized", "clarabel", {}), ("regularized", "newton", {"form": "primal"}),
         ("regularized", "newton", {"form": "primal", "cone": "elliptic"}), ("sap", "newton", {}),
         ("coulomb", "fixed_point", {})]


def run(path: Path, formulation: str, solver: str, options: dict[str, object]) -> co.Trajectory:
    scene = co.load_scene(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        return co.simulate(scene, formulation=formulation, solver=solver, duration=STEPS * scene.dt, options=options)


@pytest.mark.parametrize(("formulation", "solver", "options"), CASES)
def test_a_welded_overlapping_pair_exerts_nothing(tmp_path: Path, formulation: str, solver: str,
                                                  options: dict[str, object]) -> None:
    without = tmp_path / "without_pair.xml"
    text = MODEL.read_text()
    without.write_text(text.replace('<pair name="welded" geom1="left" geom2="right"/>', ""))
    welded = run(MODEL, formulation, solver, options)
    reference = run(without, formulation, solver, options)
    assert welded.completed and reference.completed, (welded.message, reference.message)
    assert len(welded.steps) == STEPS
    assert np.max(np.abs(welded.v[0][:3])) > 0.4  # the crate does slide: the check is not of a body at rest
    np.testing.assert_allclose(welded.q, reference.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(welded.v, reference.v, rtol=0, atol=1e-9)

