"""Identities between the time-stepping formulations, on random step problems.

Tedrake 2022: the frictionless Gauss QP, its dual and its LCP coincide; with mu = 0 the
Stewart-Trinkle LCP, Anitescu's QP and the exact-cone SOCP reduce to the same program;
MuJoCo's regularized dual tends to the hard dual as the impedance d -> 1 with
solref = (2 h, 0.5) (then v* -> -phi/h); the primal and dual of each convex relaxation have
the same solution; the regularized cart-and-wall program is the reference's scalar one.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import contactopt as co
from contactopt.model.step import Bilateral, Contacts, Dynamics, State, StepProblem

# Interior point at 1e-10 and exact pivoting, on well-conditioned random problems.
AGREE = 1e-6
# SOCPs with a contact at the cone apex (zero impulse, gap closing exactly) are degenerate:
# interior-point iterates are then only O(sqrt(gap)) ~ 1e-5 accurate (tightening Clarabel
# further ends "inaccurate"), so primal and dual SOCP answers are compared at 1e-5.
AGREE_SOCP = 1e-5
H = 0.01


def random_problem(seed: int, mu: float, nv: int = 6, nc: int = 4, dim: int = 3,
                   approaching: bool = False) -> StepProblem:
    """A random multi-contact step: SPD M, random frames, some contacts penetrating.
    ``approaching``: every contact penetrates and closes (all impulses active)."""
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nv, nv))
    J = rng.normal(size=(nc * dim, nv))
    v = rng.normal(size=nv)
    phi = rng.uniform(-0.01, 0.02, nc)
    if approaching:
        phi = -np.abs(phi)
        v = -np.linalg.lstsq(J[::dim], np.ones(nc), rcond=None)[0]  # n v = -1 for every contact
    contacts = Contacts(phi=phi, J=J, mu=np.full(nc, mu), restitution=np.zeros(nc), dim=dim)
    return StepProblem(State(rng.normal(size=nv), v), H,
                       Dynamics(B @ B.T + nv * np.eye(nv), rng.normal(size=nv)), contacts,
                       Bilateral.empty(nv))


def step(problem: StepProblem, formulation: str, solver: str = "clarabel", **options):
    form = co.formulations.get(formulation)
    program = form.build(problem, form.resolve_options(options))
    solution = co.solve(program, solver)
    assert solution.status == co.Status.OPTIMAL, (formulation, solution.message)
    return form.recover(problem, program, solution), program, solution


HARD_LIMIT = {"epsilon": np.inf, "solref": (2 * H, 0.5)}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("dim", [2, 3])
def test_frictionless_formulations_agree(seed: int, dim: int) -> None:
    problem = random_problem(seed, mu=0.0, dim=dim)
    reference = step(problem, "gauss")[0].v_next
    for formulation, solver, options in [("lcp", "lemke", {}), ("anitescu", "clarabel", {}),
                                         ("anitescu", "osqp", {"form": "dual"}), ("ccp", "clarabel", {}),
                                         ("ccp", "clarabel", {"form": "dual"})]:
        result = step(problem, formulation, solver, **options)[0]
        np.testing.assert_allclose(result.v_next, reference, atol=AGREE, err_msg=formulation)
        np.testing.assert_allclose(result.impulses[:, 1:], 0.0, atol=AGREE)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_regularized_tends_to_the_hard_dual_as_d_goes_to_one(cone: str) -> None:
    problem = random_problem(0, mu=0.0, nc=3, approaching=True)
    hard = step(problem, "gauss")[0]
    assert hard.impulses[:, 0].min() > 1e-3  # every contact pushes: the limit is not vacuous
    reference = hard.v_next
    errors = []
    for d in (0.9, 0.99, 0.999, 0.9999):
        result = step(problem, "regularized", cone=cone, solimp=(d, d, 0.001, 0.5, 2), **HARD_LIMIT)[0]
        errors.append(np.abs(result.v_next - reference).max())
    # The regularization R = (1-d)/d diag(A) is first order in 1 - d: the error shrinks ~10x
    # per decade of 1 - d, down to MuJoCo's impedance cap 0.9999.
    assert all(b < 0.2 * a for a, b in itertools.pairwise(errors)), errors
    assert errors[-1] < 1e-3


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("formulation", ["anitescu", "ccp"])
def test_primal_and_dual_agree_with_friction(seed: int, dim: int, formulation: str) -> None:
    problem = random_problem(seed, mu=0.6, dim=dim)
    primal = step(problem, formulation, form="primal")[0]
    dual = step(problem, formulation, form="dual")[0]
    tolerance = AGREE_SOCP if formulation == "ccp" else AGREE
    np.testing.assert_allclose(primal.v_next, dual.v_next, atol=tolerance)
    # Impulses may be non-unique when the dual Hessian is singular; their effect is not.
    J = problem.contacts.J
    np.testing.assert_allclose(J.T @ primal.impulses.reshape(-1), J.T @ dual.impulses.reshape(-1),
                               atol=10 * tolerance)


@pytest.mark.parametrize("seed", range(4))
def test_impulses_lie_in_their_friction_cones(seed: int) -> None:
    problem = random_problem(seed, mu=0.4)
    for formulation, solver, options in [("lcp", "lemke", {}), ("anitescu", "clarabel", {"k": 8}),
                                         ("ccp", "clarabel", {}),
                                         ("regularized", "clarabel", {"cone": "elliptic", "epsilon": np.inf}),
                                         ("regularized", "clarabel", {"epsilon": np.inf})]:
        impulses = step(problem, formulation, solver, **options)[0].impulses
        normal, tangential = impulses[:, 0], np.linalg.norm(impulses[:, 1:], axis=1)
        assert normal.min() >= -1e-9, formulation
        # Polyhedral cones are inscribed in the exact cone; pyramids have corners at sqrt(2) mu.
        bound = np.sqrt(2) * 0.4 if options.get("cone", "pyramidal") == "pyramidal" and \
            formulation == "regularized" else 0.4
        assert np.all(tangential <= bound * normal + 1e-8), formulation


@pytest.mark.parametrize("seed", range(4))
def test_lcp_satisfies_complementarity_and_max_dissipation(seed: int) -> None:
    problem = random_problem(seed, mu=0.5, nc=3)
    result, _, solution = step(problem, "lcp", "lemke", k=6)
    z, w = solution.x, solution.s
    assert z.min() >= 0 and w.min() >= -1e-9 and abs(z @ w) <= 1e-9
    # Maximum dissipation: a sliding contact's friction opposes the slip at full strength.
    v_next = result.v_next
    for c in range(problem.contacts.count):
        lam = result.impulses[c]
        slip = problem.contacts.J_dense[3 * c + 1 : 3 * c + 3] @ v_next
        if lam[0] > 1e-8 and np.linalg.norm(slip) > 1e-6:
            friction = np.linalg.norm(lam[1:])
            assert friction >= 0.5 * lam[0] * np.cos(np.pi / 6) - 1e-9  # inscribed hexagon's apothem
            assert lam[1:] @ slip < 0


def test_regularized_reproduces_the_reference_scalar_cart_example() -> None:
    """Tedrake 2022, "Relaxed complementarity-free formulation": for the cart,
    f = argmin_{f >= 0} 1/2 f^2 (1 + eps) / (m + b) + f (v^- - v*),
    v^- = v + h/(m+b) (u - b v),   v* = v - 2h (1+eps)/kappa v - h (1+eps)/kappa^2 q."""
    m, u, h, eps, kappa, b = 1.0, 0.5, 0.01, 0.25, 0.05, 0.3
    system = co.systems.get("cart").from_config({"parameters": {"m": m, "u": u}}, {})
    d = 1.0 / (1.0 + eps)
    options = {"solimp": (d, d, 0.001, 0.5, 2), "solref": (kappa, 1.0), "b": b, "epsilon": np.inf,
               "refsafe": False}
    rng = np.random.default_rng(7)
    for q, v in zip(rng.uniform(-0.05, 0.1, 20), rng.uniform(-3.0, 1.0, 20), strict=True):
        program = co.formulate(system, [q], [v], h, "regularized", options)
        v_minus = v + h / (m + b) * (u - b * v)
        v_star = v - 2 * h * (1 + eps) / kappa * v - h * (1 + eps) / kappa**2 * q
        assert program.P.toarray()[0, 0] == pytest.approx((1 + eps) / (m + b), rel=1e-12)
        assert program.c[0] == pytest.approx(v_minus - v_star, rel=1e-12, abs=1e-14)
        f_expected = max(0.0, -(v_minus - v_star) * (m + b) / (1 + eps))
        assert co.solve(program, "lemke").x[0] == pytest.approx(f_expected, rel=1e-12, abs=1e-14)


def test_contacts_beyond_epsilon_do_not_enter() -> None:
    problem = random_problem(0, mu=0.5)
    far = int(np.argmax(problem.contacts.phi))
    for formulation in ("lcp", "anitescu", "ccp", "regularized"):
        form = co.formulations.get(formulation)
        options = form.resolve_options({"epsilon": float(problem.contacts.phi[far]) - 1e-9})
        program = form.build(problem, options)
        assert far not in program.metadata["contacts"], formulation


@pytest.mark.parametrize(("formulation", "options", "match"), [
    ("lcp", {"k": 3}, "even integer"),
    ("anitescu", {"k": 0}, "even integer"),
    ("anitescu", {"epsilon": -1.0}, "epsilon"),
    ("ccp", {"form": "both"}, "'form' must be one of"),
    ("regularized", {"cone": "round"}, "'cone' must be one of"),
    ("regularized", {"solref": (0.02,)}, "solref must be 2"),
    ("regularized", {"solref": (0.02, -1.0)}, "solref must be"),
    ("regularized", {"solimp": (0.9, 1.5, 0.001, 0.5, 2)}, "solimp must satisfy"),
    ("regularized", {"impratio": 0.0}, "impratio"),
])
def test_bad_options_are_rejected(formulation: str, options: dict, match: str) -> None:
    with pytest.raises(co.OptionError, match=match):
        co.formulations.get(formulation).resolve_options(options)


def test_planar_contacts_take_two_directions_only() -> None:
    problem = random_problem(0, mu=0.5, dim=2)
    form = co.formulations.get("anitescu")
    with pytest.raises(co.OptionError, match="k = 2"):
        form.build(problem, form.resolve_options({"k": 4}))


def test_select_contacts_cache_cannot_be_changed_by_callers() -> None:
    """select_contacts keeps its last selection for recover: a caller changing its index array
    afterwards gets a fresh selection, and the returned arrays are read-only."""
    from contactopt.formulations.common import select_contacts

    contacts = co.Contacts(phi=np.array([0.0, 1.0, 2.0, 3.0]), J=np.eye(4 * 3)[:, :6] + 1.0,
                                 mu=np.array([0.1, 0.2, 0.3, 0.4]), restitution=np.zeros(4), dim=3)
    index = np.array([0, 1])
    first = select_contacts(contacts, index)
    assert select_contacts(contacts, [0, 1]) is first
    index[:] = [2, 3]
    second = select_contacts(contacts, index)
    np.testing.assert_array_equal(second.phi, [2.0, 3.0])
    np.testing.assert_array_equal(second.mu, [0.3, 0.4])
    np.testing.assert_array_equal(first.index, [0, 1])
    for array in (second.index, second.phi, second.mu):
        with pytest.raises(ValueError):
            array[0] = -5.0
