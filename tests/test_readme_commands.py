"""Every command of README.md runs (issue 35 item 4, issue 40).

The commands are read from the README's fenced ``bash`` blocks (a line each; comments and the
continuation lines of comments left out), so a new command is picked up: one without a plan in
:data:`PLANS` fails :func:`test_every_readme_command_has_a_plan`. Each runs as a subprocess (the
``contactopt`` entry point as ``python -m contactopt``, ``python`` as this interpreter) in a
folder of its own whose ``problems``, ``experiments`` and ``tests`` are the repository's, beside a
``shared`` that is the repository's ``../shared`` when there is one. A plan states what the
output must say (and which files must exist), what to run before it (a bench reads an export's
files), the arguments that shorten it (``--duration``: the same command on a shorter run) and the
optional packages it needs (skipped, naming them, without). The setup commands run their part
after the installs. A few short commands run by default (a few seconds); the others are ``slow``.
The README's Python snippet runs as a script, its printed output checked.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHARED = ROOT.parent / "shared"


def readme_commands(text: str | None = None) -> list[str]:
    """The README's command lines: each line of a fenced ``bash`` block that is not blank nor a
    comment, its trailing comment removed (``shlex``: a ``#`` inside quotes stays)."""
    text = README.read_text() if text is None else text
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            # a setup line (installs && the command) as written; the others normalized by shlex
            out.append(line.strip() if "&&" in line else shlex.join(shlex.split(line, comments=True)))
    return out


def readme_snippet() -> str:
    """The README's (first) Python block."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert blocks, "README.md has no python block"
    return str(blocks[0])


Check = Callable[[Path, str], None]


@dataclass(frozen=True)
class Plan:
    """How a README command is run and what it must show (see the module docstring)."""

    expect: str  # a regular expression the output (stdout and stderr) must match
    shorten: tuple[str, ...] = ()  # arguments appended: the same command on a shorter run
    slow: bool = True
    needs: tuple[str, ...] = ()  # modules it imports (skipped without them)
    before: tuple[str, ...] = ()  # README commands run first in the same folder
    files: tuple[str, ...] = ()  # paths that must exist after it
    replace: tuple[tuple[str, str], ...] = ()  # an argument replaced (a README placeholder)
    check: Check | None = None  # a further check of the folder and the output
    timeout: float = 600.0


MAIN_JOB = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
            "contactopt compare problems/box_slide.toml")
SUITE = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && python -m pytest'
WROTE_RUN = r"wrote runs/[\w.-]+/"
EXPORT_TABLE = "contactopt export table_four_legs -f ccp --out exports/table"
EXPORT_QP = "contactopt export table_four_legs -f anitescu -o form=dual --out exports/table-qp"
EXPORT_PILE = "contactopt export sphere_pile_mjcf -f coulomb --format fclib --out exports/pile"
RUN_CART = "contactopt run cart_wall"
SHORT = ("--duration", "0.05")
#: The README's peers example: "about a minute on 2 cores without Siconos" (measured 51-59 s with
#: five other test runs sharing the 2 cores); the test allows three times that.
PEERS_BUDGET_S = 180.0


def _every_cell_completed_or_refused(folder: Path, output: str) -> None:
    """Issue 40 item 1: each cell of the quadruped comparison completed, or was refused before
    step 0 with its reason (no cell stops at step 0 with a solver's numerical error)."""
    table = pd.read_csv(folder / "runs" / "compare-quadruped_trot" / "table.csv")
    assert len(table) > 0
    for row in table.itertuples():
        cell = f"{row.formulation}/{row.solver}"
        if row.status != "completed":
            assert row.steps == 0 and isinstance(row.message, str) and row.message, cell
            assert "numerical_error" not in row.message and "unbounded" not in row.message, f"{cell}: {row.message}"
    if importlib.util.find_spec("qpsolvers") is not None:  # the bridge's cells are among them
        assert any(str(solver).startswith("qpsolvers") for solver in table["solver"])


def _exactly_the_pairs(folder: Path, output: str) -> None:
    table = pd.read_csv(folder / "runs" / "compare-box_slide" / "table.csv")
    assert sorted(zip(table["formulation"], table["solver"], strict=True)) == [
        ("anitescu:form=dual", "osqp"), ("ccp", "clarabel"), ("lcp", "lemke")]


def _peers_within_budget(folder: Path, output: str) -> None:
    summary = json.loads((folder / "peers-out" / "summary.json").read_text())
    solvers = {row["solver"] for row in summary["rows"]}
    assert "fixed_point" not in solvers and {"nsgs", "nsn"} <= solvers
    pile = {row["problem"] for row in summary["rows"] if row["group"] == "sphere_pile_mjcf"}
    assert 0 < len(pile) <= 3  # --max-problems' default


def _bench_summary(name: str) -> Check:
    def check(folder: Path, output: str) -> None:
        assert re.search(r"\d+ solves in [\d.]+ s", output), output[-2000:]
        results = pd.read_csv(next((folder / "exports").rglob("bench-*/results.csv")))
        assert name in set(results["solver"])
    return check


PLANS: dict[str, Plan] = {
    MAIN_JOB: Plan(r"wrote runs/compare-box_slide/", files=("runs/compare-box_slide/table.csv",
                                                         "runs/compare-box_slide/report.md"),
                   check=lambda folder, out: None if re.search(
                       r"sap is not in the default formulations \(opt-in", out) else pytest.fail(
                       "the main job's notes do not say why sap is left out")),
    SUITE: Plan(r"\d+ tests? collected", shorten=("--collect-only", "-q", "-n", "0")),
    "contactopt list": Plan(r"(?s)formulations.*anitescu.*solvers.*clarabel"),
    "contactopt compare box_slide --formulations lcp,anitescu:form=dual,ccp --solvers lemke,clarabel,pgs --dt "
    "1e-3,2e-3": Plan(r"observables of box_slide", files=("runs/compare-box_slide/table.csv",)),
    "contactopt compare box_slide --formulations lcp,anitescu --solvers lemke,clarabel --dt 1e-3,2e-3,4e-3,8e-3":
        Plan(r"convergence \(order p", files=("runs/compare-box_slide/convergence.csv",
                                              "runs/compare-box_slide/convergence.png")),
    "contactopt compare box_slide --executor dask": Plan(r"computed \(dask\)", shorten=SHORT,
                                                         needs=("dask", "distributed")),
    "contactopt compare box_slide --cell-time-limit 60": Plan(r"box_slide: \d+ runs: \d+ computed", shorten=SHORT),
    "contactopt compare box_slide --out runs/mine --force": Plan(r"wrote runs/mine/", shorten=SHORT,
                                                                 files=("runs/mine/table.csv",)),
    "contactopt run bouncing_ball": Plan(WROTE_RUN),
    "contactopt run problems/urdf/two_link_arm.urdf --duration 0.5": Plan(WROTE_RUN, needs=("mujoco",)),
    "contactopt run problems/urdf/box.urdf --system-option floating_base=true --system-option ground=true "
    "--duration 0.2": Plan(WROTE_RUN, needs=("mujoco",)),
    "contactopt run spinning_ball_hybrid": Plan(WROTE_RUN),
    "contactopt run box_drop -o stiffness=1e6 -o method=BDF": Plan(WROTE_RUN, needs=("mujoco",)),
    "contactopt run problems/mjcf/box_plane.xml": Plan(WROTE_RUN, shorten=SHORT, needs=("mujoco",)),
    # robot.xml stands for the user's model: a shipped arm whose keyframe is renamed "home"
    "contactopt run robot.xml --keyframe home": Plan(WROTE_RUN, shorten=SHORT, needs=("mujoco",)),
    "contactopt run robot.xml --system-option detection_margin=0.005": Plan(WROTE_RUN, shorten=SHORT,
                                                                            needs=("mujoco",)),
    "contactopt compare box_slide_mjcf --formulations lcp,ccp,regularized,mujoco": Plan(
        r"observables of box_slide_mjcf|wrote runs/compare-box_slide_mjcf/", shorten=SHORT, needs=("mujoco",)),
    EXPORT_TABLE: Plan(r"fclib", shorten=("--duration", "0.005"), files=("exports/table/fclib/table_four_legs",)),
    "contactopt bench exports/table/fclib --solvers clarabel,pgs,cvxpy --profiles default,high_accuracy": Plan(
        r"solves in", needs=("cvxpy",), before=(EXPORT_TABLE,), check=_bench_summary("cvxpy")),
    EXPORT_QP: Plan(r"npz", shorten=("--duration", "0.005"), files=("exports/table-qp/npz",)),
    "contactopt bench exports/table-qp/npz --solvers clarabel,osqp,pgs,qpsolvers:proxqp --profiles "
    "default,high_accuracy": Plan(r"solves in", needs=("qpsolvers", "proxsuite"), before=(EXPORT_QP,),
                                  check=_bench_summary("qpsolvers:proxqp")),
    "contactopt bench FCLIB_FOLDER --solvers clarabel --symmetrize --out bench-siconos": Plan(
        r"solves in", files=("bench-siconos/results.csv",),
        replace=(("FCLIB_FOLDER", "../shared/data/fclib/siconos_text_converted"),)),
    EXPORT_TABLE + " --resume": Plan(r"resumed: its completed step files are reused", shorten=("--duration", "0.005"),
                                     before=(EXPORT_TABLE,), files=("exports/table/fclib/table_four_legs",)),
    "contactopt compare box_slide --pairs lcp/lemke,ccp/clarabel,anitescu:form=dual/osqp": Plan(
        r"wrote runs/compare-box_slide/", shorten=SHORT, check=_exactly_the_pairs),
    "python experiments/coulomb_transitions.py --quick": Plan(r"wrote transitions-out", needs=("mujoco",),
                                                              shorten=("--out", "transitions-out")),
    "contactopt run problems/mjcf/limited_arm.xml -f regularized -o params=model": Plan(WROTE_RUN, shorten=SHORT,
                                                                                         needs=("mujoco",)),
    RUN_CART: Plan(r"wrote runs/cart_wall-gauss-clarabel/", files=("runs/cart_wall-gauss-clarabel/trajectory.npz",
                                                                     "runs/cart_wall-gauss-clarabel/summary.json")),
    "contactopt run problems/point_mass_drop.toml -s lemke -o form=dual --save-programs": Plan(WROTE_RUN),
    "contactopt run box_slide -f lcp -s lemke -o k=8": Plan(r"stop_distance = .*ok"),
    "contactopt run box_slide -f ccp -s pgs -o form=dual": Plan(WROTE_RUN),
    "contactopt run box_slide -f coulomb -s nsgs": Plan(r"stop_distance = .*ok"),
    EXPORT_PILE: Plan(r"fclib", shorten=("--duration", "0.004"), needs=("mujoco",),
                      files=("exports/pile/fclib/sphere_pile_mjcf",)),
    "contactopt bench exports/pile/fclib --solvers nsgs,nsn,staggered": Plan(
        r"solves in", needs=("mujoco",), before=(EXPORT_PILE,),
        check=lambda folder, out: None if list(folder.glob("exports/pile/bench-*/histories.csv"))
        else pytest.fail("no histories.csv")),
    "python experiments/coulomb_peers.py --scenes sphere_pile_mjcf:0.02": Plan(
        r"coulomb_peers: \d+ problems, ours .* expected at most ~\d+ s", needs=("mujoco",),
        shorten=("--out", "peers-out", "--no-progress"), check=_peers_within_budget, timeout=PEERS_BUDGET_S),
    "contactopt run box_slide -f ccp --sensitivities mu,v0": Plan(r"sensitivities of the final state"),
    "python experiments/sysid.py --formulation all": Plan(r"mu", needs=("mujoco",)),
    "python experiments/gradients.py '[--quick]'": Plan(r"\S", replace=(("[--quick]", "--quick"),)),
    "python experiments/gradient_cost.py --scenes box": Plan(r"\S"),
    "contactopt run box_slide -f regularized -o cone=elliptic -o 'solref=[0.02, 1.0]'": Plan(WROTE_RUN),
    "contactopt compare quadruped_trot --formulations anitescu,regularized,mujoco": Plan(
        r"observables of quadruped_trot|wrote runs/compare-quadruped_trot/", shorten=SHORT, needs=("mujoco",),
        check=_every_cell_completed_or_refused),
    "contactopt run dm_hopper -f mujoco": Plan(WROTE_RUN, shorten=SHORT, needs=("mujoco", "dm_control")),
    "contactopt run cartesian_pendulum -f ode -o drift=projection -o multipliers=gauss": Plan(
        WROTE_RUN, shorten=("--duration", "0.5")),  # 225 s for its 10 s on 2 busy cores
    # issue 40 item 3: the scene's own energy observable within its tolerance at the README's dt
    "contactopt run double_pendulum -f variational --dt 0.003": Plan(
        r"energy_balance = \S+ J, reference 0 J, error \S+ J \(tolerance 0.01 J\): ok", slow=False, timeout=120),
    "contactopt run cartesian_pendulum_floor -f lcp -s lemke -o drift=baumgarte -o alpha=20": Plan(WROTE_RUN),
    "contactopt program cart_wall --step 5 --solver lemke --out step5.npz": Plan(r"\S", files=("step5.npz",)),
    "contactopt render box_slide --out box.mp4": Plan(r"box\.mp4", shorten=SHORT, needs=("imageio", "imageio_ffmpeg"),
                                                      files=("box.mp4",)),
    "contactopt render runs/cart_wall-gauss-clarabel --out cart.gif": Plan(r"cart\.gif", needs=("imageio",),
                                                                          before=(RUN_CART,), files=("cart.gif",)),
    "contactopt render two_link_arm_mjcf --out arm.mp4": Plan(r"arm\.mp4", shorten=SHORT,
                                                              needs=("mujoco", "imageio", "imageio_ffmpeg"),
                                                              files=("arm.mp4",)),
    "contactopt compare box_slide --formulations lcp,anitescu,ccp --render": Plan(
        r"compare\.mp4", shorten=SHORT, needs=("imageio", "imageio_ffmpeg"),
        files=("runs/compare-box_slide/compare.mp4",)),
    "contactopt view box_slide --formulations lcp,anitescu --out view.html": Plan(
        r"view\.html", shorten=SHORT, needs=("meshcat",), files=("view.html",)),
    # 4e6 steps of 1e-7 s: the same command over 1e-5 s (the step budget raised is what it shows)
    "contactopt run box_slide --dt 1e-7 --max-steps 4000000": Plan(WROTE_RUN, shorten=("--duration", "1e-5")),
    "contactopt run box_slide -f lcp -s lemke --solver-option max_iter=5000": Plan(r"stop_distance = .*ok"),
    "contactopt run --help": Plan(r"usage: contactopt run", slow=False, timeout=120),
}


def _argv(command: str) -> list[str]:
    """The command's arguments, its program this interpreter (``contactopt``: ``-m contactopt``)."""
    if "&&" in command:  # a setup line: the part after the installs
        command = command.split("&&")[-1].strip()
    argv = shlex.split(command)
    if argv[0] == "contactopt":
        return [sys.executable, "-m", "contactopt", *argv[1:]]
    if argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    raise AssertionError(f"no way to run {argv[0]!r}")


def _folder(tmp_path: Path) -> Path:
    """A folder like a clone's root: the repository's problems, experiments and tests, and
    ``../shared`` when the repository has one beside it."""
    folder = tmp_path / "repo"
    folder.mkdir()
    for name in ("problems", "experiments", "tests", "pyproject.toml"):
        (folder / name).symlink_to(ROOT / name)
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    arm = (ROOT / "problems" / "mjcf" / "position_arm.xml").read_text()
    (folder / "robot.xml").write_text(arm.replace('<key name="press"', '<key name="home"'))
    return folder


def _run(command: str, folder: Path, plan: Plan) -> tuple[str, float]:
    argv = _argv(command)
    for old, new in plan.replace:
        argv = [new if arg == old else arg for arg in argv]
    argv += plan.shorten
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "MPLBACKEND": "Agg", "COLUMNS": "100"}
    start = time.perf_counter()
    try:
        result = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=plan.timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command}: not done in {plan.timeout:g} s")
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{shlex.join(argv)} exited {result.returncode}:\n{output[-3000:]}"
    return output, time.perf_counter() - start


