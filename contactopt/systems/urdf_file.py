"""Reading a URDF file for either backend (:mod:`contactopt.systems.mjcf.urdf`,
:mod:`contactopt.systems.urdf_pinocchio`): the root ``<robot>`` element, and the joints neither
backend maps, refused in one line (the URDF specification, ROS wiki "urdf/XML": ``floating`` and
``planar`` joints, ``<mimic>`` couplings); ``package://`` mesh names resolved; and where the
example-robot-data package keeps its robots (:func:`example_robot_data`)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contactopt.systems.base import ParameterError

#: Joint types no backend maps (a free base is ``floating_base = true``).
REFUSED_JOINTS = ("floating", "planar")


def read_robot(path: Path, backend: str, mimic: bool = False) -> ET.Element:
    """The URDF's ``<robot>`` element; a file that is not URDF, a floating or planar joint, or a
    ``<mimic>`` coupling (unless ``mimic``: the backend maps them) is one :class:`ParameterError`
    naming it (``backend`` says who refuses); so is a file without a ``<link>``."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ParameterError("system.file", f"system.file: cannot read {path} as URDF: {exc}") from exc
    if root.tag != "robot":
        raise ParameterError("system.file", f"system.file: {path.name}: not a URDF file (its root element is "
                             f"<{root.tag}>, a URDF's is <robot>)")
    if root.find("link") is None:
        raise ParameterError("system.file", f"system.file: {path.name}: the robot has no <link>")
    for joint in root.iter("joint"):
        kind, name = joint.get("type", ""), joint.get("name", "?")
        if kind in REFUSED_JOINTS:
            raise ParameterError("system.file", f"system.file: {path.name}: joint {name!r} is {kind!r}; the {backend} "
                                 "backend maps revolute, continuous, prismatic and fixed joints (a free base: "
                                 "floating_base = true)")
        if joint.find("mimic") is not None and not mimic:
            raise ParameterError("system.file", f"system.file: {path.name}: joint {name!r} mimics another joint; "
                                 f"the {backend} backend does not map <mimic> (the joint would move freely): couple "
                                 "them with an MJCF <equality><joint/></equality> in an MJCF file instead")
    return root


def resolve_meshes(root: ET.Element, urdf: Path, package_dirs: Sequence[Path]) -> None:
    """Every ``<mesh filename>`` made an absolute path: ``package://PKG/path`` (extra slashes
    after ``package:`` ignored) looked up as
    ``DIR/PKG/path`` (or ``DIR/path`` where ``DIR`` is the package itself) in ``package_dirs``,
    other names relative to the URDF's folder; a missing mesh raises :class:`ParameterError`
    naming it and the paths tried."""
    for mesh in root.iter("mesh"):
        name = mesh.get("filename", "")
        match = re.match(r"package://+([^/]+)/(.*)", name)  # package:///PKG/... (talos_full_v2) as package://PKG/...
        if match:
            package, rest = match.groups()
            tried = [directory / package / rest for directory in package_dirs]
            tried += [directory / rest for directory in package_dirs if directory.name == package]
        else:
            plain = Path(name.removeprefix("file://"))
            tried = [plain if plain.is_absolute() else urdf.parent / plain]
        found = next((path for path in tried if path.is_file()), None)
        if found is None:
            where = ", ".join(str(path) for path in tried) or f"no package_dirs to look for package {name!r} in"
            raise ParameterError("system.file", f"system.file: {urdf.name}: mesh {name!r} not found (looked for: "
                                 f"{where}; set [system] package_dirs or --system-option package_dirs=DIR)")
        mesh.set("filename", str(found.resolve()))


@dataclass(frozen=True)
class RobotFiles:
    """An example-robot-data robot: its URDF, the folder to pass as ``package_dirs`` (the
    ``package://example-robot-data/...`` names resolve under it), its SRDF, if it has one, and
    the SRDF whose ``<disable_collisions>`` pairs apply to it (``collision_srdf``: see
    :func:`example_robot_data`)."""

    urdf: Path
    package_dir: Path
    srdf: Path | None
    collision_srdf: Path | None


def example_robot_data_share() -> Path:
    """The folder holding example-robot-data's package (``.../share``): its pip wheel (a cmeel
    wheel) installs the robots under ``cmeel.prefix/share/example-robot-data/robots`` and has no
    importable module, so the folder is found from the distribution's installed files
    (``importlib.metadata``)."""
    import importlib.metadata

    try:
        distribution = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError as exc:
        raise ParameterError("example-robot-data", "example-robot-data is not installed: pip install "
                             "example-robot-data (or 'contactopt[urdf]')") from exc
    for file in distribution.files or ():
        parts = Path(str(file)).parts
        if "example-robot-data" in parts and "robots" in parts:
            top = parts.index("example-robot-data")
            share = Path(str(distribution.locate_file(Path(*parts[:top]))))
            if (share / "example-robot-data" / "robots").is_dir():
                return share
    raise ParameterError("example-robot-data", "example-robot-data is installed but its robots/ folder is not among "
                         "its files: reinstall it (pip install --force-reinstall example-robot-data)")


