"""Least-squares estimation of the identifiable lumped parameters (Tedrake 2020, "Parameter
Estimation", "Least-squares estimation" and the power formulation).

* ``"equation_error"``: the stacked manipulator equation ``W alpha = F`` (one regressor per
  sample, :mod:`contactopt.identification.data`), restricted to the base regressor ``W_i``
  (:mod:`contactopt.identification.basis`): ``theta = argmin |W_i theta - F|^2``, the base
  parameters. The lumped parameters enter linearly, so this is one linear least-squares problem:
  one solve, no iteration, no initial guess.
* ``"energy"``: the power form (Gautier and Khalil 1988, "On the identification of the inertial
  parameters of robots": the energy model), which needs no accelerations: along the motion
  ``dH/dt = F . v`` (the input's power, plus that of contact and constraint impulses where
  recorded; ideal closure constraints do no work), and ``H = h(q, v) alpha`` is linear in the
  same lumped parameters (:func:`~contactopt.identification.lumped.energy_regressor`). Over each
  window ``[t_a, t_b]`` of ``window`` sample intervals, ``(h(t_b) - h(t_a)) alpha = int F . v dt``,
  the integral by the composite Simpson rule on uniform samples (trapezoid where a window has an
  odd number of intervals or the samples are not uniform); the rows are then regressed as above.

The covariance of ``theta`` is ``sigma^2 (W_i^T W_i)^{-1}`` with ``sigma`` the stated standard
deviation of the noise in ``F`` (``noise=``) or, without it, the residual estimate
``sigma^2 = |r|^2 / (rows - r)`` (the standard result for ordinary least squares with
independent, equal-variance errors). The energy rows' errors are neither: independent noise of
standard deviation ``sigma`` in each measured input ``u_k`` enters the window integrals as
``sum_k c_wk n_k . (G_k^T v_k)`` (``c_wk`` the quadrature weights, ``G_k = dF/du``), so
``Cov(b) = sigma^2 S`` with ``S = C diag(|G_k^T v_k|^2) C^T`` (neighbouring windows share an
end sample); the energy method therefore solves the generalized least-squares problem whitened
by ``S = L L^T`` (``L^{-1} W_i theta = L^{-1} b``; the Gauss-Markov estimator, e.g. Kay,
*Fundamentals of Statistical Signal Processing: Estimation Theory*, Sec. 4.6), and its
``noise``/``sigma`` is the standard deviation of the input noise. Physical consistency (positive masses and lengths, a
positive definite pseudo-inertia per body: Wensing, Kim and Slotine 2017) is reported in
``Estimate.consistent`` (``consistency="report"``, the default) or enforced by the constrained
fit of :mod:`contactopt.identification.consistency` (``consistency="enforce"``: the same least
squares over physically consistent lumped parameters; ``Estimate.lumped`` holds them).

* ``"simulation_error"``: the physical parameters themselves (``"mu"``, ``"box.mass"``) by
  Gauss-Newton least squares on simulated minus recorded ``(q, v)`` through whole simulations
  (:mod:`contactopt.identification.simulation_error`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from contactopt.identification.basis import DEFAULT_TOLERANCE, decompose, stacked
from contactopt.identification.consistency import CONSISTENCY, enforce, report
from contactopt.identification.data import Samples, input_matrix, samples
from contactopt.identification.lumped import (
    IdentificationError,
    _is_mjcf,
    check_system,
    energy_regressor,
    lumped_parameters,
)
from contactopt.identification.result import Estimate
from contactopt.identification.simulation_error import fit_simulation_error
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["METHODS", "Estimate", "estimate"]

METHODS = ("equation_error", "energy", "simulation_error")


def _weights(t: FloatArray) -> FloatArray:
    """``c`` with ``int f dt = c @ f`` over the samples ``t``: composite Simpson on an even
    number of uniform intervals, the trapezoid rule otherwise."""
    h = np.diff(t)
    n = h.size
    c = np.zeros(n + 1)
    if n >= 2 and n % 2 == 0 and np.allclose(h, h[0], rtol=1e-9, atol=0.0):
        c[1:-1:2], c[2:-1:2] = 4.0, 2.0
        c[0] = c[-1] = 1.0
        return c * h[0] / 3.0
    c[:-1] += 0.5 * h
    c[1:] += 0.5 * h
    return c


def _integral(t: FloatArray, f: FloatArray) -> float:
    """``int f dt`` over the samples (:func:`_weights`)."""
    return float(_weights(t) @ f)


def _energy_rows(system: System, data: Samples, window: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(A, b, C)``: per window ``A_w = h(t_b) - h(t_a)``, ``b_w = int F . v dt = C_w @ (F . v)``."""
    if data.discrete:  # a trajectory's steps: no exact discrete power balance (message)
        raise IdentificationError("estimate: method='energy' takes recorded data (a mapping t, q, v, u): the "
                                  "time-stepping scheme has no exact discrete energy balance; use "
                                  "method='equation_error' for a Trajectory")
    n = len(data)
    if n < window + 1:
        raise IdentificationError(f"estimate: method='energy' needs more than window = {window} samples, got {n}")
    h = np.array([energy_regressor(system, data.q[k], data.v[k]) for k in range(n)])
    power = np.einsum("ki,ki->k", data.F, data.v)
    starts = range(0, n - window, window)
    A = np.array([h[s + window] - h[s] for s in starts])
    C = np.zeros((len(starts), n))
    for row, s in enumerate(starts):
        C[row, s : s + window + 1] = _weights(data.t[s : s + window + 1])
    return A, C @ power, C


