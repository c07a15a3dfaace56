"""The step as arrays does not depend on units: ``sap -o rows=model`` and ``regularized -o
params=model,form=primal`` on one MJCF box written in grams or tonnes, millimetres or kilometres.

A 0.2 L cube of mass M slides on a plane at 1 L/s with mu = 0.5 under gravity 9.81 L/s^2; what
MuJoCo reads as a length is scaled by L (sizes, positions, velocities, gravity, solimp's width),
its mass by M (its inertia follows as M L^2). Each step's program is then the unit-scaled one, so
the statuses are the same and the box's path, in units of L, is the same to rounding; Coulomb's
stop distance is ``v0^2 / (2 mu g)``. SAP's recovery cap ``max_recovery_speed`` is a velocity:
it is given in the scene's units here (the MJCF default, 0.1, reads the file as SI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import contactopt as co

pytest.importorskip("mujoco")

SCALES = [(1.0, 1.0), (1e-3, 1e-3), (1e3, 1e-3), (1e-3, 1e3), (1e3, 1e3)]
METHODS = {"sap": {"rows": "model"}, "regularized": {"params": "model", "form": "primal"}}


def box(folder: Path, M: float, L: float) -> co.Scene:
    xml = f"""<mujoco><option timestep="0.002" gravity="0 0 {-9.81 * L!r}" cone="elliptic"/>
    <default><geom solimp="0.9 0.95 {0.001 * L!r} 0.5 2" friction="0.5 0.005 0.0001"/></default>
    <worldbody><geom type="plane" size="{10 * L!r} {10 * L!r} {0.1 * L!r}"/>
    <body pos="0 0 {0.1 * L!r}"><freejoint/><geom type="box" size="{0.1 * L!r} {0.1 * L!r} {0.1 * L!r}" mass="{M!r}"/>
    </body></worldbody><keyframe><key qpos="0 0 {0.1 * L!r} 1 0 0 0" qvel="{1.0 * L!r} 0 0 0 0 0"/></keyframe>
    </mujoco>"""
    path = folder / f"box_{M:g}_{L:g}.xml"
    path.write_text(xml)
    return co.load_scene(str(path))


@pytest.mark.parametrize("formulation", list(METHODS))
def test_the_box_slides_the_same_in_every_unit(tmp_path: Path, formulation: str) -> None:
    paths = {}
    for M, L in SCALES:
        options = {**METHODS[formulation], **({"max_recovery_speed": 0.1 * L} if formulation == "sap" else {})}
        traj = co.simulate(box(tmp_path, M, L), formulation=formulation, solver="newton", duration=0.3,
                           options=options)
        assert traj.completed and {str(record.status) for record in traj.steps} == {"optimal"}
        paths[M, L] = traj.q[:, :3] / L  # the centre's path in units of L
    reference = paths[1.0, 1.0]
    assert abs(reference[-1, 0] - 1.0 / (2 * 0.5 * 9.81)) < 0.02 * reference[-1, 0]  # it stopped where Coulomb says
    for key, path in paths.items():
        # a rounding's worth: the programs are the unit-scaled ones (measured: 1e-13 of the path)
        np.testing.assert_allclose(path, reference, rtol=0, atol=1e-9, err_msg=f"(M, L) = {key}")
