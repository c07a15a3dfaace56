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
independent, equal-variance errors). Physical consistency (positive masses and lengths, a
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
from numpy.typing import NDArray

from contactopt.identification.basis import DEFAULT_TOLERANCE, decompose, stacked
from contactopt.identification.consistency import CONSISTENCY, enforce, report
from contactopt.identification.data import Samples, samples
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


def _integral(t: FloatArray, f: FloatArray) -> float:
    """``int f dt`` over the samples: composite Simpson on an even number of uniform intervals,
    the trapezoid rule otherwise."""
    h = np.diff(t)
    n = h.size
    if n >= 2 and n % 2 == 0 and np.allclose(h, h[0], rtol=1e-9, atol=0.0):
        return float(h[0] / 3.0 * (f[0] + f[-1] + 4.0 * f[1:-1:2].sum() + 2.0 * f[2:-1:2].sum()))
    return float(np.sum(0.5 * h * (f[1:] + f[:-1])))


def _energy_rows(system: System, data: Samples, window: int) -> tuple[FloatArray, FloatArray]:
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
    b = np.array([_integral(data.t[s : s + window + 1], power[s : s + window + 1]) for s in starts])
    return A, b


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
        A, b = _energy_rows(system, data_set, window)
        W, rhs = A, b
    else:
        data_set = samples(system, data, "estimate")
        W, F, f0 = stacked(system, data_set)
        rhs = F - f0
    basis = decompose(lumped, W, tolerance)
    Wi = W[:, list(basis.independent)]
    theta = np.asarray(np.linalg.lstsq(Wi, rhs, rcond=None)[0], dtype=np.float64)
    consistent_lumped = None
    if consistency == "enforce":
        fit = enforce(system, lumped, basis, Wi, rhs)
        theta, consistent_lumped = fit.values, fit.lumped
    residual = rhs - Wi @ theta
    dof = W.shape[0] - basis.rank
    sigma = float(noise) if noise is not None else (
        float(np.sqrt(residual @ residual / dof)) if dof > 0 else float("nan"))
    covariance = np.asarray(sigma**2 * np.linalg.inv(Wi.T @ Wi), dtype=np.float64)
    return Estimate(values=theta, names=basis.names, identifiable=basis, covariance=covariance,
                    condition=basis.condition, method=method, sigma=sigma,
                    residual=float(np.sqrt(np.mean(residual**2))), system=system,
                    consistent=report(system, basis, theta), consistency=consistency, lumped=consistent_lumped)


def mjcf_damped(system: System) -> bool:
    """Whether an MJCF model has damped or dry-friction dofs (their power is not in the energy rows)."""
    model = system.model  # type: ignore[attr-defined]
    return bool(np.any(np.asarray(model.dof_damping) != 0.0) or np.any(np.asarray(model.dof_frictionloss) != 0.0))

