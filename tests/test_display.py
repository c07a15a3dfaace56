"""Notebook-first display (issue 27): short reprs and HTML tables of scenes, programs,
solutions and trajectories with the numbers that matter, figures that show inline without
``%matplotlib inline``, no solver chatter, the public names in ``dir(co)``; scalar sphere sizes,
frames in the MJCF velocity names, and the README's QP -> LCP by hand mapped back to ``v'``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import contactopt as co
from contactopt.core.errors import SceneError

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"
#: The cart 0.1 m from its wall moving at -2 m/s, h = 0.1 (Tedrake 2022, "Time-stepping LCP:
#: Normal force"): v_free = -2, the row phi/h + v' >= 0 stops it at v' = -1 with the impulse
#: lambda = m (v' - v_free) = 1 N·s; the Gauss QP is P = m = 1, c = -m v_free = 2, A = -1, b = phi/h = 1.
CART = {"q": [0.1], "v": [-2.0], "dt": 0.1}


def _cart_program() -> co.ConicProgram:
    program = co.formulate(co.load_scene(PROBLEMS / "cart_wall.toml").system, CART["q"], CART["v"], CART["dt"],
                           formulation="gauss")
    assert isinstance(program, co.ConicProgram)
    return program


def _one_line(text: str, limit: int = 200) -> str:
    assert "\n" not in text and len(text) <= limit, text
    return text


def test_scene_repr_is_one_line_with_its_numbers_and_a_table_in_jupyter() -> None:
    scene = co.load_scene(PROBLEMS / "box_slide.toml")
    text = _one_line(repr(scene))
    for part in ("'box_slide'", "rigid3d", "nq=7", "nv=6", f"dt={scene.dt:g} s", f"duration={scene.duration:g} s",
                 scene.formulation, scene.solver):
        assert part in text, part
    html = scene._repr_html_()
    assert html.startswith("<table>") and "box.wx" in html and f"{round(scene.duration / scene.dt)} steps" in html


def test_small_program_shows_its_matrices_and_its_lcp_the_kkt_data() -> None:
    program = _cart_program()
    text = _one_line(repr(program))
    assert text.startswith("ConicProgram(QP: n=1, m=1, cones nonneg(1)") and "formulation=gauss" in text
    html = program._repr_html_()
    for name, value in (("P", 1.0), ("c", 2.0), ("A", -1.0), ("b", 1.0)):  # the closed form of CART
        assert f"<summary>{name} 1&times;1</summary><table><tr><td style='text-align:right'>{value:.4g}</td>" in html
    lcp = co.qp_to_lcp(program)  # M = A P^-1 A' = 1, q = b + A P^-1 c = 1 - 2 = -1
    assert _one_line(repr(lcp)).startswith("LCP(n=1, M symmetric")
    assert "<td style='text-align:right'>-1</td>" in lcp._repr_html_()


def test_large_program_repr_counts_cones_and_leaves_matrices_out() -> None:
    n, contacts = 60, 100
    program = co.ConicProgram(P=sp.identity(n, format="csc"), c=np.zeros(n), A=sp.random(3 * contacts, n, 0.05,
                              format="csc", random_state=0), b=np.ones(3 * contacts), cones=(co.SOC(3),) * contacts)
    text = _one_line(repr(program))
    assert "SOCP: n=60, m=300, cones soc(3) x 100" in text
    assert "<details>" not in program._repr_html_()


def test_solution_repr_and_table_carry_status_solver_and_answer() -> None:
    solution = co.solve(co.qp_to_lcp(_cart_program()), "lemke")
    np.testing.assert_allclose(solution.x, [1.0], atol=1e-12)  # lambda = 1 N·s
    text = _one_line(repr(solution))
    assert text.startswith("Solution(optimal, lemke,") and "n=1" in text and "worst residual 0" in text
    html = solution._repr_html_()
    assert "optimal" in html and "<summary>x 1&times;1</summary><table><tr><td style='text-align:right'>1</td>" in html


def test_trajectory_plot_is_a_figure_ipython_shows_as_png_without_the_inline_backend() -> None:
    from matplotlib.figure import Figure

    ipython = pytest.importorskip("IPython.core.interactiveshell")
    scene = co.load_scene(PROBLEMS / "cart_wall.toml")
    traj = co.simulate(scene, duration=0.5)
    figure = co.plot(traj)
    assert isinstance(figure, Figure)
    shell = ipython.InteractiveShell.instance()
    data, _ = shell.display_formatter.format(figure)  # what Jupyter receives for a cell's value
    assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    for shown in (scene, traj, _cart_program()):
        html, _ = shell.display_formatter.format(shown)
        assert html["text/html"].startswith("<table>")
        assert html["text/plain"] == repr(shown)


def test_dir_lists_the_public_names_of_the_design() -> None:
    # docs/architecture.md's public API: co.load_scene, simulate, Trajectory, formulate, solve, LCP,
    # formulations, solvers, compare (loaded lazily: it imports pandas and matplotlib)
    names = dir(co)
    for name in ("load_scene", "simulate", "Trajectory", "formulate", "solve", "LCP", "formulations",
                 "solvers", "compare", "analysis", *co.__all__):
        assert name in names, name
        assert getattr(co, name) is not None


def test_osqp_says_nothing_when_stdout_is_not_file_descriptor_1(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("osqp")
    # the cart 1 m from the wall: no active row, so OSQP's polishing reports "Polishing not
    # needed" through Python's sys.stdout (capsys replaces it, as a Jupyter kernel does)
    program = co.formulate(co.load_scene(PROBLEMS / "cart_wall.toml").system, [1.0], [-2.0], 0.1, formulation="gauss")
    solution = co.solve(program, "osqp")
    np.testing.assert_allclose(solution.x, [-2.0], atol=1e-6)  # free flight: v' = v_free
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def _body_scene(tmp_path: Path, shape: str, size: str) -> co.Scene:
    path = tmp_path / f"{shape}.toml"
    path.write_text(f"""[scene]\ndt = 0.01\nduration = 0.1\n[system]\ntype = "rigid3d"\n[[system.bodies]]
