"""Inputs in other units and programs at the edge of convexity (issue 24): a box of 1 g, 1 mg,
1 ug or 1000 t, in millimetres or kilometres, must stop where the 1 kg box in metres stops (the
same programs in other units), or say that a step failed; a nonconvex ``P`` is refused before
any solver runs; a plugin solver's claim is judged from its answer; programs whose numbers are
all far from 1 (a cart at rest, a cost of 1e-16) are solved in their own units."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from badinputs.base import Case, co

BOX = """[scene]
name = "box_units"
dt = {dt!r}
duration = {duration!r}

[system]
type = "rigid3d"
gravity = [0.0, 0.0, {gravity!r}]

[[system.bodies]]
name = "box"
shape = "box"
size = [{half!r}, {half!r}, {half!r}]
mass = {mass!r}
position = [0.0, 0.0, {half!r}]
velocity = [{speed!r}, 0.0, 0.0]

[contact]
mu = 0.5
"""

#: The formulations and solvers of the issue's light-box findings.
COMBOS = (("lcp", "lemke", {}), ("ccp", "pgs", {"form": "dual"}), ("anitescu", "clarabel", {}),
          ("anitescu", "osqp", {}))


def box_scene(tmp: Path, mass: float = 1.0, length: float = 1.0, dt: float = 2e-3, duration: float = 0.3
              ) -> co.Scene:
    """``problems/box_slide.toml``'s box (0.2 m, 1 kg, 1 m/s, mu = 0.5) with its mass times
    ``mass`` and its lengths (size, position, velocity, gravity) times ``length``
    (``tests/test_units.py`` uses it too)."""
    path = tmp / f"box_{mass:g}_{length:g}.toml"
    path.write_text(BOX.format(dt=dt, duration=duration, gravity=-9.81 * length, half=0.1 * length, mass=mass,
                               speed=1.0 * length))
    return co.load_scene(path)


@functools.cache
def _reference(formulation: str, solver: str, options: tuple[tuple[str, Any], ...]) -> float:
    """Where the 1 kg box in metres stops under this formulation and solver."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        traj = co.simulate(box_scene(Path(folder)), formulation=formulation, solver=solver,
                           options=dict(options))
    return float(traj.q[-1, 0])


def _scaled_box(mass: float, length: float, formulation: str, solver: str,
                options: dict[str, Any]) -> tuple[Callable[[Path], Any], Callable[[Any], str | None]]:
    def run(tmp: Path) -> Any:
        return co.simulate(box_scene(tmp, mass, length), formulation=formulation, solver=solver, options=options)

    def check(traj: Any) -> str | None:
        statuses = [record.status for record in traj.steps]
        if not (traj.completed and all(status is co.Status.OPTIMAL for status in statuses)):
            return None  # loud: a step says it failed
        expected = _reference(formulation, solver, tuple(sorted(options.items()))) * length
        stop = float(traj.q[-1, 0])
        if abs(stop - expected) > 1e-5 * abs(expected):
            return f"every step optimal, but the box stops at {stop:.6g} instead of {expected:.6g}"
        return None

    return run, check


def _nonconvex(P: Any) -> Callable[[Path], Any]:
    return lambda tmp: co.ConicProgram(P=sp.csc_matrix(np.asarray(P, dtype=float)), c=np.zeros(len(P)),
                                       A=sp.csc_matrix((0, len(P))), b=np.zeros(0), cones=())


def _nonconvex_file(tmp: Path) -> Any:
    """A saved program whose P is turned negative: load_program refuses it."""
    program = co.ConicProgram(P=sp.eye(2, format="csc"), c=np.ones(2), A=sp.csc_matrix((0, 2)), b=np.zeros(0),
                              cones=())
    path = co.save_program(program, tmp / "p.npz")
    with np.load(path, allow_pickle=False) as archive:
        data = {key: archive[key] for key in archive.files}
    for key in data:
        if key.startswith("P") and "data" in key:
            data[key] = -data[key]
    np.savez(path, **data)
    return co.load_program(path)


def _qp(P: Any, c: Any, A: Any, b: Any) -> co.ConicProgram:
    return co.ConicProgram(P=sp.csc_matrix(np.asarray(P, dtype=float)), c=np.asarray(c, dtype=float),
                           A=sp.csc_matrix(np.asarray(A, dtype=float)), b=np.asarray(b, dtype=float),
                           cones=(co.programs.Nonneg(len(b)),))


def _random_qp(seed: int) -> co.ConicProgram:
    rng = np.random.default_rng(seed)
    n, m = 8, 12
    L = rng.normal(size=(n, n))
    return _qp(L @ L.T + 1e-3 * np.eye(n), rng.normal(size=n), rng.normal(size=(m, n)), rng.uniform(0.1, 1.0, m))


