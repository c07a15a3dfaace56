"""Reading a URDF file for either backend (:mod:`contactopt.systems.mjcf.urdf`,
:mod:`contactopt.systems.urdf_pinocchio`): the root ``<robot>`` element, and the joints neither
backend maps, refused in one line (the URDF specification, ROS wiki "urdf/XML": ``floating`` and
``planar`` joints, ``<mimic>`` couplings)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from contactopt.systems.base import ParameterError

#: Joint types no backend maps (a free base is ``floating_base = true``).
REFUSED_JOINTS = ("floating", "planar")


def read_robot(path: Path, backend: str) -> ET.Element:
    """The URDF's ``<robot>`` element; a file that is not URDF, a floating or planar joint, or a
    ``<mimic>`` coupling is one :class:`ParameterError` naming it (``backend`` says who refuses)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ParameterError("system.file", f"system.file: cannot read {path} as URDF: {exc}") from exc
    if root.tag != "robot":
        raise ParameterError("system.file", f"system.file: {path.name}: not a URDF file (its root element is "
                             f"<{root.tag}>, a URDF's is <robot>)")
    for joint in root.iter("joint"):
        kind, name = joint.get("type", ""), joint.get("name", "?")
        if kind in REFUSED_JOINTS:
            raise ParameterError("system.file", f"system.file: {path.name}: joint {name!r} is {kind!r}; the {backend} "
                                 "backend maps revolute, continuous, prismatic and fixed joints (a free base: "
                                 "floating_base = true)")
        if joint.find("mimic") is not None:
            raise ParameterError("system.file", f"system.file: {path.name}: joint {name!r} mimics another joint; "
                                 f"the {backend} backend does not map <mimic> (the joint would move freely): couple "
                                 "them with an MJCF <equality><joint/></equality> in an MJCF file instead")
    return root
