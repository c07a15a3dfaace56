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
* ``self_collisions = false`` lets the robot's geoms collide with the ground only (``contype`` 2,
  ``conaffinity`` 1; the ground's 1 and 2); by default MuJoCo's own rule (all but parent-child);
* the numbers are the URDF's to double precision: MuJoCo's ``MjSpec.to_xml`` writes six
  significant digits, so the arrays of the model compiled from that file which equal the
  spec's own compilation to that rounding are copied from it (:func:`restore_precision`);
* ``package://PKG/path`` mesh names are looked up as ``DIR/PKG/path`` (or ``DIR/path`` where
  ``DIR`` is the package itself) in ``package_dirs``, relative names next to the URDF file; a
  mesh that is not found is one error naming the file and the folders searched.

``backend = "mujoco"`` is this module; ``backend = "pinocchio"`` builds
:class:`contactopt.systems.urdf_pinocchio.system.PinocchioUrdfSystem` (Featherstone's recursive
algorithms through Pinocchio, the same coordinates, ground contacts built as MuJoCo builds them).
**The default is pinocchio** where Pinocchio is installed (the ``urdf`` extra, ``pip install
contactopt[urdf]``), and mujoco otherwise, with a :class:`UrdfBackendWarning` saying so (the
core install holds MuJoCo, so a URDF still runs). What needs a MuJoCo model (the ``mujoco``
method's ``mj_step``, ``regularized -o params=model``) is refused on the pinocchio backend before
step 0 in one line naming ``--system-option backend=mujoco``
(:attr:`~contactopt.systems.urdf_pinocchio.system.PinocchioUrdfSystem.mujoco_hint`).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import warnings
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


class UrdfBackendWarning(UserWarning):
    """A URDF scene without a backend runs on mujoco because Pinocchio is not installed."""


def default_backend(path: Path) -> str:
    """``pinocchio`` where Pinocchio imports, else ``mujoco`` with a :class:`UrdfBackendWarning`
    (module docstring)."""
    import importlib.util

    if importlib.util.find_spec("pinocchio") is not None:
        return "pinocchio"
    warnings.warn(f"{path.name}: Pinocchio is not installed, so this URDF runs on the mujoco backend (MuJoCo's URDF "
                  "compiler); pip install contactopt[urdf] for the default pinocchio backend, or set backend = "
                  "\"mujoco\" in [system] (--system-option backend=mujoco) to say so", UrdfBackendWarning, stacklevel=3)
    return "mujoco"


def _folder() -> Path:
    if not _FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="contactopt-urdf-"))
        atexit.register(shutil.rmtree, folder, True)
        _FOLDER.append(folder)
    return _FOLDER[0]


def compile_urdf(path: Path, floating_base: bool, ground: bool, ground_friction: float,
                 package_dirs: Sequence[Path], self_collisions: bool = True) -> tuple[Path, Any]:
    """The MJCF file of the URDF at ``path`` with the module docstring's additions, written to
    this process's temporary folder, and the ``MjModel`` compiled from the ``MjSpec`` itself
    (full precision: ``MjSpec.to_xml`` writes six significant digits)."""
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
        if not self_collisions:  # robot geoms collide with the ground only
            for geom in spec.geoms:
                if geom.name != "ground":
                    geom.contype, geom.conaffinity = 2, 1
            if ground:
                geom = spec.geom("ground")
                geom.contype, geom.conaffinity = 1, 2
        precise = spec.compile()
        xml = spec.to_xml()
    except ValueError as exc:  # MuJoCo's compile errors: one line
        reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise ParameterError("system.file", f"system.file: MuJoCo cannot compile {path.name}: {reason}") from exc
    out = _folder() / f"{path.stem}-{abs(hash((str(path.resolve()), floating_base, ground, ground_friction)))}.xml"
    out.write_text(xml)
    return out, precise


