"""What an MJCF model declares about its contacts, read before any step, and MuJoCo's own count.

* :func:`collision_count`: MuJoCo's ``ncon`` at ``q`` with the model's own geom margins, the
  contacts ``mj_step`` itself builds there (``mj_kinematics``, ``mj_flex``, ``mj_collision``:
  the position stage of ``mj_fwdPosition`` that collision detection needs), against which
  the contact candidates of a run are counted (``StepRecord.mujoco_contacts``).
* :func:`declared_features`: the rows a model *can* produce, from its declarations alone:
  the geoms (and explicit ``<pair>`` elements) whose contacts have ``condim`` 4 or 6, and the
  dofs and tendons with a ``frictionloss``. A formulation that cannot hold such rows refuses
  the model before step 0 (:func:`contactopt.integrators.capabilities.refuse_model_features`),
  not at the step where such a contact first appears.

Which geom pairs can collide follows MuJoCo's collision filter (MuJoCo documentation,
"Computation: Collision detection", and ``XML reference: contact``): dynamic pairs need
``contype1 & conaffinity2`` or ``contype2 & conaffinity1``, never within one welded body nor
between a welded body and its welded parent (unless the parent is the world or the
``filterparent`` flag is disabled), nor between bodies of an ``<exclude>``; explicit
``<pair>`` elements collide regardless, with their own ``condim``. A dynamic contact's
``condim`` is that of the geom of higher ``priority``, else the larger of the two.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import ContactoptError, ContactoptWarning
from contactopt.systems.mjcf import compat

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

#: Feature names of :func:`declared_features` (the keys formulations refuse by).
ANGULAR_FRICTION, FRICTION_LOSS = "angular_friction", "friction_loss"
#: The velocity names of a free or ball joint's angular velocity, which MuJoCo gives in the
#: body's own frame (rigid3d's ``wx``, ``wy``, ``wz`` are world-frame).
BODY_FRAME_ANGULAR = ("wx_body", "wy_body", "wz_body")


def collision_count(mujoco: Any, model: Any, data: Any, q: FloatArray) -> int:
    """``ncon`` of MuJoCo's collision detection of ``model`` at ``q`` (module docstring)."""
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    if int(model.nflex):
        mujoco.mj_flex(model, data)
    mujoco.mj_collision(model, data)
    return int(data.ncon)


def contact_labels(model: Any, data: Any) -> list[str]:
    """A label per contact of ``data`` not between fused bodies (``exclude <= 1``), in order:
    ``"geom1|geom2"`` with MuJoCo's geom names (a nameless geom is ``"body/geom<id>"``)."""
    ncon = int(data.ncon)
    found = data.contact
    geoms = np.asarray(found.geom)[:ncon][np.asarray(found.exclude)[:ncon] <= 1]

    def label(geom: int) -> str:
        name = model.geom(geom).name
        return name or f"{model.body(int(model.geom_bodyid[geom])).name or 'world'}/geom{geom}"

    return [f"{label(int(g1))}|{label(int(g2))}" for g1, g2 in geoms]


def contact_keys(data: Any) -> tuple[IntArray, FloatArray]:
    """``(geom pairs, positions)`` of the contacts of ``data`` not between fused bodies, in order."""
    ncon = int(data.ncon)
    if not ncon:
        return np.zeros((0, 2), dtype=np.int_), np.zeros((0, 3))
    keep = np.flatnonzero(np.asarray(data.contact.exclude)[:ncon] <= 1)
    return (np.asarray(data.contact.geom)[:ncon][keep].astype(np.int_),
            np.asarray(data.contact.pos)[:ncon][keep].copy())


def _label(model: Any, kind: str, index: int) -> str:
    name = getattr(model, kind)(index).name
    if name:
        return repr(name)
    if kind == "geom":
        body = model.body(int(model.geom_bodyid[index])).name or "world"
        return f"{body}/geom{index}"
    return f"{kind}{index}"


