"""Contact candidates of MJCF models (issue 23): MuJoCo's own contacts by default, a detection
margin that widens them by exactly that distance, the candidate count and MuJoCo's ``ncon`` in
every step's record (saved and loaded), ``--system-option`` for the ``[system]`` keys, and the
refusal of a model's declared features before step 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co
from contactopt.core.errors import OptionError

mujoco = pytest.importorskip("mujoco")

from contactopt.systems.mjcf.candidates import colliding_condims  # noqa: E402
from contactopt.systems.mjcf.system import MjcfSystem  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MARGINS = Path(__file__).resolve().parent / "data" / "geom_margins.xml"


def native_contacts(path: Path, q: np.ndarray) -> list[str]:
    """The sphere of each contact MuJoCo's ``mj_forward`` builds at ``q`` on the file as written."""
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    data.qpos[:] = q
    mujoco.mj_forward(model, data)
    return sorted(model.geom(int(contact.geom2)).name for contact in data.contact[: data.ncon])


def candidate_spheres(system: MjcfSystem, q: np.ndarray) -> list[str]:
    return sorted(label.split("|")[1] for label in system.contact_names(q))


def test_candidates_are_mujocos_contacts_by_default_and_grow_by_the_option() -> None:
    system = MjcfSystem(MARGINS)
    q = system.default_state()[0]
    mine = native_contacts(MARGINS, q)
    assert "near" in mine and "clear" not in mine and "high" not in mine  # near: dist 0.002 < its margin
    assert candidate_spheres(system, q) == mine and system.reference_contact_count(q) == len(mine)
    # clear is 0.004 m away, high 0.02 m: found exactly when the margin passes their distance
    # ("gap" lies within its own margin + gap from MuJoCo 4.0, within margin 0.002 + X up to 3.x)
    for margin, more in ((0.0035, set()), (0.0045, {"clear"}), (0.03, {"clear", "high"})):
        widened = MjcfSystem(MARGINS, detection_margin=margin)
        assert set(candidate_spheres(widened, q)) == set(mine) | {"gap"} | more, margin
        assert widened.reference_contact_count(q) == len(mine)  # MuJoCo's own count is unchanged


def test_params_model_equals_mj_step_on_a_model_with_geom_margins() -> None:
    """MuJoCo activates ``near`` 2 mm before touching (its margin): ``regularized -o params=model``
    solves MuJoCo's own program, so its step is ``mj_step``'s (both converged: MuJoCo's solver
    to 1e-15, Clarabel's answer refined to the KKT point)."""
    scene = co.load_scene(MARGINS)
    steps = 3
    ours = co.simulate(scene, formulation="regularized", solver="clarabel", options={"params": "model"},
                       duration=steps * scene.dt)
    reference = co.simulate(scene, formulation="mujoco", options={"tolerance": 1e-15, "iterations": 1000},
                            duration=steps * scene.dt)
    assert ours.completed and reference.completed
    assert np.abs(reference.v[1]).max() > 1e-3  # the active margin contact pushed ``near`` up
    np.testing.assert_allclose(ours.v, reference.v, rtol=0, atol=1e-10)
    assert [r.candidates for r in ours.steps] == [r.mujoco_contacts for r in ours.steps]


def test_step_records_carry_the_counts_saved_and_loaded(tmp_path: Path) -> None:
    scene = co.load_scene(MARGINS, system_options={"detection_margin": 0.01})
    traj = co.simulate(scene, formulation="ccp", solver="clarabel", duration=2 * scene.dt)
    mine = native_contacts(MARGINS, traj.q[0])
    assert traj.steps[0].candidates == 3 and traj.steps[0].mujoco_contacts == len(mine)  # near, gap, clear
    for record, q in zip(traj.steps, traj.q, strict=False):
        assert record.candidates == record.phi.shape[0]
        assert record.mujoco_contacts == len(native_contacts(MARGINS, q))
    reference = co.simulate(scene, formulation="mujoco", duration=scene.dt)
    assert reference.steps[0].mujoco_contacts == len(mine) == reference.steps[0].candidates
    loaded = co.Trajectory.load(traj.save(tmp_path / "run.npz"))
    assert [(r.candidates, r.mujoco_contacts) for r in loaded.steps] == \
        [(r.candidates, r.mujoco_contacts) for r in traj.steps]
    with np.load(tmp_path / "run.npz") as archive:  # a file written before the counts existed
        older = {key: archive[key] for key in archive.files if key not in ("candidates", "mujoco_contacts")}
    np.savez(tmp_path / "older.npz", **older)
    assert {(r.candidates, r.mujoco_contacts) for r in co.Trajectory.load(tmp_path / "older.npz").steps} == {(-1, -1)}
    rigid = co.simulate(co.load_scene("box_slide"), duration=2e-3)  # no MuJoCo behind it: -1
    assert rigid.steps[0].candidates == rigid.steps[0].phi.shape[0] and rigid.steps[0].mujoco_contacts == -1


