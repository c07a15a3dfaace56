"""Simulation-error estimation of physical parameters (Tedrake 2020, "Parameter Estimation":
the simulation-error method, the nonconvex alternative to the equation error; as
``experiments/sysid.py`` does it).

The parameters ``theta`` (names of ``system.differentiable_parameters()``, e.g. ``"mu"``,
``"box.mass"``) minimize ``1/2 |r(theta)|^2`` with the residual ``r`` the simulated minus the
recorded ``(q, v)`` at every step ``1..N`` (the scene's initial state at step 0), by
``scipy.optimize.least_squares`` (trust region reflective within the parameters' declared
bounds, a Gauss-Newton method; Nocedal & Wright, *Numerical Optimization*, 2nd ed., ch. 10:
nonlinear least squares) with the Jacobian ``J = dr/dtheta`` from the forward sensitivities
of :func:`contactopt.simulation.simulate` (``sensitivities=[...]``), exact derivatives of the
time-stepping scheme's steps.

At the answer the Gauss-Newton linearization gives the covariance ``sigma^2 (J^T J)^{-1}``
(Nocedal & Wright ch. 10; the same ordinary least-squares result as the equation error, for
independent equal-variance noise in the recorded ``(q, v)``), with ``sigma`` the stated noise
(``noise=``) or ``sigma^2 = |r|^2 / (rows - p)``. ``condition`` is the 2-norm condition number
of ``J``; ``identifiable`` is the :class:`~contactopt.identification.basis.Basis` of ``J``
(pivoted QR, :func:`~contactopt.identification.basis.decompose`) over the fitted parameter
names: the parameters the data determine *locally*, at the answer. A rank-deficient ``J``
(a parameter or combination the motion does not see) is refused, naming the direction.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from contactopt.derivatives import NondifferentiableWarning
from contactopt.identification.basis import decompose
from contactopt.identification.lumped import IdentificationError, Lumped
from contactopt.identification.result import Estimate
from contactopt.records.trajectory import Trajectory
from contactopt.scenes.loading import Scene
from contactopt.simulation import simulate
from contactopt.systems.base import System

FloatArray = NDArray[np.float64]

__all__ = ["fit_simulation_error"]

_WHERE = "estimate(method='simulation_error')"


def _recorded(system: System, data: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(t, q, v)`` of a Trajectory or of a mapping with arrays ``t, q, v``."""
    if isinstance(data, Trajectory):
        t, q, v = data.t, data.q, data.v
    elif isinstance(data, Mapping):
        missing = [key for key in ("t", "q", "v") if key not in data]
        if missing:
            raise IdentificationError(f"{_WHERE}: data is missing {', '.join(missing)} (needs arrays t, q, v)")
        t, q, v = data["t"], data["q"], data["v"]
    else:
        raise IdentificationError(f"{_WHERE}: data must be a Trajectory or a mapping of arrays t, q, v, "
                                  f"got {type(data).__name__}")
    t, q, v = (np.asarray(x, dtype=np.float64) for x in (t, q, v))
    n = t.shape[0] if t.ndim == 1 else -1
    if n < 2 or q.shape != (n, system.nq) or v.shape != (n, system.nv):
        raise IdentificationError(f"{_WHERE}: data must hold t (N+1,), q (N+1, {system.nq}), v (N+1, {system.nv}) "
                                  f"with N >= 1; got {t.shape}, {q.shape}, {v.shape}")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(t))):
        raise IdentificationError(f"{_WHERE}: data has non-finite entries")
    return t, q, v


