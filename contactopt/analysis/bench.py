"""Solver benchmark on exported step programs: success rate, shifted geometric means of time and
residuals, Dolan-Moré performance profiles (``contactopt bench``).

The metrics follow qpbenchmark (Caron et al., ``qpsolvers_benchmark``; its ``shgeom.py`` and
``report.py``) so that numbers here and there mean the same thing:

* **success**: the solver's status is usable (optimal or inaccurate) *and* contactopt's own
  residuals (:class:`~contactopt.programs.Residuals`, absolute infinity norms: primal, dual,
  gap, complementarity) all lie within the profile's ``tolerance`` (``residuals.worst <=
  tolerance``) *and* the run time is within the profile's ``time_limit``. A status is never
  trusted alone. A program the solver cannot take (``UnsupportedProgramError``) or an
  exception counts as a failure, with the text in ``error``.
* **shifted geometric mean** of values ``v_1..v_n >= 0`` with shift ``s``::

      sgm(v; s) = exp( (1/n) sum_i log(v_i + s) ) - s        (computed as s expm1(mean log1p(v/s)))

  over every program of a (solver, profile), with ``s = 10`` as qpbenchmark. Times are in
  **seconds** (``runtime = setup_time + solve_time``: qpbenchmark times the whole solver call,
  setup included); a failed solve counts **at the profile's time limit**. Residuals are
  ``residuals.worst``; a solve with no usable iterate counts at the profile's tolerance
  (qpbenchmark charges "not found" at the full tolerance). ``*_ratio`` columns divide by the
  best solver of the same profile (qpbenchmark reports those: 1.0 is the best).
* **performance profile** (Dolan & Moré, Math. Program. 91, 2002): with ``t_ps`` the run time of
  solver ``s`` on program ``p`` (infinity if it failed) and ``r_ps = t_ps / min_s t_ps``,
  ``rho_s(tau) = |{p : r_ps <= tau}| / n_p``, plotted against ``tau`` on a log2 axis.

Tolerance profiles (:data:`PROFILES`; backend option names in :func:`solver_options`):

==============  ======  =========  ==========================================================
profile         eps     tolerance  solver settings
==============  ======  =========  ==========================================================
default         --      1e-6       none: each backend's defaults (contactopt's clarabel 1e-10,
                                   osqp 1e-7 polished, qpsolvers:proxqp gap check 1e-9, ...)
high_accuracy   1e-9    1e-9       absolute tolerances eps, relative ones 0
mid_accuracy    1e-6    1e-6       same with eps = 1e-6
low_accuracy    1e-3    1e-3       same with eps = 1e-3
==============  ======  =========  ==========================================================

Every profile has a 10 s time limit (passed to the backends that take one).
"""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contactopt.errors import ContactoptError, OptionError, SolverUnavailableError, UnsupportedProgramError
from contactopt.programs import load_program
from contactopt.solvers import parse_name, spec
from contactopt.solvers import solve as solve_program

__all__ = ["PROFILES", "SHIFT", "Profile", "collect_programs", "performance_profile",
           "run_benchmark", "shifted_geometric_mean", "solver_options", "summarize"]

#: Shift of the shifted geometric means (qpbenchmark's value).
SHIFT = 10.0


@dataclass(frozen=True)
class Profile:
    """A named tolerance profile.

    Attributes:
        name: profile name.
        eps: the solver tolerance the backends are asked for, or None for their defaults.
        tolerance: the largest ``residuals.worst`` counted as a success.
        time_limit: seconds; slower solves fail, failures count at this time.
        description: one line.
    """

    name: str
    eps: float | None
    tolerance: float
    time_limit: float
    description: str


PROFILES: dict[str, Profile] = {
    profile.name: profile for profile in (
        Profile("default", None, 1e-6, 10.0, "backend defaults; success at residuals <= 1e-6"),
        Profile("high_accuracy", 1e-9, 1e-9, 10.0, "solver tolerances 1e-9; success at residuals <= 1e-9"),
        Profile("mid_accuracy", 1e-6, 1e-6, 10.0, "solver tolerances 1e-6; success at residuals <= 1e-6"),
        Profile("low_accuracy", 1e-3, 1e-3, 10.0, "solver tolerances 1e-3; success at residuals <= 1e-3"),
    )
}


def _profile(name: str | Profile) -> Profile:
    if isinstance(name, Profile):
        return name
    try:
        return PROFILES[name.strip().lower()]
    except KeyError:
        raise OptionError(f"unknown profile {name!r}; known profiles: {', '.join(PROFILES)}") from None