def test_system_option_sets_a_key_and_an_unknown_key_is_one_error(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from contactopt.cli import build_parser, main

    assert main(["run", str(MARGINS), "--duration", "0.004", "--system-option", "detection_margin=0.0045",
                 "--out", str(tmp_path), "--no-progress", "--no-plot"]) == 0
    traj = co.Trajectory.load(tmp_path / "trajectory.npz")
    assert "detection margin 0.0045 m" in traj.info["system_description"]
    assert traj.steps[0].candidates == 3  # near, gap and clear (0.004 m away)
    capsys.readouterr()
    assert main(["run", str(MARGINS), "--system-option", "detection_margn=0.01", "--no-progress"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "unknown key 'system.detection_margn'" in error and "detection_margin" in error
    # a TOML scene's [system] keys, a keyframe by name, the type refused
    scene = co.load_scene(ROOT / "problems" / "box_slide_mjcf.toml", system_options={"detection_margin": 0.02})
    assert scene.system.detection_margin == 0.02  # type: ignore[attr-defined]
    arm = co.load_scene(ROOT / "problems" / "mjcf" / "position_arm.xml", system_options={"keyframe": "press"})
    assert arm.q0[2] == 0.5
    with pytest.raises(co.SceneError, match=r"unknown key 'system\.keyframes'"):
        co.load_scene(ROOT / "problems" / "box_slide.toml", system_options={"keyframes": "x"})
    with pytest.raises(co.SceneError, match="--system-option type"):
        co.load_scene(ROOT / "problems" / "box_slide.toml", system_options={"type": "mjcf"})
    parser = build_parser()
    for command in ("run", "compare", "export", "view", "render", "program"):
        args = parser.parse_args([command, "scene.toml", "--system-option", "a=1", "--system-option", "b=2"])
        assert args.system_option == ["a=1", "b=2"], command


BALL = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body pos="0 0 1"><freejoint/>
    <geom name="ball" type="sphere" size="0.1" condim="6" friction="0.5 0.005 0.002" {filter}/></body>
  <body pos="1 0 1"><joint name="{hinge}" type="hinge" frictionloss="{loss}"/>
    <geom name="bob" type="sphere" size="0.1" contype="0" conaffinity="0"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize(("filter_", "loss", "refused"), [
    ("", 0.0, r"condim 4/6.*geoms 'floor'\|'ball' \(condim 6\)"),
    ('contype="0" conaffinity="0"', 0.3, r"frictionloss.*dof 'pin' \(frictionloss 0.3\)"),
    ('contype="0" conaffinity="0"', 0.0, None)])
def test_coulomb_refuses_a_declared_condim_6_or_frictionloss_before_step_0(tmp_path: Path, filter_: str, loss: float,
                                                                           refused: str | None) -> None:
    """The ball starts 0.9 m above the floor: no contact exists at step 0, so only the model's
    declarations can refuse it; a ball that collides with nothing declares no condim 6 contact."""
    path = tmp_path / "ball.xml"
    path.write_text(BALL.format(filter=filter_, hinge="pin", loss=loss))
    scene = co.load_scene(path)
    assert scene.system.contacts(scene.q0).count == 0
    if refused is None:
        assert co.simulate(scene, formulation="coulomb", solver="nsgs", duration=3 * scene.dt).completed
        return
    with pytest.raises(OptionError, match=refused):
        co.simulate(scene, formulation="coulomb", solver="nsgs", duration=3 * scene.dt)


def test_declared_condims_are_those_of_mujocos_contacts() -> None:
    """Every contact MuJoCo builds along a run of limited_arm.xml (condim 1, 3, 4 and 6, a
    contype filter) is a pair :func:`colliding_condims` declares, with its condim."""
    model = mujoco.MjModel.from_xml_path(str(ROOT / "problems" / "mjcf" / "limited_arm.xml"))
    declared = {(min(a, b), max(a, b)): dim for a, b, dim in colliding_condims(mujoco, model)}
    data = mujoco.MjData(model)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        data.ctrl[:] = rng.uniform(-1.0, 1.0, model.nu)
        mujoco.mj_step(model, data)
        for contact in data.contact[: data.ncon]:
            pair = (min(contact.geom1, contact.geom2), max(contact.geom1, contact.geom2))
            assert declared.get(pair) == int(contact.dim), (pair, int(contact.dim))
            seen.add(int(contact.dim))
    assert {4, 6} <= seen
