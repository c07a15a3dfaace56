"""The SI unit of a coordinate, read from its name (figures, observables and records label
their quantities with it).
"""

from __future__ import annotations

__all__ = ["coordinate_unit", "unit_of_name"]


def coordinate_unit(name: str) -> str:
    """The SI unit of a coordinate from its name (``box.x`` -> m, ``theta1dot`` -> rad/s;
    quaternion components and unknown names -> "")."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("x", "y", "z"):
        return "m"
    if leaf in ("vx", "vy", "vz", "xdot", "ydot", "zdot"):
        return "m/s"
    angular = ("omega", "wx", "wy", "wz", "wx_body", "wy_body", "wz_body")  # wx_body: MJCF free joints
    if (leaf.startswith("theta") and leaf.endswith("dot")) or leaf in angular:
        return "rad/s"
    if leaf.startswith("theta"):
        return "rad"
    return ""


def unit_of_name(name: str) -> str:
    """The SI unit a coordinate's name tells (:func:`coordinate_unit`; ``"1"`` for the quaternion
    components ``qw, qx, qy, qz``)."""
    return "1" if name.rsplit(".", 1)[-1] in ("qw", "qx", "qy", "qz") else coordinate_unit(name)
