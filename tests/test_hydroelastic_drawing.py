"""The hydroelastic contact surfaces in the drawings: the rigid3d drawing carries each surface's
polygons and pressures as a patch, the videos paint them coloured by pressure and the viewer's
page carries them as meshes (docs/hydroelastic.md, "Drawings")."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import contactopt as co
from contactopt.systems.drawing import Drawing, Patch
from contactopt.systems.drawings import drawing_of
from contactopt.systems.rigid3d import Rigid3D

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


@pytest.fixture(scope="module")
def stack() -> co.Scene:
    """The two stacked soft cubes on a coarse mesh (16 polygons a surface), so that runs are cheap."""
    scene = co.load_scene(PROBLEMS / "hydroelastic_stack.toml")
    assert isinstance(scene.system, Rigid3D)
    system = Rigid3D(scene.system.bodies, {"mu": 0.5}, contact_model="hydroelastic", patch_resolution=(8, 2))
    return dataclasses.replace(scene, system=system)


@pytest.fixture(scope="module")
def run(stack: co.Scene) -> co.Trajectory:
    return co.simulate(stack, duration=3 * stack.dt)


def test_drawing_carries_each_surface_as_a_patch(stack: co.Scene) -> None:
    drawing = drawing_of(stack.system, stack.q0)
    assert drawing is not None
    assert isinstance(stack.system, Rigid3D)
    surfaces = stack.system.contact_surfaces(stack.q0)
    assert len(drawing.patches) == len(surfaces) == 2  # on the ground, between the cubes
    for patch, surface in zip(drawing.patches, surfaces, strict=True):
        np.testing.assert_array_equal(patch.vertices, surface.vertices)
        np.testing.assert_array_equal(patch.faces, surface.faces)
        np.testing.assert_array_equal(patch.pressures, surface.pressures)
        triangles, pressures = patch.triangles()
        # the fan's 8 triangles stay whole, its 8 quadrilaterals split in two: 24 triangles
        assert triangles.shape == (24, 3) and pressures.shape == (24,)
        assert len(patch.polygons()) == surface.faces.shape[0]
    # the patches are not shapes: the viewer's fixed set of posed shapes is the ground and the cubes
    assert len(drawing.shapes) == 3
    with pytest.raises(ValueError, match="Patch: vertices"):
        Patch(np.zeros((3, 3)), np.zeros((1, 4), dtype=int), np.zeros(2))
    with pytest.raises(ValueError, match="3-D"):
        Drawing(2, (), patches=(drawing.patches[0],))


def test_video_frame_paints_the_patches_by_pressure(stack: co.Scene, run: co.Trajectory) -> None:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    from contactopt.analysis.render import video_frames
    from contactopt.analysis.render_mpl import pressure_colours, pressure_top

    frames = video_frames(run, stack.system, size=(240, 180), forces=False)
    assert frames.drawings is not None
    top = pressure_top([d for row in frames.drawings for d in row])
    assert top == pytest.approx(max(p.pressures.max() for row in frames.drawings for d in row for p in d.patches))
    first = next(iter(frames.paint()))
    assert "pressure 0-" in first.heading
    collections = [c for ax in first.figure.axes for c in ax.collections if isinstance(c, Poly3DCollection)]
    patches = frames.drawings[0][0].patches
    painted = [c for c in collections if len(c.get_facecolor()) == patches[0].faces.shape[0]]
    assert len(painted) == len(patches)
    for collection, patch in zip(painted, patches, strict=True):
        np.testing.assert_allclose(collection.get_facecolor(), pressure_colours(patch.pressures, top), atol=1e-12)
    frames.close()


def _commands(html: str) -> list[dict[str, Any]]:
    import umsgpack

    text = re.search(r'<script type="application/json" id="contactopt-scene">(.*?)</script>', html, re.S)
    assert text is not None
    return [umsgpack.unpackb(base64.b64decode(item)) for item in json.loads(text.group(1))]


def test_viewer_page_carries_the_patch_meshes(stack: co.Scene, run: co.Trajectory) -> None:
    pytest.importorskip("meshcat", reason="the viewer needs meshcat (pip install 'contactopt[viewer]')")
    from contactopt.analysis.render_mpl import pressure_colours
    from contactopt.analysis.viewer import view

    page = view(run, stack, forces=False)
    drawing = drawing_of(stack.system, run.q[0])
    assert drawing is not None
    commands = _commands(page.html)
    objects = {c["path"]: c["object"] for c in commands if c["type"] == "set_object"}
    meshes = sorted((path for path in objects if "/patches/" in path), key=lambda path: int(path.split("/k")[1][:-8]))
    assert len(meshes) == page.meta["runs"][0]["patches"] >= 1
    # each mesh shows from its frame until the next mesh's: the visibility keys hand over
    animation = next(c for c in commands if c["type"] == "set_animation")
    tracks = {(item["path"], track["name"].lstrip(".")): track["keys"]
              for item in animation["animations"] for track in item["clip"]["tracks"]}
    shown = [tracks[(path.rsplit("/", 1)[0], "visible")] for path in meshes]
    assert shown[0][0] == {"time": 0.0, "value": True}
    for before, after in itertools.pairwise(shown):
        assert before[-1]["value"] is False and after[-1]["value"] is True
        assert before[-1]["time"] == after[-1]["time"]
    mesh = objects["/contactopt/run0/patches/k0/surface"]
    attributes = mesh["geometries"][0]["data"]["attributes"]
    vertices = np.frombuffer(attributes["position"]["array"].data, dtype=np.float32).reshape(-1, 3)
    np.testing.assert_allclose(vertices, np.concatenate([p.vertices for p in drawing.patches]), atol=1e-7)
    colours = np.frombuffer(attributes["color"]["array"].data, dtype=np.float32).reshape(-1, 3)
    expected = np.concatenate([pressure_colours(p.vertex_pressures(), page.meta["pressure_top"])[:, :3]
                               for p in drawing.patches])
    np.testing.assert_allclose(colours, expected, atol=1e-6)
    assert mesh["materials"][0]["vertexColors"] == 2 and mesh["materials"][0]["depthTest"] is False


def test_each_surface_is_one_arrow_at_its_centre_of_pressure(stack: co.Scene, run: co.Trajectory) -> None:
    """The arrows of a step: one per contact surface, its total force at its centre of pressure,
    the same as the surface's record (contactopt.systems.hydroelastic.records), not one per
    quadrature point."""
    from contactopt.analysis.render_frames import contact_arrows
    from contactopt.systems.hydroelastic.records import surface_records

    drawing = drawing_of(stack.system, run.q[1])
    assert drawing is not None and drawing.contacts is not None
    assert sum(patch.rows for patch in drawing.patches) == drawing.contacts.points.shape[0]  # no point contacts
    arrows = contact_arrows(drawing, run, 1)
    records = surface_records(stack.system, run)[1]
    assert len(arrows) == len(records) == 2
    for (point, force), record in zip(arrows, records, strict=True):
        np.testing.assert_allclose(force, record.force, rtol=1e-12, atol=1e-12 * abs(record.force).max())
        np.testing.assert_allclose(point, record.centre_of_pressure, rtol=0, atol=1e-12)