def _input_power_gains(system: System, data: Samples) -> FloatArray:
    """Per sample ``|G_k^T v_k|^2`` with ``G_k = dF/du`` (``B``; an MJCF model's actuator
    moments, from ``qfrc_actuator`` of unit inputs, exact for its affine actuators): the
    variance of the input power ``F_k . v_k`` per unit variance of each input's noise."""
    nu = system.control_size
    out = np.zeros(len(data))
    if nu == 0:
        return out
    for k in range(len(data)):
        q, v = data.q[k], data.v[k]
        base = input_matrix(system, q, v, np.zeros(nu))
        g = np.array([(input_matrix(system, q, v, e) - base) @ v for e in np.eye(nu)])
        out[k] = float(g @ g)
    return out


def estimate(system: System, data: Any, method: str = "equation_error", noise: float | None = None, *,
             tolerance: float = DEFAULT_TOLERANCE, window: int = 20, scene: Any = None,
             parameters: Sequence[str] | None = None, initial: Mapping[str, float] | None = None,
             formulation: str | None = None, solver: str | None = None, options: Mapping[str, Any] | None = None,
             controller: Any = None, xtol: float = 1e-10, consistency: str = "report") -> Estimate:
    """Estimate the identifiable lumped parameters of ``system`` from ``data`` (a
    :class:`~contactopt.records.trajectory.Trajectory` or a mapping of arrays ``t, q, v, u``;
    :mod:`contactopt.identification.data`) by ``method`` ``"equation_error"`` or ``"energy"``
    (Tedrake 2020, "Parameter Estimation"; module docstring), or by ``"simulation_error"`` (below).
    ``noise``: the standard deviation
    of the noise in the regression's right-hand side (the measured force ``B u`` for the equation
    error, the input's work over a window for the energy method), for the covariance (None: from
    the residuals); ``tolerance``: the rank tolerance of :func:`~contactopt.identification.identifiable`;
    ``window``: sample intervals per energy row; ``consistency``: ``"report"`` (the checks in
    ``Estimate.consistent``) or ``"enforce"`` (the constrained fit, module docstring).

    ``method="simulation_error"`` (:mod:`contactopt.identification.simulation_error`) fits the
    physical ``parameters`` (names from ``system.differentiable_parameters()``) from ``initial``
    (name -> starting guess; default the system's values) so that ``scene`` (its initial state,
    ``dt`` and options; its system replaced by ``system`` with the trial values), simulated
    under ``formulation`` and ``solver`` (None: the scene's) with ``controller`` (None: the
    scene's ``[control]``) and formulation ``options`` (None: the scene's) over the data's
    steps, reproduces the recorded ``(q, v)`` (``data``: a Trajectory or a mapping of arrays
    ``t, q, v``); ``noise``: the standard deviation of the noise in the recorded ``q`` and ``v``;
    ``xtol``: ``least_squares``'s step tolerance. ``scene`` and ``parameters`` are required
    there and refused by the other methods, which take no simulation."""
    if method not in METHODS:
        raise IdentificationError(f"estimate: method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    if noise is not None and not (isinstance(noise, float | int) and not isinstance(noise, bool) and noise >= 0):
        raise IdentificationError(f"estimate: noise must be a number >= 0 or None, got {noise!r}")
    if not (isinstance(tolerance, float | int) and 0.0 < float(tolerance) < 1.0):
        raise IdentificationError(f"estimate: tolerance must be a number in (0, 1), got {tolerance!r}")
    if consistency not in CONSISTENCY:
        raise IdentificationError(f"estimate: consistency must be one of {', '.join(map(repr, CONSISTENCY))}, "
                                  f"got {consistency!r}")
    if consistency == "enforce" and method == "simulation_error":
        raise IdentificationError("estimate: consistency='enforce' applies to method='equation_error' and "
                                  "'energy'; method='simulation_error' fits physical parameters within their "
                                  "declared bounds")
    simulation = {"scene": scene, "parameters": parameters, "initial": initial, "formulation": formulation,
                  "solver": solver, "options": options, "controller": controller}
    if method == "simulation_error":
        if not isinstance(system, System):
            raise IdentificationError(f"estimate: system must be a contactopt System, got {type(system).__name__}")
        if not (isinstance(xtol, float | int) and not isinstance(xtol, bool) and xtol > 0):
            raise IdentificationError(f"estimate: xtol must be a number > 0, got {xtol!r}")

        result: Estimate = fit_simulation_error(system, data, noise, tolerance=float(tolerance), xtol=float(xtol),
                                                **simulation)
        return result
    given = [name for name, value in simulation.items() if value is not None]
    if given:
        raise IdentificationError(f"estimate: {', '.join(given)} only apply to method='simulation_error', "
                                  f"not {method!r}")
    check_system(system, "estimate")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise IdentificationError(f"estimate: window must be a positive integer, got {window!r}")
    lumped = lumped_parameters(system)
    if method == "energy":
        if _is_mjcf(system) and mjcf_damped(system):
            raise IdentificationError("estimate: method='energy' does not model the power that joint damping and "
                                      "friction loss dissipate; use method='equation_error'")
        data_set = samples(system, data, "estimate", accelerations=False)
        W, rhs, C = _energy_rows(system, data_set, window)
        S = (C * _input_power_gains(system, data_set)) @ C.T  # Cov(rhs) / sigma_u^2 (module docstring)
        largest = float(np.max(np.diag(S), initial=0.0))
        whiten = scipy.linalg.cholesky(S + 1e-12 * largest * np.eye(S.shape[0]), lower=True) if largest > 0 \
            else None
    else:
        data_set = samples(system, data, "estimate")
        W, F, f0 = stacked(system, data_set)
        rhs = F - f0
        whiten = None
    basis = decompose(lumped, W, tolerance)
    Wi = W[:, list(basis.independent)]
    Ww, rw = (Wi, rhs) if whiten is None else (scipy.linalg.solve_triangular(whiten, Wi, lower=True),
                                                scipy.linalg.solve_triangular(whiten, rhs, lower=True))
    theta = np.asarray(np.linalg.lstsq(Ww, rw, rcond=None)[0], dtype=np.float64)
    consistent_lumped = None
    if consistency == "enforce":
        fit = enforce(system, lumped, basis, Ww, rw)
        theta, consistent_lumped = fit.values, fit.lumped
    residual = rhs - Wi @ theta
    whitened = rw - Ww @ theta
    dof = W.shape[0] - basis.rank
    sigma = float(noise) if noise is not None else (
        float(np.sqrt(whitened @ whitened / dof)) if dof > 0 else float("nan"))
    covariance = np.asarray(sigma**2 * np.linalg.inv(Ww.T @ Ww), dtype=np.float64)
    return Estimate(values=theta, names=basis.names, identifiable=basis, covariance=covariance,
                    condition=basis.condition, method=method, sigma=sigma,
                    residual=float(np.sqrt(np.mean(residual**2))), system=system,
                    consistent=report(system, basis, theta), consistency=consistency, lumped=consistent_lumped)


def mjcf_damped(system: System) -> bool:
    """Whether an MJCF model has damped or dry-friction dofs (their power is not in the energy rows)."""
    model = system.model  # type: ignore[attr-defined]
    return bool(np.any(np.asarray(model.dof_damping) != 0.0) or np.any(np.asarray(model.dof_frictionloss) != 0.0))

