"""URDF robots (``[system] type = "urdf"``, and ``contactopt run robot.urdf``), through MuJoCo's
URDF compiler: the robot becomes an MJCF model and runs as one (:class:`.system.MjcfSystem`).

What the URDF says and where it goes (MuJoCo documentation, "Modeling: URDF extensions"; the
URDF specification, ROS wiki "urdf/XML"):

* links' ``<inertial>`` and ``<collision>`` geometry (box, cylinder, sphere, mesh: STL or OBJ);
  ``<visual>`` is dropped (MuJoCo's ``discardvisual``);
* joints: ``revolute``/``continuous`` hinges, ``prismatic`` slides, ``fixed`` welds; ``<limit
  lower upper>`` a joint range, ``effort`` its actuator force range, ``<dynamics damping
  friction>`` MuJoCo's ``damping`` and ``frictionloss``; ``floating`` and ``planar`` joints are
  refused in one line (MuJoCo's importer does not map them), and so is ``<mimic>``
  (MuJoCo's importer drops it: the coupled joint would move freely);
* the root link is welded to the world unless ``floating_base = true`` gives it a free joint;
* ``ground = true`` adds a ground plane at ``z = 0`` (friction ``ground_friction``, default 1);
* ``package://PKG/path`` mesh names are looked up as ``DIR/PKG/path`` (or ``DIR/path`` where
  ``DIR`` is the package itself) in ``package_dirs``, relative names next to the URDF file; a
  mesh that is not found is one error naming the file and the folders searched.

``backend = "mujoco"`` (the default) is this module; ``backend = "pinocchio"`` builds
:class:`contactopt.systems.urdf_pinocchio.system.PinocchioUrdfSystem` (Featherstone's recursive
algorithms through Pinocchio, the same coordinates, ground contacts built as MuJoCo builds them).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.base import ParameterError, System
from contactopt.systems.mjcf import compat, parameters
from contactopt.systems.mjcf.system import MjcfSystem
from contactopt.systems.urdf_file import read_robot, resolve_meshes

FloatArray = NDArray[np.float64]
BACKENDS = ("mujoco", "pinocchio")
_FOLDER: list[Path] = []  # the compiled models of this process, removed at exit


def _folder() -> Path:
    if not _FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="contactopt-urdf-"))
        atexit.register(shutil.rmtree, folder, True)
        _FOLDER.append(folder)
    return _FOLDER[0]


def compile_urdf(path: Path, floating_base: bool, ground: bool, ground_friction: float,
                 package_dirs: Sequence[Path]) -> Path:
    """The MJCF file of the URDF at ``path`` with the module docstring's additions, written to
    this process's temporary folder."""
    mujoco = compat.load()
    root = read_robot(path, "mujoco")
    resolve_meshes(root, path, package_dirs)
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
        if floating_base:
            links = {link.get("name") for link in root.iter("link")}
            children = {child.get("link") for child in root.iter("child")}
            roots = sorted(name for name in links - children if name)
            if len(roots) != 1:
                raise ParameterError("system.file", f"system.file: {path.name}: floating_base needs one root link, "
                                     f"found {roots}")
            body = spec.body(roots[0])
            if body is None:  # MuJoCo fuses a massless root into the world
                raise ParameterError("system.file", f"system.file: {path.name}: the root link {roots[0]!r} has no "
                                     "mass: it cannot float (give it an <inertial>)")
            body.add_freejoint()
        if ground:
            spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0],
                                    friction=[ground_friction, 0.005, 0.0001])
        spec.compile()
        xml = spec.to_xml()
    except ValueError as exc:  # MuJoCo's compile errors: one line
        reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise ParameterError("system.file", f"system.file: MuJoCo cannot compile {path.name}: {reason}") from exc
    out = _folder() / f"{path.stem}-{abs(hash((str(path.resolve()), floating_base, ground, ground_friction)))}.xml"
    out.write_text(xml)
    return out