def _skip_reason(command: str, plan: Plan) -> str | None:
    missing = [name for name in plan.needs if importlib.util.find_spec(name) is None]
    if missing:
        return f"needs {', '.join(missing)}"
    if "../shared/" in " ".join([command, *(new for _, new in plan.replace)]) and not SHARED.is_dir():
        return f"needs the project's shared data beside the clone ({SHARED})"
    return None


def test_every_readme_command_has_a_plan() -> None:
    commands = readme_commands()
    assert len(commands) >= 40, "the README's bash blocks were not read"
    missing = [command for command in commands if command not in PLANS]
    assert not missing, "README commands without a test (add them to PLANS):\n" + "\n".join(missing)
    stale = [command for command in PLANS if command not in commands]
    assert not stale, "PLANS for commands the README no longer has:\n" + "\n".join(stale)
    for command, plan in PLANS.items():
        for earlier in plan.before:
            assert earlier in PLANS, f"{command}: runs {earlier!r} first, which has no plan"


def test_readme_commands_are_read_from_fenced_bash_blocks() -> None:
    text = ("x\n```bash\ncontactopt run a   # note\n                # more note\n"
            "contactopt run b -o \"s=[1, 2]\"\n```\n```python\nprint(1)\n```\n")
    assert readme_commands(text) == ["contactopt run a", "contactopt run b -o 's=[1, 2]'"]