def _qpsolvers_options(inner: str, eps: float) -> dict[str, Any]:
    """Option names of qpsolvers' inner solvers for an absolute tolerance ``eps``."""
    gap = {"check_duality_gap": True, "eps_duality_gap_abs": eps, "eps_duality_gap_rel": 0.0}
    table: dict[str, dict[str, Any]] = {
        "clarabel": {"tol_feas": eps, "tol_gap_abs": eps, "tol_gap_rel": 0.0},
        "cvxopt": {"feastol": eps},
        "daqp": {"primal_tol": eps, "dual_tol": eps},
        "ecos": {"feastol": eps},
        "highs": {"primal_feasibility_tolerance": eps, "dual_feasibility_tolerance": eps},
        "osqp": {"eps_abs": eps, "eps_rel": 0.0},
        "piqp": {"eps_abs": eps, "eps_rel": 0.0, **gap},
        "proxqp": {"eps_abs": eps, "eps_rel": 0.0, **gap},
        "scs": {"eps_abs": eps, "eps_rel": 0.0},
    }
    return dict(table.get(inner, {}))  # quadprog and unknown solvers: their defaults


def _qpsolvers_time_limit(inner: str, limit: float) -> dict[str, Any]:
    names = {"highs": "time_limit", "osqp": "time_limit", "scs": "time_limit_secs"}
    return {names[inner]: limit} if inner in names else {}


def solver_options(solver: str, profile: str | Profile) -> dict[str, Any]:
    """The options that ask ``solver`` for ``profile``'s accuracy (and time limit).

    clarabel: ``tol_feas, tol_gap_abs = eps, tol_gap_rel = 0``; osqp: ``eps_abs = eps,
    eps_rel = 0``; pgs: ``tol = eps`` (pgs's own relative natural-map test); lemke and cvxpy:
    none (Lemke is exact pivoting; cvxpy's inner solvers name their tolerances differently);
    ``qpsolvers:INNER``: the inner solver's own names (proxqp/piqp ``eps_abs``, ``eps_rel = 0``
    and the duality-gap check; cvxopt/ecos ``feastol``; daqp ``primal_tol/dual_tol``; highs
    ``*_feasibility_tolerance``; osqp/scs ``eps_abs, eps_rel = 0``; quadprog none).
    """
    prof = _profile(profile)
    base, variant = parse_name(solver)
    options: dict[str, Any] = {}
    if base == "clarabel":
        options["time_limit"] = prof.time_limit
        if prof.eps is not None:
            options.update(tol_feas=prof.eps, tol_gap_abs=prof.eps, tol_gap_rel=0.0)
    elif base == "osqp":
        options["time_limit"] = prof.time_limit
        if prof.eps is not None:
            options.update(eps_abs=prof.eps, eps_rel=0.0)
    elif base == "pgs":
        if prof.eps is not None:
            options["tol"] = prof.eps
    elif base == "qpsolvers":
        from contactopt.solvers.qpsolvers_ import default_variant

        inner = (variant or default_variant()).lower()
        options.update(_qpsolvers_time_limit(inner, prof.time_limit))
        if prof.eps is not None:
            options.update(_qpsolvers_options(inner, prof.eps))
    return options


