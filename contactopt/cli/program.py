"""``contactopt program SCENE --step N``: the program one step poses.

Prints the program's summary and its block layout; a small program (``n`` and ``m`` at most
:data:`MATRIX_MAX`) also as its matrices, dense, aligned and rounded to 4 significant digits
(exact zeros as ``0``): ``P`` and ``c``, then ``[A | b]`` with the cone of each row, for a
:class:`~contactopt.programs.ConicProgram` (minimize ``1/2 x'Px + c'x`` subject to
``A x + s = b``, ``s in K``); ``[M | q]`` for an :class:`~contactopt.programs.LCP`
(``w = M z + q``). ``--out`` saves the program, whatever its size. ``--step`` is a step of
the scene's run: 0 to ``round(duration / dt) - 1``; one past it is refused before simulating.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from contactopt.cli.common import formulation_options, load_scene_of, with_max_steps
from contactopt.core.budgets import plan_steps
from contactopt.core.errors import ContactoptError, OptionError
from contactopt.core.outputs import writable_file
from contactopt.core.tables import format_table, terminal_width
from contactopt.programs import LCP, ConicProgram, save_program
from contactopt.scenes.control import make_controller
from contactopt.simulation import formulate, simulate

__all__ = ["MATRIX_MAX", "program_matrices", "run_program"]

#: Programs with at most this many variables and rows are printed as matrices.
MATRIX_MAX = 12


def _entry(value: float) -> str:
    return "0" if value == 0 else f"{value:.4g}"


def _names(blocks: Sequence[Any], size: int, prefix: str) -> list[str]:
    """``prefix + index`` and the block's name with the index inside it: ``x3 v_next[3]``."""
    names = [f"{prefix}{i}" for i in range(size)]
    for block in blocks:
        for i in range(block.start, min(block.stop, size)):
            names[i] = f"{prefix}{i} {block.name}[{i - block.start}]"
    return names


def _matrix_rows(matrix: np.ndarray, labels: Sequence[str], columns: Sequence[str],
                 extra: dict[str, Sequence[str]] | None = None) -> list[dict[str, str]]:
    rows = []
    for i, label in enumerate(labels):
        row = {"": label, **{name: _entry(float(matrix[i, j])) for j, name in enumerate(columns)}}
        for name, values in (extra or {}).items():
            row[name] = values[i]
        rows.append(row)
    return rows


def _cone_of_rows(program: ConicProgram) -> list[str]:
    kinds: list[str] = []
    for cone in program.cones:
        kinds += [f"soc({cone.dim})" if cone.kind == "soc" else cone.kind] * cone.dim
    return kinds


def program_matrices(program: Any, width: int) -> str:
    """The matrices of a small program as aligned text tables (module docstring); empty for a
    program larger than :data:`MATRIX_MAX` in either dimension."""
    if isinstance(program, LCP):
        n = program.n
        if n > MATRIX_MAX:
            return ""
        z = [f"z{i}" for i in range(n)]
        rows = _matrix_rows(np.asarray(program.M, dtype=float), _names(program.variables, n, "w"), z,
                            {"q": [_entry(float(x)) for x in program.q]})
        return "LCP: w = M z + q, 0 <= z ⟂ w >= 0\n[M | q]:\n" + format_table(rows, width=width)
    if not isinstance(program, ConicProgram) or max(program.n, program.m) > MATRIX_MAX:
        return ""
    x = [f"x{i}" for i in range(program.n)]
    labels = _names(program.variables, program.n, "x")
    parts = ["minimize 1/2 x'Px + c'x subject to A x + s = b, s in K",
             "P:", format_table(_matrix_rows(program.P.toarray(), labels, x), width=width),
             "c:", format_table(_matrix_rows(np.asarray(program.c, dtype=float)[None, :], ["c"], x), width=width)]
    if program.m:
        rows = _matrix_rows(program.A.toarray(), _names(program.constraints, program.m, "row"), x,
                            {"b": [_entry(float(v)) for v in program.b], "K": _cone_of_rows(program)})
        parts += ["[A | b], K the cone of each row:", format_table(rows, width=width)]
    return "\n".join(parts)


def run_program(args: argparse.Namespace) -> int:
    """Handler of ``contactopt program``."""
    scene = with_max_steps(load_scene_of(args.scene, args), args.max_steps)
    options = {**scene.options, **formulation_options(args.option, scene)}
    formulation = args.formulation or scene.formulation
    dt = args.dt or scene.dt
    q, v, t, act = scene.q0, scene.v0, 0.0, None
    if args.step < 0:
        raise OptionError(f"--step must be a step index >= 0, got {args.step}")
    n_steps = plan_steps(dt, scene.duration, scene.max_steps, scene.name)
    if args.step > n_steps - 1:  # refused before simulating anything
        raise OptionError(f"--step {args.step} is past the last step of {scene.name}: step {n_steps - 1} "
                          f"(duration {scene.duration:g} s / dt {dt:g} s = {n_steps} steps, numbered 0 to "
                          f"{n_steps - 1})")
    if args.out:  # checked before the steps up to --step are simulated
        writable_file(args.out if str(args.out).endswith(".npz") else f"{args.out}.npz", "program file")
    if args.step > 0:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traj = simulate(scene, formulation=formulation, solver=args.solver, dt=dt,
                            duration=args.step * dt, options=options)
        if traj.q.shape[0] <= args.step:
            raise ContactoptError(f"the run stopped before step {args.step}: {traj.message}")
        q, v, t = traj.q[args.step], traj.v[args.step], float(traj.t[args.step])
        act = traj.act[args.step]  # the actuator activations there (MuJoCo's act), if any
    control = make_controller(scene.control, scene.system)  # the scene's input at that step
    u = None if control is None else control(t, np.array(q), np.array(v))
    program = formulate(scene.system, q, v, dt, formulation, options, t=t, control=u, activation=act)
    print(f"step {args.step} (t = {t:.6g}) of {scene.name}, formulation {formulation}: {program.summary()}")
    for block in program.variables:
        print(f"  variables {block.name}: [{block.start}, {block.stop})")
    for block in getattr(program, "constraints", ()):
        print(f"  rows      {block.name}: [{block.start}, {block.stop})")
    matrices = program_matrices(program, terminal_width())
    if matrices:
        print(matrices)
    else:
        print(f"(matrices printed for programs of at most {MATRIX_MAX} variables and rows; --out saves them)")
    if args.out:
        print(f"wrote {save_program(program, args.out)}")
    return 0