class UrdfSystem(MjcfSystem):
    """A URDF robot compiled by MuJoCo (module docstring)."""

    type_name: ClassVar[str] = "urdf"
    description: ClassVar[str] = ("a URDF robot (file = URDF; floating_base, ground, package_dirs): compiled by "
                                  "MuJoCo's URDF importer, then as mjcf")
    config_keys: ClassVar[frozenset[str]] = frozenset({"file", "floating_base", "ground", "ground_friction",
                                                       "package_dirs", "backend", "detection_margin"})

    def __init__(self, path: str | Path, floating_base: bool = False, ground: bool = False,
                 ground_friction: float = 1.0, package_dirs: Sequence[str | Path] = (),
                 detection_margin: float | None = None) -> None:
        self.urdf = Path(path)
        self.floating_base, self.ground, self.ground_friction = floating_base, ground, ground_friction
        self.package_dirs = tuple(Path(d) for d in package_dirs)
        compiled = compile_urdf(self.urdf, floating_base, ground, ground_friction, self.package_dirs)
        super().__init__(compiled, detection_margin)

    @classmethod
    def from_config(cls, table: Mapping[str, Any], contact: Mapping[str, Any]) -> System:
        if contact:
            raise ParameterError("contact", "contact: a URDF scene takes friction from ground_friction; remove the "
                                 "[contact] table")
        path = table.get("file")
        if not isinstance(path, str | Path):
            raise ParameterError("system.file", "system.file: missing (the URDF file, relative to the scene)")
        path = Path(path)
        if not path.is_file():
            raise ParameterError("system.file", f"system.file: no such URDF file {path}")
        backend = table.get("backend", "mujoco")
        if backend not in BACKENDS:
            raise ParameterError("system.backend", f"system.backend: one of {', '.join(map(repr, BACKENDS))}, "
                                 f"got {backend!r}")
        flags = {}
        for key in ("floating_base", "ground"):
            value = table.get(key, False)
            if isinstance(value, str) and value.lower() in ("true", "false"):  # from --system-option KEY=VALUE
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ParameterError(f"system.{key}", f"system.{key}: true or false, got {value!r}")
            flags[key] = value
        friction = table.get("ground_friction", 1.0)
        try:
            friction = float(friction)
        except (TypeError, ValueError):
            friction = float("nan")
        if not friction >= 0 or friction == float("inf"):
            raise ParameterError("system.ground_friction", f"system.ground_friction: a number >= 0, got "
                                 f"{table.get('ground_friction')!r}")
        dirs = table.get("package_dirs", ())
        if isinstance(dirs, str | Path):
            dirs = [dirs]
        if not isinstance(dirs, Sequence) or not all(isinstance(d, str | Path) for d in dirs):
            raise ParameterError("system.package_dirs", f"system.package_dirs: a list of folders, got {dirs!r}")
        base = path.parent
        folders = [Path(d) if Path(d).is_absolute() else base / d for d in dirs]
        margin = table.get("detection_margin")
        if margin is not None and (isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0):
            raise ParameterError("system.detection_margin",
                                 f"system.detection_margin: must be a number >= 0, got {margin!r}")
        if backend == "pinocchio":  # Featherstone's algorithms through Pinocchio (its own package)
            from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

            return PinocchioUrdfSystem(path, flags["floating_base"], flags["ground"], friction, folders,
                                       None if margin is None else float(margin))
        return cls(path, flags["floating_base"], flags["ground"], friction, folders,
                   None if margin is None else float(margin))

    def default_state(self) -> tuple[FloatArray, FloatArray]:
        """MuJoCo's ``qpos0`` at rest; with ``floating_base`` and ``ground``, the base raised so that
        the lowest point of the robot's collision geometry (their bounding boxes at ``qpos0``)
        touches ``z = 0``: a robot stands on the ground instead of starting inside it."""
        q, v = super().default_state()
        if self.floating_base and self.ground:
            q = q.copy()
            q[2] += self.lift(q)
        return q, v

    def lift(self, q: FloatArray) -> float:
        """How far the free base at ``q`` must rise for the collision geometry to clear ``z = 0``."""
        mujoco, model = self.mujoco, self.model
        data = mujoco.MjData(model)
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        bottom = np.inf
        for g in range(int(model.ngeom)):
            if int(model.geom_type[g]) == int(mujoco.mjtGeom.mjGEOM_PLANE) or int(model.geom_bodyid[g]) == 0:
                continue
            rotation = np.asarray(data.geom_xmat[g]).reshape(3, 3)
            centre, half = np.asarray(model.geom_aabb[g, :3]), np.asarray(model.geom_aabb[g, 3:])
            low = float(data.geom_xpos[g, 2] + rotation[2] @ centre - np.abs(rotation[2]) @ half)
            bottom = min(bottom, low)
        return 0.0 if not np.isfinite(bottom) else -bottom

    def __getstate__(self) -> dict[str, Any]:  # the URDF and its settings: compiled again on load
        return {"urdf": str(self.urdf), "floating_base": self.floating_base, "ground": self.ground,
                "ground_friction": self.ground_friction, "package_dirs": [str(d) for d in self.package_dirs],
                "detection_margin": self.detection_margin, "parameters": self.parameter_arrays}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["urdf"], state["floating_base"], state["ground"],  # type: ignore[misc]
                      state["ground_friction"], state["package_dirs"], state["detection_margin"])
        parameters.reload(self, state.get("parameters"))

    def describe(self) -> str:
        return (f"URDF {self.urdf.name} through MuJoCo's URDF compiler (floating_base={self.floating_base}, "
                f"ground={self.ground}): nq={self.nq}, nv={self.nv}")
