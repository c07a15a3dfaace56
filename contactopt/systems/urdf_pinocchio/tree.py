"""Reading a URDF for the pinocchio backend (:mod:`.system`): what it refuses, the joints'
limits, MuJoCo's body order (ROS wiki "urdf/XML"; the ``mujoco`` backend's
:mod:`contactopt.systems.mjcf.urdf`)."""

from __future__ import annotations

import importlib
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ShapeError
from contactopt.systems.base import ParameterError
from contactopt.systems.urdf_file import read_robot, resolve_meshes

FloatArray = NDArray[np.float64]


def load_pinocchio() -> Any:
    try:
        return importlib.import_module("pinocchio")
    except ImportError as exc:
        raise ParameterError("system.backend", "system.backend: 'pinocchio' needs the pin package "
                             "(pip install 'contactopt[urdf]'); backend = 'mujoco' runs without it") from exc


def load_checked(urdf: Path, build: Any) -> Any:
    """``build()``, Pinocchio's (or coal's) refusal made one line naming the file."""
    try:
        return build()
    except (ValueError, RuntimeError) as exc:
        reason = " ".join(str(exc).split())[:300]
        raise ParameterError("system.file", f"system.file: Pinocchio cannot load {urdf.name}: {reason}") from exc


def read_urdf(path: Path, package_dirs: Sequence[Path] = ()) -> ET.Element:
    """The URDF's root, refused in one line where this backend cannot carry it (the joints of
    :func:`contactopt.systems.urdf_file.read_robot`; ``<mimic>`` is mapped), without its ``<visual>`` elements and with
    its collision meshes' names made absolute paths (a missing mesh: one line naming it)."""
    root = read_robot(path, "pinocchio", mimic=True)
    for link in root.iter("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
    resolve_meshes(root, path, package_dirs)
    return root


def joint_limits(root: ET.Element) -> dict[str, tuple[float, float]]:
    """``name: (lower, upper)`` of the revolute and prismatic joints with a ``<limit>`` range."""
    limits = {}
    for joint in root.iter("joint"):
        limit = joint.find("limit")
        if joint.get("type") in ("revolute", "prismatic") and limit is not None:
            lower, upper = float(limit.get("lower", 0.0)), float(limit.get("upper", 0.0))
            if lower < upper:
                limits[joint.get("name", "")] = (lower, upper)
    return limits


def tree_order(root: ET.Element) -> tuple[list[str], list[str]]:
    """The moving joints and the links in MuJoCo's body order: depth first from the root link, a link's
    children in the order of their ``<joint>`` elements in the file (Pinocchio's own order, from
    urdfdom, takes children by name)."""
    children: dict[str, list[tuple[str, str, str]]] = {}
    child_links = set()
    for joint in root.iter("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None:
            continue
        children.setdefault(parent.get("link", ""), []).append(
            (joint.get("name", ""), joint.get("type", ""), child.get("link", "")))
        child_links.add(child.get("link", ""))
    order: list[str] = []
    links: list[str] = []
    stack = [("", "fixed", link.get("name", "")) for link in root.iter("link")
             if link.get("name") not in child_links][::-1]
    while stack:  # depth first, preorder: a joint when its child link is reached
        name, kind, link = stack.pop()
        links.append(link)
        if kind != "fixed":
            order.append(name)
        stack.extend(reversed(children.get(link, [])))
    return order, links


def skew(r: FloatArray) -> FloatArray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def unit_quaternion(quaternion: FloatArray, start: int) -> FloatArray:
    """``quaternion`` ((4,), ``q[start:start + 4]``) normalized, as MuJoCo's ``mj_kinematics``
    reads it; a zero (or non-finite) one names its place instead of giving NaN."""
    norm = float(np.linalg.norm(quaternion))
    if not norm > 0.0 or not np.isfinite(norm):
        raise ShapeError(f"q[{start}:{start + 4}]: the floating base's quaternion must be nonzero, got "
                         f"{quaternion.tolist()}")
    return quaternion / norm
