"""Every use of the ``mujoco`` API that changed between releases, in one place.

Supported: mujoco >= 3.2 (``pip install 'contactopt[mujoco]'``). Differences handled here:
``mj_fullM`` takes ``(m, dst, qM)`` up to 3.x and ``(m, d, dst)`` from 4.0 (``MjData.qM``
became ``MjData.M``); the constraint Jacobian ``efc_J`` is dense (``nefc x nv``) or sparse
(CSR arrays ``efc_J_rownnz``, ``efc_J_rowadr``, ``efc_J_colind``) depending on
``opt.jacobian`` and the model size; the compiler attribute ``settotalmass`` (dm-control's
``cheetah.xml`` sets it) is deprecated from 4.0, whose compiler then warns on stderr and writes
``MUJOCO_LOG.TXT`` into the current folder: :func:`model_from_file` applies it as MuJoCo's
deprecation note says, by scaling the masses and densities of the model before compiling.
A geom pair's contact ``margin`` and ``gap`` are the larger of its geoms' up to 3.x (a contact
is detected at ``dist < margin`` and active at ``dist < margin - gap``) and their sums from 4.0
(detected at ``dist < margin + gap``, active at ``dist < margin``): :func:`widen_detection`
reads which from a probe model once. MuJoCo's RK4 moves the orientations of ball and free joints
along the Runge-Kutta-Munthe-Kaas rates from 4.0 and along the stages' angular velocities before
(:func:`lie_group_rk4`, :mod:`contactopt.integrators.runge_kutta`).
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactopt.core.errors import SolverUnavailableError

FloatArray = NDArray[np.float64]

INSTALL_HINT = "pip install 'contactopt[mujoco]'"


def load() -> Any:
    """The ``mujoco`` module, or a clear error with the install hint."""
    if importlib.util.find_spec("mujoco") is None:
        raise SolverUnavailableError(f"MJCF scenes need the mujoco package: {INSTALL_HINT}")
    try:
        import mujoco
    except Exception as exc:  # e.g. MUJOCO_GL=osmesa without the OSMesa library fails inside the import
        gl = os.environ.get("MUJOCO_GL")
        raise SolverUnavailableError(f"cannot import mujoco{f' (MUJOCO_GL={gl})' if gl else ''}: "
                                     f"{type(exc).__name__}: {exc}") from exc
    return mujoco


def model_from_file(mujoco: Any, path: str | os.PathLike[str]) -> Any:
    """``MjModel`` of the MJCF file ``path``, as ``MjModel.from_xml_path`` compiles it.

    A model whose ``<compiler settotalmass="T"/>`` is set is compiled without it after its body
    masses and inertias and its geoms' densities and masses are scaled by ``T / total``
    (``total``: the mass compiled without the attribute): what the compiler does with the
    attribute (MuJoCo's ``mjCModel`` scales every body's mass and inertia by that ratio),
    done in the model as MuJoCo's deprecation warning asks, so that 4.0 neither warns nor
    writes its log file. Without the attribute, or with a mujoco that has no ``MjSpec``,
    the file is compiled as it is."""
    spec_type = getattr(mujoco, "MjSpec", None)
    if spec_type is None or not hasattr(spec_type, "from_file"):
        return mujoco.MjModel.from_xml_path(str(path))
    spec = spec_type.from_file(str(path))
    total = float(getattr(spec.compiler, "settotalmass", -1.0))
    if not total > 0:
        return mujoco.MjModel.from_xml_path(str(path))
    spec.compiler.settotalmass = -1.0
    scale = total / float(np.sum(spec.compile().body_mass))
    for body in spec.bodies:
        body.mass *= scale
        body.inertia = np.asarray(body.inertia) * scale
        body.fullinertia = np.asarray(body.fullinertia) * scale  # NaN (unset) stays NaN
    for geom in spec.geoms:
        geom.density *= scale
        geom.mass *= scale  # NaN (mass from the density) stays NaN
    return spec.compile()


def lie_group_rk4(mujoco: Any) -> bool:
    """Whether this MuJoCo's RK4 combines the orientations of ball and free joints as a
    Runge-Kutta-Munthe-Kaas method (from 4.0, its changelog: "The RK4 integrator is now
    fourth-order accurate for the orientations of ball and free joints"); before, the stages'
    body-frame angular velocities themselves."""
    return int(str(mujoco.__version__).split(".")[0]) >= 4


def available() -> bool:
    return importlib.util.find_spec("mujoco") is not None


def full_mass_matrix(mujoco: Any, model: Any, data: Any) -> FloatArray:
    """Dense ``M(q)`` (``nv x nv``) after ``mj_fwdPosition``."""
    M = np.zeros((model.nv, model.nv))
    if hasattr(data, "qM"):  # mujoco < 4
        mujoco.mj_fullM(model, M, data.qM)
    else:
        mujoco.mj_fullM(model, data, M)
    return M


def has_sparse_mass(model: Any, data: Any) -> bool:
    """Whether MuJoCo keeps ``M`` in its sparse CSR storage (``MjData.M``, MuJoCo 3.1+)."""
    return all(hasattr(model, name) for name in ("M_rowadr", "M_rownnz", "M_colind")) and hasattr(data, "M")


def sparse_mass_matrix(mujoco: Any, model: Any, data: Any) -> Any:
    """``M(q)`` as a symmetric CSC matrix from MuJoCo's own sparse storage (``MjData.M``: the
    lower triangle in CSR form, ``M_rownnz/M_rowadr/M_colind``, MuJoCo 3.1+), without a dense
    ``nv x nv`` array; falls back to :func:`full_mass_matrix` where that storage is absent."""
    import scipy.sparse as sp

    if not has_sparse_mass(model, data):
        return sp.csc_matrix(full_mass_matrix(mujoco, model, data))
    nv = int(model.nv)
    indptr = np.concatenate([np.asarray(model.M_rowadr), [int(model.M_rowadr[-1]) + int(model.M_rownnz[-1])]]) \
        if nv else np.zeros(1, dtype=np.int_)
    lower = sp.csr_matrix((np.array(data.M), np.asarray(model.M_colind), indptr), shape=(nv, nv))
    full = (lower + lower.T - sp.diags(lower.diagonal())).tocsc()
    full.eliminate_zeros()
    full.sort_indices()
    return full


def constraint_jacobian(model: Any, data: Any) -> FloatArray:
    """Dense ``efc_J`` (``nefc x nv``), whatever the storage."""
    nefc, nv = int(data.nefc), int(model.nv)
    flat = np.asarray(data.efc_J)
    if flat.size == nefc * nv and not _is_sparse(model, data):
        return flat.reshape(nefc, nv).copy()
    J = np.zeros((nefc, nv))
    count = np.asarray(data.efc_J_rownnz, dtype=np.int_)[:nefc]
    start = np.asarray(data.efc_J_rowadr, dtype=np.int_)[:nefc]
    total = int(count.sum())
    if total:  # each row's stored entries, gathered at once: positions start_r + 0..count_r-1
        first = np.cumsum(count) - count
        position = np.repeat(start - first, count) + np.arange(total)
        J[np.repeat(np.arange(nefc), count), np.asarray(data.efc_J_colind)[position]] = flat[position]
    return J


def _is_sparse(model: Any, data: Any) -> bool:
    import mujoco

    jacobian = int(model.opt.jacobian)
    if jacobian == int(mujoco.mjtJacobian.mjJAC_SPARSE):
        return True
    if jacobian == int(mujoco.mjtJacobian.mjJAC_DENSE):
        return False
    return int(model.nv) >= 60  # mjJAC_AUTO: MuJoCo goes sparse from nv = 60


def contact_frame(contact: Any) -> FloatArray:
    """(3, 3) rows ``[normal, t1, t2]`` (world frame; normal from geom1 to geom2)."""
    return np.asarray(contact.frame, dtype=np.float64).reshape(3, 3)


def enable_energy(mujoco: Any, model: Any) -> None:
    model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)


@cache
def _margin_rule(mujoco: Any) -> tuple[bool, bool]:
    """``(summed, gap_beyond)``: whether a pair's margin is the sum of its geoms' (else the
    larger), and whether ``gap`` widens detection beyond ``margin`` (else it narrows activation
    within it), read from MuJoCo's contacts of a sphere above a plane."""
    def contacts(plane: str, sphere: str, height: float) -> int:
        xml = (f'<mujoco><worldbody><geom type="plane" size="1 1 1" {plane}/><body pos="0 0 {0.1 + height}">'
               f'<freejoint/><geom type="sphere" size="0.1" {sphere}/></body></worldbody></mujoco>')
        model = mujoco.MjModel.from_xml_string(xml)
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        return int(data.ncon)

    summed = contacts('margin="0.01"', 'margin="0.005"', 0.012) > 0  # within the sum 0.015, beyond the max 0.01
    gap_beyond = contacts("", 'margin="0.002" gap="0.01"', 0.008) > 0  # within margin + gap, beyond margin
    return summed, gap_beyond


def widen_detection(mujoco: Any, model: Any, distance: float) -> None:
    """Make MuJoCo detect every geom pair's contacts up to ``distance`` farther than ``model``
    says, without activating any more of them in its own solver (module docstring): the extra
    distance goes into ``gap`` (and, up to 3.x, into ``margin`` too, which ``gap`` then offsets),
    half on each geom of a pair where MuJoCo sums the geoms' values, whole on explicit pairs."""
    summed, gap_beyond = _margin_rule(mujoco)
    share = distance / 2 if summed else distance
    model.geom_gap[:] += share
    model.pair_gap[:] += distance
    if not gap_beyond:
        model.geom_margin[:] += share
        model.pair_margin[:] += distance
