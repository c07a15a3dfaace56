"""Export every step's program of a run: contactopt ``.npz``, FCLIB local problems (HDF5) and a
qpbenchmark test set.

:func:`export_run` re-forms the program of every step the trajectory started (the failed last
step included) from the recorded states with :func:`contactopt.simulate.formulate`, and writes
under ``folder``:

``npz``
    ``folder/npz/step_%06d.npz``: one :func:`~contactopt.programs.save_program` file per step.

``fclib``
    ``folder/fclib/<scene>.hdf5``: ONE HDF5 file holding the *local* frictional contact problem
    of every step with at least one active contact, each in FCLIB's local-problem layout
    (Acary, Brémond, Koziara, Pérignon, "FCLIB: a collection of discrete 3D frictional contact
    problems", 2014; ``fclib.h``/``fclib.c`` of the FCLIB project) under its own group::

        /step_000012/fclib_local/spacedim        int32 (1,)       2 or 3 (rows per contact)
        /step_000012/fclib_local/W/{nzmax,m,n,nz} int32 (1,)      CSC: nz = -1, m = n = spacedim nc
        /step_000012/fclib_local/W/p             int32 (n+1,)     column pointers
        /step_000012/fclib_local/W/i             int32 (nzmax,)   row indices
        /step_000012/fclib_local/W/x             float64 (nzmax,) values
        /step_000012/fclib_local/vectors/q       float64 (m,)
        /step_000012/fclib_local/vectors/mu      float64 (nc,)
        /step_000012/fclib_local/V, R            (only with bilateral rows) same matrix layout
        /step_000012/fclib_local/vectors/s       (only with bilateral rows) float64 (p,)
        /step_000012/fclib_local/info/{title,description,math_info}   strings
        /step_000012/contactopt/{active,phi}     which candidate contacts are in the problem
        /index/{step,t,contacts}                 one entry per exported step
        /  attributes: format, scene, dt, spacedim, epsilon, convention, steps_skipped

    FCLIB tools read one problem per file at ``/fclib_local``; one step is made a standalone
    FCLIB file by copying its group (``h5copy -i run.hdf5 -o step.hdf5 -s
    /step_000012/fclib_local -d /fclib_local`` or :func:`extract_fclib_step`).

    The problem is FCLIB's ``u = W r + q (+ De Saxcé term), C*_mu ∋ û ⟂ r ∈ C_mu`` with ``r``
    the contact **impulses** (N·s) and ``u`` the local velocity at the end of the step, both
    normal first per contact (``[n, t1, t2]`` / ``[n, t]``)::

        W = J M^{-1} J^T                 (J the active contacts' frame rows, normal first)
        q = J v_free + [phi_c / h, 0, 0] per contact,     v_free = v + h M^{-1} tau

    so that ``u = J v' + [phi/h, 0, 0]`` with ``v' = v_free + M^{-1} J^T r`` and ``u_n =
    (phi + h n v') / h``: the Signorini condition is imposed on the predicted gap ``phi(q')/h``,
    not on ``n v'`` alone. That offset is the choice of Anitescu's relaxation and of the cone
    complementarity problem (formulations ``anitescu``, ``ccp``); without it (``q = J v_free``)
    a resting contact with a small gap would be treated as closed. ``W`` is written in CSC
    (``nz = -1``) with every entry of the dense product ``J M^{-1} J^T`` that is not exactly zero
    (small scenes are therefore dense stored as sparse). Bilateral rows ``H v' = r_h`` (the
    driver's velocity target) make it FCLIB's mixed local problem with ``R = H M^{-1} H^T``,
    ``V = J M^{-1} H^T``, ``s = H v_free - r_h`` (``V^T r + R lambda + s = 0``). Only contacts with
    ``phi <= epsilon`` enter (the formulation's ``epsilon`` option; default: every candidate).
    The ``ccp`` dual program of the same step is exactly ``min 1/2 r'Wr + q'r, r in C_mu`` (its
    ``P`` and ``c`` are ``W`` and ``q``). FCLIB needs ``spacedim`` 2 or 3 and finite ``mu``:
    systems with normal-only contacts or ``mu = inf`` are skipped with a warning.

``qpbenchmark``
    ``folder/qpbenchmark/contactopt_<scene>.py`` and ``contactopt_<scene>.npz``: a qpbenchmark
    (``qpsolvers_benchmark``) test set whose class ``ContactoptScene`` (qpbenchmark's own
    naming rule: module name ``.title()`` without underscores) loads its problems from the
    ``.npz`` next to it at run time. Run it with ``qpsolvers_benchmark
    folder/qpbenchmark/contactopt_<scene>.py run``. Each problem is one step's QP in qpsolvers'
    form ``min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b`` (Zero rows -> ``A, b``; Nonneg rows ->
    ``G, h``; no ``lb``/``ub``), with matrices dense (contact QPs are small and mostly dense);
    its ``optimal_cost`` is the objective of a reference solve (``clarabel`` by default; None
    where that solve fails), which qpbenchmark needs to count a solve as a success. SOCPs and
    LCPs are skipped with a warning. Tolerances per settings are those of
    :data:`contactopt.analysis.bench.PROFILES` (``default``, ``high_accuracy``, ``mid_accuracy``,
    ``low_accuracy``: the names qpbenchmark's ``TestSet`` defines solver settings for).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactopt.errors import ContactoptError, OptionError
from contactopt.formulations.base import Program
from contactopt.formulations.common import active_contacts
from contactopt.integrators.drift import DRIFT_DEFAULTS, Drift
from contactopt.integrators.time_stepping import build_step_problem, split_drift_options
from contactopt.programs import ConicProgram, save_program
from contactopt.records import Trajectory
from contactopt.scenes import Scene
from contactopt.simulate import formulate
from contactopt.solvers.qpsolvers_ import to_qpsolvers_arrays

__all__ = ["FORMATS", "FclibLocal", "export_run", "extract_fclib_step",
           "fclib_local_problem", "qpbenchmark_class_name"]

FloatArray = NDArray[np.float64]
FORMATS = ("npz", "fclib", "qpbenchmark")
FCLIB_CONVENTION = (
    "u = W r + q (+ De Saxce term mu ||u_T|| on the normal), C*_mu contains u_hat, perpendicular to r in "
    "C_mu; r: contact impulses [N s], u: local velocity at the end of the step, normal first per "
    "contact; W = J M^-1 J^T; q = J v_free + [phi/h, 0(, 0)] per contact (Anitescu / cone "
    "complementarity Signorini offset); with bilateral rows H v' = r_h: R = H M^-1 H^T, "
    "V = J M^-1 H^T, s = H v_free - r_h")


# --- which programs ---------------------------------------------------------------------


def _resolve(traj: Trajectory, formulation: str | None,
             options: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The formulation and options to re-form the steps with (see :func:`export_run`)."""
    recorded = str(traj.info.get("formulation", ""))
    recorded_options = dict(traj.info.get("options") or {})
    if not recorded and formulation is None:
        raise ContactoptError("the trajectory does not record its formulation; pass formulation=")
    name = (formulation or recorded).strip().lower()
    drift = {key: recorded_options[key] for key in DRIFT_DEFAULTS if key in recorded_options}
    if options is not None:
        return name, {**drift, **dict(options)}
    if name == recorded:
        return name, recorded_options
    return name, drift  # another formulation: its own defaults, the run's drift treatment