def _params() -> list[object]:
    return [pytest.param(command, id=command[:90],
                         marks=[pytest.mark.slow] if PLANS.get(command, Plan("")).slow else [])
            for command in readme_commands() if command in PLANS]


@pytest.mark.parametrize("command", _params())
def test_readme_command(command: str, tmp_path: Path) -> None:
    plan = PLANS[command]
    reason = _skip_reason(command, plan) or next(
        (f"{earlier}: {why}" for earlier in plan.before if (why := _skip_reason(earlier, PLANS[earlier]))), None)
    if reason:
        pytest.skip(reason)
    folder = _folder(tmp_path)
    for earlier in plan.before:
        _run(earlier, folder, PLANS[earlier])
    output, _ = _run(command, folder, plan)
    assert re.search(plan.expect, output), f"{command}: no {plan.expect!r} in its output:\n{output[-3000:]}"
    for path in plan.files:
        assert (folder / path).exists(), f"{command}: {path} not written"
    if plan.check is not None:
        plan.check(folder, output)


@pytest.mark.slow  # about 20 s of CPU: a 10 s double pendulum, an MJCF arm, a comparison
def test_readme_python_snippet_prints_its_results(tmp_path: Path) -> None:
    """Issue 40 item 5: run as a script, the snippet prints what its comments describe, and its
    QP -> LCP by hand gives clarabel's v'."""
    folder = _folder(tmp_path)
    (folder / "snippet.py").write_text(readme_snippet())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "MPLBACKEND": "Agg"}
    result = subprocess.run([sys.executable, "snippet.py"], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("(21, 1) (21, 1) [[")  # cart_wall: 20 steps of q and v, step 5's impulses
    assert re.match(r"Trajectory\(cart_wall, gauss / osqp, dt = 0.1, 20 steps, .*completed", lines[1])
    rows = [line.split() for line in lines if re.match(r"\d+\s+(lcp|anitescu)\s", line)]
    completed = [row for row in rows if row[4] == "completed"]
    assert len(completed) == 6  # lcp x lemke, anitescu x (lemke, clarabel), two dt each
    # lcp's nonsymmetric LCP is no program clarabel takes: refused before step 0, at both dt
    assert sorted((row[1], row[2], row[4]) for row in rows if row not in completed) == [
        ("lcp", "clarabel", "refused")] * 2
    for row in completed:  # stop distance within 1 % of v0^2 / (2 mu g)
        assert abs(float(row[7])) < 0.01 and abs(float(row[5]) / float(row[6]) - 1) < 0.01
    assert any(line.startswith("Trajectory(cart_wall") for line in lines[9:])  # the loaded copy
    assert "(2, 101, 7) (2, 100) [ True  True]" in lines  # simulate_batch: 2 box worlds, 100 steps each
    assert f"({1000}, 2)" in lines  # the double pendulum's controls: 1000 steps of 2 inputs
    assert any(line.startswith("Solution(optimal, clarabel") for line in lines)
    assert any(line.startswith("Solution(optimal, lemke via qp->lcp") for line in lines)
    by_hand, clarabel = (np.array(part.strip(" []").split(), dtype=float) for part in lines[-1].split("] ["))
    np.testing.assert_allclose(by_hand, clarabel, rtol=1e-9, atol=1e-12)