def restore_precision(model: Any, precise: Any) -> int:
    """Copy into ``model`` (compiled from ``MjSpec.to_xml``'s six-digit file) every float array of
    ``precise`` (the same spec compiled directly) that equals it to that rounding (relative 1e-5),
    so that inertias, positions and sizes are the URDF's to double precision; arrays changed on
    purpose since (margins, gaps) differ by more and are kept. Does nothing when the two models'
    sizes differ. The number of arrays copied."""
    sizes = ("nq", "nv", "nbody", "njnt", "ngeom", "nmesh", "nmeshvert")
    if any(int(getattr(model, n, 0)) != int(getattr(precise, n, 0)) for n in sizes):
        return 0
    copied = 0
    for name in dir(precise):
        if name.startswith("_") or name.startswith("opt") or name in ("stat", "vis"):
            continue
        try:
            a, b = getattr(model, name), getattr(precise, name)
        except Exception:  # properties that raise on access
            continue
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.dtype != np.float64 or a.shape != b.shape:
            continue
        if a.size and not np.array_equal(a, b) and np.all(np.abs(a - b) <= 1e-5 * np.abs(b)):
            a[...] = b
            copied += 1
    return copied


class UrdfSystem(MjcfSystem):
    """A URDF robot compiled by MuJoCo (module docstring)."""

    type_name: ClassVar[str] = "urdf"
    description: ClassVar[str] = ("a URDF robot (file = URDF; floating_base, ground, package_dirs): compiled by "
                                  "MuJoCo's URDF importer, then as mjcf")
    config_keys: ClassVar[frozenset[str]] = frozenset({"file", "floating_base", "ground", "ground_friction",
                                                       "package_dirs", "backend", "detection_margin",
                                                       "self_collisions", "srdf"})

    def __init__(self, path: str | Path, floating_base: bool = False, ground: bool = False,
                 ground_friction: float = 1.0, package_dirs: Sequence[str | Path] = (),
                 detection_margin: float | None = None, self_collisions: bool = True) -> None:
        self.urdf = Path(path)
        self.floating_base, self.ground, self.ground_friction = floating_base, ground, ground_friction
        self.package_dirs = tuple(Path(d) for d in package_dirs)
        self.self_collisions = bool(self_collisions)
        compiled, precise = compile_urdf(self.urdf, floating_base, ground, ground_friction, self.package_dirs,
                                         self.self_collisions)
        super().__init__(compiled, detection_margin)
        restore_precision(self.model, precise)

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
        backend = table.get("backend", default_backend(path))
        if backend not in BACKENDS:
            raise ParameterError("system.backend", f"system.backend: one of {', '.join(map(repr, BACKENDS))}, "
                                 f"got {backend!r}")
        flags = {}
        for key in ("floating_base", "ground", "self_collisions"):
            value = table.get(key, key == "self_collisions")
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
        srdf = table.get("srdf")
        if srdf is not None:
            given = srdf
            srdf = (Path(srdf) if Path(srdf).is_absolute() else base / srdf) if isinstance(srdf, str | Path) else None
            if srdf is None or not srdf.is_file():
                raise ParameterError("system.srdf", f"system.srdf: an SRDF file (relative to the scene), got {given!r}")
            if backend != "pinocchio":
                raise ParameterError("system.srdf", "system.srdf: the SRDF's disabled collision pairs are taken by "
                                     "backend = 'pinocchio'; the mujoco backend takes self_collisions = false")
        if backend == "pinocchio":  # Featherstone's algorithms through Pinocchio (its own package)
            from contactopt.systems.urdf_pinocchio.system import PinocchioUrdfSystem

            return PinocchioUrdfSystem(path, flags["floating_base"], flags["ground"], friction, folders,
                                       None if margin is None else float(margin), flags["self_collisions"], srdf)
        return cls(path, flags["floating_base"], flags["ground"], friction, folders,
                   None if margin is None else float(margin), flags["self_collisions"])

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
                "detection_margin": self.detection_margin, "parameters": self.parameter_arrays,
                "self_collisions": self.self_collisions}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["urdf"], state["floating_base"], state["ground"],  # type: ignore[misc]
                      state["ground_friction"], state["package_dirs"], state["detection_margin"],
                      state.get("self_collisions", True))
        parameters.reload(self, state.get("parameters"))

    def describe(self) -> str:
        return (f"URDF {self.urdf.name} through MuJoCo's URDF compiler (floating_base={self.floating_base}, "
                f"ground={self.ground}): nq={self.nq}, nv={self.nv}")
