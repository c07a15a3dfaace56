"""Tests of contactopt's Lemke solver (``co.solve(lcp, "lemke")``).

What is checked, and why:

* Random LCPs whose matrix class guarantees that Lemke's method ends in a solution
  (Cottle, Pang & Stone 1992, section 4.4):
  - P-matrices, built as ``B B^T + delta I + (S - S^T)``: the symmetric part is positive
    definite, so ``M`` is positive definite, hence a P-matrix (unique solution for every q);
  - symmetric positive semidefinite matrices ``C C^T`` of deficient rank, with
    ``q = w* - M z*`` for complementary ``z*, w* >= 0`` so that a solution exists.
  Every answer must satisfy ``z >= 0``, ``w = M z + q >= -TOL`` and ``|z^T w| <= TOL``.
* Agreement with brute-force enumeration of complementary bases (n <= 8): the P-matrix
  solution is unique, so ``z`` must match; for symmetric PSD ``M`` the solution ``z`` need not
  be unique but ``M z`` (hence ``w``) is (if z1, z2 solve the LCP then
  ``(z1-z2)^T M (z1-z2) = -z1^T w2 - z2^T w1 <= 0``, so ``M (z1 - z2) = 0``), so ``w`` must match.
* Infeasible LCPs end in ray termination, reported as a status with a NaN iterate.
* Degenerate LCPs (ties in the ratio test) terminate with a solution: that exercises the
  lexicographic anti-cycling rule.
* The ``max_iter`` cap and unknown options.

All tolerances are the single constant ``TOL`` below.
"""

import itertools

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import OptionError

# The one tolerance of this file. Lemke's method pivots exactly and contactopt re-solves the
# final basis directly (M_SS z_S = -q_S), so the errors are rounding errors: about
# n * eps * cond(M_SS) * |z| with n <= 30, entries of M of order n and |z| of order 1, that is
# 1e-13 or below for the well-conditioned matrices generated here. 1e-9 leaves four orders of
# margin and still catches any real mistake (a wrong pivot gives errors of order 1e-2 or more).
TOL = 1e-9

SIZES = [1, 2, 3, 5, 8, 13, 21, 30]
SEEDS = [0, 1, 2]
SMALL_SIZES = [1, 2, 3, 4, 5, 6, 7, 8]  # where brute force (2^n bases) is cheap


# --------------------------------------------------------------------------- generators


def random_p_matrix(rng, n, delta=0.1):
    """Positive definite, non-symmetric: symmetric part B B^T + delta I, plus a skew part."""
    B = rng.standard_normal((n, n))
    S = rng.standard_normal((n, n))
    return B @ B.T + delta * np.eye(n) + (S - S.T)


def complementary_pair(rng, n):
    """z*, w* >= 0 with disjoint supports (z*_i w*_i = 0), entries in [0.5, 2]."""
    in_support = rng.random(n) < 0.5
    z_star = np.where(in_support, rng.uniform(0.5, 2.0, n), 0.0)
    w_star = np.where(in_support, 0.0, rng.uniform(0.5, 2.0, n))
    return z_star, w_star