def _agrees_with_clarabel(program_of: Callable[[], co.ConicProgram], solver: str
                          ) -> tuple[Callable[[Path], Any], Callable[[Any], str | None]]:
    """``solver``'s answer: optimal only where its objective is Clarabel's (1e-6 relative)."""
    def run(tmp: Path) -> Any:
        program = program_of()
        return program, co.solve(program, solver), co.solve(program, "clarabel")

    def check(result: Any) -> str | None:
        program, answer, reference = result
        if answer.status is not co.Status.OPTIMAL:
            return None
        got, best = program.objective(answer.x), program.objective(reference.x)
        if abs(got - best) > 1e-6 * max(1.0, abs(best)):
            return f"optimal, with objective {got:.9g} against Clarabel's {best:.9g}"
        return None

    return run, check


def _cart_at_rest(tmp: Path) -> Any:
    """min 1/2 x^2 - 3.3e-16 x, x >= 0 (the cart at rest against its wall): x = 3.3e-16 exactly."""
    return _qp([[1.0]], [-3.3306690738754696e-16], [[-1.0]], [0.0])


def _cart_at_rest_check(solver: str) -> Callable[[Path], Any]:
    return lambda tmp: (_cart_at_rest(tmp), co.solve(_cart_at_rest(tmp), solver))


def _exact_or_loud(result: Any) -> str | None:
    _, answer = result
    if answer.status is co.Status.OPTIMAL and abs(answer.x[0] - 3.3306690738754696e-16) > 1e-6 * 3.33e-16:
        return f"optimal with x = {answer.x[0]:.3g} (exact: 3.33e-16)"
    return None


def _liar(tmp: Path) -> Any:
    """A registered plugin that claims optimal, with zero residuals, for x = 0."""
    from contactopt import solvers
    from contactopt.solvers.base import SolverSpec

    if "liar" not in solvers.names():
        solvers.register(SolverSpec(name="liar", kinds=frozenset({"qp"}), module=__name__, requires=None,
                                    install_hint="(bad-input case)", description="claims optimal for x = 0"))
    program = _qp([[1.0]], [-1.0], [[1.0]], [10.0])
    return solvers.solve(program, "liar", refine=False, normalize=False)


def solve(program: co.ConicProgram, variant: str | None, options: Any) -> co.Solution:
    """The liar's backend (a plugin module may be any importable module: this one)."""
    zero = co.programs.Residuals(0.0, 0.0, 0.0, 0.0, 0.0)
    return co.Solution(x=np.zeros(program.n), y=np.zeros(program.m), s=program.b.copy(), status=co.Status.OPTIMAL,
                       iterations=1, setup_time=0.0, solve_time=0.0, residuals=zero, solver="liar")


def _not_believed(solution: Any) -> str | None:
    return "the liar's x = 0 was believed" if solution.status is co.Status.OPTIMAL else None


def cases() -> list[Case]:
    units, programs = "units", "API"
    out: list[Case] = []
    for mass, length in ((1e-3, 1.0), (1e-6, 1.0), (1e-9, 1.0), (1e6, 1.0), (1.0, 1e-3), (1.0, 1e3)):
        for formulation, solver, options in COMBOS:
            run, check = _scaled_box(mass, length, formulation, solver, options)
            label = f"box of {mass:g} kg, lengths x {length:g}: {formulation}/{solver}"
            out.append(Case(units, label, run, expect="answer", check=check, timeout=60))
    out += [
        Case(programs, "QP with P = -I", _nonconvex([[-1.0, 0.0], [0.0, -1.0]])),
        Case(programs, "QP with an indefinite P (eigenvalues 3, -1)", _nonconvex([[1.0, 2.0], [2.0, 1.0]])),
        Case(programs, "QP with P = diag(1, -1e-3)", _nonconvex([[1.0, 0.0], [0.0, -1e-3]])),
        Case(programs, "saved program with a negated P", _nonconvex_file),
        Case(programs, "plugin solver claiming optimal for a wrong x", _liar, expect="answer", check=_not_believed),
    ]
    for solver in ("osqp", "pgs", "clarabel", "lemke"):
        out.append(Case(programs, f"cart at rest (cost 3e-16) with {solver}", _cart_at_rest_check(solver),
                        expect="answer", check=_exact_or_loud))
    for seed in range(4):
        for solver in ("osqp", "lemke", "pgs"):
            run, check = _agrees_with_clarabel(functools.partial(_random_qp, seed), solver)
            out.append(Case(programs, f"random QP {seed}: {solver} against clarabel", run, expect="answer",
                            check=check))
    assert sys.modules[__name__].solve is solve
    return out