def shifted_geometric_mean(values: ArrayLike, shift: float = SHIFT) -> float:
    """``exp(mean(log(v + shift))) - shift`` of non-negative ``values`` (module docstring)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return float("nan")
    if not shift > 0:
        raise OptionError(f"the shift must be positive, got {shift}")
    if np.any(np.isnan(v)) or np.any(v < 0):
        raise OptionError("the shifted geometric mean takes non-negative numbers")
    if np.any(np.isinf(v)):
        return float("inf")
    return float(shift * np.expm1(np.mean(np.log1p(v / shift))))


# --- running -----------------------------------------------------------------------------


def collect_programs(programs: str | Path | Iterable[str | Path]) -> list[Path]:
    """Program files from a folder (every ``*.npz`` below it, sorted), a file, or a list of both.

    ``.npz`` files found in folders that are not contactopt programs (a qpbenchmark data file)
    are left out; a file named explicitly must be a program.
    """
    items = [programs] if isinstance(programs, str | Path) else list(programs)
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            for candidate in sorted(path.rglob("*.npz")):
                if _is_program(candidate):
                    found.append(candidate)
        elif path.is_file():
            found.append(path)
        else:
            raise ContactoptError(f"{path}: no such program file or folder")
    if not found:
        raise ContactoptError(f"no program files (.npz written by contactopt) in {', '.join(map(str, items))}")
    return found


def _is_program(path: Path) -> bool:
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return "header" in arrays and '"contactopt-program"' in str(arrays["header"])
    except (OSError, ValueError):
        return False


def _label(path: Path, roots: list[Path]) -> str:
    for root in roots:
        if root.is_dir():
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def _row(program: str, solver: str, prof: Profile, kind: str) -> dict[str, Any]:
    nan = float("nan")
    return {"program": program, "solver": solver, "profile": prof.name, "kind": kind, "status": "error",
            "success": False, "solve_time": nan, "setup_time": nan, "runtime": nan, "residual": nan,
            "primal": nan, "dual": nan, "gap": nan, "complementarity": nan, "iterations": 0,
            "tolerance": prof.tolerance, "time_limit": prof.time_limit, "error": ""}


def run_benchmark(programs: str | Path | Iterable[str | Path], solvers: Sequence[str],
                  profiles: Sequence[str | Profile] = ("default",), *, warmup: bool = True,
                  progress: bool = False) -> Any:
    """Solve every program with every solver at every profile; one row each (pandas DataFrame).

    Columns: program, solver, profile, kind, status, success, solve_time, setup_time, runtime
    (seconds), residual (``residuals.worst``), primal, dual, gap, complementarity, iterations,
    tolerance, time_limit, error. ``success`` is defined in the module docstring. With
    ``warmup`` each (solver, profile) first solves the first program once, untimed (imports,
    first-call costs).
    """
    import pandas as pd

    if isinstance(solvers, str):
        solvers = [solvers]
    if not solvers:
        raise OptionError("no solver given")
    for solver in solvers:
        _check_solver(solver)
    chosen = [_profile(p) for p in profiles]
    roots = [Path(p) for p in ([programs] if isinstance(programs, str | Path) else list(programs))]
    paths = collect_programs(programs)
    labels = [_label(path, roots) for path in paths]
    labels = [label if labels.count(label) == 1 else path.as_posix() for label, path in zip(labels, paths, strict=True)]
    loaded = [(label, load_program(path)) for label, path in zip(labels, paths, strict=True)]
    rows: list[dict[str, Any]] = []
    bar = _bar(len(loaded) * len(solvers) * len(chosen), progress)
    try:
        for solver in solvers:
            for prof in chosen:
                options = solver_options(solver, prof)
                if warmup:
                    _solve_quietly(loaded[0][1], solver, options)
                for label, program in loaded:
                    rows.append(_run_one(label, program, solver, prof, options))
                    bar.update(1)
    finally:
        bar.close()
    return pd.DataFrame(rows, columns=list(_row("", "", chosen[0], "")))


def _check_solver(solver: str) -> None:
    """Unknown names, missing packages and unknown variants fail before any solve."""
    base, variant = parse_name(solver)
    spec_ = spec(solver)
    if not spec_.is_available():
        raise SolverUnavailableError(f"solver {base!r} is not installed: {spec_.install_hint}")
    if variant is not None:
        listing = getattr(importlib.import_module(spec_.module), "installed_variants", None)
        installed = list(listing()) if listing is not None else []
        if listing is not None and variant.lower() not in {v.lower() for v in installed}:
            raise SolverUnavailableError(f"{base} has no solver {variant!r} installed; installed: "
                                         f"{', '.join(installed) or 'none'}")


def _solve_quietly(program: Any, solver: str, options: Mapping[str, Any]) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solve_program(program, solver, options)
    except Exception:  # reported by the timed solves
        return


def _run_one(label: str, program: Any, solver: str, prof: Profile, options: Mapping[str, Any]) -> dict[str, Any]:
    row = _row(label, solver, prof, program.kind)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            solution = solve_program(program, solver, options)
    except UnsupportedProgramError as exc:
        row.update(status="unsupported", error=str(exc))
        return row
    except Exception as exc:  # a benchmark reports a broken solve, it does not stop
        row.update(error=f"{type(exc).__name__}: {exc}")
        return row
    res = solution.residuals
    runtime = solution.setup_time + solution.solve_time
    worst = res.worst
    row.update(status=str(solution.status), solve_time=solution.solve_time, setup_time=solution.setup_time,
               runtime=runtime, residual=worst, primal=res.primal, dual=res.dual, gap=res.gap,
               complementarity=res.complementarity, iterations=solution.iterations)
    row["success"] = bool(solution.status.usable and math.isfinite(worst) and worst <= prof.tolerance
                          and runtime <= prof.time_limit)
    if not row["success"] and not solution.status.usable:
        row["error"] = solution.message
    return row


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc="bench", unit="solve", leave=False, dynamic_ncols=True)


# --- reporting -----------------------------------------------------------------------------


def summarize(df: Any, shift: float = SHIFT) -> Any:
    """Per (solver, profile): problems, solved, success_rate (fraction in [0, 1]), time_sgm [s]
    and residual_sgm (shifted geometric means, failures counted at the time limit / at the
    tolerance, see the module docstring), their ratios to the best solver of the profile,
    and unsupported (programs the solver could not take, counted as failures)."""
    import pandas as pd

    records: list[dict[str, Any]] = []
    for (solver, profile), group in df.groupby(["solver", "profile"], sort=False):
        success = group["success"].to_numpy(dtype=bool)
        times = np.where(success, group["runtime"].to_numpy(dtype=float), group["time_limit"].to_numpy(dtype=float))
        residual = group["residual"].to_numpy(dtype=float)
        usable = np.isin(group["status"].to_numpy(dtype=str), ["optimal", "inaccurate"]) & np.isfinite(residual)
        residual = np.where(usable, residual, group["tolerance"].to_numpy(dtype=float))
        records.append({
            "solver": solver, "profile": profile, "problems": len(group), "solved": int(success.sum()),
            "success_rate": float(success.mean()) if len(group) else float("nan"),
            "time_sgm": shifted_geometric_mean(times, shift),
            "residual_sgm": shifted_geometric_mean(residual, shift),
            "unsupported": int((group["status"] == "unsupported").sum()),
        })
    summary = pd.DataFrame(records, columns=["solver", "profile", "problems", "solved", "success_rate",
                                             "time_sgm", "residual_sgm", "unsupported"])
    for column in ("time_sgm", "residual_sgm"):
        best = summary.groupby("profile")[column].transform("min")
        summary[f"{column}_ratio"] = [_ratio(v, b) for v, b in zip(summary[column], best, strict=True)]
    return summary[["solver", "profile", "problems", "solved", "success_rate", "time_sgm",
                    "time_sgm_ratio", "residual_sgm", "residual_sgm_ratio", "unsupported"]]


def _ratio(value: float, best: float) -> float:
    if best > 0:
        return float(value / best)
    return 1.0 if value == best else float("inf")


def performance_ratios(df: Any, profile: str) -> Any:
    """(programs x solvers) Dolan-Moré ratios ``t_ps / min_s t_ps`` for one profile (inf: failed)."""
    import pandas as pd

    rows = df[df["profile"] == profile]
    programs = list(dict.fromkeys(rows["program"]))
    solvers = list(dict.fromkeys(rows["solver"]))
    times = np.full((len(programs), len(solvers)), np.inf)
    where = {name: i for i, name in enumerate(programs)}
    which = {name: j for j, name in enumerate(solvers)}
    for program, solver, success, runtime in rows[["program", "solver", "success", "runtime"]].itertuples(
            index=False):
        if success:
            i, j = where[program], which[solver]
            times[i, j] = min(times[i, j], float(runtime))
    best = times.min(axis=1, keepdims=True) if solvers else np.zeros((len(programs), 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(np.isfinite(times) & np.isfinite(best), times / np.maximum(best, 1e-300), np.inf)
    return pd.DataFrame(ratios, index=programs, columns=solvers)


def performance_profile(df: Any, path: str | Path, *, title: str | None = None) -> Path:
    """Dolan-Moré performance profile of run time, one panel per profile, written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    profiles = list(dict.fromkeys(df["profile"]))
    fig, axes = plt.subplots(1, max(1, len(profiles)), figsize=(5.5 * max(1, len(profiles)), 4.2),
                             squeeze=False)
    for ax, profile in zip(axes[0], profiles, strict=False):
        ratios = performance_ratios(df, profile)
        finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
        top = max(2.0, 1.2 * float(finite.max())) if finite.size else 2.0
        for solver in ratios.columns:
            r = np.sort(ratios[solver].to_numpy())
            taus = np.concatenate([[1.0], r[np.isfinite(r)], [top]])
            rho = np.array([np.mean(r <= tau) for tau in taus])
            ax.step(taus, rho, where="post", label=solver, linewidth=2)
        ax.set_xscale("log", base=2)
        ax.set_xlim(1.0, top)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("tau (time within a factor tau of the best solver)")
        ax.set_ylabel("fraction of programs solved")
        ax.set_title(f"profile {profile} ({len(ratios)} programs)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
