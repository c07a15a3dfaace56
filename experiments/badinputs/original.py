"""The first 121 bad inputs (issue 8): scene files, CLI arguments, API calls and corrupted
trajectory / program / compare-cell files, each expected to give one clear line."""

from __future__ import annotations

import io
import json
import math
import zipfile

import numpy as np
import scipy.sparse as sp

from badinputs.base import (
    GOOD,
    ROOT,
    Case,
    api_call,
    box_scene,
    bytes_file,
    cart_qp,
    cart_scene,
    cli_call,
    co,
    compare_cell,
    corrupt_npz,
    edit_header,
    make_lcp,
    raw_scene,
    saved_program,
    saved_trajectory,
    scene_text,
    truncated,
)


def cases() -> list[Case]:
    scene, cli, api, files = "scene file", "CLI", "API", "corrupted file"
    out: list[Case] = [
        # --- scene files --------------------------------------------------------------------
        Case(scene, "not TOML", raw_scene("[scene\nname = ")),
        Case(scene, "empty file", raw_scene("")),
        Case(scene, "binary garbage", raw_scene(bytes(range(256)))),
        Case(scene, "no [scene] table", scene_text('[scene]\nname = "bad"\n', '[other]\nname = "bad"\n')),
        Case(scene, "dt missing", scene_text("dt = 0.1\n", "")),
        Case(scene, "dt = 0", scene_text("dt = 0.1", "dt = 0")),
        Case(scene, "dt negative", scene_text("dt = 0.1", "dt = -0.1")),
        Case(scene, "dt = nan", scene_text("dt = 0.1", "dt = nan")),
        Case(scene, "dt a string", scene_text("dt = 0.1", 'dt = "0.1"')),
        Case(scene, "duration = inf", scene_text("duration = 0.3", "duration = inf")),
        Case(scene, "duration = 0", scene_text("duration = 0.3", "duration = 0")),
        Case(scene, "duration a bool", scene_text("duration = 0.3", "duration = true")),
        Case(scene, "unknown key in [scene]", scene_text('name = "bad"', 'name = "bad"\nstep = 3')),
        Case(scene, "unknown table", scene_text("[initial]", "[extras]\nx = 1\n\n[initial]")),
        Case(scene, "unknown formulation", scene_text('formulation = "gauss"', 'formulation = "gaus"')),
        Case(scene, "unknown solver", scene_text('solver = "clarabel"', 'solver = "clarabell"')),
        Case(scene, "unknown cvxpy solver", scene_text('solver = "clarabel"', 'solver = "cvxpy:NOSUCH"')),
        Case(scene, "solver variant on lemke", scene_text('solver = "clarabel"', 'solver = "lemke:fast"')),
        Case(scene, "system type unknown", scene_text('type = "cart"', 'type = "carts"')),
        Case(scene, "system type missing", scene_text('type = "cart"\n', "")),
        Case(scene, "system type a number", scene_text('type = "cart"', "type = 3")),
        Case(scene, "mass negative", scene_text("m = 1.0", "m = -1.0")),
        Case(scene, "mass nan", scene_text("m = 1.0", "m = nan")),
        Case(scene, "unknown parameter", scene_text("u = 0.0", "u = 0.0\nk = 3.0")),
        Case(scene, "q too long", scene_text("q = [1.0]", "q = [1.0, 2.0]")),
        Case(scene, "q with nan", scene_text("q = [1.0]", "q = [nan]")),
        Case(scene, "q a string", scene_text("q = [1.0]", 'q = "one"')),
        Case(scene, "v of strings", scene_text("v = [-2.0]", 'v = ["fast"]')),
        Case(scene, "mu negative", scene_text("[initial]", "[contact]\nmu = -0.5\n\n[initial]")),
        Case(scene, "restitution 2", scene_text("[initial]", "[contact]\nrestitution = 2.0\n\n[initial]")),
        Case(scene, "unknown option", scene_text("[initial]", "[options]\nfrom = 'dual'\n\n[initial]")),
        Case(scene, "bad option value", scene_text("[initial]", "[options]\nform = 'both'\n\n[initial]")),
        Case(scene, "solver_options not a table", raw_scene(GOOD.replace("[scene]", "solver_options = 3\n[scene]"))),
        Case(scene, "mjcf file missing", raw_scene(GOOD.replace('type = "cart"', 'type = "mjcf"\nfile = "nope.xml"')
                                                     .replace("[system.parameters]\nm = 1.0\nu = 0.0\n", ""))),
        Case(scene, "mjcf negative margin", raw_scene(
            GOOD.replace('type = "cart"', f'type = "mjcf"\nfile = "{ROOT}/problems/mjcf/box_plane.xml"\n'
                         "detection_margin = -1").replace("[system.parameters]\nm = 1.0\nu = 0.0\n", "")
            .replace("q = [1.0]\nv = [-2.0]", "q = [0, 0, 0.1, 1, 0, 0, 0]"))),
        Case(scene, "path does not exist", lambda tmp: co.load_scene(tmp / "nothing.toml")),
        Case(scene, "path is a folder", lambda tmp: co.load_scene(tmp)),
        # --- CLI ----------------------------------------------------------------------------
        Case(cli, "run: unknown scene", cli_call("run", "no_such_problem")),
        Case(cli, "run: --dt 0", cli_call("run", "cart_wall", "--dt", "0")),
        Case(cli, "run: --dt nan", cli_call("run", "cart_wall", "--dt", "nan")),
        Case(cli, "run: --duration -1", cli_call("run", "cart_wall", "--duration=-1")),
        Case(cli, "run: --duration 0", cli_call("run", "cart_wall", "--duration", "0")),
        Case(cli, "run: --dt abc", cli_call("run", "cart_wall", "--dt", "abc")),
        Case(cli, "run: unknown formulation", cli_call("run", "cart_wall", "-f", "nosuch")),
        Case(cli, "run: unknown solver", cli_call("run", "cart_wall", "-s", "nosuch")),
        Case(cli, "run: -s cvxpy:NOSUCH", cli_call("run", "cart_wall", "-s", "cvxpy:NOSUCH")),
        Case(cli, "run: -s qpsolvers:nosuch", cli_call("run", "cart_wall", "-s", "qpsolvers:nosuch")),
        Case(cli, "run: -o without =", cli_call("run", "cart_wall", "-o", "form")),
        Case(cli, "run: -o unknown key", cli_call("run", "cart_wall", "-o", "nosuch=1")),
        Case(cli, "run: -o bad value", cli_call("run", "cart_wall", "-o", "form=both")),
        Case(cli, "run: lcp k=0", cli_call("run", "box_slide", "-f", "lcp", "-s", "lemke", "-o", "k=0")),
        Case(cli, "run: drift=magic", cli_call("run", "cart_wall", "-o", "drift=magic")),
        Case(cli, "run: unknown solver option", cli_call("run", "cart_wall", "--solver-option", "bogus=1")),
        Case(cli, "run: -f lcp -s clarabel", cli_call("run", "box_slide", "-f", "lcp", "-s", "clarabel")),
        Case(cli, "run: --fallback nosuch", cli_call("run", "cart_wall", "--fallback", "nosuch")),
        Case(cli, "run: variational on an MJCF free joint", cli_call("run", "box_slide_mjcf", "-f", "variational")),
        Case(cli, "run: variational on a URDF arm's limits", cli_call("run", f"{ROOT}/problems/urdf/two_link_arm.urdf",
                                                                     "-f", "variational")),
        Case(cli, "run: ode on 3-D bodies", cli_call("run", "box_drop", "-f", "ode")),
        Case(cli, "run: mujoco on a TOML system", cli_call("run", "cart_wall", "-f", "mujoco")),
        Case(cli, "compare: nothing runnable", cli_call("compare", "box_slide", "--solvers", "lemke",
                                                    "--formulations", "ccp", "--executor", "serial")),
        Case(cli, "compare: --dt abc", cli_call("compare", "cart_wall", "--dt", "abc")),
        Case(cli, "compare: --dt 0", cli_call("compare", "cart_wall", "--dt", "0", "--executor", "serial")),
        Case(cli, "compare: --dt=-1e-3", cli_call("compare", "cart_wall", "--dt=-1e-3", "--executor", "serial")),
        Case(cli, "compare: --duration 0", cli_call("compare", "cart_wall", "--duration", "0")),
        Case(cli, "compare: unknown formulation", cli_call("compare", "cart_wall", "--formulations", "nosuch",
                                                       "--executor", "serial")),
        Case(cli, "compare: unknown solver", cli_call("compare", "cart_wall", "--solvers", "nosuch",
                                                  "--executor", "serial")),
        Case(cli, "compare: --workers 0", cli_call("compare", "cart_wall", "--workers", "0")),
        Case(cli, "compare: unknown executor", cli_call("compare", "cart_wall", "--executor", "mpi")),
        Case(cli, "program: --step -1", cli_call("program", "cart_wall", "--step", "-1")),
        Case(cli, "program: step past a failure", cli_call("program", "box_slide", "-f", "lcp", "-s", "clarabel",
                                                       "--step", "3")),
        Case(cli, "list: unknown topic", cli_call("list", "nosuch")),
        Case(cli, "export: unknown format", cli_call("export", "cart_wall", "--format", "xml")),
        Case(cli, "bench: missing folder", cli_call("bench", "{tmp}/nothing")),
        Case(cli, "unknown subcommand", cli_call("simulate", "cart_wall")),
        # --- API ----------------------------------------------------------------------------
        Case(api, "simulate dt=0", api_call(lambda: co.simulate(cart_scene(), dt=0))),
        Case(api, "simulate duration=nan", api_call(lambda: co.simulate(cart_scene(), duration=math.nan))),
        Case(api, "simulate on_failure='ignore'", api_call(lambda: co.simulate(cart_scene(), on_failure="ignore"))),  # type: ignore[arg-type]
        Case(api, "simulate unknown formulation", api_call(lambda: co.simulate(cart_scene(), formulation="nosuch"))),
        Case(api, "simulate lcp with clarabel", api_call(lambda: co.simulate(box_scene(), formulation="lcp",
                                                                         solver="clarabel"))),
        Case(api, "simulate fallback that cannot take it", api_call(lambda: co.simulate(
            box_scene(), formulation="lcp", solver="lemke", fallback="osqp"))),
        Case(api, "simulate unknown solver option", api_call(
            lambda: co.simulate(cart_scene(), solver_options={"bogus": 1}))),
        Case(api, "solve unknown solver", api_call(lambda: co.solve(cart_qp(), "nosuch"))),
        Case(api, "solve a string", api_call(lambda: co.solve("program", "clarabel"))),  # type: ignore[arg-type]
        Case(api, "solve refine='yes'", api_call(lambda: co.solve(cart_qp(), "clarabel", refine="yes"))),
        Case(api, "solve unknown option", api_call(lambda: co.solve(cart_qp(), "clarabel", bogus=1))),
        Case(api, "solve non-symmetric LCP with clarabel", api_call(lambda: co.solve(
            co.LCP(M=np.array([[1.0, 2.0], [0.0, 1.0]]), q=np.array([-1.0, -1.0])), "clarabel"))),
        Case(api, "LCP M not square", api_call(make_lcp(np.ones((2, 3)), np.ones(2)))),
        Case(api, "LCP q with nan", api_call(make_lcp(np.eye(2), np.array([1.0, math.nan])))),
        Case(api, "ConicProgram P wrong shape", api_call(lambda: co.ConicProgram(
            P=sp.eye(3, format="csc"), c=np.zeros(2), A=sp.csc_matrix((0, 2)), b=np.zeros(0), cones=()))),
        Case(api, "ConicProgram cones do not cover A", api_call(lambda: co.ConicProgram(
            P=sp.eye(2, format="csc"), c=np.zeros(2), A=sp.eye(2, format="csc"), b=np.zeros(2),
            cones=(co.Nonneg(1),)))),
        Case(api, "ConicProgram b with inf", api_call(lambda: co.ConicProgram(
            P=sp.eye(1, format="csc"), c=np.zeros(1), A=sp.eye(1, format="csc"), b=np.array([math.inf]),
            cones=(co.Nonneg(1),)))),
        Case(api, "ConicProgram P not symmetric", api_call(lambda: co.ConicProgram(
            P=sp.csc_matrix(np.array([[1.0, 1.0], [0.0, 1.0]])), c=np.zeros(2), A=sp.csc_matrix((0, 2)),
            b=np.zeros(0), cones=()))),
        Case(api, "Cone of unknown kind", api_call(lambda: co.programs.Cone("psd", 3))),  # type: ignore[arg-type]
        Case(api, "formulate with q of wrong length", api_call(lambda: co.formulate(cart_scene().system, q=[0.1, 0.2],
                                                                                v=[0.0], dt=0.1))),
        Case(api, "formulate dt=0", api_call(lambda: co.formulate(cart_scene().system, q=[0.1], v=[0.0], dt=0.0))),
        Case(api, "formulate q with nan", api_call(lambda: co.formulate(cart_scene().system, q=[math.nan], v=[0.0],
                                                                    dt=0.1))),
        Case(api, "compare unknown formulation", api_call(
            lambda: co.compare(cart_scene(), ["nosuch"], executor="serial"))),
        Case(api, "compare dt=0", api_call(lambda: co.compare(cart_scene(), ["gauss"], ["clarabel"], [0.0],
                                                          executor="serial"))),
        # --- corrupted files ----------------------------------------------------------------
        Case(files, "trajectory: a text file", bytes_file(b"hello", co.Trajectory.load)),
        Case(files, "trajectory: truncated", truncated(saved_trajectory, co.Trajectory.load)),
        Case(files, "trajectory: no header", corrupt_npz(saved_trajectory, lambda d: d.pop("header"),
                                                          co.Trajectory.load)),
        Case(files, "trajectory: header not JSON", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("header", np.array("{oops")), co.Trajectory.load)),
        Case(files, "trajectory: wrong format tag", corrupt_npz(
            saved_trajectory, lambda d: edit_header(d, format="something"), co.Trajectory.load)),
        Case(files, "trajectory: q array missing", corrupt_npz(saved_trajectory, lambda d: d.pop("q"),
                                                                co.Trajectory.load)),
        Case(files, "trajectory: status array short", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("status", d["status"][:1]), co.Trajectory.load)),
        Case(files, "trajectory: unknown status", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("status", np.array(["great"] * len(d["status"]))),
            co.Trajectory.load)),
        Case(files, "trajectory: contact counts too large", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("contact_counts", d["contact_counts"] + 5),
            co.Trajectory.load)),
        Case(files, "trajectory: q rows do not match t", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("q", d["q"][:-1]), co.Trajectory.load)),
        Case(files, "trajectory: header a list", corrupt_npz(
            saved_trajectory, lambda d: d.__setitem__("header", np.array("[1, 2]")), co.Trajectory.load)),
        Case(files, "trajectory: a zip that is not npz", bytes_file(_zip_bytes(), co.Trajectory.load)),
        Case(files, "program: a text file", bytes_file(b"hello", co.load_program)),
        Case(files, "program: truncated", truncated(saved_program, co.load_program)),
        Case(files, "program: a trajectory file", lambda tmp: co.load_program(saved_trajectory(tmp))),
        Case(files, "program: c array missing", corrupt_npz(saved_program, lambda d: d.pop("c"), co.load_program)),
        Case(files, "program: unknown cone", corrupt_npz(
            saved_program, lambda d: edit_header(d, cones=[["psd", 1]]), co.load_program)),
        Case(files, "program: unknown kind", corrupt_npz(saved_program, lambda d: edit_header(d, kind="sdp"),
                                                          co.load_program)),
        Case(files, "program: b with nan", corrupt_npz(
            saved_program, lambda d: d.__setitem__("b", np.full_like(d["b"], np.nan)), co.load_program)),
        Case(files, "program: header cones not a list", corrupt_npz(
            saved_program, lambda d: edit_header(d, cones=5), co.load_program)),
        Case(files, "compare cell: not JSON", compare_cell(lambda p: p.write_text("{oops"))),
        Case(files, "compare cell: another cell's row", compare_cell(
            lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "formulation": "lcp"})))),
        Case(files, "compare cell: a JSON list", compare_cell(lambda p: p.write_text("[1, 2, 3]"))),
        Case(files, "compare cell: status missing", compare_cell(
            lambda p: p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "status"})))),
    ]
    return out


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "not arrays")
    return buffer.getvalue()