def example_robot_urdfs() -> list[Path]:
    """Every URDF file example-robot-data ships, sorted by path."""
    robots = example_robot_data_share() / "example-robot-data" / "robots"
    return sorted(robots.rglob("*.urdf"))


def example_robot_data(name: str) -> RobotFiles:
    """The files of the example-robot-data robot ``name``: a URDF's stem (``"solo12"``) or its path
    under ``robots/`` (``"solo_description/robots/solo12.urdf"``); the SRDF is the one of the
    robot's ``srdf/`` folder named as the URDF, else the longest whose name and ``_`` start the
    URDF's (``ur5.srdf`` for ``ur5_robot``), else the folder's only one. The disabled collision
    pairs come from the first SRDF in that same order that disables any: an SRDF of states alone
    leaves them to the model it is a variant of (``romeo_small.srdf``, whose collision pairs are
    a "TODO" in its header, to ``romeo.srdf``, MoveIt's matrix for ``romeo.urdf``: the package's
    Readme builds ``romeo_small`` from the same model less the fingers, and every joint and
    collision element of ``romeo_small.urdf`` is ``romeo.urdf``'s). An unknown name is one error
    listing the known ones."""
    if not isinstance(name, str) or not name:
        raise ParameterError("example-robot-data", f"example-robot-data: a robot name, got {name!r}")
    share = example_robot_data_share()
    robots = share / "example-robot-data" / "robots"
    urdfs = example_robot_urdfs()
    found = [path for path in urdfs if path.stem == name or path.relative_to(robots).as_posix() == name]
    if len(found) != 1:
        known = ", ".join(sorted({path.stem for path in urdfs}))
        what = "names several URDFs" if found else "is not one of its URDFs"
        raise ParameterError("example-robot-data", f"example-robot-data: {name!r} {what} (known: {known})")
    urdf = found[0]
    folder = robots / urdf.relative_to(robots).parts[0]
    srdfs = sorted((folder / "srdf").glob("*.srdf"), key=lambda path: (-len(path.stem), path.name))
    prefixed = [path for path in srdfs if urdf.stem == path.stem or urdf.stem.startswith(path.stem + "_")]
    candidates = prefixed or (srdfs if len(srdfs) == 1 else [])
    srdf = candidates[0] if candidates else None
    collision_srdf = next((path for path in candidates if _disables_pairs(path)), srdf)
    return RobotFiles(urdf, share, srdf, collision_srdf)


def _disables_pairs(srdf: Path) -> bool:
    """Whether an SRDF has a ``<disable_collisions>`` element (one that cannot be read: False)."""
    try:
        return next(ET.parse(srdf).getroot().iter("disable_collisions"), None) is not None
    except (ET.ParseError, OSError):
        return False


#: The SRDF ``<group_state>`` names :func:`srdf_state` prefers, in order.
STANDING_STATES = ("standing", "half_sitting", "straight_standing", "default", "home", "neutral")


def srdf_state(srdf: Path, q_names: Sequence[str], q: Sequence[float],
               name: str | None = None) -> tuple[str, list[float]]:
    """A ``<group_state>`` of an SRDF (the MoveIt/Pinocchio "semantic robot description") as a
    configuration in the URDF systems' coordinates (both backends: ``q_names``), starting from
    ``q`` for the joints it leaves out. ``name``: the state's name; by default the first of
    :data:`STANDING_STATES` the file has, else its first state. A scalar joint takes its one
    value; a 7-valued joint (Pinocchio's ``root_joint``, ``x y z qx qy qz qw``) sets the floating
    base ``joint0.x .. joint0.qz`` (``qw`` first); its unknown joints are ignored (a state of
    another variant of the robot). Returns the state's name and the configuration."""
    try:
        root = ET.parse(srdf).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ParameterError("system.srdf", f"system.srdf: cannot read {srdf} as SRDF: {exc}") from exc
    states = {state.get("name", ""): state for state in root.iter("group_state")}
    if not states:
        raise ParameterError("system.srdf", f"system.srdf: {Path(srdf).name} has no <group_state>")
    if name is None:
        name = next((n for n in STANDING_STATES if n in states), next(iter(states)))
    if name not in states:
        raise ParameterError("system.srdf", f"system.srdf: {Path(srdf).name} has no group_state {name!r} "
                             f"(it has {', '.join(map(repr, states))})")
    out = [float(x) for x in q]
    if len(out) != len(q_names):
        raise ParameterError("q", f"q: {len(q_names)} entries (one per q_names), got {len(out)}")
    index = {n: k for k, n in enumerate(q_names)}
    for joint in states[name].iter("joint"):
        try:
            values = [float(x) for x in joint.get("value", "").split()]
        except ValueError as exc:
            raise ParameterError("system.srdf", f"system.srdf: {Path(srdf).name}: joint {joint.get('name')!r} of "
                                 f"group_state {name!r} has a value that is not numbers") from exc
        if len(values) == 7 and "joint0.x" in index:
            base = index["joint0.x"]
            out[base:base + 7] = [*values[:3], values[6], *values[3:6]]
        elif len(values) == 1 and joint.get("name") in index:
            out[index[joint.get("name", "")]] = values[0]
    return name, out