def fit_simulation_error(system: System, data: Any, noise: float | None, *, scene: Any, parameters: Any,
                         initial: Mapping[str, float] | None, formulation: str | None, solver: str | None,
                         options: Mapping[str, Any] | None, controller: Any, tolerance: float,
                         xtol: float) -> Estimate:
    """The simulation-error fit (module docstring); returns an
    :class:`~contactopt.identification.result.Estimate` with ``method="simulation_error"``."""
    missing = [name for name, value in (("scene", scene), ("parameters", parameters)) if value is None]
    if missing:
        raise IdentificationError(f"{_WHERE} needs {' and '.join(missing)}: the co.Scene that plays the data "
                                  "(initial state, dt, options) and the names to fit, from "
                                  "system.differentiable_parameters()")
    if not isinstance(scene, Scene):
        raise IdentificationError(f"{_WHERE}: scene must be a co.Scene, got {type(scene).__name__}")
    if isinstance(parameters, str) or not isinstance(parameters, Sequence) or not parameters:
        raise IdentificationError(f"{_WHERE}: parameters must be a non-empty sequence of names, got {parameters!r}")
    names = tuple(parameters)
    known = system.differentiable_parameters()
    unknown = [name for name in names if name not in known]
    if unknown or len(set(names)) != len(names):
        wrong = ", ".join(map(repr, unknown or names))
        raise IdentificationError(f"{_WHERE}: parameters: unknown or repeated {wrong}; "
                                  f"known: {', '.join(known) or 'none'}")
    if scene.system.nq != system.nq or scene.system.nv != system.nv:
        raise IdentificationError(f"{_WHERE}: scene's system has nq, nv = {scene.system.nq}, {scene.system.nv}; "
                                  f"system has {system.nq}, {system.nv}")
    start = system.parameter_values(names)
    if initial is not None:
        if not isinstance(initial, Mapping):
            raise IdentificationError(f"{_WHERE}: initial must be a mapping name -> value, got {initial!r}")
        extra = [name for name in initial if name not in names]
        if extra:
            raise IdentificationError(f"{_WHERE}: initial names {', '.join(map(repr, extra))}, which are not in "
                                      f"parameters {names}")
        start.update({name: value for name, value in initial.items()})
    try:
        system.with_parameters(start)  # bounds and types of the starting values, by name
    except Exception as exc:  # ParameterValueError names the parameter
        raise IdentificationError(f"{_WHERE}: initial: {exc}") from exc
    t, q_rec, v_rec = _recorded(system, data)
    steps = t.shape[0] - 1
    table = system._parameter_table()
    declared = [table[n][0] for n in names]
    lower = np.array([-np.inf if d.minimum is None else d.minimum for d in declared], dtype=np.float64)
    upper = np.array([np.inf if d.maximum is None else d.maximum for d in declared], dtype=np.float64)
    target = np.concatenate([q_rec[1:], v_rec[1:]], axis=1).ravel()
    nq = system.nq
    cache: dict[bytes, tuple[FloatArray, FloatArray]] = {}

    def run(theta: FloatArray) -> tuple[FloatArray, FloatArray]:
        key = theta.tobytes()
        if key not in cache:
            played = dataclasses.replace(scene, system=system.with_parameters(
                dict(zip(names, map(float, theta), strict=True))))
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", NondifferentiableWarning)
                traj = simulate(played, formulation=formulation, solver=solver, duration=steps * scene.dt,
                                options=options, controller=controller, sensitivities=names, on_failure="raise")
            stopped = [str(w.message) for w in caught if issubclass(w.category, NondifferentiableWarning)]
            for w in caught:
                if not issubclass(w.category, NondifferentiableWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if stopped:  # NaN sensitivities from that step on: no Jacobian to fit with
                raise IdentificationError(f"{_WHERE}: at {dict(zip(names, theta.tolist(), strict=True))}: {stopped[0]}")
            if traj.t.shape != t.shape or not np.allclose(traj.t - traj.t[0], t - t[0], rtol=0.0,
                                                          atol=1e-9 * scene.dt):
                raise IdentificationError(f"{_WHERE}: the data's times are not the scene's steps of dt = {scene.dt:g} "
                                          f"({t.shape[0]} samples)")
            state = np.concatenate([traj.q[1:], traj.v[1:]], axis=1).ravel()
            jac = np.stack([np.concatenate([traj.sensitivities[n][1:, :nq], traj.sensitivities[n][1:, nq:]],
                                           axis=1).ravel() for n in names], axis=1)
            cache.clear()  # least_squares asks for the Jacobian at the point it just evaluated
            cache[key] = (state - target, jac)
        return cache[key]

    x0 = np.array([start[n] for n in names], dtype=np.float64)
    def residual_of(x: FloatArray) -> FloatArray:
        return run(x)[0]

    def jacobian_of(x: FloatArray) -> FloatArray:
        return run(x)[1]

    result = least_squares(residual_of, x0, jac=jacobian_of, bounds=(lower, upper), method="trf",
                           x_scale="jac", xtol=xtol, ftol=1e-14, gtol=1e-14)
    theta = np.asarray(result.x, dtype=np.float64)
    residual, J = run(theta)
    if not np.any(J):
        raise IdentificationError(f"{_WHERE}: the simulated motion does not depend on {names} at "
                                  f"{dict(zip(names, theta.tolist(), strict=True))} (zero sensitivities: "
                                  "no contact, no motion, or no input to excite them?)")
    basis = decompose(Lumped(names, theta.copy()), J, tolerance)
    if basis.rank < len(names):
        direction = ", ".join(f"{c:+.3g} {n}" for c, n in zip(basis.null[:, 0], names, strict=True) if abs(c) > 1e-12)
        raise IdentificationError(f"{_WHERE}: the data do not determine {names} locally (rank {basis.rank} of "
                                  f"{len(names)}): along {direction} the simulated motion does not change")
    dof = J.shape[0] - len(names)
    sigma = float(noise) if noise is not None else (
        float(np.sqrt(residual @ residual / dof)) if dof > 0 else float("nan"))
    covariance = np.asarray(sigma**2 * np.linalg.inv(J.T @ J), dtype=np.float64)
    consistent = {}
    for name, value, bound in zip(names, theta, declared, strict=True):
        if bound.minimum is not None:
            sign = ">" if bound.exclusive else ">="
            ok = value > bound.minimum if bound.exclusive else value >= bound.minimum
            consistent[f"{name} {sign} {bound.minimum:g}"] = bool(ok)
    return Estimate(values=theta, names=names, identifiable=basis, covariance=covariance,
                    condition=float(np.linalg.cond(J)), method="simulation_error", sigma=sigma,
                    residual=float(np.sqrt(np.mean(residual**2))),
                    system=system.with_parameters(dict(zip(names, map(float, theta), strict=True))),
                    consistent=consistent)