def dynamic_pairs(mujoco: Any, model: Any) -> tuple[IntArray, IntArray, IntArray]:
    """``(geom1, geom2, condim)`` arrays of the dynamic geom pairs (not the explicit ``<pair>``
    elements) that can make a contact (module docstring); empty with contacts disabled."""
    if int(model.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        return np.zeros(0, np.int_), np.zeros(0, np.int_), np.zeros(0, np.int_)
    ngeom = int(model.ngeom)
    contype, conaffinity = np.asarray(model.geom_contype), np.asarray(model.geom_conaffinity)
    weld = np.asarray(model.body_weldid)[np.asarray(model.geom_bodyid)]
    weld_parent = np.asarray(model.body_weldid)[np.asarray(model.body_parentid)][weld]
    first, second = np.triu_indices(ngeom, 1)
    keep = ((contype[first] & conaffinity[second]) | (contype[second] & conaffinity[first])) != 0
    keep &= weld[first] != weld[second]
    if not int(model.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT):
        parent = (weld[first] == weld_parent[second]) | (weld[second] == weld_parent[first])
        keep &= ~(parent & (weld[first] != 0) & (weld[second] != 0))
    if int(model.nexclude):
        body = np.asarray(model.geom_bodyid)
        low, high = np.minimum(body[first], body[second]), np.maximum(body[first], body[second])
        keep &= ~np.isin((low << 16) + high, np.asarray(model.exclude_signature))
    first, second = first[keep], second[keep]
    condim, priority = np.asarray(model.geom_condim), np.asarray(model.geom_priority)
    dims = np.where(priority[first] > priority[second], condim[first],
                    np.where(priority[first] < priority[second], condim[second],
                             np.maximum(condim[first], condim[second])))
    return first.astype(np.int_), second.astype(np.int_), np.asarray(dims, dtype=np.int_)


def colliding_condims(mujoco: Any, model: Any) -> list[tuple[int, int, int]]:
    """``(geom1, geom2, condim)`` of every geom pair that can make a contact (module docstring)."""
    if int(model.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        return []
    pairs = [(int(a), int(b), int(d)) for a, b, d in zip(*dynamic_pairs(mujoco, model), strict=True)]
    pairs += [(int(a), int(b), int(d)) for a, b, d in zip(model.pair_geom1, model.pair_geom2, model.pair_dim,
                                                          strict=True)]
    return pairs


def declared_features(mujoco: Any, model: Any, angular: bool = True) -> dict[str, list[str]]:
    """Per feature (:data:`ANGULAR_FRICTION`, :data:`FRICTION_LOSS`) the model's elements that
    declare it, by name; ``angular=False`` (``extra_friction = "sliding"``) leaves condim 4/6
    out, since the system then gives those contacts their sliding friction only."""
    features: dict[str, list[str]] = {}
    if angular:
        found = sorted({(g1, g2, d) for g1, g2, d in colliding_condims(mujoco, model) if d > 3})
        if found:
            features[ANGULAR_FRICTION] = [f"geoms {_label(model, 'geom', g1)}|{_label(model, 'geom', g2)} "
                                          f"(condim {d})" for g1, g2, d in found]
    losses = [f"dof {_label(model, 'joint', int(model.dof_jntid[i]))} (frictionloss {value:g})"
              for i, value in enumerate(np.asarray(model.dof_frictionloss)) if value > 0]
    losses += [f"tendon {_label(model, 'tendon', i)} (frictionloss {value:g})"
               for i, value in enumerate(np.asarray(model.tendon_frictionloss)) if value > 0]
    if losses:
        features[FRICTION_LOSS] = losses
    return features


def coordinate_names(mujoco: Any, model: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of ``qpos`` and ``qvel`` entries by joint. MuJoCo's ``qvel`` of a free joint is
    the linear velocity in the world frame and the angular velocity in the body's own frame
    (as for a ball joint), unlike rigid3d's world-frame ``wx``: the names say so (``wx_body``)."""
    q_names: list[str] = []
    v_names: list[str] = []
    for j in range(model.njnt):
        name = model.joint(j).name or f"joint{j}"
        kind = int(model.jnt_type[j])
        if kind == int(mujoco.mjtJoint.mjJNT_FREE):
            q_names += [f"{name}.{c}" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")]
            v_names += [f"{name}.{c}" for c in ("vx", "vy", "vz", *BODY_FRAME_ANGULAR)]
        elif kind == int(mujoco.mjtJoint.mjJNT_BALL):
            q_names += [f"{name}.{c}" for c in ("qw", "qx", "qy", "qz")]
            v_names += [f"{name}.{c}" for c in BODY_FRAME_ANGULAR]
        else:
            q_names.append(name)
            v_names.append(name)
    return tuple(q_names), tuple(v_names)


def rotation_dofs(mujoco: Any, model: Any) -> NDArray[np.int_]:
    """(k, 3): the ``qvel`` indices of each ball joint's and free joint's body-frame angular velocity,
    which RK4's stages move on SO(3) (:mod:`contactopt.integrators.runge_kutta`); none where this
    MuJoCo's RK4 does not (before 4.0: :func:`.compat.lie_group_rk4`)."""
    if not compat.lie_group_rk4(mujoco):
        return np.zeros((0, 3), dtype=np.int_)
    triples = []
    for j in range(model.njnt):
        kind, start = int(model.jnt_type[j]), int(model.jnt_dofadr[j])
        if kind == int(mujoco.mjtJoint.mjJNT_FREE):
            triples.append(range(start + 3, start + 6))
        elif kind == int(mujoco.mjtJoint.mjJNT_BALL):
            triples.append(range(start, start + 3))
    return np.array(triples, dtype=np.int_).reshape(-1, 3)


def coordinate_units(mujoco: Any, model: Any, units: tuple[tuple[str, ...], tuple[str, ...]]
                     ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``units`` (of ``qpos``, ``qvel``: free and ball joints by their component names) with a
    hinge's ``rad`` (``rad/s``) and a slide's ``m`` (``m/s``)."""
    q_list, v_list = list(units[0]), list(units[1])
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            hinge = kind == int(mujoco.mjtJoint.mjJNT_HINGE)
            q_list[model.jnt_qposadr[j]] = "rad" if hinge else "m"
            v_list[model.jnt_dofadr[j]] = "rad/s" if hinge else "m/s"
    return tuple(q_list), tuple(v_list)


class UnmodelledFrictionError(ContactoptError):
    """Contacts whose friction the formulations cannot express (condim 4 and 6)."""


class UnmodelledFrictionWarning(ContactoptWarning):
    """An MJCF model's contacts have torsional or rolling friction (condim 4 or 6), which the
    3-row contact frames of the formulations do not carry."""
