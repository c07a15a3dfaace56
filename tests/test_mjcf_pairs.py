"""Issue 23: the contact candidates of an MJCF model are MuJoCo's own contacts, those of its
explicit ``<pair>`` elements included, with the pair's own ``condim`` and ``friction`` (MuJoCo
XML reference, "contact/pair": a pair's parameters replace the geoms'). ``tests/data/
explicit_pair.xml``: a ball sliding on a floor whose contype/conaffinity filter the pair out and
whose geoms are frictionless (condim 1); a ``<pair>`` asks for the contact with condim 3 and
friction 0.3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co

mujoco = pytest.importorskip("mujoco")

PAIR = Path(__file__).resolve().parent / "data" / "explicit_pair.xml"


def test_the_pairs_contact_is_a_candidate_with_the_pairs_friction() -> None:
    scene = co.load_scene(PAIR)
    system = scene.system
    contacts = system.contacts(scene.q0)
    model = mujoco.MjModel.from_xml_path(str(PAIR))
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    assert contacts.count == data.ncon == system.reference_contact_count(scene.q0) == 1
    assert contacts.mu[0] == 0.3  # the pair's, not the geoms' (1, and condim 1 would make it 0)
    np.testing.assert_allclose(contacts.phi, [-0.0005], rtol=0, atol=1e-12)


def test_params_model_step_equals_mj_step_through_the_pair() -> None:
    """``regularized -o params=model`` solves MuJoCo's own program, the pair's contact row
    included, so its step is ``mj_step``'s (MuJoCo's solver converged to 1e-15, Clarabel's answer
    refined to the KKT point: 1e-10 as in test_detection_margin)."""
    scene = co.load_scene(PAIR)
    ours = co.simulate(scene, formulation="regularized", solver="clarabel", options={"params": "model"},
                       duration=scene.dt)
    reference = co.simulate(scene, formulation="mujoco", options={"tolerance": 1e-15, "iterations": 1000},
                            duration=scene.dt)
    assert ours.completed and reference.completed
    assert ours.steps[0].candidates == ours.steps[0].mujoco_contacts == 1
    assert reference.v[1][0] < 1.0 - 0.5 * 0.3 * 9.81 * scene.dt  # the pair's friction did slow the ball
    np.testing.assert_allclose(ours.v, reference.v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.q, reference.q, rtol=0, atol=1e-10)