def random_psd_lcp(rng, n):
    """Symmetric PSD M = C C^T of rank about n/2, and q = w* - M z* (a solution exists)."""
    rank = max(1, n // 2)
    C = rng.standard_normal((n, rank))
    M = C @ C.T
    z_star, w_star = complementary_pair(rng, n)
    return co.LCP(M, w_star - M @ z_star)


def brute_force_solutions(M, q):
    """Every solution of LCP(M, q) supported on a complementary basis with M_SS nonsingular.

    For each subset S: z_S solves M_SS z_S = -q_S, z is 0 elsewhere; accept if z >= -TOL,
    w = M z + q >= -TOL (w_S = 0 by construction).
    """
    n = len(q)
    found = []
    for size in range(n + 1):
        for subset in itertools.combinations(range(n), size):
            S = list(subset)
            z = np.zeros(n)
            if S:
                M_SS = M[np.ix_(S, S)]
                if np.linalg.cond(M_SS) > 1e10:  # singular basis: not a basic solution
                    continue
                z[S] = np.linalg.solve(M_SS, -q[S])
            w = M @ z + q
            if z.min() >= -TOL and w.min() >= -TOL:
                found.append(z)
    return found


def assert_solves_lcp(lcp, sol):
    """OPTIMAL, z >= 0, w = M z + q >= -TOL, |z^T w| <= TOL, and the Solution fields agree."""
    assert sol.status == co.Status.OPTIMAL, sol.message
    z = sol.z
    w = lcp.M @ z + lcp.q
    assert z.shape == (lcp.n,)
    assert np.all(z >= 0.0), z
    assert w.min() >= -TOL, w
    assert abs(z @ w) <= TOL, z @ w
    np.testing.assert_allclose(sol.w, w, rtol=0, atol=TOL)
    assert sol.residuals.worst <= TOL


# --------------------------------------------------------------------------- solutions


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_random_p_matrix_lcp_is_solved(n, seed):
    rng = np.random.default_rng([n, seed])
    lcp = co.LCP(random_p_matrix(rng, n), rng.standard_normal(n))
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_random_symmetric_psd_lcp_is_solved(n, seed):
    rng = np.random.default_rng([100 + n, seed])
    lcp = random_psd_lcp(rng, n)
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SMALL_SIZES)
def test_p_matrix_solution_equals_brute_force(n, seed):
    rng = np.random.default_rng([200 + n, seed])
    lcp = co.LCP(random_p_matrix(rng, n), rng.standard_normal(n))
    sol = co.solve(lcp, "lemke")
    assert_solves_lcp(lcp, sol)
    found = brute_force_solutions(lcp.M, lcp.q)
    assert found, "a P-matrix LCP always has a solution"
    for z in found:  # unique solution: every basis found gives the same z
        np.testing.assert_allclose(sol.z, z, rtol=0, atol=TOL)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SMALL_SIZES)
def test_symmetric_psd_w_equals_brute_force(n, seed):
    rng = np.random.default_rng([300 + n, seed])
    lcp = random_psd_lcp(rng, n)
    sol = co.solve(lcp, "lemke")
    assert_solves_lcp(lcp, sol)
    found = brute_force_solutions(lcp.M, lcp.q)
    assert found
    for z in found:  # z may differ between solutions, w = M z + q may not
        np.testing.assert_allclose(sol.w, lcp.M @ z + lcp.q, rtol=0, atol=TOL)


def test_nonnegative_q_gives_zero_without_pivots():
    lcp = co.LCP([[1.0, 2.0], [3.0, -4.0]], [0.0, 1.5])
    sol = co.solve(lcp, "lemke")
    assert sol.status == co.Status.OPTIMAL
    np.testing.assert_array_equal(sol.z, np.zeros(2))
    assert sol.iterations == 0


def test_custom_covering_vector_reaches_the_same_unique_solution():
    rng = np.random.default_rng(7)
    lcp = co.LCP(random_p_matrix(rng, 6), rng.standard_normal(6))
    default = co.solve(lcp, "lemke")
    covered = co.solve(lcp, "lemke", covering=rng.uniform(0.5, 3.0, 6))
    assert_solves_lcp(lcp, covered)
    np.testing.assert_allclose(covered.z, default.z, rtol=0, atol=TOL)


# --------------------------------------------------------------------------- ray termination


def assert_ray_termination(sol):
    assert sol.status == co.Status.RAY_TERMINATION
    assert not sol.status.usable
    assert np.all(np.isnan(sol.x)), "a ray termination must not present an iterate as an answer"
    assert sol.residuals.worst == np.inf


@pytest.mark.parametrize(
    ("M", "q"),
    [
        # w = -z - 1 < 0 for every z >= 0.
        ([[-1.0]], [-1.0]),
        # w = 0 z - 1: the zero matrix is PSD (copositive-plus) and the LCP is infeasible.
        ([[0.0]], [-1.0]),
        # Symmetric PSD: w1 + w2 = -2 for every z, so w >= 0 is impossible.
        ([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0]),
    ],
    ids=["negative-1x1", "zero-1x1", "psd-2x2"],
)
def test_infeasible_lcp_ends_in_ray_termination(M, q):
    assert_ray_termination(co.solve(co.LCP(M, q), "lemke"))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [3, 8, 20])