def _step_count(traj: Trajectory) -> int:
    return min(len(traj.steps), int(traj.q.shape[0])) if traj.steps else max(0, int(traj.q.shape[0]) - 1)


def step_programs(scene: Scene, traj: Trajectory, formulation: str | None = None,
                  options: Mapping[str, Any] | None = None) -> list[tuple[int, float, Program]]:
    """``(step, t, program)`` of every step the trajectory started, re-formed from its states."""
    name, resolved = _resolve(traj, formulation, options)
    dt = float(traj.info["dt"])
    out: list[tuple[int, float, Program]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. gauss ignoring friction: said once by the run
        for i in range(_step_count(traj)):
            t = float(traj.t[i])
            out.append((i, t, formulate(scene.system, traj.q[i], traj.v[i], dt, name, resolved, t)))
    return out


# --- npz ----------------------------------------------------------------------------------


def write_npz(programs: Iterable[tuple[int, float, Program]], folder: Path) -> Path:
    """``folder/step_%06d.npz`` for every program; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, _, program in programs:
        save_program(program, folder / f"step_{i:06d}.npz")
    return folder


# --- FCLIB ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FclibLocal:
    """One step's local frictional contact problem (module docstring, ``fclib``)."""

    W: FloatArray
    q: FloatArray
    mu: FloatArray
    spacedim: int
    active: NDArray[np.int_]
    phi: FloatArray
    V: FloatArray | None = None
    R: FloatArray | None = None
    s: FloatArray | None = None

    @property
    def contacts(self) -> int:
        return int(self.mu.shape[0])


def fclib_local_problem(scene: Scene, q: Any, v: Any, dt: float, t: float = 0.0,
                        epsilon: float = math.inf, drift: Drift | None = None) -> FclibLocal:
    """The FCLIB local problem of the step from ``(q, v)`` (module docstring, ``fclib``)."""
    problem = build_step_problem(scene.system, q, v, dt, t, drift=drift)
    active = active_contacts(problem.contacts, epsilon)
    dim = problem.contacts.dim
    J = active.J
    dynamics = problem.dynamics
    W = J @ dynamics.solve_M(J.T) if J.shape[0] else np.zeros((0, 0))
    W = 0.5 * (W + W.T)
    offset = np.zeros(J.shape[0])
    offset[::dim] = active.phi / dt
    local_q = J @ problem.v_free + offset
    V = R = s = None
    H = problem.bilateral.H
    if H.shape[0]:
        R = H @ dynamics.solve_M(H.T)
        R = 0.5 * (R + R.T)
        V = J @ dynamics.solve_M(H.T)
        s = H @ problem.v_free - problem.bilateral_target
    return FclibLocal(W=W, q=local_q, mu=active.mu.copy(), spacedim=dim, active=active.index,
                      phi=active.phi.copy(), V=V, R=R, s=s)


def _write_int(group: Any, name: str, value: int) -> None:
    group.create_dataset(name, data=np.array([value], dtype=np.int32))


def _write_string(group: Any, name: str, text: str) -> None:
    group.create_dataset(name, data=np.bytes_(text.encode("ascii", "replace")))


def _write_fclib_matrix(group: Any, matrix: FloatArray) -> None:
    """FCLIB's ``fclib_matrix`` in compressed columns (``nz = -1``)."""
    csc = sp.csc_matrix(matrix)
    csc.sort_indices()
    m, n = matrix.shape
    for name, value in (("nzmax", csc.nnz), ("m", m), ("n", n), ("nz", -1)):
        _write_int(group, name, int(value))
    group.create_dataset("p", data=csc.indptr.astype(np.int32))
    group.create_dataset("i", data=csc.indices.astype(np.int32))
    group.create_dataset("x", data=csc.data.astype(np.float64))


def _fclib_options(options: Mapping[str, Any]) -> tuple[float, Drift]:
    drift_options, rest = split_drift_options(options)
    epsilon = rest.get("epsilon", math.inf)
    try:
        epsilon = float(math.inf if epsilon is None else epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"epsilon must be a number, got {epsilon!r}") from None
    return epsilon, Drift.from_options(drift_options, "fclib export")


def write_fclib(scene: Scene, traj: Trajectory, path: Path, options: Mapping[str, Any],
                formulation: str = "") -> Path | None:
    """Write the run's local problems to one HDF5 file (module docstring); None if skipped."""
    import h5py

    dt = float(traj.info["dt"])
    epsilon, drift = _fclib_options(options)
    locals_: list[tuple[int, float, FclibLocal]] = []
    skipped = 0
    for i in range(_step_count(traj)):
        t = float(traj.t[i])
        local = fclib_local_problem(scene, traj.q[i], traj.v[i], dt, t, epsilon, drift)
        if local.spacedim not in (2, 3):
            warnings.warn(f"fclib export skipped: the contacts of {scene.name!r} have {local.spacedim} "
                          "row(s) per contact; FCLIB needs spacedim 2 or 3", stacklevel=3)
            return None
        if not np.all(np.isfinite(local.mu)):
            warnings.warn(f"fclib export skipped: {scene.name!r} has contacts with mu = inf, which FCLIB "
                          "cannot represent", stacklevel=3)
            return None
        if local.contacts == 0:
            skipped += 1
            continue
        locals_.append((i, t, local))
    path.parent.mkdir(parents=True, exist_ok=True)
    spacedim = locals_[0][2].spacedim if locals_ else 0
    with h5py.File(path, "w") as handle:
        handle.attrs.update({
            "format": "contactopt-fclib-run", "scene": scene.name, "dt": dt, "spacedim": spacedim,
            "epsilon": epsilon, "convention": FCLIB_CONVENTION, "formulation": formulation,
            "steps_skipped_without_contacts": skipped,
        })
        index = handle.create_group("index")
        index.create_dataset("step", data=np.array([i for i, _, _ in locals_], dtype=np.int64))
        index.create_dataset("t", data=np.array([t for _, t, _ in locals_], dtype=np.float64))
        index.create_dataset("contacts", data=np.array([loc.contacts for _, _, loc in locals_],
                                                       dtype=np.int64))
        for i, t, local in locals_:
            step = handle.create_group(f"step_{i:06d}")
            root = step.create_group("fclib_local")
            _write_int(root, "spacedim", local.spacedim)
            _write_fclib_matrix(root.create_group("W"), local.W)
            vectors = root.create_group("vectors")
            vectors.create_dataset("q", data=local.q)
            vectors.create_dataset("mu", data=local.mu)
            if local.V is not None and local.R is not None and local.s is not None:
                _write_fclib_matrix(root.create_group("V"), local.V)
                _write_fclib_matrix(root.create_group("R"), local.R)
                vectors.create_dataset("s", data=local.s)
            info = root.create_group("info")
            _write_string(info, "title", f"contactopt {scene.name} step {i}")
            _write_string(info, "description",
                          f"{scene.name}: local problem of step {i} (t = {t:.9g} s, h = {dt:g} s), "
                          f"{local.contacts} active contacts; {FCLIB_CONVENTION}")
            _write_string(info, "math_info", "W = J M^-1 J^T symmetric positive semidefinite")
            extra = step.create_group("contactopt")
            extra.create_dataset("active", data=local.active.astype(np.int64))
            extra.create_dataset("phi", data=local.phi)
    return path


def extract_fclib_step(path: str | Path, step: int, out: str | Path) -> Path:
    """Copy step ``step`` of a run file into a standalone FCLIB file (``/fclib_local`` at root)."""
    import h5py

    out = Path(out)
    with h5py.File(path, "r") as source:
        name = f"step_{step:06d}"
        if name not in source:
            raise ContactoptError(f"{path}: no local problem for step {step} (steps without active "
                                  "contacts are not written)")
        with h5py.File(out, "w") as target:
            source.copy(source[f"{name}/fclib_local"], target, name="fclib_local")
    return out


# --- qpbenchmark --------------------------------------------------------------------------


def qpbenchmark_class_name(module_name: str) -> str:
    """The class name qpbenchmark's ``load_test_set`` looks up for a module file name."""
    return module_name.title().replace("_", "")


def _slug(scene_name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", scene_name).strip("_").lower() or "scene"


def _module_name(scene_name: str) -> str:
    return f"contactopt_{_slug(scene_name)}"


_MODULE_TEMPLATE = '''"""qpbenchmark test set: the step QPs of contactopt scene {scene!r}, written by
contactopt.analysis.export (formulation {formulation!r}).

Each problem is one time step's QP  min 1/2 x'Px + q'x  s.t.  G x <= h,  A x = b  (contactopt's
Nonneg rows -> G, h; Zero rows -> A, b). The data are loaded from {data!r} next to this file.
Run:  qpsolvers_benchmark {module}.py run
"""

from pathlib import Path

import numpy as np
from qpsolvers_benchmark import TestSet
from qpsolvers_benchmark.problem import Problem
from qpsolvers_benchmark.tolerance import Tolerance

DATA = Path(__file__).resolve().with_name({data!r})
TOLERANCES = {tolerances!r}


def _matrix(data, prefix):
    if prefix + "_dense" not in data:
        return None
    return np.array(data[prefix + "_dense"], dtype=float)


class {cls}(TestSet):
    """Step QPs of contactopt scene {scene!r}."""

    @property
    def description(self) -> str:
        return {description!r}

    @property
    def title(self) -> str:
        return {title!r}

    @property
    def sparse_only(self) -> bool:
        return False

    def define_tolerances(self) -> None:
        self.tolerances = {{
            name: Tolerance(cost=tol, primal=tol, dual=tol, gap=tol, runtime=runtime)
            for name, (tol, runtime) in TOLERANCES.items()
        }}

    def __iter__(self):
        with np.load(DATA, allow_pickle=False) as data:
            names = [str(name) for name in data["names"]]
            costs = np.array(data["optimal_cost"], dtype=float)
            for j, name in enumerate(names):
                prefix = "p%d" % j
                G, A = _matrix(data, prefix + "_G"), _matrix(data, prefix + "_A")
                yield Problem(
                    np.array(data[prefix + "_P_dense"], dtype=float), np.array(data[prefix + "_q"]),
                    G, np.array(data[prefix + "_h"]) if G is not None else None,
                    A, np.array(data[prefix + "_b"]) if A is not None else None,
                    None, None, name=name,
                    optimal_cost=float(costs[j]) if np.isfinite(costs[j]) else None,
                )
'''


def write_qpbenchmark(programs: Sequence[tuple[int, float, Program]], folder: Path, scene_name: str,
                      formulation: str, reference_solver: str | None = "clarabel") -> Path | None:
    """The test-set module and its data (module docstring); None (with a warning) if no QP."""
    from contactopt.analysis.bench import PROFILES
    from contactopt.solvers import solve

    qps = [(i, t, p) for i, t, p in programs if isinstance(p, ConicProgram) and p.kind == "qp"]
    others = len(programs) - len(qps)
    if others:
        kinds = sorted({p.kind.upper() for _, _, p in programs if not (isinstance(p, ConicProgram)
                                                                        and p.kind == "qp")})
        warnings.warn(f"qpbenchmark export: {others} step program(s) skipped ({', '.join(kinds)}: "
                      "qpbenchmark takes QPs only)", stacklevel=3)
    if not qps:
        warnings.warn(f"qpbenchmark export skipped: formulation {formulation!r} built no QP", stacklevel=3)
        return None
    module = _module_name(scene_name)
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {}
    names, costs = [], []
    for j, (i, _, program) in enumerate(qps):
        assert isinstance(program, ConicProgram)
        qp = to_qpsolvers_arrays(program)
        prefix = f"p{j}"
        arrays[f"{prefix}_P_dense"] = qp["P"].toarray()
        arrays[f"{prefix}_q"] = qp["q"]
        for key, vector in (("G", "h"), ("A", "b")):
            if qp[key] is not None:
                arrays[f"{prefix}_{key}_dense"] = qp[key].toarray()
                arrays[f"{prefix}_{vector}"] = qp[vector]
        names.append(f"{module}_step_{i:06d}")
        cost = math.nan
        if reference_solver:
            try:
                reference = solve(program, reference_solver)
                if reference.status.usable:
                    cost = program.objective(reference.x)
            except ContactoptError:
                pass
        costs.append(cost)
    arrays["names"] = np.array(names, dtype=str)
    arrays["optimal_cost"] = np.array(costs, dtype=np.float64)
    arrays["header"] = np.array(json.dumps({"format": "contactopt-qpbenchmark", "scene": scene_name,
                                            "formulation": formulation, "steps": [i for i, _, _ in qps],
                                            "reference_solver": reference_solver}))
    data_path = folder / f"{module}.npz"
    np.savez_compressed(data_path, **arrays)
    tolerances = {name: (profile.tolerance, profile.time_limit) for name, profile in PROFILES.items()}
    source = _MODULE_TEMPLATE.format(
        scene=scene_name, formulation=formulation, data=data_path.name, module=module,
        cls=qpbenchmark_class_name(module), tolerances=tolerances,
        description=(f"Step QPs of contactopt scene {scene_name!r}, formulation {formulation!r} "
                     f"({len(qps)} problems)"),
        title=f"contactopt {scene_name} ({formulation})")
    path = folder / f"{module}.py"
    path.write_text(source)
    return path


# --- everything ---------------------------------------------------------------------------


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """``"npz,fclib"`` or ``["npz", "fclib"]`` -> checked, de-duplicated names in given order."""
    items = [formats] if isinstance(formats, str) else list(formats)
    names: list[str] = []
    for item in items:
        for name in str(item).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in FORMATS:
                raise OptionError(f"unknown export format {name!r}; known: {', '.join(FORMATS)}")
            if name not in names:
                names.append(name)
    if not names:
        raise OptionError(f"no export format given; known: {', '.join(FORMATS)}")
    return tuple(names)


def export_run(scene: Scene, traj: Trajectory, folder: str | Path,
               formats: str | Iterable[str] = FORMATS, formulation: str | None = None,
               options: Mapping[str, Any] | None = None, *,
               reference_solver: str | None = "clarabel") -> dict[str, Path]:
    """Export every step's program of ``traj`` (a run of ``scene``) under ``folder``.

    Each step is re-formed with ``formulate(scene.system, traj.q[i], traj.v[i], dt, formulation,
    options, t)`` with ``dt = traj.info["dt"]``; ``formulation`` and ``options`` default to the
    run's (``traj.info``). Another formulation without ``options`` gets its own defaults; the
    run's drift options (``drift``, ``alpha``, ``beta``) carry over unless ``options`` sets them.
    The FCLIB problems do not depend on the formulation except through its ``epsilon`` option.

    Returns ``{format: path}``: the ``npz`` folder, the FCLIB ``.hdf5`` file, the qpbenchmark
    module ``.py`` (module docstring for the layouts). A format that does not apply (FCLIB with
    normal-only contacts, qpbenchmark without a QP) is skipped with a warning and left out.
    """
    chosen = parse_formats(formats)
    folder = Path(folder)
    name, resolved = _resolve(traj, formulation, options)
    written: dict[str, Path] = {}
    programs = step_programs(scene, traj, name, resolved) if {"npz", "qpbenchmark"} & set(chosen) else []
    for fmt in chosen:
        result: Path | None
        if fmt == "npz":
            result = write_npz(programs, folder / "npz")
        elif fmt == "fclib":
            result = write_fclib(scene, traj, folder / "fclib" / f"{_slug(scene.name)}.hdf5",
                                 resolved, name)
        else:
            result = write_qpbenchmark(programs, folder / "qpbenchmark", scene.name, name, reference_solver)
        if result is not None:
            written[fmt] = result
    return written
