"""Physical consistency of estimated lumped parameters: reported, or enforced by a constrained fit.

A lumped parameter vector ``alpha`` is *physically consistent* when a physical system has it:

* every textbook lumped parameter (:mod:`contactopt.identification.lumped`) is a product or sum
  of products of positive masses and lengths, so ``alpha > 0``;
* a rigid body's ten standard parameters ``phi = [m, m c, I_O]`` (MJCF and ``rigid3d``) are
  those of a mass distribution exactly when its pseudo-inertia matrix (Wensing, Kim and Slotine
  2017, "Linear matrix inequalities for physically consistent inertial parameter
  identification: a statistical perspective on the mass distribution", Sec. III)::

      J = [[Sigma, m c], [(m c)^T, m]],   Sigma = 1/2 tr(I_O) 1 - I_O   (the second moments)

  is positive semidefinite (definite for a body that is not flat or a point); that implies
  ``m > 0`` and the triangle inequalities of the inertia about the centre of mass (Sec. III.B);
* a joint's armature, damping and friction loss are ``>= 0``.

**Reported** (:func:`report`, ``Estimate.consistent``): what can be read off the base
parameters (:mod:`contactopt.identification.basis`) alone. A base parameter whose combination of
lumped parameters has nonnegative coefficients on parameters that are positive in any physical
system (textbook lumped parameters; masses, the diagonal moments ``I_xx, I_yy, I_zz`` about the
body origin, ``I_O = I_C + m (|c|^2 1 - c c^T)`` having a positive diagonal; armature, damping,
friction loss) must be positive: ``"<name> > 0"``. A body all ten of whose parameters are base
parameters on their own: ``"<body>: pseudo-inertia positive semidefinite"``, the smallest
eigenvalue of ``J`` at least ``-PSD_TOLERANCE`` (1e-12, rounding) times its largest.

**Enforced** (:func:`enforce`, ``estimate(..., consistency="enforce")``): the lumped parameters
themselves are parametrized so that every value of the parameters is physically consistent,
and the same least-squares problem is solved over them (``min |W_i C alpha(x) - F|^2``, ``C``
the basis's combination, so ``W_i C alpha = W alpha``): per body the log-Cholesky
parametrization of Rucker and Wensing 2022 ("Smooth parameterization of rigid-body inertia",
Sec. III), ``J = U U^T`` with ``U`` upper triangular with a positive diagonal ``exp(x_d)``, a
diffeomorphism onto the positive definite pseudo-inertias; every other lumped parameter (the
textbook ones, armature, damping, friction loss) as ``exp(x)``. The problem is convex in
``alpha`` and the parametrization a diffeomorphism onto the (open) consistent set, so a local
minimum in ``x`` is the global one (Rucker and Wensing 2022, Sec. IV); when the unconstrained
optimum is inconsistent the answer approaches the set's boundary. Solved by
``scipy.optimize.least_squares`` (trust region reflective) with the exact Jacobian, from the
system's own (nominal) lumped parameters, on the ``r`` rows of the QR-reduced problem, with
``x`` kept within ``SPAN`` of its start (so that steps toward the boundary stay finite: a
factor's diagonal can shrink by ``e^-30``). The
estimate's base parameters are then ``C alpha(x*)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.optimize import least_squares

from contactopt.identification.basis import Basis
from contactopt.identification.lumped import Lumped, _is_mjcf, _is_rigid3d
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["CONSISTENCY", "ConsistentFit", "enforce", "pseudo_inertia", "report"]

CONSISTENCY = ("report", "enforce")

BODY_SUFFIXES = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
#: Suffixes of MJCF / rigid3d lumped parameters that are positive in any physical system.
POSITIVE_SUFFIXES = ("m", "Ixx", "Iyy", "Izz", "armature", "damping", "frictionloss")
#: The solver's bounds ``|x - x0| <= SPAN`` (a log-diagonal may fall by e^-SPAN, 1e-13, and an
#: off-diagonal factor entry move by SPAN times its scale), its cost tolerance and its budget.
SPAN = 30.0
FTOL = 1e-10
MAX_EVALUATIONS = 400
#: Rounding tolerance of the pseudo-inertia check, relative to its largest eigenvalue.
PSD_TOLERANCE = 1e-12
#: (row, column) of the symmetric inertia entries in the order of BODY_SUFFIXES[4:].
_INERTIA = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
#: (row, column) of the ten free entries of the upper-triangular factor U (4 x 4).
_UPPER = tuple((i, j) for i in range(4) for j in range(i, 4))


def _bodied(system: System) -> bool:
    return _is_mjcf(system) or _is_rigid3d(system)


def bodies(names: tuple[str, ...]) -> list[tuple[str, list[int]]]:
    """Per body ``(name, indices of its ten parameters in BODY_SUFFIXES order)``."""
    found: dict[str, dict[str, int]] = {}
    for i, name in enumerate(names):
        if "." in name:
            body, suffix = name.rsplit(".", 1)
            if suffix in BODY_SUFFIXES:
                found.setdefault(body, {})[suffix] = i
    return [(body, [entries[s] for s in BODY_SUFFIXES]) for body, entries in found.items()
            if len(entries) == len(BODY_SUFFIXES)]


def pseudo_inertia(phi: FloatArray) -> FloatArray:
    """``J`` (4 x 4) of ``phi = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]``
    (module docstring; Wensing, Kim and Slotine 2017, Sec. III)."""
    inertia = np.zeros((3, 3))
    for (i, j), value in zip(_INERTIA, phi[4:], strict=True):
        inertia[i, j] = inertia[j, i] = value
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = phi[1:4]
    J[3, 3] = phi[0]
    return J


def _phi_of(J: FloatArray) -> FloatArray:
    """The inverse of :func:`pseudo_inertia` (``I_O = tr(Sigma) 1 - Sigma``); linear in ``J``."""
    sigma = J[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    return np.array([J[3, 3], *J[:3, 3], *(inertia[i, j] for i, j in _INERTIA)])


def _positive(system: System, name: str) -> bool:
    if not _bodied(system):
        return True  # every textbook lumped parameter (module docstring)
    return "." in name and name.rsplit(".", 1)[1] in POSITIVE_SUFFIXES


def report(system: System, basis: Basis, values: FloatArray) -> dict[str, bool]:
    """The consistency checks that the base parameters ``values`` decide (module docstring)."""
    names = basis.lumped.names
    checks: dict[str, bool] = {}
    for r, name in enumerate(basis.names):
        row = basis.combination[r]
        used = np.flatnonzero(row)
        if np.all(row[used] > 0) and all(_positive(system, names[j]) for j in used):
            checks[f"{name} > 0"] = bool(values[r] > 0)
    if _bodied(system):
        alone = {i: r for r, i in enumerate(basis.independent) if np.count_nonzero(basis.combination[r]) == 1}
        for body, indices in bodies(names):
            if all(i in alone for i in indices):
                phi = np.array([values[alone[i]] for i in indices])
                w = np.linalg.eigvalsh(pseudo_inertia(phi))
                checks[f"{body}: pseudo-inertia positive semidefinite"] = bool(w[0] >= -PSD_TOLERANCE * abs(w[-1]))
    return checks


@dataclass(frozen=True)
class ConsistentFit:
    """The answer of :func:`enforce`: ``values`` the base parameters, ``lumped`` a physically
    consistent lumped vector with ``combination @ lumped = values``, and the solver's message."""

    values: FloatArray
    lumped: FloatArray
    message: str