name = "body"\nshape = "{shape}"\n{size}\nmass = 2.0\nposition = [0, 0, 0.5]\n""")
    return co.load_scene(path)


def test_a_sphere_takes_its_radius_as_one_number(tmp_path: Path) -> None:
    inertias = []
    for size in ("size = 0.1", "size = [0.1]", "radius = 0.1"):
        body = _body_scene(tmp_path, "sphere", size).system.bodies[0]  # type: ignore[attr-defined]
        assert body.radius == 0.1
        inertias.append(body.inertia)
    np.testing.assert_allclose(inertias, [[0.4 * 2.0 * 0.01] * 3] * 3, rtol=1e-15)  # 2/5 m r^2
    with pytest.raises(SceneError, match=r"size = r \(neither given\)"):
        _body_scene(tmp_path, "sphere", "")
    with pytest.raises(SceneError, match=r"system\.bodies\[0\]\.size: a box needs its three half extents"):
        _body_scene(tmp_path, "box", "size = 0.1")  # a cube's half extent or its edge: ambiguous


def test_mjcf_free_joint_angular_velocity_is_named_in_the_body_frame() -> None:
    pytest.importorskip("mujoco")
    system = co.load_scene(PROBLEMS / "box_slide_mjcf.toml").system
    assert system.v_names[-6:] == ("box.vx", "box.vy", "box.vz", "box.wx_body", "box.wy_body", "box.wz_body")


def test_readme_qp_to_lcp_by_hand_maps_the_multiplier_back_to_v_next() -> None:
    program = _cart_program()
    z = co.solve(co.qp_to_lcp(program), "lemke").x  # the multiplier: the impulse, 1 N·s
    v_next = -spla.spsolve(program.P, program.c + program.A.T @ z)  # x = -P^-1 (c + A'z)
    np.testing.assert_allclose(z, [1.0], atol=1e-12)
    np.testing.assert_allclose(v_next, [-1.0], atol=1e-12)
    np.testing.assert_allclose(co.solve(program, "clarabel").x, v_next, atol=1e-8)
