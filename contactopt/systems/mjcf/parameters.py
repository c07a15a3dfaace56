"""The differentiable parameters of an ``mjcf`` system
(:meth:`~contactopt.systems.base.System.with_parameters`), in this order:

* ``"mu"``: the sliding friction of every contact. MuJoCo gives a contact between two geoms
  the friction of the geom of higher ``priority``, else the larger of the two geoms' (element
  by element), and a contact of an explicit ``<pair>`` that pair's own (MuJoCo documentation,
  "Modeling: Contact parameters"). ``"mu"`` sets the sliding friction ``geom_friction[:, 0]``
  of every geom that can make a frictional contact (``condim > 1``) and both tangential
  coefficients ``pair_friction[:, :2]`` of every frictional pair, so that every contact's
  ``mu`` is the value given. It is offered while all of those are one number (the value it
  reads); a model whose geoms differ offers their ``"<geom>.friction"`` instead.
* ``"<body>.mass"`` per named body that moves (not welded to the world) and has a mass:
  ``body_mass``, with the principal inertia ``body_inertia`` scaled by the same factor (the
  body's density changes uniformly, its shape and centre of mass stay), then MuJoCo's
  constants derived from the masses recomputed (``mj_setConst``: ``body_subtreemass``, the
  ``invweight0`` used by its constraint regularization, ``dof_M0``, ...). Armature is a joint's
  and is left as it is.
* ``"<geom>.friction"`` per named geom that can make a frictional contact: its sliding
  friction ``geom_friction[g, 0]`` (given after ``"mu"`` in one call, it wins). Through the
  combination rule above, the derivative by the lesser of two touching geoms' is zero.

The new system holds a copy of the model (``MjModel`` copies cheaply) and its own ``MjData``;
what depends on the model's structure alone (kinematic chains, the mass matrix's sparsity) is
shared. It keeps the changed arrays (:data:`FIELDS`), which it applies to the model as
written when MuJoCo's own problem is asked for (``params=model``) and carries through pickling.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.systems.base import MU_PARAMETER, Parameter
from contactopt.systems.mjcf.candidates import dynamic_pairs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int_]

__all__ = ["FIELDS", "FRICTION_SUFFIX", "MASS_SUFFIX", "parameter_table", "reload", "replaced", "restore"]

MASS_SUFFIX, FRICTION_SUFFIX = ".mass", ".friction"
#: The model arrays the parameters write, kept by a changed system (module docstring).
FIELDS = ("body_mass", "body_inertia", "geom_friction", "pair_friction")


def frictional_elements(mujoco: Any, model: Any) -> tuple[IntArray, IntArray]:
    """The geoms of the dynamic geom pairs that can make a frictional contact (``condim > 1``)
    and the explicit pairs that can (:func:`~contactopt.systems.mjcf.candidates.dynamic_pairs`)."""
    if int(model.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_CONTACT):
        return np.zeros(0, dtype=np.int_), np.zeros(0, dtype=np.int_)
    first, second, dims = dynamic_pairs(mujoco, model)
    frictional = dims > 1
    geoms = np.unique(np.concatenate([first[frictional], second[frictional]])).astype(np.int_)
    return geoms, np.flatnonzero(np.asarray(model.pair_dim) > 1)


def _moving_bodies(model: Any) -> list[int]:
    """Named bodies with a mass that are not welded to the world (whose mass moves anything)."""
    weld = np.asarray(model.body_weldid)
    return [b for b in range(1, int(model.nbody))
            if model.body(b).name and weld[b] != 0 and float(model.body_mass[b]) > 0.0]


def parameter_table(system: Any) -> dict[str, tuple[Parameter, float]]:
    """Per name (module docstring) its declaration and current value."""
    model = system.model
    geoms, pairs = frictional_elements(system.mujoco, model)
    table: dict[str, tuple[Parameter, float]] = {}
    coefficients = np.concatenate([np.asarray(model.geom_friction)[geoms, 0],
                                   np.asarray(model.pair_friction)[pairs, :2].reshape(-1)])
    if coefficients.size and np.all(coefficients == coefficients[0]):
        table["mu"] = (MU_PARAMETER, float(coefficients[0]))
    for b in _moving_bodies(model):
        name = f"{model.body(b).name}{MASS_SUFFIX}"
        table[name] = (Parameter(name, "body mass, inertia scaled with it [kg]", minimum=0.0, exclusive=True),
                       float(model.body_mass[b]))
    for g in geoms:
        if model.geom(int(g)).name:
            name = f"{model.geom(int(g)).name}{FRICTION_SUFFIX}"
            table[name] = (Parameter(name, "sliding friction of the geom", minimum=0.0),
                           float(model.geom_friction[g, 0]))
    return table


def set_constants(mujoco: Any, model: Any) -> None:
    """``mj_setConst`` after a change of masses, keeping ``body_margin``: MuJoCo would widen it
    to the detection gap that :func:`~contactopt.systems.mjcf.compat.widen_detection` added after
    compilation, so that the copy would detect pairs the original does not."""
    margin = np.array(model.body_margin)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    model.body_margin[:] = margin


def write(mujoco: Any, model: Any, values: Mapping[str, float]) -> None:
    """Set checked ``values`` (module docstring) in ``model``: ``"mu"`` first, then the geoms'
    own frictions and the masses (with their inertias and MuJoCo's derived constants)."""
    if "mu" in values:
        geoms, pairs = frictional_elements(mujoco, model)
        model.geom_friction[geoms, 0] = values["mu"]
        model.pair_friction[pairs, :2] = values["mu"]
    masses = False
    for name, value in values.items():
        if name.endswith(FRICTION_SUFFIX):
            model.geom_friction[model.geom(name[: -len(FRICTION_SUFFIX)]).id, 0] = value
        elif name.endswith(MASS_SUFFIX):
            body = model.body(name[: -len(MASS_SUFFIX)]).id
            model.body_inertia[body] *= value / float(model.body_mass[body])  # uniform density
            model.body_mass[body] = value
            masses = True
    if masses:
        set_constants(mujoco, model)


def replaced(system: Any, values: Mapping[str, float]) -> Any:
    """A copy of ``system`` with checked ``values`` in a copy of its model (``system`` unchanged)."""
    new = object.__new__(type(system))  # copy.copy would reload the file (__getstate__ pickles by path)
    new.__dict__.update(system.__dict__)
    new.model = copy.deepcopy(system.model)
    write(system.mujoco, new.model, values)
    new.data = system.mujoco.MjData(new.model)
    new._at, new._scratch, new._native, new._counting = None, None, None, None  # of the old model
    new.parameter_arrays = {field: np.array(getattr(new.model, field)) for field in FIELDS}
    return new


def restore(system: Any, model: Any, arrays: Mapping[str, FloatArray] | None) -> None:
    """Write ``arrays`` (:data:`FIELDS` of a changed system; None: unchanged) into ``model``,
    a fresh load of the system's file, and recompute MuJoCo's constants if the masses differ."""
    if arrays is None:
        return
    masses = not np.array_equal(model.body_mass, arrays["body_mass"])
    for field in FIELDS:
        getattr(model, field)[:] = arrays[field]
    if masses:
        set_constants(system.mujoco, model)


def reload(system: Any, arrays: Mapping[str, FloatArray] | None) -> None:
    """Give ``system``, just loaded from its file (unpickled), the changed ``arrays`` it had."""
    restore(system, system.model, arrays)
    system.parameter_arrays = None if arrays is None else dict(arrays)