class _Parametrization:
    """``alpha(x)`` and ``d alpha / d x`` (module docstring)."""

    def __init__(self, system: System, lumped: Lumped) -> None:
        self.p = len(lumped)
        self.bodies = bodies(lumped.names) if _bodied(system) else []
        in_body = {i for _, indices in self.bodies for i in indices}
        self.scalars = [i for i in range(self.p) if i not in in_body]

    def start(self, nominal: FloatArray) -> FloatArray:
        """``x`` of the nominal values, moved inside the consistent set where they are on its
        boundary or outside it (a massless body, a zero lumped parameter)."""
        x: list[float] = []
        for _, indices in self.bodies:
            J = pseudo_inertia(nominal[indices])
            floor = 1e-6 * max(float(np.trace(J)), 1.0)
            w, V = np.linalg.eigh(J)
            J = (V * np.maximum(w, floor)) @ V.T
            flip = np.eye(4)[::-1]
            U = flip @ np.linalg.cholesky(flip @ J @ flip) @ flip  # J = U U^T, U upper triangular
            x.extend(np.log(U[i, j]) if i == j else U[i, j] for i, j in _UPPER)
        x.extend(float(np.log(nominal[i])) if nominal[i] > 0 else 0.0 for i in self.scalars)
        return np.array(x)

    def alpha(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(alpha, d alpha / d x)``."""
        alpha = np.zeros(self.p)
        jac = np.zeros((self.p, x.size))
        offset = 0
        for _, indices in self.bodies:
            U = np.zeros((4, 4))
            for k, (i, j) in enumerate(_UPPER):
                U[i, j] = np.exp(x[offset + k]) if i == j else x[offset + k]
            alpha[indices] = _phi_of(U @ U.T)
            for k, (i, j) in enumerate(_UPPER):
                dU = np.zeros((4, 4))
                dU[i, j] = U[i, j] if i == j else 1.0
                jac[indices, offset + k] = _phi_of(dU @ U.T + U @ dU.T)
            offset += 10
        for k, i in enumerate(self.scalars):
            alpha[i] = np.exp(x[offset + k])
            jac[i, offset + k] = alpha[i]
        return alpha, jac


def enforce(system: System, lumped: Lumped, basis: Basis, Wi: FloatArray, rhs: FloatArray) -> ConsistentFit:
    """The physically consistent least-squares fit ``min |W_i C alpha(x) - rhs|^2`` (module
    docstring), from the system's own lumped parameters."""
    Q, R = scipy.linalg.qr(Wi, mode="economic")
    target = Q.T @ rhs  # |W_i t - rhs|^2 = |R t - Q^T rhs|^2 + const
    C = basis.combination
    shape = _Parametrization(system, lumped)
    x0 = shape.start(np.asarray(lumped.values, dtype=np.float64))

    def residual(x: FloatArray) -> FloatArray:
        return np.asarray(R @ (C @ shape.alpha(x)[0]) - target, dtype=np.float64)

    def jacobian(x: FloatArray) -> FloatArray:
        return np.asarray(R @ (C @ shape.alpha(x)[1]), dtype=np.float64)

    lower, upper = x0 - SPAN, x0 + SPAN  # |x - x0| <= SPAN: finite steps toward the boundary
    result = least_squares(residual, x0, jac=jacobian, bounds=(lower, upper), method="trf", ftol=FTOL, xtol=1e-12,
                           gtol=1e-12, max_nfev=MAX_EVALUATIONS)
    alpha = shape.alpha(result.x)[0]
    return ConsistentFit(values=np.asarray(C @ alpha, dtype=np.float64), lumped=alpha, message=str(result.message))
