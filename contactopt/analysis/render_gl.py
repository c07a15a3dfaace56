"""MuJoCo's own pictures of an MJCF model, off screen (no window, no display).

:class:`MujocoPainter` makes an OpenGL context itself (so it does not depend on ``MUJOCO_GL``
having been set before ``mujoco`` was imported): the backend named by ``MUJOCO_GL`` if set,
else EGL (GPU or Mesa's software EGL), OSMesa, and GLFW when a display exists. It renders with
MuJoCo's ``mjr_render`` into the off-screen buffer and reads the pixels back (the same calls as
``mujoco.Renderer``), and adds the contact forces as arrow geoms to the scene.

When no context can be made, :func:`open_painter` raises :class:`NoOpenGL` with one line
saying why; the caller falls back to matplotlib. ``CONTACTOPT_NO_GL=1`` makes it fail on
purpose (what a machine without any OpenGL library does), for tests and for users who want
the matplotlib pictures.
"""

from __future__ import annotations

import importlib
import math
import os
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError

FloatArray = NDArray[np.float64]

__all__ = ["MujocoPainter", "NoOpenGL", "open_painter"]

#: Arrow colour (RGBA) of contact forces, as in the matplotlib pictures.
ARROW_RGBA = np.array([0.85, 0.1, 0.1, 1.0], dtype=np.float32)


class NoOpenGL(ContactoptError):
    """No OpenGL context could be made for MuJoCo's renderer."""


def _backends() -> list[str]:
    chosen = os.environ.get("MUJOCO_GL", "").strip().lower()
    if chosen in ("disable", "disabled", "off", "false", "0"):
        return []
    if chosen and chosen not in ("enable", "enabled", "on", "true", "1"):
        return [chosen]
    order = ["egl", "osmesa"]
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        order.insert(0, "glfw")
    return order


def _make_context(width: int, height: int) -> tuple[Any, str]:
    if os.environ.get("CONTACTOPT_NO_GL", "").strip() not in ("", "0"):
        raise NoOpenGL("CONTACTOPT_NO_GL is set")
    errors = []
    for backend in _backends():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # GLFW warns before it fails without a display
                module = importlib.import_module(f"mujoco.{backend}")
                context = module.GLContext(width, height)
                context.make_current()
            return context, backend
        except Exception as exc:  # a missing library raises anything from ImportError to FatalError
            errors.append(f"{backend}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    if not errors:
        raise NoOpenGL(f"MUJOCO_GL={os.environ.get('MUJOCO_GL')!r} disables OpenGL")
    raise NoOpenGL("; ".join(errors))


class MujocoPainter:
    """Renders an MJCF model at given configurations into RGB arrays (module docstring)."""

    def __init__(self, system: Any, width: int, height: int, bounds: FloatArray) -> None:
        """``bounds`` (2, 3): the box the camera must see (lowest and highest corner)."""
        mujoco = system.mujoco
        self.mujoco = mujoco
        self.model = system.model
        self.width, self.height = int(width), int(height)
        visual = self.model.vis.global_
        visual.offwidth = max(int(visual.offwidth), self.width)
        visual.offheight = max(int(visual.offheight), self.height)
        if int(self.model.nlight) == 0:  # only the headlight: MuJoCo's default one leaves grey geoms dark
            self.model.vis.headlight.ambient[:] = np.maximum(self.model.vis.headlight.ambient, 0.35)
            self.model.vis.headlight.diffuse[:] = np.maximum(self.model.vis.headlight.diffuse, 0.65)
        self.context, self.backend = _make_context(self.width, self.height)
        try:
            self.data = mujoco.MjData(self.model)
            self.scene = mujoco.MjvScene(self.model, maxgeom=10000)
            self.option = mujoco.MjvOption()
            self.mjr = mujoco.MjrContext(self.model, int(mujoco.mjtFontScale.mjFONTSCALE_150))
            mujoco.mjr_setBuffer(int(mujoco.mjtFramebuffer.mjFB_OFFSCREEN), self.mjr)
        except Exception as exc:
            self.context.free()
            raise NoOpenGL(f"{self.backend}: {type(exc).__name__}: {exc}") from exc
        self.viewport = mujoco.MjrRect(0, 0, self.width, self.height)
        self.camera = mujoco.MjvCamera()
        mujoco.mjv_defaultFreeCamera(self.model, self.camera)
        low, high = np.asarray(bounds, dtype=np.float64)
        self.camera.lookat[:] = 0.5 * (low + high)
        radius = max(0.5 * float(np.linalg.norm(high - low)), 0.05)
        fovy = math.radians(float(self.model.vis.global_.fovy))
        self.camera.distance = 1.15 * radius / math.sin(0.5 * fovy)
        self.camera.elevation = -20.0
        self.camera.azimuth = 90.0  # looking along +y: the x-z plane faces the viewer

    def render(self, q: FloatArray, arrows: list[tuple[FloatArray, FloatArray]], arrow_width: float) -> NDArray[
            np.uint8]:
        """(height, width, 3) picture at ``q`` with arrows ``(start, end)`` added."""
        mujoco = self.mujoco
        self.context.make_current()
        self.data.qpos[:] = q
        mujoco.mj_fwdPosition(self.model, self.data)
        mujoco.mjv_updateScene(self.model, self.data, self.option, None, self.camera,
                               int(mujoco.mjtCatBit.mjCAT_ALL), self.scene)
        for start, end in arrows:
            if self.scene.ngeom >= self.scene.maxgeom:
                break
            geom = self.scene.geoms[self.scene.ngeom]
            mujoco.mjv_initGeom(geom, int(mujoco.mjtGeom.mjGEOM_ARROW), np.zeros(3), np.zeros(3), np.zeros(9),
                                ARROW_RGBA)
            mujoco.mjv_connector(geom, int(mujoco.mjtGeom.mjGEOM_ARROW), arrow_width,
                                 np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64))
            self.scene.ngeom += 1
        mujoco.mjr_render(self.viewport, self.scene, self.mjr)
        pixels = np.empty((self.height, self.width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(pixels, None, self.viewport, self.mjr)
        return np.flipud(pixels)

    def close(self) -> None:
        """Free the MuJoCo render context and the OpenGL context."""
        self.mjr.free()
        self.context.free()


def open_painter(system: Any, width: int, height: int, bounds: FloatArray) -> MujocoPainter:
    """A :class:`MujocoPainter`, or :class:`NoOpenGL` naming why none can be made."""
    return MujocoPainter(system, width, height, bounds)
