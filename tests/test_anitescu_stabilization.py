"""Anitescu's stabilization term ``phi / h`` where a penetrating contact's own cone edges cannot
separate it (:mod:`contactopt.formulations.anitescu_stabilization`, issue 35 item 2).

The case: ``problems/mjcf/user_arm.xml`` at shoulder angle 0.625 rad has a second shoulder
contact (upper-link capsule in its welded base, 3 cm deep) whose rows move the shoulder rate
``w`` alone: ``n v = a w`` and ``t2 v = b w`` with ``|a| = 3.7e-3 < mu |b| = 0.085``. The edges
``n +- mu t2`` then have opposite signs in ``w``, and the reference's rows ``e_i v' >= 0.1``
(the MJCF recovery cap) have no solution: the program with ``stabilization = "full"`` is
infeasible, provably (a nonnegative edge combination that moves nothing, Gordan's alternative)
and by clarabel's verdict. The default keeps that contact's rows with the term 0, and leaves
every program whose contacts can all be separated bit for bit as it was.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import contactopt as co
from contactopt.formulations.anitescu_stabilization import (
    MARGIN,
    UnstabilizedContactWarning,
    margin,
    unseparable,
)

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "problems" / "mjcf" / "user_arm.xml"
SUNK = ROOT / "tests" / "data" / "sunk_keyframe.toml"
#: The arm where the second shoulder contact exists (MuJoCo's capsule-box collision reports it
#: at isolated angles: 0.602, 0.621, 0.625, 0.629 in a scan of 0.600-0.650 by 1e-3), swinging
#: as it was at step 106 of the 200-step run under the tests' OpenBLAS kernel.
SHOULDER, ELBOW, W_SHOULDER, W_ELBOW = 0.625, -0.58, 6.45, -7.69


def _arm_problem() -> tuple[co.Scene, np.ndarray, np.ndarray]:
    pytest.importorskip("mujoco")
    scene = co.load_scene(ARM)
    q, v = scene.q0.copy(), scene.v0.copy()
    q[:2], v[:2] = (SHOULDER, ELBOW), (W_SHOULDER, W_ELBOW)
    return scene, q, v


def _formulate(scene: co.Scene, q: np.ndarray, v: np.ndarray, **options: object) -> co.ConicProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.SkippedContactWarning)
        program = co.formulate(scene.system, q, v, scene.dt, formulation="anitescu", options=options)
    assert isinstance(program, co.ConicProgram)
    return program


def _gordan_certificate(edges: np.ndarray) -> bool:
    """Gordan's alternative, solved on its own: is there ``beta >= 0``, ``sum beta = 1``, with
    ``edges^T beta = 0`` (to 1e-9)? Then no ``v`` has ``edges v > 0``."""
    m = edges.shape[0]
    result = linprog(np.zeros(m), A_eq=np.vstack([edges.T, np.ones((1, m))]), b_eq=np.r_[np.zeros(edges.shape[1]), 1.0],
                     bounds=[(0.0, None)] * m, method="highs")
    return bool(result.status == 0 and np.abs(edges.T @ result.x).max() <= 1e-9)


def test_the_jammed_shoulder_contact_is_the_infeasibility() -> None:
    scene, q, v = _arm_problem()
    contacts = scene.system.contacts(q)
    J = contacts.J.toarray() if hasattr(contacts.J, "toarray") else np.asarray(contacts.J)
    assert contacts.count == 6 and contacts.phi[5] == pytest.approx(-0.03, abs=1e-9)
    rows = J[15:18]  # contact 5: n, t1, t2; the base is welded to the world, so only the shoulder moves
    assert np.abs(rows[:, 1:]).max() == 0.0
    a, t1, b = rows[:, 0]
    mu = contacts.mu[5]
    # levers about the shoulder: 3.70e-3 here (3.75e-3 at step 106's 0.6255 rad), 0.085 for t2
    assert abs(a) == pytest.approx(3.7e-3, rel=1e-2) and t1 == 0.0 and abs(b) == pytest.approx(0.085, rel=1e-9)
    assert mu == 1.0 and abs(a) < mu * abs(b)
    # the edges n +- mu t2 in w: opposite signs, so beta (|a - mu b|, |a + mu b|) moves nothing
    plus, minus = a + mu * b, a - mu * b
    assert plus * minus < 0
    assert _gordan_certificate(np.array([[plus], [minus], [a], [a]]))
    full = _formulate(scene, q, v, stabilization="full")
    assert co.solve(full, solver="clarabel").status == co.Status.INFEASIBLE


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_the_default_drops_its_term_and_the_step_is_solved(form: str) -> None:
    scene, q, v = _arm_problem()
    full = _formulate(scene, q, v, stabilization="full", form=form)
    with pytest.warns(UnstabilizedContactWarning, match="1 penetrating contact"):
        program = co.formulate(scene.system, q, v, scene.dt, formulation="anitescu", options={"form": form})
    assert isinstance(program, co.ConicProgram)
    assert program.metadata["unstabilized"] == [5] and "unstabilized" not in full.metadata
    edges = program.metadata["contacts"].index(5) * 4 + np.arange(4)  # k = 4 edges per contact
    if form == "primal":  # rows phi/h + e v' >= 0: b holds phi/h, capped at -v_max = -0.1 m/s
        assert np.array_equal(np.delete(program.b, edges), np.delete(full.b, edges))
        np.testing.assert_array_equal(full.b[edges], -0.1)
        np.testing.assert_array_equal(program.b[edges], 0.0)
    else:  # the linear term J_beta v_free + phi/h
        assert np.array_equal(np.delete(program.c, edges), np.delete(full.c, edges))
        np.testing.assert_allclose(full.c[edges] - program.c[edges], -0.1, rtol=0, atol=1e-12)
    solution = co.solve(program, solver="clarabel")
    assert solution.status == co.Status.OPTIMAL


def test_the_primal_step_locks_the_shoulder_as_a_touching_contact_would() -> None:
    """With the term 0 the contact's rows are ``(a +- mu b) w >= 0`` and ``a w >= 0``: the
    shoulder rate is 0 (as Anitescu's rows give any contact of this geometry at ``phi = 0``,
    whose relaxed cone allows sliding only with ``n v' >= mu |t v'|``); the elbow swings on."""
    scene, q, v = _arm_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        program = co.formulate(scene.system, q, v, scene.dt, formulation="anitescu")
    assert isinstance(program, co.ConicProgram)
    solution = co.solve(program, solver="clarabel")
    v_next = program.variable(solution.x, "v_next")
    assert abs(v_next[0]) <= 1e-7  # clarabel's tolerance on the rows (1e-8 relative) at |w| = 6.45
    assert abs(v_next[1]) > 1.0


def test_unseparable_on_hand_rows() -> None:
    a, b = -3.75e-3, -0.085
    jammed = np.array([[a], [a], [a + b], [a - b]])  # mu = 1, t1 = 0
    normal = np.array([[a]])
    contact = np.zeros(4, dtype=np.int_)
    assert unseparable(jammed, contact, normal, np.array([True]), 1.0).tolist() == [True]
    assert unseparable(jammed, contact, normal, np.array([False]), 1.0).tolist() == [False]  # not penetrating
    mu = 0.9 * abs(a / b)  # friction below the lever ratio: every edge has a's sign
    light = np.array([[a], [a], [a + mu * b], [a - mu * b]])
    assert unseparable(light, contact, normal, np.array([True]), 1.0).tolist() == [False]
    # a free point on a plane: the rows span everything, the normal direction itself separates
    free = np.array([[1.0, 0.5, 0.0], [1.0, -0.5, 0.0], [1.0, 0.0, 0.5], [1.0, 0.0, -0.5]])
    assert unseparable(free, contact, np.array([[1.0, 0.0, 0.0]]), np.array([True]), 1.0).tolist() == [False]
    # the normal direction fails (e_2 . n < 0) but v = (1, 1) separates: the linear program finds it
    skew = np.array([[1.0, 0.0], [-0.5, 1.0]])
    assert unseparable(skew, np.zeros(2, dtype=np.int_), np.array([[1.0, 0.0]]), np.array([True]), 1.0).tolist() \
        == [False]
    assert margin(skew) >= 0.5 / np.hypot(0.5, 1.0) - 1e-9  # v = (1, 1) gives min(1, 0.5 / 1.118)
    # an edge at the Jacobian's rounding moves nothing: no v separates it
    tiny = np.array([[1.0, 0.0], [1e-14, 0.0]])
    assert unseparable(tiny, np.zeros(2, dtype=np.int_), np.array([[1.0, 0.0]]), np.array([True]), 1.0).tolist() \
        == [True]
    # two contacts: only the jammed one is reported; sparse rows give the same verdicts
    both = np.vstack([np.pad(jammed, ((0, 0), (0, 1))), np.pad(light, ((0, 0), (1, 0)))])
    owners = np.repeat([0, 1], 4)
    normals = np.array([[a, 0.0], [0.0, a]])
    for rows, n in ((both, normals), (sp.csr_matrix(both), sp.csr_matrix(normals))):
        assert unseparable(rows, owners, n, np.array([True, True]), 1.0).tolist() == [True, False]


def test_unseparable_is_gordans_alternative_on_random_rows() -> None:
    """Random contacts whose rows span 1 to 3 dimensions of 5 velocities, with 4 pyramid edges
    ``n +- mu t_j`` and ``mu`` in [0, 2]: jammed exactly when Gordan's alternative (solved on its
    own as a feasibility LP in beta) has a solution; a jammed contact's margin is 0 (v = 0 is
    the best), a separable one's positive (those within 1e-6 of 0 would be skipped: none in this
    seed)."""
    rng = np.random.default_rng(35)
    verdicts = {True: 0, False: 0}
    skipped = 0
    directions = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    for _ in range(150):
        rank = int(rng.integers(1, 4))
        frame = rng.standard_normal((3, rank)) @ rng.standard_normal((rank, 5))  # rows n, t1, t2
        mu = rng.uniform(0.0, 2.0)
        edges = frame[0] + mu * directions @ frame[1:]
        t = margin(edges)
        if MARGIN < t <= 1e-6:  # separable only with a speed 1e6 times the target's: too close to call
            skipped += 1
            continue
        jammed = bool(unseparable(edges, np.zeros(4, dtype=np.int_), frame[:1], np.array([True]), 1.0)[0])
        assert jammed == _gordan_certificate(edges)
        assert jammed == (t <= MARGIN)
        verdicts[jammed] += 1
    assert min(verdicts.values()) >= 15 and skipped == 0  # both outcomes well represented


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_separable_penetrations_are_built_and_run_as_before(form: str) -> None:
    """The sunk keyframe (a crate 15 mm in the floor: four penetrating corner contacts, each
    separable along its normal) under both settings: the same program at step 0, entry for
    entry, and the same 20-step trajectory, bit for bit."""
    pytest.importorskip("mujoco")
    scene = co.load_scene(SUNK)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", co.errors.ContactoptWarning)
        programs = [co.formulate(scene.system, scene.q0, scene.v0, scene.dt, formulation="anitescu",
                                 options={"form": form, "stabilization": s}) for s in ("feasible", "full")]
        runs = [co.simulate(scene, formulation="anitescu", duration=20 * scene.dt,
                            options={"form": form, "stabilization": s}) for s in ("feasible", "full")]
    one, two = programs
    assert isinstance(one, co.ConicProgram) and isinstance(two, co.ConicProgram)
    assert (scene.system.contacts(scene.q0).phi < 0).sum() >= 1
    for name in ("P", "A"):
        assert (getattr(one, name) != getattr(two, name)).nnz == 0
    assert np.array_equal(one.b, two.b) and np.array_equal(one.c, two.c)
    assert one.metadata == two.metadata
    assert runs[0].completed and runs[1].completed
    assert np.array_equal(runs[0].q, runs[1].q) and np.array_equal(runs[0].v, runs[1].v)