def test_random_infeasible_psd_lcp_ends_in_ray_termination(n, seed):
    # M = C C^T with the columns of C centred, so M 1 = 0; with 1^T q < 0,
    # 1^T w = 1^T M z + 1^T q = 1^T q < 0 for every z: no w >= 0 exists. M is symmetric
    # PSD (copositive-plus), for which ray termination is Lemke's certificate of infeasibility.
    rng = np.random.default_rng([400 + n, seed])
    C = rng.standard_normal((n, max(1, n // 2)))
    C -= C.mean(axis=0)
    q = rng.standard_normal(n)
    q -= q.mean() + 0.5  # sum(q) = -n/2 < 0
    assert_ray_termination(co.solve(co.LCP(C @ C.T, q), "lemke"))


# --------------------------------------------------------------------------- degeneracy


DEGENERATE = {
    # All ratios tie in the first pivot.
    "identity-equal-q": (np.eye(4), [-1.0, -1.0, -1.0, -1.0]),
    "pd-equal-q": ([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]], [-1.0, -1.0, -1.0]),
    # Zeros in q: degenerate basic variables from the start.
    "pd-zeros-in-q": (
        [[3.0, 1.0, -1.0, 0.0], [1.0, 3.0, 0.0, 1.0], [1.0, 0.0, 3.0, 1.0], [0.0, -1.0, 1.0, 3.0]],
        [0.0, -1.0, 0.0, -2.0],
    ),
    # Repeated rows of M (singular, PSD) with equal q: every ratio ties, z1 + z2 = 1.
    "psd-repeated-rows": ([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0]),
    # Repeated rows of a strictly copositive (non-symmetric) M: z1 + 2 z2 = 1.
    "copositive-repeated-rows": (
        [[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]],
        [-1.0, -1.0, 0.0],
    ),
    # Rank-one all-ones matrix with mixed ties and zeros.
    "ones-mixed": (np.ones((5, 5)), [-1.0, -1.0, 0.0, -1.0, 0.0]),
    # Nonnegative with a positive diagonal, hence strictly copositive: Lemke's method must end
    # in a solution. Found by searching small integer instances: with the plain minimum-ratio
    # rule breaking ties by the lowest row index, the pivots on this instance cycle forever.
    "cycles-without-lexicographic-rule": (
        [[2.0, 0.0, 2.0], [1.0, 1.0, 0.0], [2.0, 1.0, 1.0]],
        [-1.0, -1.0, -1.0],
    ),
}


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_degenerate_lcp_terminates_with_solution(name):
    M, q = DEGENERATE[name]
    lcp = co.LCP(M, q)
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n", [4, 8, 12])
def test_integer_degenerate_psd_lcp_terminates_with_solution(n, seed):
    # Small integer data make ties in the ratio test the rule, not the exception:
    # M = C C^T with C in {-1, 0, 1}, z*, w* in {0, 1} complementary, q = w* - M z*
    # (integers, repeated values and zeros; a solution exists by construction).
    rng = np.random.default_rng([500 + n, seed])
    C = rng.integers(-1, 2, size=(n, max(1, n // 2))).astype(float)
    M = C @ C.T
    in_support = rng.random(n) < 0.5
    z_star = np.where(in_support, 1.0, 0.0)
    w_star = np.where(in_support, 0.0, rng.integers(0, 2, n).astype(float))
    lcp = co.LCP(M, w_star - M @ z_star)
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n", [4, 8, 12])
def test_integer_degenerate_p_matrix_lcp_terminates_with_solution(n, seed):
    # Integer positive definite M (symmetric part C C^T + I, integer skew part) and
    # q in {-1, 0}: the unique solution is reached through degenerate pivots.
    rng = np.random.default_rng([600 + n, seed])
    C = rng.integers(-1, 2, size=(n, n)).astype(float)
    S = rng.integers(-1, 2, size=(n, n)).astype(float)
    M = C @ C.T + np.eye(n) + (S - S.T)
    q = -rng.integers(0, 2, n).astype(float)
    lcp = co.LCP(M, q)
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n", [3, 5, 8])
def test_integer_degenerate_copositive_lcp_terminates_with_solution(n, seed):
    # M nonnegative integer with a positive diagonal (strictly copositive, not symmetric, in
    # general not a P-matrix) and q in {-1, 0}: a solution exists for every q, and such
    # instances are where a plain minimum-ratio rule is seen to cycle.
    rng = np.random.default_rng([700 + n, seed])
    M = rng.integers(0, 3, size=(n, n)).astype(float) + np.eye(n)
    q = -rng.integers(0, 2, n).astype(float)
    lcp = co.LCP(M, q)
    assert_solves_lcp(lcp, co.solve(lcp, "lemke"))


# --------------------------------------------------------------------------- options


def test_max_iter_cap_returns_max_iterations():
    rng = np.random.default_rng(11)
    lcp = co.LCP(random_p_matrix(rng, 10), -rng.uniform(0.5, 1.5, 10))
    uncapped = co.solve(lcp, "lemke")
    assert_solves_lcp(lcp, uncapped)
    pivots = uncapped.iterations
    assert pivots >= 3  # q < 0: at least the z0 pivot, one z pivot and z0 leaving

    capped = co.solve(lcp, "lemke", max_iter=1)
    assert capped.status == co.Status.MAX_ITERATIONS
    assert np.all(np.isnan(capped.x))

    one_short = co.solve(lcp, "lemke", max_iter=pivots - 1)
    assert one_short.status == co.Status.MAX_ITERATIONS
    assert_solves_lcp(lcp, co.solve(lcp, "lemke", max_iter=pivots))


def test_unknown_option_raises_option_error():
    lcp = co.LCP(np.eye(2), [-1.0, -1.0])
    with pytest.raises(OptionError, match="tolerance") as info:
        co.solve(lcp, "lemke", tolerance=1e-6)
    assert "max_iter" in str(info.value)  # the message lists the known options


def test_bad_covering_vector_is_an_option_error():
    lcp = co.LCP(np.eye(2), [-1.0, -1.0])
    with pytest.raises(OptionError, match="covering"):
        co.solve(lcp, "lemke", covering=[1.0, -1.0])
    with pytest.raises(OptionError, match="covering"):  # checked even when q >= 0
        co.solve(co.LCP(np.eye(2), [1.0, 1.0]), "lemke", covering=[1.0])


def test_zero_pivot_cap_does_no_pivot():
    sol = co.solve(co.LCP(np.eye(2), [-1.0, -1.0]), "lemke", max_iter=0)
    assert sol.status == co.Status.MAX_ITERATIONS and sol.iterations == 0


def test_retries_keep_the_usable_attempt_with_the_smallest_residuals(monkeypatch: pytest.MonkeyPatch) -> None:
    """When no attempt is judged optimal, an attempt that is usable (here inaccurate: z off by
    1e-5 for the exact z = 1, w = 1e-5 against the row's terms |q| + |M| (|z| + |q| / M) = 3:
    3.3e-6 relative, between the inaccurate and wrong levels) is returned, not the first failure."""
    import contactopt.solvers.lemke as lemke_module

    calls: list[int] = []

    def one_usable_attempt(M: np.ndarray, q: np.ndarray, **_: object) -> tuple[object, ...]:
        calls.append(1)
        if len(calls) == 2:
            return np.array([1.0 + 1e-5]), co.Status.OPTIMAL, 1, "second attempt"
        return None, co.Status.RAY_TERMINATION, 1, "ray"

    monkeypatch.setattr(lemke_module, "lemke", one_usable_attempt)
    # normalize=False: the attempts on the LCP as given (the on-demand rescaling would try again)
    solution = co.solve(co.LCP(np.array([[1.0]]), np.array([-1.0])), "lemke", normalize=False)
    assert len(calls) == len(lemke_module.ATTEMPTS)  # every attempt was tried
    assert solution.status is co.Status.INACCURATE and solution.x[0] == pytest.approx(1.0, abs=2e-5)
    assert "second attempt" in solution.message
